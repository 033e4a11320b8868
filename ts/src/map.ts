/**
 * BTreeMap: a synchronous, ordered `Map` whose entries live in a B+-Tree in wasm memory.
 *
 * How a call crosses into wasm (the hot path allocates nothing but the values it returns):
 * - keys are encoded straight into a fixed key area of wasm memory (one per wasm instance);
 * - values are written into a growable data area of the same instance;
 * - results come back in the context's result block (key ptr/len, value ptr/len, aux) and
 *   values are decoded from views of wasm memory;
 * - getMany/setMany and iterator batches cross the boundary once per batch.
 *
 * Iterators resume by key, not position: each holds its own core cursor and pulls records
 * in batches that it copies out of wasm memory. Every successful modification bumps the
 * map's modification counter; an iterator that sees a new count drops the rest of its batch
 * and re-seeks its cursor just after the last key it returned. So it never returns a key
 * twice, never skips a key that survives, and sees keys inserted ahead of it.
 *
 * This file is the class; the parts it runs on live in map/: types.ts (options, ranges,
 * stats), runtime.ts (per-instance memory views and areas), codecs.ts (encoder choice),
 * handle.ts (tree handle, cursors, errors), put.ts (writing keys and values into wasm
 * memory), range.ts (bounds) and iterator.ts (batched, modification-safe iterators).
 */
import { LayoutConfig, Result, SeekFlags, RangeFlags, RANGE_NEED_PAGE } from './abi.js';
import {
  AdaptreeError,
  ClosedError,
  CorruptionError,
  InvalidArgumentError,
  InvalidKeyError,
  InvalidValueError,
  NotInitializedError,
  OutOfMemoryError,
  PageFaultError,
  ReentrancyError,
  Status,
  errorFromStatus,
  listOf,
  withApplied,
} from './errors.js';
import { ENCODE_INTO_VIEW, encodeToArray, readUtf8, utf8Key } from './encoding/utf8.js';
import { decodeWith, encodeWith } from './encoding/codec.js';
import { bytesValue, jsonValue } from './encoding/values.js';
import { BatchCopy } from './map/batch.js';
import { SHRINK_ABOVE, type Runtime, runtimeOf, getDefaultWasm } from './map/runtime.js';
import { numberKey } from './encoding/number.js';
import { tupleKey } from './encoding/tuple.js';
import { bytesKey } from './encoding/bytes.js';
import { keyEncoderOf, valueEncoderOf } from './map/codecs.js';
import { type Handle, fail, freeHandle, newCursor, stateError, treeRegistry } from './map/handle.js';
import { putKey, putKeyA, prepareValue, preparedSize, putValue, putValueInto } from './map/put.js';
import { boundsOf, checkDeleteRange } from './map/range.js';
import { BTreeIterator, MODE_ENTRIES, MODE_KEYS, MODE_VALUES, entry } from './map/iterator.js';
import { booleanFields } from './options.js';
import { PROGRESS_EVERY, batchOptions, report, type ProgressCallback } from './progress.js';
import { attachMap, shareMap, type AttachMapOptions, type SharedMapHandle } from './threads.js';
import { checkWasmOption, type AdaptreeWasm } from './wasm.js';
import { ATTACH_TREE, KNOWN_OPTIONS, type AttachTree, type BTreeMapOptions, type BTreeStats, type DeleteRange, type Range } from './map/types.js';

/** setMany batches past this many bytes are encoded in a JS buffer first (see setMany). */
const STAGE_ABOVE = 16 << 20;

export { setDefaultWasm, getDefaultWasm } from './map/runtime.js';
export {
  ATTACH_TREE,
  type AttachTree,
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
} from './map/types.js';

declare global {
  interface SymbolConstructor {
    /**
     * Declared here too because BTreeMap and its iterators are `Disposable` (`using m = ...`)
     * and their .d.ts names `Symbol.dispose`, which lib es2022 and DOM projects do not declare
     * (it is in lib esnext.disposable, @types/node, Deno and current runtimes). Where the
     * runtime lacks it, the classes simply have no such method (see the end of this file).
     */
    readonly dispose: unique symbol;
    /** Likewise for BTreeStore (`await using s = ...`), which is `AsyncDisposable`. */
    readonly asyncDispose: unique symbol;
  }
}

/** A value getMany did not find (its length word). */
const ABSENT = 0xffffffff;

// ----------------------------------------------------------------------------- the map

/**
 * `Map`'s members that BTreeMap implements: all of them except the upsert proposal's
 * `getOrInsert` / `getOrInsertComputed`, which TypeScript 6's lib esnext (Deno's default)
 * adds to `Map`. Naming them here keeps the shipped .d.ts valid under those libs; once
 * BTreeMap has the two methods this can be `Map<K, V>` again.
 */
export interface MapMembers<K, V> extends Omit<Map<K, V>, 'getOrInsert' | 'getOrInsertComputed' | 'set'> {
  set(key: K, value: V): this;
}

/** Decodes getMany's output (a length word, ABSENT or the value's bytes, per key) from
 * u8[p, p + len) into out[at, ...): m values, or (m < 0) all the output holds; returns how many. */
function decodeMany<V>(h: Handle<unknown, V>, u8: Uint8Array, dv: DataView, p: number, len: number, out: (V | undefined)[],
                       at: number, m: number, shared: boolean): number {
  const end = p + len;
  // `bytes`: one copy of the output for all values longer than OWN_COPY_MAX (subarrays of it).
  const bc = (h.venc as unknown) === bytesValue ? new BatchCopy(u8, p, end) : null;
  let i = 0;
  for (; m < 0 ? p < end : i < m; i++) {
    const vl = dv.getUint32(p, true);
    p += 4;
    if (vl === ABSENT) {
      out[at + i] = undefined;
    } else {
      out[at + i] = bc !== null ? (bc.value(p, vl) as V) : h.venc.decodeFrom(u8, p, vl, shared);
      p += vl;
    }
  }
  return i;
}

/** @internal threads.ts: the instance and tree address of a map. */
export let treeOf: (m: BTreeMap<unknown, unknown>) => { wasm: AdaptreeWasm; tree: number };
/** @internal store.ts: a key or value as it is when an async call is made. An async backend
 * runs the call later (behind earlier calls) and again after each page fault, and a key or
 * value object the caller changed meanwhile was read then: a deleteAsync removed another key,
 * a setAsync stored the changed value (a probe, session 32). Primitives come back as they are,
 * objects as a copy made by encoding and decoding them (which encodes to the same bytes). */
export let frozenKey: <K>(m: BTreeMap<K, unknown>, key: K) => K;
export let frozenValue: <V>(m: BTreeMap<unknown, V>, value: V) => V;
/** A custom codec encodes frozenKey's (frozenValue's) copy again when the call runs: one whose
 * encode refuses what its decode returns failed then, blaming the caller's argument (the verify
 * and browser probes, session 32). Tried now, and said. */
function encodesAgain(what: 'key' | 'value', encode: () => unknown): void {
  try {
    encode();
  } catch (e) {
    const message = `the ${what} codec's encode refused what its decode returned: an async call on an asynchronous backend encodes a decoded copy of the ${what} (docs/STORE.md), so encode must take decode's output`;
    throw what === 'key' ? new InvalidKeyError(message, { cause: e }) : new InvalidValueError(message, { cause: e });
  }
}
/** @internal The tree under `m` changed without a call of the map (a store's reader moved to a
 * newer commit, store.ts): live iterators re-read after their last key, as after a write. */
export let treeMoved: (m: BTreeMap<unknown, unknown>) => void;

/**
 * An ordered map in wasm memory with the API of `Map`. Iteration is in key order (the
 * one documented difference); keys are compared by their encoding, so `bytes` and `tuple`
 * keys compare by content. Call `free()` (or `using`) when done.
 */
export class BTreeMap<K = string, V = unknown> implements MapMembers<K, V> {
  readonly #h: Handle<K, V>;

  /**
   * Like `new Map(entries)`, plus options (key and value encodings, layout, wasm instance).
   * The entries go in as one batch. Throws NotInitializedError before `await init()`.
   */
  constructor(entries?: Iterable<readonly [K, V]> | null, options?: BTreeMapOptions<K, V>) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new InvalidArgumentError('options must be an object');
    }
    // `new BTreeMap({ keys: 'number' })`: options where the entries go (setMany would say the
    // entries are not iterable, which does not tell what went wrong).
    if (entries !== null && typeof entries === 'object' && typeof (entries as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function' &&
        Object.keys(entries).some((k) => KNOWN_OPTIONS.has(k))) {
      throw new InvalidArgumentError('new BTreeMap(entries, options): options go second, as in new BTreeMap(null, { keys: ... })');
    }
    // A misspelt option (say `keyEncoding` for `keys`) would otherwise silently give the defaults.
    for (const name of Object.keys(options ?? {})) {
      if (!KNOWN_OPTIONS.has(name)) {
        throw new InvalidArgumentError(`unknown option '${name}' (${[...KNOWN_OPTIONS].join(', ')})`);
      }
    }
    const wasm = options?.wasm !== undefined ? checkWasmOption(options.wasm, 'BTreeMap') : getDefaultWasm();
    if (wasm === undefined) throw new NotInitializedError();
    const rt = runtimeOf(wasm);
    const layoutName = options?.layout ?? 'adaptive';
    const layout = Object.prototype.hasOwnProperty.call(LayoutConfig, layoutName) ? LayoutConfig[layoutName] : undefined;
    if (layout === undefined) {
      throw new InvalidArgumentError(`unknown layout '${String(layoutName)}' (${Object.keys(LayoutConfig).join(', ')})`);
    }
    const kenc = keyEncoderOf<K>(options?.keys, rt);
    const venc = valueEncoderOf<V>(options?.values, rt);
    const fill = options?.fill === undefined ? undefined : booleanFields(options.fill, 'fill', ['redistribute', 'edges'] as const, " (xmerge is a store's)");
    const attach = (options as { [ATTACH_TREE]?: AttachTree } | undefined)?.[ATTACH_TREE];
    if (attach !== undefined && fill !== undefined) throw new InvalidArgumentError("'fill' is the store's option here, not the map's");
    const tree = attach !== undefined ? attach.tree : rt.ex.at_tree_new(layout);
    if (tree === 0) throw new OutOfMemoryError('out of wasm memory creating a tree');
    if (fill?.redistribute === true || fill?.edges === false) {
      const setFill = rt.ex.at_tree_set_fill;
      const st = setFill === undefined ? undefined : setFill(tree, (fill.redistribute === true ? 1 : 0) | (fill.edges === false ? 4 : 0));
      if (st === undefined || st < 0) {
        rt.ex.at_tree_free(tree);
        throw st === undefined ? new AdaptreeError('this wasm build has no fill option (missing at_tree_set_fill)', 'INTERNAL') : errorFromStatus(st, 'fill');
      }
    }
    this.#h = {
      rt, tree, mod: 0, cursors: new Set(), pool: [], util: 0, kenc, venc,
      wellFormedValues: venc === jsonValue,
      encodeIntoKeys: (kenc as unknown) === utf8Key && !rt.shared && ENCODE_INTO_VIEW,
      numKeys: (kenc as unknown) === numberKey,
      guardKeys: (kenc as unknown) === tupleKey || (kenc as unknown) === bytesKey,
      bytesKeys: (kenc as unknown) === bytesKey,
      onFree: attach?.onFree,
      closedMessage: attach?.closed,
      borrowed: attach?.borrowed === true,
      hooks: attach?.hooks,
    };
    treeRegistry?.register(this, this.#h as Handle<unknown, unknown>, this.#h);
    if (entries !== undefined && entries !== null) {
      try {
        this.setMany(entries);
      } catch (e) {
        this.free();
        // (the constructor's entries: its errors named setMany, which the caller never called)
        if (e instanceof AdaptreeError && e.message.startsWith('setMany: ')) e.message = 'new BTreeMap(entries): ' + e.message.slice(9);
        throw e;
      }
    }
  }

  /** Number of entries; O(1). */
  get size(): number {
    const h = this.#h;
    if (h.tree === 0) throw new ClosedError();
    const n = h.rt.ex.at_count(h.tree);
    if (n < 0) throw new ClosedError('the shared map was freed by its owner');
    return n;
  }

  /** The value stored under `key`, or undefined.
   *
   * `bytes` values are copies that never alias wasm memory; one of 65 B to 2 KiB is a view of a
   * 16 KiB ArrayBuffer it shares with other values (as Node's Buffer pool does: an array of its
   * own costs a backing-store allocation, microseconds). Writing into it changes no other value;
   * its `.buffer` is the shared one: `slice()` it before transferring the buffer. */
  get(key: K): V | undefined {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    if (h.numKeys && typeof key === 'number' && key === key) {
      // A number key goes as a double: encoded inside wasm, no memory write (NaN takes the
      // general path, which throws InvalidKeyError).
      let st = rt.ex.at_get_num(h.tree, rt.ctx, key);
      if (st !== Status.OK) {
        if (st === Status.NOT_FOUND) return undefined;
        if (st === Status.OUT_OF_MEMORY && rt.dropData()) st = rt.ex.at_get_num(h.tree, rt.ctx, key);
        if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'get');
      }
      return this.#value(h, rt);
    }
    rt.refresh();
    const len = putKeyA(h, key);
    let st = rt.ex.at_get(h.tree, rt.ctx, rt.keyA, len);
    if (st !== Status.OK) {
      if (st === Status.NOT_FOUND) return undefined;
      // A large value needs output room: the data area's memory may be all there is.
      if (st === Status.OUT_OF_MEMORY && rt.dropData()) st = rt.ex.at_get(h.tree, rt.ctx, rt.keyA, len);
      if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'get');
    }
    return this.#value(h, rt);
  }

  /** The value at_get / at_get_num left in the result block. */
  #value(h: Handle<K, V>, rt: Runtime): V {
    rt.refresh();
    const dv = rt.dv;
    return h.venc.decodeFrom(rt.u8, dv.getUint32(rt.res + Result.VALUE_PTR, true), dv.getUint32(rt.res + Result.VALUE_LEN, true), rt.shared);
  }

  /** Whether `key` is present. */
  has(key: K): boolean {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    let st: number;
    if (h.numKeys && typeof key === 'number' && key === key) {
      st = rt.ex.at_has_num(h.tree, rt.ctx, key);
    } else {
      rt.refresh();
      st = rt.ex.at_has(h.tree, rt.ctx, rt.keyA, putKeyA(h, key));
    }
    if (st === Status.OK) return true;
    if (st === Status.NOT_FOUND) return false;
    throw fail(h as Handle<unknown, unknown>, st, 'has');
  }

  /** Stores `value` under `key`; returns the map. A bad key or value throws, map unchanged. */
  set(key: K, value: V): this {
    const h = this.#h;
    // First the value (it may run user code: toJSON, a custom codec), then the memory writes.
    const p = prepareValue(h, value);
    const rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    let st: number;
    // Under the re-entrancy guard: a `bytes` value may be a Proxy (or a subclass with a getter),
    // whose traps run user code as it is copied, after the key went into key area A; a set from
    // there overwrote that key, and the value went in under the other key.
    rt.busy++;
    try {
      const vptr = rt.reserve(preparedSize(p));
      if (h.numKeys && typeof key === 'number' && key === key) {
        const vend = putValue(rt, p, vptr, h.wellFormedValues);
        st = rt.ex.at_set_num(h.tree, rt.ctx, key, vptr, vend - vptr);
      } else {
        const klen = putKeyA(h, key);
        const vend = putValue(rt, p, vptr, h.wellFormedValues);
        st = rt.ex.at_set(h.tree, rt.ctx, rt.keyA, klen, vptr, vend - vptr);
      }
    } finally {
      rt.busy--;
    }
    if (rt.dataCap > SHRINK_ABOVE) rt.shrink();
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'set');
    h.mod++;
    return this;
  }

  /** Removes `key`; true if it was present. */
  delete(key: K): boolean {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    let st: number;
    if (h.numKeys && typeof key === 'number' && key === key) {
      st = rt.ex.at_remove_num(h.tree, rt.ctx, key);
    } else {
      rt.refresh();
      st = rt.ex.at_remove(h.tree, rt.ctx, rt.keyA, putKeyA(h, key));
    }
    if (st === Status.OK) {
      h.mod++;
      return true;
    }
    if (st === Status.NOT_FOUND) return false;
    throw fail(h as Handle<unknown, unknown>, st, 'delete');
  }

  /** Removes every entry. */
  clear(): void {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const st = rt.ex.at_clear(h.tree);
    h.mod++;
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'clear');
  }

  /** Entries `[key, value]` in key order, optionally within a range.
   *
   * `bytes` values (and `bytes` keys) are views of one copy of each batch the iterator reads (up
   * to 1024 records), as in {@link BTreeMap.getMany}: never of wasm memory. */
  entries(range?: Range<K>): MapIterator<[K, V]> {
    return this.#iter<[K, V]>(MODE_ENTRIES, range, 'entries');
  }

  /** Keys in key order, optionally within a range. */
  keys(range?: Range<K>): MapIterator<K> {
    return this.#iter<K>(MODE_KEYS, range, 'keys');
  }

  /** Values in key order, optionally within a range (`bytes` values: see {@link BTreeMap.entries}). */
  values(range?: Range<K>): MapIterator<V> {
    return this.#iter<V>(MODE_VALUES, range, 'values');
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.#iter<[K, V]>(MODE_ENTRIES, undefined, 'iterate');
  }

  #iter<T>(mode: number, range: Range<K> | undefined, what: string): MapIterator<T> {
    const h = this.#h;
    if (h.tree === 0 || h.rt.busy !== 0) throw stateError(h);
    const b = boundsOf(h, range, what);
    return new BTreeIterator<K, V, T>(this, h, mode, b) as unknown as MapIterator<T>;
  }

  /** Calls `callbackfn(value, key, map)` for each entry in key order (entries added ahead are
   * visited). Faster than a loop over entries(): no entry array per entry. */
  forEach(callbackfn: (value: V, key: K, map: Map<K, V>) => void, thisArg?: unknown): void {
    if (typeof callbackfn !== 'function') throw new InvalidArgumentError('forEach: callback is not a function');
    const it = this.#iter<[K, V]>(MODE_ENTRIES, undefined, 'forEach') as unknown as BTreeIterator<K, V, [K, V]>;
    it.each(thisArg === undefined ? (v, k) => callbackfn(v, k, this) : (v, k) => callbackfn.call(thisArg, v, k, this));
  }

  get [Symbol.toStringTag](): string {
    return 'BTreeMap';
  }

  // --------------------------------------------------------------- ordered extras

  /** The entry with the smallest key, or undefined when empty. */
  first(): [K, V] | undefined {
    return this.#seekOne(null, SeekFlags.EDGE);
  }

  /** The entry with the largest key, or undefined when empty. */
  last(): [K, V] | undefined {
    return this.#seekOne(null, SeekFlags.EDGE | SeekFlags.REVERSE);
  }

  /** The entry with the smallest key > `key`, or undefined. */
  nextHigher(key: K): [K, V] | undefined {
    return this.#seekOne({ key }, SeekFlags.EXCLUSIVE);
  }

  /** The entry with the largest key < `key`, or undefined. */
  nextLower(key: K): [K, V] | undefined {
    return this.#seekOne({ key }, SeekFlags.EXCLUSIVE | SeekFlags.REVERSE);
  }

  #seekOne(k: { key: K } | null, flags: number): [K, V] | undefined {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    rt.refresh();
    const len = k === null ? 0 : putKeyA(h, k.key);
    if (h.util === 0) h.util = newCursor(h as Handle<unknown, unknown>);
    const ex = rt.ex;
    let st = ex.at_cursor_seek(h.util, rt.keyA, len, flags);
    if (st === Status.OK) st = ex.at_cursor_next(h.util, rt.ctx, 1);
    if (st !== Status.OK) {
      if (st === Status.NOT_FOUND) return undefined;
      throw fail(h as Handle<unknown, unknown>, st, 'seek');
    }
    rt.refresh();
    const dv = rt.dv, res = rt.res;
    const kp = dv.getUint32(res + Result.KEY_PTR, true), kl = dv.getUint32(res + Result.KEY_LEN, true);
    const vp = dv.getUint32(res + Result.VALUE_PTR, true), vl = dv.getUint32(res + Result.VALUE_LEN, true);
    const key = h.kenc.decodeFrom(rt.u8, dv, kp, kp + kl, rt.shared);
    return entry(key, h.venc.decodeFrom(rt.u8, vp, vl, rt.shared));
  }

  /** Removes every key within the bounds (none given: all); returns how many were removed. */
  deleteRange(range: DeleteRange<K>): number {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const r = checkDeleteRange(range);
    const lo = r.gte !== undefined ? r.gte : r.gt;
    const hi = r.lte !== undefined ? r.lte : r.lt;
    let flags = 0;
    rt.refresh();
    let loLen = 0, hiLen = 0;
    if (lo === undefined) flags |= RangeFlags.LO_NONE;
    else {
      loLen = putKey(h, lo as K, rt.keyA);
      if (r.gt !== undefined) flags |= RangeFlags.LO_EXCLUSIVE;
    }
    if (hi === undefined) flags |= RangeFlags.HI_NONE;
    else {
      hiLen = putKey(h, hi as K, rt.keyB);
      if (r.lt !== undefined) flags |= RangeFlags.HI_EXCLUSIVE;
    }
    const before = rt.ex.at_count(h.tree);
    const n = rt.ex.at_delete_range(h.tree, rt.ctx, rt.keyA, loLen, rt.keyB, hiLen, flags);
    if (n === RANGE_NEED_PAGE) {
      // Async store: the keys removed before the fault stay removed; the caller supplies the
      // page and calls again for the rest (BTreeStore.deleteRangeAsync counts both).
      if (rt.ex.at_count(h.tree) !== before) h.mod++;
      throw fail(h as Handle<unknown, unknown>, Status.NEED_PAGE, 'deleteRange');
    }
    // (fail: a store's map names the store, as get does; it said "deleteRange: corrupt")
    if (n < 0) throw fail(h as Handle<unknown, unknown>, n, 'deleteRange');
    if (n > 0) h.mod++;
    return n;
  }

  /** XMerge over the whole tree (README, "Node fill"): runs of up to 5 neighbour leaves whose
   * free space adds up to a page are packed into one leaf less. Returns the pages freed (kept
   * by the map for its next inserts). Worth it after many deletes. */
  compact(): number {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const compact = rt.ex.at_tree_compact;
    if (compact === undefined) throw new AdaptreeError('this wasm build has no compact (missing at_tree_compact)', 'INTERNAL');
    const st = compact(h.tree, rt.ctx);
    if (st < 0) throw fail(h as Handle<unknown, unknown>, st, 'compact');
    rt.refresh();
    const freed = rt.dv.getUint32(rt.res + Result.AUX, true);
    if (freed > 0) h.mod++;
    return freed;
  }

  /** The values of many keys (undefined where absent), in one call into wasm.
   *
   * `bytes` values: each is a Uint8Array of its own that never aliases wasm memory, but they
   * are views of one copy of the call's output (a copy per value cost microseconds over 64
   * bytes, and ~2x a view under that): a small output goes into a 64 KiB slab shared with other
   * calls' values, a larger one into an ArrayBuffer of its own (then values up to 16 bytes are
   * arrays of their own). Writing into one value changes no other; its `.buffer` is the shared
   * copy, keeping one value keeps that copy alive, and transferring it empties the others. */
  getMany(keys: Iterable<K>): (V | undefined)[] {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const list = listOf(keys, 'getMany: keys');
    const n = list.length;
    if (n === 0) return [];
    const per = 4 + rt.maxKey;
    let used = 0;
    rt.reserve(Math.min(n, 64) * per);
    // (under the re-entrancy guard: a key's encoding may run user code, a tuple's getter or a
    // Proxy, which called into the map and overwrote the keys encoded before it)
    rt.busy++;
    try {
      for (let i = 0; i < n; i++) {
        if (used + per > rt.dataCap) rt.reserve(Math.max(used + per, 2 * rt.dataCap), used);
        const at = rt.data + used;
        const end = h.kenc.encodeInto(list[i]!, rt.u8, rt.dv, at + 4, at + 4 + rt.maxKey);
        rt.dv.setUint32(at, end - at - 4, true);
        used = end - rt.data;
      }
    } finally {
      rt.busy--;
    }
    // The core answers up to ~1 MiB of output a call (at_get_many: result.key_len is then the
    // keys answered); the values are copied out and the next call goes on after them, so wasm
    // memory holds about that much at a time. One call for the whole result grew memory by ~3x
    // the result, for good (100 values of 1 MiB: +242 MiB).
    const out = new Array<V | undefined>(n);
    const custom = h.venc.name === 'custom';
    // Custom decoders run user code (which may call into this map and overwrite the keys still
    // to ask for): their chunks are copied and decoded once every key is answered.
    const pending: Uint8Array[] = [];
    let done = 0, kp = rt.data, st: number;
    for (;;) {
      st = rt.ex.at_get_many(h.tree, rt.ctx, kp, n - done);
      rt.refresh();
      let m: number;
      if (st === Status.NEED_PAGE) {
        // The keys before the fault were answered: their values go with the error, so that
        // BTreeStore.getManyAsync resumes after them.
        m = rt.dv.getUint32(rt.res + Result.KEY_LEN, true);
      } else if (st !== Status.OK) {
        throw fail(h as Handle<unknown, unknown>, st, 'getMany');
      } else {
        m = rt.dv.getUint32(rt.res + Result.KEY_LEN, true) || n - done;
      }
      const dv = rt.dv, u8 = rt.u8;
      const p = dv.getUint32(rt.res + Result.VALUE_PTR, true);
      const outLen = dv.getUint32(rt.res + Result.VALUE_LEN, true);
      if (custom) pending.push(u8.slice(p, p + outLen));
      else decodeMany(h, u8, dv, p, outLen, out, done, m, rt.shared);
      if (st !== Status.OK || done + m >= n) {
        done += m;
        break;
      }
      for (let j = 0; j < m; j++) kp += 4 + dv.getUint32(kp, true);
      done += m;
    }
    if (custom) {
      let at = 0;
      for (const chunk of pending) at += decodeMany(h, chunk, new DataView(chunk.buffer), 0, chunk.length, out, at, -1, false);
    }
    rt.shrink();
    if (done < n) {
      const pageId = rt.dv.getUint32(rt.res + Result.AUX, true);
      out.length = done;
      throw new PageFaultError(pageId, undefined, { applied: done, values: out });
    }
    return out;
  }

  /** Sets many entries in one call into wasm (later duplicates win). Every key and value is
   * checked before anything is written: a bad one throws and the map is unchanged. Sorted
   * entries into an empty map are bulk loaded. `onProgress` ({@link Progress}, phase
   * 'bulk-load') reports the entries encoded; if it throws, AbortedError, map unchanged. A
   * failure inside the core (out of memory, a full disk) may come after a prefix of the batch
   * went in: every error says how many entries, from the first, are in (`applied`). */
  setMany(entries: Iterable<readonly [K, V]>, options?: { onProgress?: ProgressCallback }): this {
    const h = this.#h, rt = h.rt;
    // Every error says how many entries are in (errors.ts `applied`): none until the core's call.
    let applied = 0;
    let n = 0;
    try {
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const onProgress = batchOptions(options, 'setMany');
    const list = listOf(entries, 'setMany: entries');
    n = list.length;
    if (n === 0) {
      // (an attached map whose owner freed the tree is closed, also for no entries)
      if (h.borrowed && rt.ex.at_count(h.tree) < 0) throw new ClosedError('the shared map was freed by its owner');
      return this;
    }
    let used = 0;
    let nextReport = onProgress === undefined ? n : 0;
    // A batch past STAGE_ABOVE bytes is encoded into a JS buffer (`stage`) and copied into
    // wasm memory once, into an area of its exact size: grown in wasm memory step by step, each
    // step's area held while the next was taken, one setMany of N bytes grew the memory by
    // 1.5-3.5 N for good (wasm memory never shrinks; a 300 MB batch took it to 732 MB, session
    // 32). The stage's steps are garbage the JS heap gives back.
    let stage: Uint8Array | undefined;
    let sdv: DataView | undefined;
    rt.busy++;
    try {
      rt.reserve(Math.min(n, 64) * (rt.maxKey + 64));
      for (let i = 0; i < n; i++) {
        if (i === nextReport) {
          report(onProgress!, 'bulk-load', i, n);
          nextReport += PROGRESS_EVERY;
        }
        const e = list[i];
        if (e === null || typeof e !== 'object') throw new InvalidArgumentError(`setMany: entry ${i} is not an entry object`);
        const p = prepareValue(h, e[1]);
        const need = used + 8 + rt.maxKey + preparedSize(p);
        if (stage === undefined) {
          if (need > rt.dataCap) {
            if (need <= STAGE_ABOVE) rt.reserve(Math.max(need, 2 * rt.dataCap), used);
            else {
              stage = new Uint8Array(Math.max(need, 2 * STAGE_ABOVE));
              stage.set(rt.u8.subarray(rt.data, rt.data + used));
              sdv = new DataView(stage.buffer);
            }
          }
        } else if (need > stage.length) {
          const more = new Uint8Array(Math.max(need, Math.ceil(stage.length * 1.5)));
          more.set(stage.subarray(0, used));
          stage = more;
          sdv = new DataView(stage.buffer);
        }
        // [u32 key length][key][u32 value length][value], in the stage or the data area
        const u8 = stage ?? rt.u8, dv = sdv ?? rt.dv, base = stage !== undefined ? 0 : rt.data;
        const kend = h.kenc.encodeInto(e[0], u8, dv, base + used + 4, base + used + 4 + rt.maxKey);
        dv.setUint32(base + used, kend - base - used - 4, true);
        const vend = stage !== undefined ? putValueInto(stage, p, kend + 4, h.wellFormedValues) : putValue(rt, p, kend + 4, h.wellFormedValues);
        dv.setUint32(kend, vend - kend - 4, true);
        used = vend - base;
      }
      if (stage !== undefined) {
        // (the area of its exact size: the small one before it goes first, so that it can be
        // reused)
        rt.dropData();
        rt.reserve(used);
        rt.u8.set(stage.subarray(0, used), rt.data);
        stage = undefined;
      }
      if (onProgress !== undefined) report(onProgress, 'bulk-load', n, n);
    } finally {
      rt.busy--;
    }
    if (h.tree === 0) throw new ClosedError();
    const st = rt.ex.at_set_many(h.tree, rt.ctx, rt.data, n);
    rt.refresh();
    // value_len: entries applied (aux holds the page id on NEED_PAGE): the async store
    // resumes after them (BTreeStore.setManyAsync) instead of re-applying the whole batch.
    applied = rt.dv.getUint32(rt.res + Result.VALUE_LEN, true);
    if (applied > 0 || st === Status.OK) h.mod++;
    if (st === Status.NEED_PAGE) {
      const pageId = rt.dv.getUint32(rt.res + Result.AUX, true);
      rt.shrink();
      throw new PageFaultError(pageId, undefined, { applied });
    }
    rt.shrink();
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'setMany', `${applied} of ${n} entries were applied`);
    return this;
    } catch (e) {
      // (out of memory before the core's call, reserving the batch's area: the map is unchanged,
      // which the message said only through `applied`)
      if (e instanceof OutOfMemoryError && n > 0 && !/ entries were applied/.test(e.message)) e.message = `setMany: ${e.message}; ${applied} of ${n} entries were applied`;
      throw withApplied(e, applied);
    }
  }

  /** Layout counts, height, bytes, fill and more, as reported by the core. */
  stats(): BTreeStats {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const st = rt.ex.at_stats(h.tree, rt.ctx);
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'stats');
    rt.refresh();
    const dv = rt.dv;
    const p = dv.getUint32(rt.res + Result.VALUE_PTR, true), n = dv.getUint32(rt.res + Result.VALUE_LEN, true);
    const s = JSON.parse(readUtf8(rt.u8, p, p + n, rt.shared)) as BTreeStats;
    // The name the `layout` option takes ('semi-dense'; the core says 'semi_dense', which the
    // option refuses: a probe, session 29).
    if (typeof s.config === 'string') s.config = s.config.replace('_', '-');
    return s;
  }

  /** Runs the core's invariant checker; throws CorruptionError with its message on failure. */
  checkInvariants(): void {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const st = rt.ex.at_check(h.tree, rt.ctx);
    if (st === Status.OK) return;
    rt.refresh();
    const dv = rt.dv;
    const p = dv.getUint32(rt.res + Result.VALUE_PTR, true), n = dv.getUint32(rt.res + Result.VALUE_LEN, true);
    const msg = st === Status.CORRUPT && n > 0 ? readUtf8(rt.u8, p, p + n, rt.shared) : '';
    if (st === Status.CORRUPT) throw new CorruptionError(`invariant check failed${msg ? ': ' + msg : ''}`);
    throw fail(h as Handle<unknown, unknown>, st, 'checkInvariants');
  }

  /**
   * Threads (docs/THREADS.md): a handle for `BTreeMap.attach()` in a worker, which then works
   * on this same tree. Only for maps on the mt build (`await init({ threads: true })`); a
   * persistent store throws ThreadsUnsupportedError. This map stays the owner: its free()
   * frees the tree for every worker (their calls then throw ClosedError).
   */
  share(stackSize?: number): SharedMapHandle {
    return shareMap(this as BTreeMap<unknown, unknown>, stackSize);
  }

  /** The map `share()` made a handle of, in this worker; same encodings (pass custom codecs
   * again in `options`). Its free() detaches; only the sharing map frees the tree. */
  static attach<K = string, V = unknown>(handle: SharedMapHandle, options?: AttachMapOptions<K, V>): Promise<BTreeMap<K, V>> {
    return attachMap<K, V>(handle, options);
  }

  static {
    treeOf = (m) => ({ wasm: m.#h.rt.wasm, tree: m.#h.tree });
    treeMoved = (m) => {
      m.#h.mod++;
    };
    frozenKey = <K>(m: BTreeMap<K, unknown>, key: K): K => {
      if (key === null || (typeof key !== 'object' && typeof key !== 'function')) return key;
      const kenc = m.#h.kenc;
      const copy = decodeWith(kenc, encodeWith(kenc, key));
      if (kenc.name === 'custom') encodesAgain('key', () => encodeWith(kenc, copy));
      return copy;
    };
    frozenValue = <V>(m: BTreeMap<unknown, V>, value: V): V => {
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
      const h = m.#h;
      const p = prepareValue(h, value);
      const bytes = typeof p === 'string' ? encodeToArray(p) : p.slice();
      const copy = h.venc.decodeFrom(bytes, 0, bytes.length, false);
      if (h.venc.name === 'custom') encodesAgain('value', () => prepareValue(h, copy));
      return copy;
    };
  }

  /** Releases the tree and its cursors; later calls throw ClosedError. Idempotent. */
  free(): void {
    const h = this.#h;
    if (h.tree === 0) return;
    if (h.rt.busy !== 0) throw new ReentrancyError();
    treeRegistry?.unregister(h);
    freeHandle(h as Handle<unknown, unknown>);
  }

  /** Same as free(): `using m = new BTreeMap()` frees at the end of the block. */
  [Symbol.dispose](): void {
    this.free();
  }

  /** True after free(), and for an attached map (threads.ts) once its owner freed the tree.
   * Never throws: an attached map on an instance markWorkerLost made unusable is not closed
   * (its calls say INSTANCE_POISONED) until it is freed. (It threw InstanceUnusableError, from
   * an attached store's handler of its owner's close too, uncaught; a probe, session 37.) */
  get closed(): boolean {
    const h = this.#h;
    if (h.tree === 0) return true;
    if (!h.borrowed) return false;
    try {
      return h.rt.ex.at_count(h.tree) < 0;
    } catch {
      return false;
    }
  }

  /** The key encoding's name ('utf8', 'number', ..., or 'custom'). */
  get keyEncoding(): string {
    return this.#h.kenc.name;
  }

  /** The value encoding's name ('json', 'utf8', 'bytes' or 'custom'). */
  get valueEncoding(): string {
    return this.#h.venc.name;
  }
}

if (typeof Symbol.dispose !== 'symbol') {
  delete (BTreeMap.prototype as unknown as Record<string, unknown>)['undefined'];
}

