/**
 * The dedicated worker behind an 'opfs' store opened on a browser's main thread (where OPFS
 * sync access handles do not exist; opfs-remote.ts is the main-thread side). One worker per
 * store: it opens the store on the `opfs` backend and runs each message's method on it, in
 * message order; closing the store ends the worker.
 *
 * Protocol: `{ seq, op, args }` → `{ seq, value, size }` or `{ seq, error }`, where `error`
 * carries the name, code, message (and pageId) of the error the store threw. Ops: 'open'
 * (args: [options]), 'call' ([method, ...args]: a sync method of the store), 'commit',
 * 'close' ([options]), 'iter' ([kind, range] → an iterator id), 'next' ([id, count] →
 * { items, done }), 'return' ([id]).
 */
import { errorToWire } from '../errors.js';
import { BTreeStore, type StoreOptions } from '../store.js';
import { opfsLocksReleased } from './opfs.js';

interface Scope {
  onmessage: ((e: { data: { seq: number; op: string; args: unknown[] } }) => void) | null;
  postMessage(m: unknown): void;
  close(): void;
}
const scope = globalThis as unknown as Scope;

/** The store methods a message may call (the sync ones; this worker's backend is synchronous). */
const METHODS = new Set(['get', 'has', 'set', 'delete', 'clear', 'first', 'last', 'nextHigher', 'nextLower', 'getMany', 'setMany',
  'deleteRange', 'checkInvariants', 'treeStats', 'stats', 'refresh', 'compact']);

let store: BTreeStore<unknown, unknown> | undefined;
const iterators = new Map<number, Iterator<unknown>>();
let nextIter = 1;

function opened(): BTreeStore<unknown, unknown> {
  if (store === undefined) throw new Error('opfs worker: no store open');
  return store;
}

async function handle(op: string, args: unknown[]): Promise<unknown> {
  switch (op) {
    case 'open': {
      const options = { ...(args[0] as StoreOptions<unknown, unknown>), storage: 'opfs' as const };
      store = await BTreeStore.open(options);
      return undefined;
    }
    case 'call': {
      const [method, ...rest] = args as [string, ...unknown[]];
      if (!METHODS.has(method)) throw new Error(`opfs worker: no method ${method}`);
      const s = opened() as unknown as Record<string, (...a: unknown[]) => unknown>;
      const r = s[method]!(...rest);
      return r === store ? undefined : r; // set/setMany return the store
    }
    case 'commit':
      return opened().commit();
    case 'close': {
      const s = opened();
      iterators.clear();
      try {
        await s.close(args[0] as { commit?: boolean } | undefined);
      } finally {
        store = undefined;
        await opfsLocksReleased();
      }
      return undefined;
    }
    case 'iter': {
      const [kind, range] = args as ['entries' | 'keys' | 'values', object | undefined];
      const id = nextIter++;
      iterators.set(id, opened()[kind](range as never) as Iterator<unknown>);
      return id;
    }
    case 'next': {
      const [id, count] = args as [number, number];
      const it = iterators.get(id);
      if (it === undefined) return { items: [], done: true };
      const items: unknown[] = [];
      for (let i = 0; i < count; i++) {
        const r = it.next();
        if (r.done) {
          iterators.delete(id);
          return { items, done: true };
        }
        items.push(r.value);
      }
      return { items, done: false };
    }
    case 'return': {
      const id = args[0] as number;
      iterators.get(id)?.return?.();
      iterators.delete(id);
      return undefined;
    }
    default:
      throw new Error(`opfs worker: unknown op ${op}`);
  }
}

scope.onmessage = (e) => {
  const { seq, op, args } = e.data;
  void handle(op, args).then(
    (value) => {
      scope.postMessage({ seq, value, size: store !== undefined && !store.closed ? store.size : 0 });
      if (op === 'close' || (op === 'open' && store === undefined)) scope.close();
    },
    (err: unknown) => {
      const error = errorToWire(err);
      scope.postMessage({ seq, error, size: store !== undefined && !store.closed ? store.size : 0 });
      if (op === 'close' || (op === 'open' && store === undefined)) scope.close();
    },
  );
};
