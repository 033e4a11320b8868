/**
 * Web Locks (`navigator.locks`) guarding the browser backends' stores (opfs, indexeddb): a
 * lock per store, shared by every tab and worker of the origin, held from open to close. The
 * browser drops a lock when the tab or worker holding it goes away (reload, crash), so there
 * are no stale locks.
 */
import { LockedError } from '../errors.js';

/** The part of the LockManager used here (the package builds without the DOM lib). */
export interface LockManager {
  request(name: string, options: { ifAvailable?: boolean; mode?: 'exclusive' | 'shared'; signal?: { readonly aborted: boolean } }, callback: (lock: unknown) => Promise<void>): Promise<void>;
  /** The locks held and requested in the origin (not in every browser). */
  query?(): Promise<{ held?: { name?: string }[] }>;
}

/** navigator.locks, where there is one. */
export function webLocks(): LockManager | undefined {
  return (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
}

/** Locks of stores closed in this context that the lock manager has not let go of yet (it
 * releases asynchronously, after close() returned): a reopen here waits for them, rather
 * than seeing its own closed store as open elsewhere. */
const releasing = new Map<string, Promise<void>>();

/** Resolves once the locks of every store closed in this context are released (the worker
 * behind a main-thread store answers close() only then, so a reopen never finds them held). */
export async function webLocksReleased(): Promise<void> {
  await Promise.all(releasing.values());
}

/** Takes the Web Lock `name` (exclusive for a writer, shared for readers: any number of readers
 * or one writer); resolves with its release function, or throws LockedError. */
export async function takeLock(locks: LockManager, name: string, wait: boolean, path: string, mode: 'exclusive' | 'shared' = 'exclusive'): Promise<(after?: Promise<unknown>) => void> {
  await releasing.get(name);
  let unlock!: () => void;
  const held = new Promise<void>((r) => (unlock = r));
  let done!: Promise<void>;
  const granted = await new Promise<boolean>((resolve, reject) => {
    done = locks.request(name, wait ? { mode } : { mode, ifAvailable: true }, async (lock) => {
      resolve(lock !== null);
      if (lock !== null) await held;
    });
    done.catch(reject);
  });
  if (!granted) {
    throw new LockedError(mode === 'shared'
      ? `the store '${path}' is open for writing in another tab or worker (Web Lock '${name}'): readers wait for it to close (wait: true)`
      : `the store '${path}' is open in another tab or worker, or its close() in this one is still under way (Web Lock '${name}'): await close(), or open with { wait: true }`);
  }
  // `after`: the lock is let go once it settles (a close that still writes); a reopen in this
  // context waits for that too.
  return (after?: Promise<unknown>) => {
    const letGo = () => {
      unlock();
      return done;
    };
    const gone = (after === undefined ? done : after.then(letGo, letGo)).then(() => undefined, () => undefined);
    releasing.set(name, gone);
    void gone.then(() => {
      if (releasing.get(name) === gone) releasing.delete(name);
    });
    if (after === undefined) unlock();
  };
}


/** Whether anyone in the origin holds the lock `name`. Where the lock manager has no query()
 * (it is optional), by asking for the lock itself without waiting: not granted means held
 * (or asked for by someone else first); granted, it is let go of at once. */
export async function lockHeld(locks: LockManager, name: string): Promise<boolean> {
  if (typeof locks.query === 'function') {
    const { held } = await locks.query();
    return held?.some((l) => l.name === name) ?? false;
  }
  let granted = false;
  await locks.request(name, { mode: 'exclusive', ifAvailable: true }, async (lock) => {
    granted = lock !== null;
  });
  return !granted;
}

/** Waits until nobody holds the lock `name` (takes it exclusive and lets go at once): true,
 * or false once `ms` passed first (undefined: waits as long as it takes). */
export async function lockFree(locks: LockManager, name: string, ms?: number): Promise<boolean> {
  const abort = ms === undefined ? undefined : new AbortController();
  const timer = abort === undefined ? undefined : setTimeout(() => abort.abort(), ms);
  try {
    await locks.request(name, { mode: 'exclusive', signal: abort?.signal }, async () => undefined);
    return true;
  } catch (e) {
    if (abort?.signal.aborted === true) return false;
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
