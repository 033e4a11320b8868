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
// attached map's free() releases only its own cursors and instance-side state.
import { Status } from './abi.js';
import type { KeyCodec, ValueCodec } from './encoding/codec.js';
import { ClosedError, InvalidArgumentError, ThreadsUnsupportedError, errorFromStatus } from './errors.js';
import { ATTACH_TREE, BTreeMap, treeOf, type AttachTree, type BTreeMapOptions } from './map.js';
import { loadWasm, type AttachHandle } from './wasm.js';

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
  // One instance per attach, on the stack share() reserved for it.
  const wasm = await loadWasm({ attach: handle.instance });
  const attach: AttachTree = { tree: handle.tree, borrowed: true };
  const opts = { wasm, keys, values, [ATTACH_TREE]: attach } as unknown as BTreeMapOptions<K, V>;
  return new BTreeMap<K, V>(null, opts);
}
