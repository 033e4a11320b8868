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
 */
import { LayoutConfig, Result, SeekFlags, RangeFlags, RANGE_NEED_PAGE, type LayoutName } from './abi.js';
import type { AbiExports } from './abi.js';
import type { AdaptreeWasm } from './wasm.js';
import {
  ClosedError,
  CorruptionError,
  InvalidArgumentError,
  InvalidKeyError,
  InvalidValueError,
  KeyTooLargeError,
  NotInitializedError,
  OutOfMemoryError,
  ReentrancyError,
  PageFaultError,
  Status,
  errorFromStatus,
  isAdaptreeError,
} from './errors.js';
import {
  type KeyCodec,
  type KeyEncoder,
  type ValueCodec,
  type ValueEncoder,
  isKeyEncoder,
  isValueEncoder,
} from './encoding/codec.js';
import {
  utf8Key,
  writeUtf8,
  encodeIntoLong,
  encodeIntoStart,
  encodeIntoView,
  encodeToArray,
  isWellFormed,
  readUtf8,
  ENCODE_INTO_MIN,
  ENCODE_INTO_VIEW,
  LONE_SURROGATE,
} from './encoding/utf8.js';
import { bytesKey, isUint8Array } from './encoding/bytes.js';
import { numberKey } from './encoding/number.js';
import { bigintKey } from './encoding/bigint.js';
import { tupleKey } from './encoding/tuple.js';
import { bytesValue, jsonValue, utf8Value } from './encoding/values.js';
import { PROGRESS_EVERY, progressOption, report, type ProgressCallback } from './progress.js';

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

/** Names of the built-in key encodings. */
export type KeyEncodingName = 'utf8' | 'bytes' | 'number' | 'bigint' | 'tuple';
/** Names of the built-in value encodings. */
export type ValueEncodingName = 'json' | 'utf8' | 'bytes';
export type { LayoutName };

export interface BTreeMapOptions<K, V> {
  /** Key encoding; default `'utf8'` (string keys). A custom codec must be order-preserving. */
  keys?: KeyEncodingName | KeyCodec<K>;
  /** Value encoding; default `'json'`. */
  values?: ValueEncodingName | ValueCodec<V>;
  /** Node layout configuration of the tree; default `'adaptive'`. */
  layout?: LayoutName;
  /** The wasm instance to use (from `loadWasm`); default: the one `init()` loaded. */
  wasm?: AdaptreeWasm;
}

const KNOWN_OPTIONS: ReadonlySet<string> = new Set(['keys', 'values', 'layout', 'wasm']);

/** @internal How BTreeStore (store.ts) runs a BTreeMap on a tree it opened itself: the
 * constructor takes this symbol-keyed option instead of creating an in-memory tree, and
 * calls `onFree` once when the tree is released (free(), or the finalizer). */
export const ATTACH_TREE: unique symbol = Symbol('adaptree.attachTree') as never;
export interface AttachTree {
  tree: number;
  onFree?: () => void;
}

/** A key range. At most one lower bound (`gt`/`gte`) and one upper bound (`lt`/`lte`). */
export interface Range<K> {
  gt?: K;
  gte?: K;
  lt?: K;
  lte?: K;
  /** Iterate in descending key order. */
  reverse?: boolean;
  /** Return at most this many entries. */
  limit?: number;
}

/** Bounds for deleteRange (no reverse/limit). */
export type DeleteRange<K> = Pick<Range<K>, 'gt' | 'gte' | 'lt' | 'lte'>;

/** What stats() reports (the core's `at_stats` JSON; fields may be added, never renamed). */
export interface BTreeStats {
  /** Layout configuration name ('adaptive', 'baseline', ...). */
  config: string;
  /** Entries (same as `size`). */
  count: number;
  /** Levels of the tree (1 = a single leaf). */
  height: number;
  /** Pages in use (nodes and overflow pages) and their bytes. */
  pages: number;
  bytes: number;
  /** Used bytes / page bytes over all nodes, 0..1. */
  fill: number;
  page_size: number;
  bytes_per_record: number;
  /** Bytes saved by prefix truncation. */
  prefix_bytes: number;
  /** Node counts per layout. */
  layouts: {
    inner: number;
    basic_leaf: number;
    fingerprint_leaf: number;
    semi_dense_leaf: number;
    fully_dense_leaf: number;
    overflow: number;
    [layout: string]: number;
  };
  /** Per level, leaves first. */
  levels: { level: number; nodes: number; entries: number; fill: number; avg_prefix: number }[];
  [field: string]: unknown;
}

// ----------------------------------------------------------------------------- runtime

/** Records and bytes per iterator batch: small first (cheap `limit: 1` scans), then larger. A range
 * with a limit up to LIMIT_BATCH_RECORDS asks for all of it at once (one call into wasm). */
const FIRST_BATCH_RECORDS = 16;
const LIMIT_BATCH_RECORDS = 64;
const MAX_BATCH_RECORDS = 1024;
const MAX_BATCH_BYTES = 256 * 1024;
/** Strings up to this many UTF-16 units are written by hand; longer with TextEncoder. */
const SHORT_STRING = 256;
/** Longer strings are encoded to a JS array first (exact length) instead of reserving 3x. */
const HUGE_STRING = 1 << 20;
const ABSENT = 0xffffffff;
/** A data area larger than this is freed after use (a one-off huge value keeps no memory). */
const SHRINK_ABOVE = 4 << 20;
const EMPTY = new Uint8Array(0);

/** Per wasm instance: the exports, context, key areas, data area and memory views. */
class Runtime {
  readonly ex: AbiExports;
  readonly mem: WebAssembly.Memory;
  readonly ctx: number;
  readonly res: number;
  readonly shared: boolean;
  readonly maxKey: number;
  /** Two fixed key areas (a range needs two keys), each maxKey + 16 bytes. */
  readonly keyA: number;
  readonly keyB: number;
  /** A growable data area for values and batches. */
  data = 0;
  dataCap = 0;
  /** > 0 while user code (a custom codec, toJSON) runs inside an adaptree call. */
  busy = 0;
  buf: ArrayBufferLike;
  u8: Uint8Array;
  dv: DataView;
  /** Key area A and the data area as views of their own (st only: TextEncoder.encodeInto writes
   * at a view's start); re-created with the other views and when the data area moves. */
  keyAView: Uint8Array;
  dataView: Uint8Array;

  constructor(readonly wasm: AdaptreeWasm) {
    this.ex = wasm.exports;
    this.mem = wasm.memory;
    this.ctx = wasm.ctx;
    this.res = wasm.result ?? this.ex.at_ctx_result(this.ctx);
    this.maxKey = this.ex.at_max_key_size();
    const area = this.maxKey + 16;
    this.keyA = this.ex.at_alloc(2 * area);
    if (this.keyA === 0) throw new OutOfMemoryError('out of wasm memory allocating key areas');
    this.keyB = this.keyA + area;
    this.buf = this.mem.buffer;
    this.shared = typeof SharedArrayBuffer !== 'undefined' && this.buf instanceof SharedArrayBuffer;
    this.u8 = new Uint8Array(this.buf);
    this.dv = new DataView(this.buf);
    this.keyAView = this.u8.subarray(this.keyA, this.keyA + this.maxKey);
    this.dataView = EMPTY;
  }

  /** Re-creates the views after memory growth. A plain buffer detaches on growth (its views
   * then have length 0, a cheap test); a shared one stays valid but too short, so it is
   * compared with the memory's current buffer. */
  refresh(): void {
    if (this.shared ? this.mem.buffer !== this.buf : this.u8.byteLength === 0) {
      const b = this.mem.buffer;
      this.buf = b;
      this.u8 = new Uint8Array(b);
      this.dv = new DataView(b);
      this.keyAView = this.u8.subarray(this.keyA, this.keyA + this.maxKey);
      this.dataView = this.dataCap === 0 ? EMPTY : this.u8.subarray(this.data, this.data + this.dataCap);
    }
  }

  /** The data area with room for `n` bytes, keeping its first `keep` bytes. Refreshes the views
   * (also without growth: the previous call may have grown memory). */
  reserve(n: number, keep = 0): number {
    if (n > this.dataCap) {
      let cap = Math.max(4096, this.dataCap * 2);
      while (cap < n) cap *= 2;
      const p = this.ex.at_alloc(cap);
      if (p === 0) throw new OutOfMemoryError(`out of wasm memory reserving ${cap} bytes`);
      this.refresh();
      if (keep > 0) this.u8.copyWithin(p, this.data, this.data + keep);
      if (this.data !== 0) this.ex.at_free(this.data);
      this.data = p;
      this.dataCap = cap;
      this.dataView = this.u8.subarray(p, p + cap);
    }
    this.refresh();
    return this.data;
  }

  /** Out of memory: frees the data area (idle during reads) so that a retry can use that memory
   * for its output; true if there was one. Only on error paths. */
  dropData(): boolean {
    if (this.dataCap === 0) return false;
    this.ex.at_free(this.data);
    this.data = 0;
    this.dataCap = 0;
    this.dataView = EMPTY;
    return true;
  }

  /** Gives back a very large data area after a big value or batch. Touches no view: the call
   * before it may have grown memory (detaching them in st, leaving them short in mt); the
   * next reserve()/refresh() re-creates them. */
  shrink(): void {
    if (this.dataCap > SHRINK_ABOVE) {
      this.ex.at_free(this.data);
      this.data = 0;
      this.dataCap = 0;
      this.dataView = EMPTY;
    }
  }
}

const runtimes = new WeakMap<AdaptreeWasm, Runtime>();

function runtimeOf(wasm: AdaptreeWasm): Runtime {
  let rt = runtimes.get(wasm);
  if (rt === undefined) {
    rt = new Runtime(wasm);
    runtimes.set(wasm, rt);
  }
  return rt;
}

let defaultWasm: AdaptreeWasm | undefined;

/** @internal Sets the instance `new BTreeMap()` uses when no `wasm` option is given (index.ts init). */
export function setDefaultWasm(w: AdaptreeWasm | undefined): void {
  defaultWasm = w;
}

/** @internal */
export function getDefaultWasm(): AdaptreeWasm | undefined {
  return defaultWasm;
}

// ----------------------------------------------------------------------------- codecs

const KEY_ENCODINGS: Record<KeyEncodingName, KeyEncoder<unknown>> = {
  utf8: utf8Key as KeyEncoder<unknown>,
  bytes: bytesKey as KeyEncoder<unknown>,
  number: numberKey as KeyEncoder<unknown>,
  bigint: bigintKey as KeyEncoder<unknown>,
  tuple: tupleKey as KeyEncoder<unknown>,
};

const VALUE_ENCODINGS: Record<ValueEncodingName, ValueEncoder<unknown>> = {
  json: jsonValue,
  utf8: utf8Value as ValueEncoder<unknown>,
  bytes: bytesValue as ValueEncoder<unknown>,
};

/** Wraps a user key codec: it runs under the re-entrancy guard and its output is checked. */
function customKeyEncoder<K>(codec: KeyCodec<K>, rt: Runtime): KeyEncoder<K> {
  return {
    name: 'custom',
    encodeInto(key: K, u8: Uint8Array, _dv: DataView, off: number, end: number): number {
      let b: unknown;
      rt.busy++;
      try {
        b = codec.encode(key);
      } catch (e) {
        if (isAdaptreeError(e)) throw e;
        throw new InvalidKeyError(`custom key codec rejected the key: ${(e as Error)?.message ?? e}`, { cause: e });
      } finally {
        rt.busy--;
      }
      if (!(b instanceof Uint8Array) && !isUint8Array(b)) throw new InvalidKeyError('custom key codec must return a Uint8Array');
      if (b.length > end - off) throw new KeyTooLargeError(`encoded key of ${b.length} bytes is longer than ${end - off} bytes`);
      u8.set(b, off);
      return off + b.length;
    },
    decodeFrom(u8: Uint8Array, _dv: DataView, off: number, end: number): K {
      const copy = u8.slice(off, end);
      rt.busy++;
      try {
        return codec.decode(copy);
      } finally {
        rt.busy--;
      }
    },
    encode: (key: K) => codec.encode(key),
    decode: (bytes: Uint8Array) => codec.decode(bytes),
  };
}

function customValueEncoder<V>(codec: ValueCodec<V>, rt: Runtime): ValueEncoder<V> {
  return {
    name: 'custom',
    prepare(value: V): Uint8Array {
      let b: unknown;
      rt.busy++;
      try {
        b = codec.encode(value);
      } catch (e) {
        if (isAdaptreeError(e)) throw e;
        throw new InvalidValueError(`custom value codec rejected the value: ${(e as Error)?.message ?? e}`, { cause: e });
      } finally {
        rt.busy--;
      }
      if (!(b instanceof Uint8Array) && !isUint8Array(b)) throw new InvalidValueError('custom value codec must return a Uint8Array');
      return b;
    },
    decodeFrom(u8: Uint8Array, off: number, len: number): V {
      const copy = u8.slice(off, off + len);
      rt.busy++;
      try {
        return codec.decode(copy);
      } finally {
        rt.busy--;
      }
    },
    encode: (value: V) => codec.encode(value),
    decode: (bytes: Uint8Array) => codec.decode(bytes),
  };
}

function keyEncoderOf<K>(opt: BTreeMapOptions<K, unknown>['keys'], rt: Runtime): KeyEncoder<K> {
  if (opt === undefined) return utf8Key as unknown as KeyEncoder<K>;
  if (typeof opt === 'string') {
    const e = Object.prototype.hasOwnProperty.call(KEY_ENCODINGS, opt) ? KEY_ENCODINGS[opt] : undefined;
    if (e === undefined) throw new InvalidArgumentError(`unknown key encoding '${opt}' (utf8, bytes, number, bigint, tuple)`);
    return e as KeyEncoder<K>;
  }
  if (opt !== null && typeof opt === 'object') {
    if (isKeyEncoder(opt) && Object.values(KEY_ENCODINGS).includes(opt as KeyEncoder<unknown>)) return opt;
    if (typeof opt.encode === 'function' && typeof opt.decode === 'function') return customKeyEncoder(opt, rt);
  }
  throw new InvalidArgumentError('options.keys must be a key encoding name or an {encode, decode} codec');
}

function valueEncoderOf<V>(opt: BTreeMapOptions<unknown, V>['values'], rt: Runtime): ValueEncoder<V> {
  if (opt === undefined) return jsonValue as ValueEncoder<V>;
  if (typeof opt === 'string') {
    const e = Object.prototype.hasOwnProperty.call(VALUE_ENCODINGS, opt) ? VALUE_ENCODINGS[opt] : undefined;
    if (e === undefined) throw new InvalidArgumentError(`unknown value encoding '${opt}' (json, utf8, bytes)`);
    return e as ValueEncoder<V>;
  }
  if (opt !== null && typeof opt === 'object') {
    if (isValueEncoder(opt) && Object.values(VALUE_ENCODINGS).includes(opt as ValueEncoder<unknown>)) return opt;
    if (typeof opt.encode === 'function' && typeof opt.decode === 'function') return customValueEncoder(opt, rt);
  }
  throw new InvalidArgumentError('options.values must be a value encoding name or an {encode, decode} codec');
}

// ----------------------------------------------------------------------------- tree handle

/** What the map, its iterators and the finalizer share; holds no reference to the map. */
interface Handle<K, V> {
  readonly rt: Runtime;
  tree: number;
  /** Bumped by every successful modification; iterators compare it to re-seek. */
  mod: number;
  /** Live core cursors of this tree, freed with it. */
  readonly cursors: Set<number>;
  /** Idle cursors (also in `cursors`), reused by the next iterator. */
  readonly pool: number[];
  /** A cursor for first/last/nextHigher/nextLower, made on first use. */
  util: number;
  readonly kenc: KeyEncoder<K>;
  readonly venc: ValueEncoder<V>;
  /** Strings from this value encoding need no lone-surrogate check (JSON.stringify output). */
  readonly wellFormedValues: boolean;
  /** utf8 keys on non-shared memory: long keys go into key area A with TextEncoder.encodeInto. */
  readonly encodeIntoKeys: boolean;
  /** Called once after the tree is freed (stores release their backend). */
  onFree: (() => void) | undefined;
}

function freeHandle(h: Handle<unknown, unknown>): void {
  if (h.tree === 0) return;
  const ex = h.rt.ex;
  for (const c of h.cursors) ex.at_cursor_free(c);
  h.cursors.clear();
  h.pool.length = 0;
  h.util = 0;
  ex.at_tree_free(h.tree);
  h.tree = 0;
  h.mod++; // live iterators must notice (they throw ClosedError)
  const onFree = h.onFree;
  if (onFree !== undefined) {
    h.onFree = undefined;
    onFree();
  }
}

/** The error for a failed status. NEED_PAGE (a store on an async backend) becomes a
 * PageFaultError naming the page (result.aux), which the store's async methods catch,
 * answer and retry; every other status maps through errorFromStatus. */
function fail(h: Handle<unknown, unknown>, st: number, what: string, detail?: string): Error {
  if (st === Status.NEED_PAGE) {
    const rt = h.rt;
    rt.refresh();
    return new PageFaultError(rt.dv.getUint32(rt.res + Result.AUX, true));
  }
  return errorFromStatus(st, what, detail);
}

/** Safety net only: maps and iterators that are dropped without free()/return() release
 * their wasm memory when garbage-collected. Do not rely on it; call free(). */
const treeRegistry: FinalizationRegistry<Handle<unknown, unknown>> | undefined =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry(freeHandle) : undefined;

interface CursorRef {
  h: Handle<unknown, unknown>;
  cursor: number;
}

/** An abandoned iterator was collected: its cursor goes back to the pool. */
function freeCursor(ref: CursorRef): void {
  returnCursor(ref.h, ref.cursor);
}

const cursorRegistry: FinalizationRegistry<CursorRef> | undefined =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry(freeCursor) : undefined;

function newCursor(h: Handle<unknown, unknown>): number {
  const c = h.rt.ex.at_cursor_new(h.tree);
  if (c === 0) throw new OutOfMemoryError('out of wasm memory creating a cursor');
  h.cursors.add(c);
  return c;
}

/** Idle cursors kept per map for the next iterator. */
const CURSOR_POOL = 8;

function borrowCursor(h: Handle<unknown, unknown>): number {
  return h.pool.length > 0 ? h.pool.pop()! : newCursor(h);
}

function returnCursor(h: Handle<unknown, unknown>, c: number): void {
  if (h.tree === 0 || !h.cursors.has(c)) return; // freed with the tree
  if (h.pool.length < CURSOR_POOL) {
    h.pool.push(c);
  } else {
    h.cursors.delete(c);
    h.rt.ex.at_cursor_free(c);
  }
}

function stateError(h: Handle<unknown, unknown>): Error {
  return h.tree === 0 ? new ClosedError() : new ReentrancyError();
}

/** Encodes a key into key area A; returns its length. The views must be fresh (rt.refresh()). */
function putKeyA<K>(h: Handle<K, unknown>, key: K): number {
  const rt = h.rt;
  if (h.encodeIntoKeys && typeof key === 'string' && key.length > ENCODE_INTO_MIN) {
    const n = encodeIntoView(key, rt.keyAView);
    if (n >= 0) return n;
  }
  return h.kenc.encodeInto(key, rt.u8, rt.dv, rt.keyA, rt.keyA + rt.maxKey) - rt.keyA;
}

/** Encodes a key into key area `area`; returns its length. */
function putKey<K>(h: Handle<K, unknown>, key: K, area: number): number {
  const rt = h.rt;
  return h.kenc.encodeInto(key, rt.u8, rt.dv, area, area + rt.maxKey) - area;
}

/** Upper bound of the bytes a prepared value needs (exact for bytes and huge strings). */
function preparedSize(p: string | Uint8Array): number {
  return typeof p === 'string' ? 3 * p.length : p.length;
}

/** Writes a prepared value at `off`; returns the end. Strings: UTF-8, checked for lone surrogates.
 * Browsers refuse TextEncoder.encodeInto into shared memory (mt): there every string is written by hand. */
function putValue(rt: Runtime, p: string | Uint8Array, off: number, wellFormed: boolean): number {
  if (typeof p !== 'string') {
    if (p.length <= 16) {
      const u8 = rt.u8;
      for (let i = 0; i < p.length; i++) u8[off + i] = p[i]!;
    } else {
      rt.u8.set(p, off);
    }
    return off + p.length;
  }
  // By hand: shared memory (browsers refuse encodeInto there), short strings (a TextEncoder call
  // costs more; in setMany also a subarray), and without a native isWellFormed strings that may
  // hold lone surrogates.
  const n = p.length;
  if (rt.shared || n <= ENCODE_INTO_MIN || (n <= SHORT_STRING && ((off !== rt.data && n <= 64) || (!wellFormed && !ENCODE_INTO_VIEW)))) {
    const r = writeUtf8(p, rt.u8, off, off + 3 * p.length, false);
    if (r === LONE_SURROGATE) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    return r;
  }
  if (!wellFormed && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
  // set() writes at the start of the data area, which has a view of its own; setMany needs one per value.
  if (off === rt.data) return off + encodeIntoStart(p, rt.dataView);
  return encodeIntoLong(p, rt.u8, off);
}

/** A huge string becomes exact bytes first, so the data area is not 3x its length. */
function prepareValue<V>(h: Handle<unknown, V>, value: V): string | Uint8Array {
  const p = h.venc.prepare(value);
  if (typeof p === 'string' && p.length > HUGE_STRING) {
    if (!h.wellFormedValues && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    return encodeToArray(p);
  }
  return p;
}

// ----------------------------------------------------------------------------- ranges

interface Bounds {
  /** Where iteration starts: key bytes, or null for the edge. */
  start: Uint8Array | null;
  startExclusive: boolean;
  /** Where iteration stops: key bytes, or null for the other edge. */
  stop: Uint8Array | null;
  stopInclusive: boolean;
  reverse: boolean;
  limit: number;
}

const NO_RANGE: Range<never> = {};

function checkRange(range: unknown, what: string): Range<unknown> {
  if (range === undefined || range === null) return NO_RANGE;
  if (typeof range !== 'object') throw new InvalidArgumentError(`${what}: the range must be an object like {gte, lt, reverse, limit}`);
  const r = range as Range<unknown>;
  if (r.gt !== undefined && r.gte !== undefined) throw new InvalidArgumentError(`${what}: give gt or gte, not both`);
  if (r.lt !== undefined && r.lte !== undefined) throw new InvalidArgumentError(`${what}: give lt or lte, not both`);
  return r;
}

function encodeBound<K>(h: Handle<K, unknown>, key: K): Uint8Array {
  const rt = h.rt;
  rt.refresh();
  const n = putKey(h, key, rt.keyB);
  return rt.u8.slice(rt.keyB, rt.keyB + n);
}

function boundsOf<K>(h: Handle<K, unknown>, range: Range<K> | undefined, what: string): Bounds {
  const r = checkRange(range, what) as Range<K>;
  let limit = Infinity;
  if (r.limit !== undefined) {
    if (typeof r.limit !== 'number' || !(r.limit >= 0) || (r.limit !== Infinity && !Number.isInteger(r.limit))) {
      throw new InvalidArgumentError(`${what}: limit must be a non-negative integer or Infinity`);
    }
    limit = r.limit;
  }
  const lo = r.gte !== undefined ? r.gte : r.gt;
  const hi = r.lte !== undefined ? r.lte : r.lt;
  const loBytes = lo !== undefined ? encodeBound(h, lo) : null;
  const hiBytes = hi !== undefined ? encodeBound(h, hi) : null;
  const reverse = !!r.reverse;
  return reverse
    ? { start: hiBytes, startExclusive: r.lt !== undefined, stop: loBytes, stopInclusive: r.gte !== undefined, reverse, limit }
    : { start: loBytes, startExclusive: r.gt !== undefined, stop: hiBytes, stopInclusive: r.lte !== undefined, reverse, limit };
}

// ----------------------------------------------------------------------------- iterator

const MODE_ENTRIES = 0;
const MODE_KEYS = 1;
const MODE_VALUES = 2;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined }) as IteratorReturnResult<undefined>;

/**
 * An iterator over a key range that stays correct while the map changes (see the top of
 * this file). Records come from the core a batch at a time and are decoded at once into
 * two plain arrays, so a batch costs no ArrayBuffer. To resume after a modification, the
 * last key returned is encoded again (encodings are canonical: encode(decode(b)) = b).
 *
 * Cursors: an iterator borrows a core cursor from its map's pool only while it needs one.
 * When a batch already holds the rest of the range (end of tree, stop bound or limit
 * reached), the cursor goes back at once, so short range queries never register with the
 * FinalizationRegistry (which costs more than the query). An iterator that keeps its
 * cursor between calls is registered, so an abandoned one still gives it back when
 * collected; free() of the map releases every cursor anyway.
 */
class BTreeIterator<K, V, T> {
  #h: Handle<K, V> | null;
  /** Keeps the map reachable while the iterator is: otherwise its finalizer could free the tree. */
  #owner: object | null;
  readonly #mode: number;
  readonly #b: Bounds;
  #remaining: number;
  #cursor = 0;
  #ref: CursorRef | null = null;
  /** Seeked at least once; the cursor (if held) continues where the last batch ended. */
  #started = false;
  /** The last batch reached the end of the range: no more batches without a re-seek. */
  #drained = false;
  #batchRecords = FIRST_BATCH_RECORDS;
  /** The decoded batch and the read position in it. */
  #keys: K[] = [];
  #vals: V[] = [];
  #i = 0;
  #n = 0;
  /** The handle's modification count when the batch was read. */
  #mod = 0;
  /** The last key returned (valid when #hasLast). */
  #last: K | undefined = undefined;
  #hasLast = false;

  constructor(owner: object, h: Handle<K, V>, mode: number, b: Bounds) {
    this.#owner = owner;
    this.#h = h;
    this.#mode = mode;
    this.#b = b;
    this.#remaining = b.limit;
    if (b.limit <= LIMIT_BATCH_RECORDS) this.#batchRecords = b.limit;
    if (b.limit === 0) this.#finish();
  }

  next(): IteratorResult<T, undefined> {
    const h = this.#h;
    if (h === null) return DONE;
    if (this.#i === this.#n || h.mod !== this.#mod) {
      if (!this.#refill(h)) return DONE;
    }
    const i = this.#i++;
    const k = this.#keys[i]!;
    this.#last = k;
    this.#hasLast = true;
    const mode = this.#mode;
    const value = mode === MODE_KEYS ? k : mode === MODE_VALUES ? this.#vals[i] : [k, this.#vals[i]];
    if (--this.#remaining === 0) this.#finish();
    return { done: false, value: value as T };
  }

  /** Reads and decodes the next batch; false when the iteration is over. */
  #refill(h: Handle<K, V>): boolean {
    const rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) {
      const e = stateError(h);
      if (h.tree === 0) this.#finish();
      throw e;
    }
    const ex = rt.ex;
    const b = this.#b;
    const rev = b.reverse ? SeekFlags.REVERSE : 0;
    let st: number = Status.OK;
    if (!this.#started || h.mod !== this.#mod) {
      if (this.#cursor === 0) this.#cursor = borrowCursor(h as Handle<unknown, unknown>);
      if (this.#started) {
        // A map that changes while it is iterated would waste most of a large batch.
        this.#batchRecords = FIRST_BATCH_RECORDS;
      }
      this.#started = true;
      if (this.#hasLast) {
        // Resume by key: just after the last key returned.
        rt.refresh();
        const len = putKeyA(h, this.#last as K);
        st = ex.at_cursor_seek(this.#cursor, rt.keyA, len, SeekFlags.EXCLUSIVE | rev);
      } else if (b.start === null) {
        st = ex.at_cursor_seek(this.#cursor, rt.keyA, 0, SeekFlags.EDGE | rev);
      } else {
        rt.refresh();
        rt.u8.set(b.start, rt.keyA);
        st = ex.at_cursor_seek(this.#cursor, rt.keyA, b.start.length, (b.startExclusive ? SeekFlags.EXCLUSIVE : 0) | rev);
      }
    } else if (this.#drained) {
      this.#finish();
      return false;
    }
    this.#mod = h.mod;
    const max = this.#remaining < this.#batchRecords ? this.#remaining : this.#batchRecords;
    if (st === Status.OK) {
      st = ex.at_cursor_next_batch(this.#cursor, rt.ctx, max, MAX_BATCH_BYTES, this.#mode === MODE_KEYS ? 0 : 1);
    }
    if (st !== Status.OK) {
      if (st === Status.NEED_PAGE || st === Status.OUT_OF_MEMORY) {
        // Async store: nothing is lost. Drop any partial batch and re-seek after the last key
        // returned once the page is there (the caller supplies it and calls next() again).
        // Out of memory: the same; next() tries again once memory was freed or the budget raised.
        this.#mod = -1;
        this.#i = this.#n = 0;
        throw fail(h as Handle<unknown, unknown>, st, 'iterate');
      }
      this.#finish();
      if (st === Status.NOT_FOUND) return false;
      throw errorFromStatus(st, 'iterate');
    }
    rt.refresh();
    const u8 = rt.u8, dv = rt.dv;
    let p = dv.getUint32(rt.res + Result.VALUE_PTR, true);
    const len = dv.getUint32(rt.res + Result.VALUE_LEN, true);
    const count = dv.getUint32(rt.res + Result.AUX, true);
    // Decode now: the context buffer is overwritten by the next call into wasm. Codecs run no
    // adaptree calls meanwhile (the re-entrancy guard), so the buffer stays intact.
    const keys = this.#keys, vals = this.#vals, kenc = h.kenc, venc = h.venc;
    const wantValues = this.#mode !== MODE_KEYS, stop = b.stop, shared = rt.shared;
    let n = 0;
    let pastStop = false;
    for (; n < count; n++) {
      const klen = dv.getUint32(p, true);
      const koff = p + 4;
      if (stop !== null && past(u8, koff, klen, b)) {
        pastStop = true;
        break;
      }
      keys[n] = kenc.decodeFrom(u8, dv, koff, koff + klen, shared);
      p = koff + klen;
      const vlen = dv.getUint32(p, true);
      if (wantValues) vals[n] = venc.decodeFrom(u8, p + 4, vlen, shared);
      p += 4 + vlen;
    }
    this.#i = 0;
    this.#n = n;
    if (this.#batchRecords < MAX_BATCH_RECORDS) this.#batchRecords *= 4;
    // Does this batch hold the rest of the range? The core ends a batch early only at the end.
    this.#drained = pastStop || (count < max && len < MAX_BATCH_BYTES) || this.#remaining <= n;
    if (n === 0) {
      this.#finish();
      return false;
    }
    if (this.#drained) {
      this.#releaseCursor();
    } else if (this.#ref === null && cursorRegistry !== undefined) {
      this.#ref = { h: h as Handle<unknown, unknown>, cursor: this.#cursor };
      cursorRegistry.register(this, this.#ref, this.#ref);
    }
    return true;
  }

  #releaseCursor(): void {
    const c = this.#cursor;
    if (c === 0) return;
    this.#cursor = 0;
    if (this.#ref !== null) {
      cursorRegistry?.unregister(this.#ref);
      this.#ref = null;
    }
    const h = this.#h;
    if (h !== null) returnCursor(h as Handle<unknown, unknown>, c);
  }

  #finish(): void {
    this.#releaseCursor();
    this.#h = null;
    if (this.#owner !== null) this.#owner = null;
    this.#keys = [];
    this.#vals = [];
    this.#i = this.#n = 0;
    this.#last = undefined;
  }

  /** Ends the iteration early and releases its cursor (for-of calls this on break). */
  return(): IteratorResult<T, undefined> {
    this.#finish();
    return DONE;
  }

  [Symbol.iterator](): this {
    return this;
  }

  /** `using it = map.entries()` releases the cursor at the end of the block. */
  [Symbol.dispose](): void {
    this.#finish();
  }

  get [Symbol.toStringTag](): string {
    return 'BTreeMap Iterator';
  }
}

/** Whether the key at u8[off, off+len) lies beyond the stop bound. */
function past(u8: Uint8Array, off: number, len: number, b: Bounds): boolean {
  const stop = b.stop!;
  const n = len < stop.length ? len : stop.length;
  let c = 0;
  for (let i = 0; i < n; i++) {
    const d = u8[off + i]! - stop[i]!;
    if (d !== 0) {
      c = d;
      break;
    }
  }
  if (c === 0) c = len - stop.length;
  if (b.reverse) return b.stopInclusive ? c < 0 : c <= 0;
  return b.stopInclusive ? c > 0 : c >= 0;
}

// Where the runtime has iterator helpers (map, filter, take, toArray, ...), ours get them too.
{
  const I: unknown = (globalThis as { Iterator?: unknown }).Iterator;
  const proto: unknown = typeof I === 'function' ? (I as { prototype?: unknown }).prototype : undefined;
  if (typeof proto === 'object' && proto !== null) Object.setPrototypeOf(BTreeIterator.prototype, proto);
}
// `Symbol.dispose` is missing in older runtimes; the class computed key is then 'undefined'.
if (typeof Symbol.dispose !== 'symbol') {
  delete (BTreeIterator.prototype as unknown as Record<string, unknown>)['undefined'];
}

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
    // A misspelt option (say `keyEncoding` for `keys`) would otherwise silently give the defaults.
    for (const name of Object.keys(options ?? {})) {
      if (!KNOWN_OPTIONS.has(name)) {
        throw new InvalidArgumentError(`unknown option '${name}' (${[...KNOWN_OPTIONS].join(', ')})`);
      }
    }
    const wasm = options?.wasm ?? defaultWasm;
    if (wasm === undefined) throw new NotInitializedError();
    const rt = runtimeOf(wasm);
    const layoutName = options?.layout ?? 'adaptive';
    const layout = Object.prototype.hasOwnProperty.call(LayoutConfig, layoutName) ? LayoutConfig[layoutName] : undefined;
    if (layout === undefined) {
      throw new InvalidArgumentError(`unknown layout '${String(layoutName)}' (${Object.keys(LayoutConfig).join(', ')})`);
    }
    const kenc = keyEncoderOf<K>(options?.keys, rt);
    const venc = valueEncoderOf<V>(options?.values, rt);
    const attach = (options as { [ATTACH_TREE]?: AttachTree } | undefined)?.[ATTACH_TREE];
    const tree = attach !== undefined ? attach.tree : rt.ex.at_tree_new(layout);
    if (tree === 0) throw new OutOfMemoryError('out of wasm memory creating a tree');
    this.#h = {
      rt, tree, mod: 0, cursors: new Set(), pool: [], util: 0, kenc, venc,
      wellFormedValues: venc === jsonValue,
      encodeIntoKeys: (kenc as unknown) === utf8Key && !rt.shared && ENCODE_INTO_VIEW,
      onFree: attach?.onFree,
    };
    treeRegistry?.register(this, this.#h as Handle<unknown, unknown>, this.#h);
    if (entries !== undefined && entries !== null) {
      try {
        this.setMany(entries);
      } catch (e) {
        this.free();
        throw e;
      }
    }
  }

  /** Number of entries; O(1). */
  get size(): number {
    const h = this.#h;
    if (h.tree === 0) throw new ClosedError();
    return h.rt.ex.at_count(h.tree);
  }

  /** The value stored under `key`, or undefined. */
  get(key: K): V | undefined {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    rt.refresh();
    const len = putKeyA(h, key);
    let st = rt.ex.at_get(h.tree, rt.ctx, rt.keyA, len);
    if (st !== Status.OK) {
      if (st === Status.NOT_FOUND) return undefined;
      // A large value needs output room: the data area's memory may be all there is.
      if (st === Status.OUT_OF_MEMORY && rt.dropData()) st = rt.ex.at_get(h.tree, rt.ctx, rt.keyA, len);
      if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'get');
    }
    rt.refresh();
    const dv = rt.dv;
    return h.venc.decodeFrom(rt.u8, dv.getUint32(rt.res + Result.VALUE_PTR, true), dv.getUint32(rt.res + Result.VALUE_LEN, true), rt.shared);
  }

  /** Whether `key` is present. */
  has(key: K): boolean {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    rt.refresh();
    const len = putKeyA(h, key);
    const st = rt.ex.at_has(h.tree, rt.ctx, rt.keyA, len);
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
    const vptr = rt.reserve(preparedSize(p));
    const klen = putKeyA(h, key);
    const vend = putValue(rt, p, vptr, h.wellFormedValues);
    const st = rt.ex.at_set(h.tree, rt.ctx, rt.keyA, klen, vptr, vend - vptr);
    if (rt.dataCap > SHRINK_ABOVE) rt.shrink();
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'set');
    h.mod++;
    return this;
  }

  /** Removes `key`; true if it was present. */
  delete(key: K): boolean {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    rt.refresh();
    const len = putKeyA(h, key);
    const st = rt.ex.at_remove(h.tree, rt.ctx, rt.keyA, len);
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

  /** Entries `[key, value]` in key order, optionally within a range. */
  entries(range?: Range<K>): MapIterator<[K, V]> {
    return this.#iter<[K, V]>(MODE_ENTRIES, range, 'entries');
  }

  /** Keys in key order, optionally within a range. */
  keys(range?: Range<K>): MapIterator<K> {
    return this.#iter<K>(MODE_KEYS, range, 'keys');
  }

  /** Values in key order, optionally within a range. */
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

  /** Calls `callbackfn(value, key, map)` for each entry in key order (entries added ahead are visited). */
  forEach(callbackfn: (value: V, key: K, map: Map<K, V>) => void, thisArg?: unknown): void {
    if (typeof callbackfn !== 'function') throw new TypeError('forEach: callback is not a function');
    for (const [k, v] of this.entries()) callbackfn.call(thisArg, v, k, this);
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
    return [key, h.venc.decodeFrom(rt.u8, vp, vl, rt.shared)];
  }

  /** Removes every key within the bounds (none given: all); returns how many were removed. */
  deleteRange(range: DeleteRange<K>): number {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const r = checkRange(range, 'deleteRange');
    if (r.limit !== undefined) throw new InvalidArgumentError('deleteRange: limit is not supported');
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
    if (n < 0) throw errorFromStatus(n, 'deleteRange');
    if (n > 0) h.mod++;
    return n;
  }

  /** The values of many keys (undefined where absent), in one call into wasm. */
  getMany(keys: Iterable<K>): (V | undefined)[] {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const list = Array.isArray(keys) ? (keys as K[]) : Array.from(keys);
    const n = list.length;
    if (n === 0) return [];
    const per = 4 + rt.maxKey;
    let used = 0;
    rt.reserve(Math.min(n, 64) * per);
    for (let i = 0; i < n; i++) {
      if (used + per > rt.dataCap) rt.reserve(Math.max(used + per, 2 * rt.dataCap), used);
      const at = rt.data + used;
      const end = h.kenc.encodeInto(list[i]!, rt.u8, rt.dv, at + 4, at + 4 + rt.maxKey);
      rt.dv.setUint32(at, end - at - 4, true);
      used = end - rt.data;
    }
    const base = rt.data;
    const st = rt.ex.at_get_many(h.tree, rt.ctx, base, n);
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'getMany');
    rt.refresh();
    const dv = rt.dv, u8 = rt.u8;
    let p = dv.getUint32(rt.res + Result.VALUE_PTR, true);
    const out = new Array<V | undefined>(n);
    // Custom decoders run user code: decode from a copy of the output, not from the context buffer.
    const custom = h.venc.name === 'custom';
    let src = u8, sdv = dv;
    if (custom) {
      const len = dv.getUint32(rt.res + Result.VALUE_LEN, true);
      src = u8.slice(p, p + len);
      sdv = new DataView(src.buffer);
      p = 0;
    }
    for (let i = 0; i < n; i++) {
      const vl = sdv.getUint32(p, true);
      p += 4;
      if (vl === ABSENT) {
        out[i] = undefined;
      } else {
        out[i] = h.venc.decodeFrom(src, p, vl, !custom && rt.shared);
        p += vl;
      }
    }
    rt.shrink();
    return out;
  }

  /** Sets many entries in one call into wasm (later duplicates win). Every key and value is
   * checked before anything is written: a bad one throws and the map is unchanged. Sorted
   * entries into an empty map are bulk loaded. `onProgress` ({@link Progress}, phase
   * 'bulk-load') reports the entries encoded; if it throws, AbortedError, map unchanged. */
  setMany(entries: Iterable<readonly [K, V]>, options?: { onProgress?: ProgressCallback }): this {
    const h = this.#h, rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) throw stateError(h);
    const onProgress = progressOption(options?.onProgress, 'setMany');
    const list = Array.isArray(entries) ? (entries as (readonly [K, V])[]) : Array.from(entries);
    const n = list.length;
    if (n === 0) return this;
    let used = 0;
    let nextReport = onProgress === undefined ? n : 0;
    rt.busy++;
    try {
      rt.reserve(Math.min(n, 64) * (rt.maxKey + 64));
      for (let i = 0; i < n; i++) {
        if (i === nextReport) {
          report(onProgress!, 'bulk-load', i, n);
          nextReport += PROGRESS_EVERY;
        }
        const e = list[i];
        if (e === null || typeof e !== 'object') throw new TypeError(`setMany: entry ${i} is not an entry object`);
        const p = prepareValue(h, e[1]);
        const need = used + 8 + rt.maxKey + preparedSize(p);
        if (need > rt.dataCap) rt.reserve(Math.max(need, 2 * rt.dataCap), used);
        const base = rt.data;
        const kend = h.kenc.encodeInto(e[0], rt.u8, rt.dv, base + used + 4, base + used + 4 + rt.maxKey);
        rt.dv.setUint32(base + used, kend - base - used - 4, true);
        const vend = putValue(rt, p, kend + 4, h.wellFormedValues);
        rt.dv.setUint32(kend, vend - kend - 4, true);
        used = vend - base;
      }
      if (onProgress !== undefined) report(onProgress, 'bulk-load', n, n);
    } finally {
      rt.busy--;
    }
    if (h.tree === 0) throw new ClosedError();
    const st = rt.ex.at_set_many(h.tree, rt.ctx, rt.data, n);
    rt.refresh();
    const applied = rt.dv.getUint32(rt.res + Result.AUX, true);
    // NEED_PAGE puts a page id in aux, not a count: some entries may be in (a retry re-applies them).
    if (applied > 0 || st === Status.OK || st === Status.NEED_PAGE) h.mod++;
    rt.shrink();
    if (st !== Status.OK) throw fail(h as Handle<unknown, unknown>, st, 'setMany', `${applied} of ${n} entries were applied`);
    return this;
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
    return JSON.parse(readUtf8(rt.u8, p, p + n, rt.shared)) as BTreeStats;
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

  /** True after free(). */
  get closed(): boolean {
    return this.#h.tree === 0;
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
