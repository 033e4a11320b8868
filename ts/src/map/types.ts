/**
 * The public option, range and stats types of BTreeMap, and the symbol BTreeStore uses to
 * attach a tree it opened itself.
 */
import type { LayoutName } from '../abi.js';
import type { AdaptreeWasm } from '../wasm.js';
import type { KeyCodec, ValueCodec } from '../encoding/codec.js';
import type { Tuple } from '../encoding/tuple.js';

/** Names of the built-in key encodings. */
export type KeyEncodingName = 'utf8' | 'bytes' | 'number' | 'bigint' | 'tuple';
/** Names of the built-in value encodings. */
export type ValueEncodingName = 'json' | 'utf8' | 'bytes';
export type { LayoutName };

/** What each built-in key encoding reads back. */
export interface KeyEncodingTypes {
  utf8: string;
  bytes: Uint8Array;
  number: number;
  bigint: bigint;
  tuple: Tuple;
}
/** What each built-in value encoding reads back. */
export interface ValueEncodingTypes {
  json: unknown;
  utf8: string;
  bytes: Uint8Array;
}
/** Every key of type A is one of B (not distributed over unions): a key type wider than the
 * encoding's (`string | number` with 'utf8') compiled and threw InvalidKeyError at run time (a
 * new-user probe, session 24). `unknown` (and `any`) still take any encoding: code that picks
 * the encoding at run time says so with them. */
type Within<A, B> = unknown extends A ? true : [A] extends [B] ? true : false;
/** What an encoding of type B reads back is a T: B's own values come back as they went in
 * (a string, a number, a literal, a tuple as a plain array), but 'bytes' gives plain
 * Uint8Arrays, so T must take one. `BTreeMap<Buffer, Buffer>` with 'bytes' compiled, and its
 * keys and values came back without Buffer's methods (`k.toString('hex')` gave "97,98"; a
 * new-user probe, session 29). */
type ReadsBack<T, B> = [B] extends [Uint8Array] ? ([Uint8Array] extends [T] ? true : false) : true;
/** Both: T's values go in, and what comes out is a T. */
type Holds<T, B> = Within<T, B> extends true ? ReadsBack<T, B> : false;
/**
 * The key encodings whose keys can be `K`: `new BTreeMap<number>(null, { keys: 'number' })`,
 * and `K` defaults to string, so `new BTreeMap(null, { keys: 'number' })` is a type error at
 * the option (it was one at every later `set(1, ...)`), and `BTreeMap<string>` with
 * `keys: 'number'` (an InvalidKeyError at every call) is one too.
 */
export type KeyEncodingFor<K> = { [N in KeyEncodingName]: Holds<K, KeyEncodingTypes[N]> extends true ? N : never }[KeyEncodingName];
/** The value encodings whose values can be `V` ('json' takes any): as for keys. A value type
 * wider than the encoding's (`string | number` with 'utf8', `Uint8Array | null` with 'bytes')
 * compiled and threw InvalidValueError at run time (a new-user probe, session 29). */
export type ValueEncodingFor<V> = { [N in ValueEncodingName]: Holds<V, ValueEncodingTypes[N]> extends true ? N : never }[ValueEncodingName];

export interface BTreeMapOptions<K, V> {
  /** Key encoding; default `'utf8'` (string keys). A custom codec must be order-preserving. */
  keys?: KeyEncodingFor<K> | KeyCodec<K>;
  /** Value encoding; default `'json'`. */
  values?: ValueEncodingFor<V> | ValueCodec<V>;
  /** Node layout configuration of the tree; default `'adaptive'`. */
  layout?: LayoutName;
  /** The wasm instance to use (from `loadWasm`); default: the one `init()` loaded. */
  wasm?: AdaptreeWasm;
  /** Node fill (README, "Node fill"): `redistribute: true` lets a full leaf share records with
   * its neighbours before it splits (about 0.8x the bytes, random-order inserts 0.5-0.8x as
   * fast). Default off for a map (stores default on). `edges` (default on, maps too): an
   * append past the last key (a prepend before the first) fills the leaf beside the full last
   * (first) one, else starts a new leaf: keys inserted in order fill their leaves as fully as
   * random ones do, prefix-truncated. `edges: false` splits such a leaf in the middle, as the
   * paper does. */
  fill?: { redistribute?: boolean; edges?: boolean };
}

export const KNOWN_OPTIONS: ReadonlySet<string> = new Set(['keys', 'values', 'layout', 'wasm', 'fill']);

/** @internal How BTreeStore (store.ts) runs a BTreeMap on a tree it opened itself: the
 * constructor takes this symbol-keyed option instead of creating an in-memory tree, and
 * calls `onFree` once when the tree is released (free(), or the finalizer). */
export const ATTACH_TREE: unique symbol = Symbol('adaptree.attachTree') as never;
export interface AttachTree {
  tree: number;
  onFree?: (collected: boolean) => void;
  /** The tree belongs to another map (a worker's attached map, threads.ts): free() releases
   * this map's cursors, never the tree. */
  borrowed?: boolean;
  /** What calls after the tree is gone say (a store: "the store is closed"). */
  closed?: string;
  /** onFault: called as a page fault (NEED_PAGE) becomes a PageFaultError (a store on an async
   * backend); where: the store, named in errors; cause: the backend's error behind an
   * IO_ERROR or QUOTA_EXCEEDED status (a store on a sync backend). */
  hooks?: { onFault?: () => void; where?: string; cause?: () => unknown };
}

/** The prefixes of a tuple type, itself included: `[string, number]` gives it, `[string]`
 * and `[]`. */
type Prefixes<T extends readonly unknown[]> = T extends readonly [...infer Init, unknown] ? T | Prefixes<Init> : T;
/** A range bound of a map with keys K: a K, or for a tuple type any prefix of one (README:
 * `gte: [a], lt: [a + '\0']` with `keys: 'tuple'`; typed as a whole K, it did not compile for
 * `BTreeMap<[string, number], V>`, a probe, session 29). */
export type Bound<K> = K extends readonly unknown[] ? Prefixes<K> : K;

/** A key range. At most one lower bound (`gt`/`gte`) and one upper bound (`lt`/`lte`). A plain
 * object: its own properties are read, and an array or an object with a prototype of its own
 * (a class instance, `Object.create(o)`) is InvalidArgumentError. */
export interface Range<K> {
  gt?: Bound<K>;
  gte?: Bound<K>;
  lt?: Bound<K>;
  lte?: Bound<K>;
  /** Iterate in descending key order. */
  reverse?: boolean;
  /** Return at most this many entries. */
  limit?: number;
}

/** Bounds for deleteRange (no reverse/limit). */
export type DeleteRange<K> = Pick<Range<K>, 'gt' | 'gte' | 'lt' | 'lte'>;

/** What stats() reports (the core's `at_stats` JSON; fields may be added, never renamed). */
export interface BTreeStats {
  /** Layout configuration name, as the `layout` option takes it ('adaptive', 'semi-dense', ...). */
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
