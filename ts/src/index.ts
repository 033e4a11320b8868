/**
 * adaptree: an ordered key-value index for the web, a B+-Tree in wasm with a Map-like API.
 *
 * ```ts
 * import { init, BTreeMap } from 'adaptree';
 * await init();                                   // loads the wasm once
 * const m = new BTreeMap<string, { n: number }>();
 * m.set('b', { n: 2 }).set('a', { n: 1 });
 * [...m.keys()];                                  // ['a', 'b']  (key order, unlike Map)
 * m.free();
 * ```
 */
import { loadWasm, type AdaptreeWasm, type LoadOptions } from './wasm.js';
import { getDefaultWasm, setDefaultWasm } from './map.js';

export {
  BTreeMap,
  type BTreeMapOptions,
  type BTreeStats,
  type DeleteRange,
  type KeyEncodingName,
  type LayoutName,
  type Range,
  type ValueEncodingName,
} from './map.js';
export {
  ADAPTREE_ERROR,
  AdaptreeError,
  ClosedError,
  CorruptionError,
  InvalidArgumentError,
  InvalidKeyError,
  InvalidValueError,
  KeyTooLargeError,
  LockedError,
  NotInitializedError,
  OutOfMemoryError,
  QuotaExceededError,
  ReentrancyError,
  ValueTooLargeError,
  isAdaptreeError,
  type AdaptreeErrorCode,
  type AdaptreeErrorLike,
} from './errors.js';
export { MAX_KEY_SIZE, compareBytes, type KeyCodec, type ValueCodec } from './encoding/codec.js';
export { utf8Key } from './encoding/utf8.js';
export { bytesKey } from './encoding/bytes.js';
export { numberKey } from './encoding/number.js';
export { bigintKey } from './encoding/bigint.js';
export { tupleKey, type Tuple, type TupleElement } from './encoding/tuple.js';
export { jsonValue, utf8Value, bytesValue } from './encoding/values.js';
export {
  loadWasm,
  threadsAvailable,
  type AdaptreeWasm,
  type AttachHandle,
  type LoadOptions,
  type WasmBuild,
  type WasmSource,
} from './wasm.js';

let pending: { key: string; promise: Promise<AdaptreeWasm> } | undefined;

/**
 * Loads the wasm once and makes it the instance `new BTreeMap()` uses. Calling it again
 * with the same options returns the same instance; with other options (`threads`, `wasm`,
 * `attach`) it loads a new one and makes that the default (maps made before keep theirs).
 * `threads: true` gives the mt build where SharedArrayBuffer is available, else st
 * (check `.build`).
 */
export function init(options: LoadOptions = {}): Promise<AdaptreeWasm> {
  const key = options.wasm === undefined && options.attach === undefined ? `threads:${!!options.threads}` : '';
  if (key !== '' && pending !== undefined && pending.key === key) return pending.promise;
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
