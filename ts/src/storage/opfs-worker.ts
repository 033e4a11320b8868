/**
 * The dedicated worker behind an 'opfs' store opened on a browser's main thread (where OPFS
 * sync access handles do not exist; opfs-remote.ts is the main-thread side). One worker per
 * store: it opens the store on the `opfs` backend and runs each message's method on it, in
 * message order; closing the store ends the worker.
 *
 * Protocol: a message is a batch of calls `[{ seq, op, args }, ...]`, run in order; the
 * answer is `{ results: [{ seq, value } or { seq, error }, ...], size }`, where `error`
 * carries the name, code, message (and pageId) of the error the store threw and `size` is
 * the store's size when the answer was sent. The synchronous calls of a batch ('call',
 * 'scan') are answered together once the batch has run; 'open', 'commit'
 * and 'close' each on their own when they settle. Ops: 'open' (args: [options]), 'call'
 * ([method, ...args]: a sync method of the store), 'commit', 'close' ([options]), 'scan'
 * ([kind, range, after, count] → { items, keys, done }: up to `count` items of the range after
 * `after.key` (from its start without it); `keys` their keys again, as objects of their own;
 * the worker keeps no iterator between scans).
 */
import { errorToWire, IoError } from '../errors.js';
import { BTreeStore, type StoreOptions } from '../store.js';
import { opfsLocksReleased } from './opfs.js';

interface Call {
  seq: number;
  op: string;
  args: unknown[];
}
interface Result {
  seq: number;
  value?: unknown;
  error?: ReturnType<typeof errorToWire>;
}
interface Scope {
  onmessage: ((e: { data: Call[] }) => void) | null;
  postMessage(m: unknown): void;
  close(): void;
}
const scope = globalThis as unknown as Scope;

/** The store methods a message may call (the sync ones; this worker's backend is synchronous). */
const METHODS = new Set(['get', 'has', 'set', 'delete', 'clear', 'first', 'last', 'nextHigher', 'nextLower', 'getMany', 'setMany',
  'deleteRange', 'checkInvariants', 'treeStats', 'stats', 'compact']);

let store: BTreeStore<unknown, unknown> | undefined;

/** A key sent twice in one message would arrive as one object: a copy for the second. */
const keyCopy = (k: unknown): unknown => (k instanceof Uint8Array ? k.slice() : typeof k === 'object' && k !== null ? structuredClone(k) : k);

function opened(): BTreeStore<unknown, unknown> {
  if (store === undefined) throw new Error('opfs worker: no store open');
  return store;
}

/** The synchronous ops. */
function run(op: string, args: unknown[]): unknown {
  switch (op) {
    case 'call': {
      const [method, ...rest] = args as [string, ...unknown[]];
      if (!METHODS.has(method)) throw new Error(`opfs worker: no method ${method}`);
      const s = opened() as unknown as Record<string, (...a: unknown[]) => unknown>;
      const r = s[method]!(...rest);
      return r === store ? undefined : r; // set/setMany return the store
    }
    case 'scan': {
      const [kind, range, after, count] = args as ['entries' | 'keys' | 'values', Record<string, unknown> | undefined, { key: unknown } | undefined, number];
      let r: Record<string, unknown> = { ...(range ?? {}), limit: count };
      if (after !== undefined) {
        // On after the last key returned, in the range's direction; its other bound stays.
        r = r.reverse === true ? { ...r, lt: after.key } : { ...r, gt: after.key };
        delete r[r.reverse === true ? 'lte' : 'gte'];
      }
      const items: unknown[] = [], keys: unknown[] = [];
      for (const [k, v] of opened().entries(r as never) as Iterable<[unknown, unknown]>) {
        items.push(kind === 'entries' ? [k, v] : kind === 'keys' ? k : v);
        keys.push(kind === 'values' ? k : keyCopy(k));
      }
      return { items, keys, done: items.length < count };
    }
    default:
      throw new Error(`opfs worker: unknown op ${op}`);
  }
}

/** The asynchronous ops: open, commit, close. */
async function runAsync(op: string, args: unknown[]): Promise<unknown> {
  switch (op) {
    case 'open': {
      const options = { ...(args[0] as StoreOptions<unknown, unknown>), storage: 'opfs' as const };
      store = await BTreeStore.open(options);
      return undefined;
    }
    case 'commit':
      return opened().commit();
    case 'close': {
      const s = opened();
      try {
        await s.close(args[0] as { commit?: boolean } | undefined);
      } finally {
        store = undefined;
        await opfsLocksReleased();
      }
      return undefined;
    }
    default:
      throw new Error(`opfs worker: unknown op ${op}`);
  }
}

const ASYNC_OPS = new Set(['open', 'commit', 'close']);
const size = (): number => (store !== undefined && !store.closed ? store.size : 0);

scope.onmessage = (e) => {
  const results: Result[] = [];
  for (const { seq, op, args } of e.data) {
    if (!ASYNC_OPS.has(op)) {
      try {
        results.push({ seq, value: run(op, args) });
      } catch (err) {
        results.push({ seq, error: errorToWire(err) });
      }
      continue;
    }
    const end = op === 'close' || op === 'open';
    void runAsync(op, args).then(
      (value) => {
        reply([{ seq, value }]);
        if (end && store === undefined) scope.close();
      },
      (err: unknown) => {
        reply([{ seq, error: errorToWire(err) }]);
        if (end && store === undefined) scope.close();
      },
    );
  }
  if (results.length > 0) reply(results);
};

/** Posts the answers; one that structured clone cannot copy becomes its call's error. */
function reply(results: Result[]): void {
  try {
    scope.postMessage({ results, size: size() });
  } catch {
    for (const r of results) {
      try {
        scope.postMessage({ results: [r], size: size() });
      } catch (err) {
        scope.postMessage({ results: [{ seq: r.seq, error: errorToWire(new IoError(`opfs worker: cannot send the answer: ${(err as Error).message}`)) }], size: size() });
      }
    }
  }
}
