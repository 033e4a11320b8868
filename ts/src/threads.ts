// Workers sharing one in-memory index (docs/THREADS.md, phase 1).
//
// A BTreeMap made on the mt build (`await init({ threads: true })`, or `wasm:` an mt
// instance) can be shared: `map.share()` gives a handle that postMessage carries (the
// compiled module, the shared memory, the tree's address, a stack reserved for the
// attaching instance, the encodings' names); `await BTreeMap.attach(handle)` in a worker
// instantiates the module on that memory and returns a BTreeMap on the same tree. Every
// worker then runs the core itself; the tree latch in the core (core/tree/tree_latch.h)
// lets reads run side by side and writes one at a time.
//
// Lifetime: the map that share() was called on owns the tree. Its free() frees the tree
// once the calls in flight are done; after that every call on an attached map throws
// ClosedError (the core keeps a small closed record at the tree's address for this). An
// attached map's free() releases its own cursors and its instance: the context, key and data
// areas and the stack share() reserved (so share/attach/free in a loop does not grow memory).
// In a Node worker that ends with attached maps still open, they are freed at its 'exit'; in
// a web or Deno worker, when it calls self.close().
//
// A worker that ends during a call (terminated, crashed) may have held the tree latch and
// left the tree half-modified, or held the allocator's lock: markWorkerLost() (the pool calls
// it itself) wakes the threads waiting for that latch and makes the whole memory unusable
// (InstanceUnusableError, code INSTANCE_POISONED, in every thread).
import { Status } from './abi.js';
import type { KeyCodec, ValueCodec } from './encoding/codec.js';
import { ClosedError, InvalidArgumentError, ThreadsUnsupportedError, errorFromStatus } from './errors.js';
import { ATTACH_TREE, BTreeMap, treeOf, type AttachTree, type BTreeMapOptions } from './map.js';
import { runtimeOf } from './map/runtime.js';
import { loadWasm, type AdaptreeWasm, type AttachHandle } from './wasm.js';
import { inHostCall } from './storage/host.js';

const KIND = 'adaptree.shared-map';

/** What `map.share()` returns and `BTreeMap.attach()` takes; structured-cloneable. */
export interface SharedMapHandle {
  readonly kind: typeof KIND;
  /** Module, shared memory and the stack reserved for the attaching instance. */
  readonly instance: AttachHandle;
  /** The tree's address in the shared memory. */
  readonly tree: number;
  /** Key and value encodings of the shared map ('custom': attach() must be given the codec). */
  readonly keys: string;
  readonly values: string;
}

/** Options of `BTreeMap.attach`: the codecs of a map shared with custom encodings. */
export interface AttachMapOptions<K, V> {
  keys?: KeyCodec<K>;
  values?: ValueCodec<V>;
}

/** `map.share()`: see the file comment. Each call reserves one stack (1 MiB by default) for
 * one attach. */
export function shareMap(map: BTreeMap<unknown, unknown>, stackSize?: number): SharedMapHandle {
  const { wasm, tree } = treeOf(map);
  if (tree === 0) throw new ClosedError('share(): the map is closed');
  if (wasm.build !== 'mt') {
    throw new ThreadsUnsupportedError(
      'share(): the map is on the single-threaded build; create it after `await init({ threads: true })` where SharedArrayBuffer works (cross-origin isolated pages, Node, Deno)',
    );
  }
  const st = wasm.exports.at_tree_share(tree);
  if (st === Status.INVALID_ARGUMENT) {
    throw new ThreadsUnsupportedError('share(): a persistent store cannot be shared with workers yet (docs/THREADS.md, phase 1)');
  }
  if (st !== Status.OK) throw errorFromStatus(st, 'share');
  return { kind: KIND, instance: wasm.attachHandle(stackSize), tree, keys: map.keyEncoding, values: map.valueEncoding };
}

/** @internal An attach given a codec (or another name) for an encoding the map or store was
 * shared with by name: InvalidArgumentError. It was ignored without a word, the named encoding
 * used (a threads probe, session 35). `what`: 'attach(): the map', ... */
export function checkNamedEncodings(handle: { keys: string; values: string }, options: { keys?: unknown; values?: unknown } | undefined, what: string): void {
  for (const [o, shared, given] of [['keys', handle.keys, options?.keys], ['values', handle.values, options?.values]] as const) {
    if (shared !== 'custom' && given !== undefined && given !== shared) {
      throw new InvalidArgumentError(`${what} was shared with the '${shared}' ${o === 'keys' ? 'key' : 'value'} encoding: options.${o} is only for one shared with a custom codec (leave it out)`);
    }
  }
}

/** `BTreeMap.attach(handle)`: the shared map, in this worker (or thread). */
export async function attachMap<K, V>(handle: SharedMapHandle, options?: AttachMapOptions<K, V>): Promise<BTreeMap<K, V>> {
  if (handle === null || typeof handle !== 'object' || handle.kind !== KIND || typeof handle.tree !== 'number') {
    throw new InvalidArgumentError('attach(): not a handle from map.share()');
  }
  const keys = handle.keys === 'custom' ? options?.keys : handle.keys;
  const values = handle.values === 'custom' ? options?.values : handle.values;
  if (keys === undefined || values === undefined) {
    throw new InvalidArgumentError('attach(): the map was shared with a custom codec: pass the same codec (options.keys / options.values)');
  }
  checkNamedEncodings(handle, options, 'attach(): the map');
  // One instance per attach, on the stack share() reserved for it.
  const wasm = await loadWasm({ attach: handle.instance });
  const detach = (): void => {
    live.delete(detach);
    detachInstance(wasm);
  };
  const attach: AttachTree = { tree: handle.tree, borrowed: true, onFree: detach };
  const opts = { wasm, keys, values, [ATTACH_TREE]: attach } as unknown as BTreeMapOptions<K, V>;
  let map: BTreeMap<K, V>;
  try {
    map = new BTreeMap<K, V>(null, opts);
  } catch (e) {
    try {
      detachInstance(wasm);
    } catch {
      // (out of memory making the runtime: the original error says so)
    }
    throw e;
  }
  // (weakly: a map dropped without free() is freed by its finalizer, which a strong reference
  // here would keep from running)
  const ref = new WeakRef(map);
  trackAttached(detach, wasm, handle.tree, () => ref.deref()?.free());
  return map;
}

/** Registers the detach function of an attached map or store of this thread (freed at the
 * Node worker's 'exit' if still open); the detach must call untrackAttached. `free`: a map's
 * own free(), which a web or Deno worker's close() calls (stores have none: see freeMapsAtClose). */
export function trackAttached(detach: () => void, wasm: AdaptreeWasm, tree: number, free?: () => void): void {
  live.set(detach, { wasm, tree, free });
  watchExit();
}

export function untrackAttached(detach: () => void): void {
  live.delete(detach);
}

/** An attached map was freed: its instance's areas, context and stack go back to the memory.
 * (Also for attached stores: store.ts.) */
export function detachInstance(wasm: AdaptreeWasm): void {
  if (wasm.released) return;
  runtimeOf(wasm).release();
  wasm.release();
}

/** Attached maps of this thread not yet freed (their detach functions, instances and trees). */
const live = new Map<() => void, { wasm: AdaptreeWasm; tree: number; free?: () => void }>();
let watching = false;

/** Gives back the stacks of this thread's attached maps not yet freed: the thread ends. */
function freeLive(): void {
  for (const [d, { wasm, tree }] of [...live]) {
    // Ending inside a call on the tree (process.exit() in a storage callback or a codec): the
    // tree's latch may be held and its pages half changed. Detaching gave the stack back and
    // left the owner waiting for that latch for ever (a probe, session 31): the memory is
    // marked lost instead, as markWorkerLost() does, and every thread's next call throws
    // InstanceUnusableError.
    if (wasm.build === 'mt' && (runtimeOf(wasm).busy !== 0 || inHostCall(wasm.memory))) {
      live.delete(d);
      wasm.markLost(tree);
    } else {
      d();
    }
  }
}

/** A web or Deno worker calls close(): its attached maps are freed as their own free() does
 * (calls on them afterwards, which a browser runs to the end of the task, throw ClosedError).
 * Not a map in a call (close() from a codec: the call goes on after close() returns), and not
 * attached stores, whose async calls and deferred commits may still run after close(): freed
 * under them, a pending commit failed on closed files and left the shared store read-only for
 * every thread, and a map freed by its detach alone went on working on the memory it had given
 * back (the verify35 probe). Those keep their stacks, as before. */
function freeMapsAtClose(): void {
  for (const [d, { wasm, free }] of [...live]) {
    if (free === undefined || (wasm.build === 'mt' && (runtimeOf(wasm).busy !== 0 || inHostCall(wasm.memory)))) continue;
    try {
      free();
    } catch {
      live.delete(d); // (the owner freed the tree, say: nothing more to give back here)
    }
  }
}

/** A worker whose script ends with attached maps open gives their stacks back: Node at
 * 'exit' (the script returned, or process.exit()); a web or Deno worker when it calls
 * self.close(), which is wrapped for that (no event fires there: each such worker kept ~1 MiB
 * of the shared memory for good, a threads probe, session 35; freeMapsAtClose says what it
 * frees). worker.terminate() from outside runs no code in the worker: the pool frees its
 * workers' maps before it ends them. */
function watchExit(): void {
  if (watching) return;
  watching = true;
  const proc = (globalThis as { process?: { once?(e: string, f: () => void): unknown } }).process;
  if (typeof proc?.once === 'function') proc.once('exit', freeLive);
  const scope = globalThis as { WorkerGlobalScope?: unknown; close?: unknown };
  if (typeof scope.WorkerGlobalScope === 'function' && globalThis instanceof (scope.WorkerGlobalScope as new () => object) && typeof scope.close === 'function') {
    const close = scope.close as (this: unknown) => void;
    Object.defineProperty(globalThis, 'close', {
      configurable: true,
      writable: true,
      value: function close_(this: unknown): void {
        try {
          freeMapsAtClose();
        } finally {
          close.call(globalThis);
        }
      },
    });
  }
}

/**
 * A worker using this shared map (or shared store) ended during a call on it (Node: its 'exit' event came while
 * a call was in flight; any runtime: you terminated it mid-call). It may have held the tree's
 * latch and left the tree half-modified, or held the allocator's lock, so nothing on this
 * memory can be trusted: this wakes every thread waiting for the tree's latch and makes the
 * whole wasm memory unusable: every call on every map of it, in every thread, then throws
 * InstanceUnusableError (code INSTANCE_POISONED). Load a new instance to go on. WorkerPool
 * does this itself. Call it from a thread that is not itself inside a call on the tree.
 * An opfs store opened on a browser's main thread (its tree is in the package's worker)
 * throws ThreadsUnsupportedError and nothing is poisoned.
 */
export function markWorkerLost(map: BTreeMap<unknown, unknown> | HasTree): void {
  // (anything else was a TypeError from a private field, with no code: a threads probe, session 35)
  if (!(map instanceof BTreeMap) && (map === null || typeof map !== 'object' || !(TREE_OF in map))) {
    throw new InvalidArgumentError('markWorkerLost(): not a BTreeMap or BTreeStore');
  }
  let of: { wasm: AdaptreeWasm; tree: number };
  try {
    of = treeOfAny(map);
  } catch (e) {
    // (an object that passes instanceof but is no map: a Proxy of one, Object.create(BTreeMap.prototype))
    if (e instanceof TypeError) throw new InvalidArgumentError('markWorkerLost(): not a BTreeMap or BTreeStore');
    throw e;
  }
  const { wasm, tree } = of;
  if (wasm.build !== 'mt') throw new ThreadsUnsupportedError('markWorkerLost(): the map is on the single-threaded build');
  wasm.markLost(tree);
}

/** @internal A store's wasm runtime and tree address (BTreeStore implements it): what
 * markWorkerLost and WorkerPool need of a store without reaching into its fields. */
export const TREE_OF: unique symbol = Symbol('adaptree.tree-of');
/** @internal Something with a tree in some wasm memory other than a map: a store. */
export interface HasTree {
  readonly [TREE_OF]: { wasm: AdaptreeWasm; tree: number };
}
/** @internal The wasm runtime and tree address of a map or a store. */
export function treeOfAny(x: BTreeMap<unknown, unknown> | HasTree): { wasm: AdaptreeWasm; tree: number } {
  return TREE_OF in x ? x[TREE_OF] : treeOf(x);
}
