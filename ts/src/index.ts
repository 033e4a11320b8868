/**
 * adaptree: an ordered key-value index for the web, a B+-Tree in wasm with a Map-like API.
 *
 * ```ts
 * import { init, BTreeMap } from 'adaptree';
 * await init();                                   // loads the wasm once
 * const m = new BTreeMap<string, { n: number }>();
 * m.set('b', { n: 2 }).set('a', { n: 1 });
 * [...m.keys()];                                  // ['a', 'b']  (key order, unlike Map)
 * [...m.entries({ gte: 'a', lt: 'b' })];          // [['a', { n: 1 }]]
 * m.free();                                       // or `using m = new BTreeMap()`
 * ```
 *
 * ## Methods (n entries, k returned, b batch size)
 *
 * | method                                   | does                                                  | cost              |
 * |------------------------------------------|-------------------------------------------------------|-------------------|
 * | `new BTreeMap(entries?, options?)`       | like `new Map(entries)`; options: keys, values, layout, wasm, fill | O(k log n), one call |
 * | `get(k)` / `has(k)`                      | as Map                                                | O(log n)          |
 * | `set(k, v)`                              | as Map, returns the map                               | O(log n)          |
 * | `delete(k)`                              | as Map, true if it was there                          | O(log n)          |
 * | `clear()`, `size`                        | as Map (`size` is O(1))                               | O(pages), O(1)    |
 * | `keys/values/entries(range?)`, `[Symbol.iterator]`, `forEach` | key order; `range` = {gt, gte, lt, lte, reverse, limit} | O(log n + k) |
 * | `first()` / `last()`                     | `[key, value]` with the smallest / largest key        | O(log n)          |
 * | `nextHigher(k)` / `nextLower(k)`         | `[key, value]` with the next key > k / < k            | O(log n)          |
 * | `deleteRange(range)`                     | removes keys within gt/gte/lt/lte (`{}`: all); returns the count | O(log n + k) |
 * | `getMany(keys)`                          | values (undefined where absent), one call into wasm   | O(b log n)        |
 * | `setMany(entries)`                       | sets all, one call; a bad entry throws before any change | O(b log n)     |
 * | `stats()`                                | layout counts, height, pages, bytes, fill per level   | O(n / page)       |
 * | `compact()`                              | XMerge over the tree: packs underfull neighbour leaves; returns pages freed | O(n / page) |
 * | `checkInvariants()`                      | runs the core's checker; CorruptionError on failure   | O(n)              |
 * | `free()`, `[Symbol.dispose]()`           | releases wasm memory; later calls throw ClosedError   | O(pages)          |
 *
 * ## How it differs from Map
 *
 * - Iteration is in key order (byte order of the encoded keys), not insertion order.
 * - Keys are compared by encoding, not identity: two equal `Uint8Array`s or tuples are one key;
 *   keys and values come back as new objects (values are stored, not referenced: `json` by default).
 * - Keys have a type fixed per map (`keys` option, default `'utf8'`): another type is a
 *   TypeError (InvalidKeyError), an encoded key over 1024 bytes a RangeError (KeyTooLargeError;
 *   a set under the `baseline` layout takes keys up to 1011 bytes).
 *   Number keys: -0 is stored as +0 (as Map does), NaN is an InvalidKeyError.
 * - Iterators resume by key: changes made while iterating are seen if they lie ahead,
 *   never make a key appear twice, never make a surviving key be skipped.
 * - The memory lives in wasm: call `free()` (a FinalizationRegistry is only a safety net).
 *
 * Errors: every error has a stable `code` and `isAdaptreeError(e)` recognises them all
 * (errors.ts). Encodings: `utf8Key`, `bytesKey`, `numberKey`, `bigintKey`, `tupleKey`,
 * `jsonValue`, `utf8Value`, `bytesValue` (each source file documents its byte layout and order).
 * Persistent stores: `BTreeStore` (docs/STORE.md). The abstract-level database: `adaptree/level`.
 *
 * @module adaptree
 */
import { loadWasm, type AdaptreeWasm, type LoadOptions } from './wasm.js';
import { getDefaultWasm, setDefaultWasm } from './map.js';

export {
  BTreeMap,
  type BTreeMapOptions,
  type BTreeStats,
  type DeleteRange,
  type KeyEncodingName,
  type KeyEncodingFor,
  type KeyEncodingTypes,
  type LayoutName,
  type Range,
  type Bound,
  type ValueEncodingName,
  type ValueEncodingFor,
  type ValueEncodingTypes,
} from './map.js';
export { BTreeStore, type StoreOptions, type StoreStats, type StorageName, type SharedStoreHandle, type AttachStoreOptions } from './store.js';
export type {
  AsyncBackend,
  AsyncStorePages,
  OpenStorageOptions,
  PageDelta,
  StorageBackend,
  SyncBackend,
  SyncFile,
  SyncStoreFiles,
} from './storage/types.js';
export { memoryStorage, MemoryFile, type MemoryStorage } from './storage/memory.js';
export { nodeStorage } from './storage/node.js';
export { denoStorage } from './storage/deno.js';
export { opfsStorage } from './storage/opfs.js';
export {
  durableObjectStorage,
  type DurableObjectBackend,
  type DurableObjectBackendOptions,
  type DurableObjectSqlCursorLike,
  type DurableObjectSqlLike,
  type DurableObjectStorageLike,
} from './storage/durable-object.js';
export {
  durableObjectKvStorage,
  type DurableObjectKvBackend,
  type DurableObjectKvStorageLike,
  type DurableObjectKvTxnLike,
} from './storage/durable-object-kv.js';
export { indexedDBStorage, type IndexedDBStorageOptions, type IndexedDBDurability } from './storage/indexeddb.js';
export { asyncMemoryStorage, createAsyncMemoryStorage, type AsyncMemoryStorage } from './storage/async-memory.js';
export {
  ADAPTREE_ERROR,
  AbortedError,
  AdaptreeError,
  ClosedError,
  CorruptionError,
  InvalidArgumentError,
  InvalidKeyError,
  InvalidValueError,
  InstanceUnusableError,
  IoError,
  KeyTooLargeError,
  LockedError,
  PageFaultError,
  ReadOnlyError,
  NotInitializedError,
  OutOfMemoryError,
  QuotaExceededError,
  ReentrancyError,
  ThreadsUnsupportedError,
  ValueTooLargeError,
  isAdaptreeError,
  type AdaptreeErrorCode,
  type AdaptreeErrorLike,
} from './errors.js';
export { type Progress, type ProgressCallback, type ProgressPhase } from './progress.js';
export { MAX_KEY_SIZE, compareBytes, type KeyCodec, type ValueCodec } from './encoding/codec.js';
export { utf8Key } from './encoding/utf8.js';
export { bytesKey } from './encoding/bytes.js';
export { numberKey } from './encoding/number.js';
export { bigintKey } from './encoding/bigint.js';
export { tupleKey, type Tuple, type TupleElement } from './encoding/tuple.js';
export { jsonValue, utf8Value, bytesValue } from './encoding/values.js';
export { markWorkerLost, type SharedMapHandle, type AttachMapOptions } from './threads.js';
export { WorkerPool, type WorkerPoolOptions } from './pool.js';
export {
  loadWasm,
  threadsAvailable,
  type AdaptreeWasm,
  type AttachHandle,
  type LoadOptions,
  type WasmBuild,
  type WasmMemory,
  type WasmModule,
  type WasmResponse,
  type WasmSource,
  type WasmUrl,
} from './wasm.js';

export {
  InspectableMap,
  decodeHeader,
  hexToBytes,
  inspectNode,
  inspectTree,
  nodeDump,
  pageImage,
  type NodeDump,
  type NodeHeader,
  type NodeSummary,
  type NodeView,
  type TreeView,
} from './inspect.js';

let pending: { key: string; promise: Promise<AdaptreeWasm> } | undefined;

/**
 * Loads the wasm once and makes it the instance `new BTreeMap()` uses. Calling it again
 * with the same options returns the same instance (unless that one was poisoned,
 * `InstanceUnusableError`: then it loads a new one); with other options (`threads`, `wasm`,
 * `attach`, `maxMemory`) it loads a new one and makes that the default (maps made before keep
 * theirs). `maxMemory` caps wasm memory in bytes (README, "Memory"): past it calls throw
 * OutOfMemoryError and leave the map as it was.
 * `threads: true` gives the mt build where SharedArrayBuffer is available, else st
 * (check `.build`).
 */
export function init(options: LoadOptions = {}): Promise<AdaptreeWasm> {
  const key =
    options.wasm === undefined && options.attach === undefined ? `threads:${!!options.threads},maxMemory:${options.maxMemory ?? ''}` : '';
  // (not once that instance is poisoned: `new BTreeMap()` would throw INSTANCE_POISONED for the
  // rest of the process; a new-user probe, session 23)
  if (key !== '' && pending !== undefined && pending.key === key && getDefaultWasm()?.poisoned !== true) return pending.promise;
  const promise = loadWasm(options).then(
    (w) => {
      if (pending?.promise === promise) setDefaultWasm(w);
      return w;
    },
    (e: unknown) => {
      if (pending?.promise === promise) pending = undefined;
      throw e;
    },
  );
  pending = { key, promise };
  return promise;
}

/** The instance `init()` loaded, or undefined before it resolves. */
export function initialized(): AdaptreeWasm | undefined {
  return getDefaultWasm();
}
