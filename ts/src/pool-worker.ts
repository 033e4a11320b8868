/**
 * The worker behind WorkerPool (pool.ts): one per pool worker, in a Node worker_threads
 * worker, a browser module worker or a Deno worker. It attaches to the pool's map
 * (BTreeMap.attach on the handle it is given; BTreeStore.attach for a shared store) and runs
 * each request on it, in order.
 *
 * Protocol: `{ seq: 0 }` first, once the script runs (before it, a failing worker cannot have
 * touched the shared memory); then `{ seq, op, ... }` → `{ seq, value }` or
 * `{ seq, error: { name, code, message } }`.
 * Ops: 'attach' (handle), 'getMany' (keys → values), 'setMany' (entries; applied in
 * sub-batches so that other workers' batches interleave with this one's encoding),
 * 'load' (entries, turn, index: waits until the shared turn counter equals index, applies,
 * then advances it), 'close' (frees the attached map: its stack goes back to the memory; an
 * attached store commits this worker's writes and detaches).
 */
import { AbortedError, errorToWire, withApplied } from './errors.js';
import { BTreeMap } from './map.js';
import { BTreeStore, type SharedStoreHandle } from './store.js';
import type { SharedMapHandle } from './threads.js';

interface Request {
  seq: number;
  op: string;
  handle?: SharedMapHandle | SharedStoreHandle;
  keys?: unknown[];
  entries?: [unknown, unknown][];
  turn?: Int32Array;
  index?: number;
}

/** Entries per setMany call inside the worker: the tree latch is held per call, so other
 * workers' calls get in between, and this worker encodes the next batch meanwhile. */
const SUB_BATCH = 4096;

type Post = (m: unknown) => void;

let map: BTreeMap<unknown, unknown> | BTreeStore<unknown, unknown> | undefined;

function opened(): BTreeMap<unknown, unknown> | BTreeStore<unknown, unknown> {
  if (map === undefined) throw new Error('adaptree pool worker: not attached');
  return map;
}

/** Waits until the turn counter reaches `index` (load's ordered application). */
function waitTurn(turn: Int32Array, index: number): void {
  for (;;) {
    const now = Atomics.load(turn, 0);
    if (now === index) return;
    if (now < 0) throw new AbortedError('load(): cancelled, an earlier part failed');
    Atomics.wait(turn, 0, now, 1000);
  }
}

async function run(r: Request): Promise<unknown> {
  switch (r.op) {
    case 'attach':
      // A shared store (BTreeStore#share) or a shared map.
      map = r.handle!.kind === 'adaptree.shared-store'
        ? await BTreeStore.attach(r.handle as SharedStoreHandle)
        : await BTreeMap.attach(r.handle as SharedMapHandle);
      return null;
    case 'getMany':
      return opened().getMany(r.keys!);
    case 'setMany': {
      const m = opened();
      const e = r.entries!;
      if (e.length <= SUB_BATCH) {
        m.setMany(e);
        return null;
      }
      for (let i = 0; i < e.length; i += SUB_BATCH) {
        try {
          m.setMany(e.slice(i, i + SUB_BATCH));
        } catch (err) {
          // The sub-batches before this one are in: the error says how many of the part's
          // entries (it said nothing, and 4096 of a failing part were in; a probe, session 29).
          throw withApplied(err, i + ((err as { applied?: number }).applied ?? 0));
        }
      }
      return null;
    }
    case 'load': {
      const m = opened();
      const turn = r.turn!;
      waitTurn(turn, r.index!);
      try {
        m.setMany(r.entries!);
      } finally {
        // Advanced even on failure, so later chunks do not wait for ever (the pool reports
        // the failure; the chunks after it are applied).
        Atomics.add(turn, 0, 1);
        Atomics.notify(turn, 0);
      }
      return null;
    }
    case 'close': {
      // A store's close() commits what this worker wrote and detaches; a map's free() detaches.
      const m = map;
      map = undefined;
      if (m instanceof BTreeStore) await m.close();
      else m?.free();
      return null;
    }
    default:
      throw new Error(`adaptree pool worker: unknown op '${r.op}'`);
  }
}

function serve(post: Post): (r: Request) => void {
  // One request at a time, in arrival order (attach is async).
  let chain: Promise<void> = Promise.resolve();
  return (r) => {
    chain = chain.then(async () => {
      try {
        const value = await run(r);
        post({ seq: r.seq, value });
      } catch (e) {
        post({ seq: r.seq, error: errorToWire(e) });
      }
    });
  };
}

const g = globalThis as unknown as {
  postMessage?: Post;
  addEventListener?: (type: string, f: (e: { data: Request }) => void) => void;
  WorkerGlobalScope?: unknown;
  Deno?: unknown;
};

if (typeof g.WorkerGlobalScope !== 'undefined' || (typeof g.Deno !== 'undefined' && typeof g.postMessage === 'function')) {
  // A browser or Deno worker.
  const handle = serve((m) => g.postMessage!(m));
  g.addEventListener!('message', (e) => handle(e.data));
  g.postMessage!({ seq: 0 }); // started: from here on this worker may touch the memory
} else {
  // Node worker_threads. The specifier is hidden from bundlers (browser builds never get here).
  // No top-level await: vite bundles workers as iife by default, which cannot hold one.
  const name = 'node:worker_threads';
  void (import(/* @vite-ignore */ /* webpackIgnore: true */ name) as Promise<{
    parentPort: { postMessage: Post; on(e: 'message', f: (m: Request) => void): void } | null;
  }>).then((wt) => {
    const port = wt.parentPort;
    if (port === null) throw new Error('adaptree pool worker: not started as a worker');
    const handle = serve((m) => port.postMessage(m));
    port.on('message', handle);
    port.postMessage({ seq: 0 }); // started
  });
}
