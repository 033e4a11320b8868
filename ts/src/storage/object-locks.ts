/**
 * The lock of a store in a Cloudflare Durable Object (durable-object.ts, durable-object-kv.ts).
 * An object runs in one place at a time, so the lock is per isolate: one open per (storage
 * object, path); a second open throws LockedError until the first is closed, or with
 * `wait: true` waits for it (another request of the object holds it), in order.
 */
import { LockedError } from '../errors.js';

/** Open paths per storage object (an isolate can host several objects of a class). */
const openStores = new WeakMap<object, Set<string>>();
/** Opens waiting (wait: true) for a path of a storage object to be closed, in order. */
const waiting = new WeakMap<object, Map<string, (() => void)[]>>();

const pathsOf = (storage: object): Set<string> => {
  let p = openStores.get(storage);
  if (p === undefined) openStores.set(storage, (p = new Set()));
  return p;
};
const queueOf = (storage: object): Map<string, (() => void)[]> => {
  let q = waiting.get(storage);
  if (q === undefined) waiting.set(storage, (q = new Map()));
  return q;
};

/** True while `path` is open in `storage`'s object. */
export const isOpenInObject = (storage: object, path: string): boolean => pathsOf(storage).has(path);

/** Lets go of `path`: the next open waiting for it (wait: true) gets it. */
export function releaseInObject(storage: object, path: string): void {
  pathsOf(storage).delete(path);
  const q = queueOf(storage).get(path);
  const next = q?.shift();
  if (q !== undefined && q.length === 0) queueOf(storage).delete(path);
  next?.();
}

/**
 * Takes `path` in `storage`'s object and runs `openNow` holding it (a failure lets it go). When
 * it is open already: LockedError, or with `wait` a promise that runs once it is let go. Never
 * wait from inside blockConcurrencyWhile while the holder needs an event to close.
 */
export function openInObject<T>(storage: object, path: string, wait: boolean, openNow: () => T | Promise<T>): T | Promise<T> {
  const run = (): T | Promise<T> => {
    pathsOf(storage).add(path);
    try {
      const r = openNow();
      if (r instanceof Promise) {
        return r.catch((e: unknown) => {
          releaseInObject(storage, path);
          throw e;
        });
      }
      return r;
    } catch (e) {
      releaseInObject(storage, path);
      throw e;
    }
  };
  if (!pathsOf(storage).has(path)) return run();
  if (!wait) throw new LockedError(`the store '${path}' is already open in this Durable Object`);
  return new Promise<T>((resolve, reject) => {
    const q = queueOf(storage);
    const list = q.get(path) ?? [];
    q.set(path, list);
    list.push(() => {
      try {
        Promise.resolve(run()).then(resolve, reject);
      } catch (e) {
        reject(e);
      }
    });
  });
}
