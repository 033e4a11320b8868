/**
 * The few calls `AdaptreeLevel` makes on the data it wraps, and the in-memory store.
 *
 * The level adapter never touches a `BTreeMap` directly: it goes through `LevelStore`, so a
 * persistent store (file, OPFS, IndexedDB) plugs in by implementing these eight methods.
 * Keys and values are bytes; order is byte order (unsigned), which is what abstract-level
 * expects of a store that declares the `view` encoding.
 *
 * A store is either synchronous (`sync: true`: every method returns its result, the
 * in-memory store) or asynchronous (methods may return promises: a persistent store with a
 * page cache that faults pages in). The adapter handles both:
 * - writes (`write`, `deleteRange`) never overlap: for an async store the adapter queues
 *   them, and a store need not lock anything itself;
 * - a write must be atomic: after it settles, either all of it is visible or none;
 * - reads may run while a write is in flight and may see either side of it: the adapter's
 *   snapshots (see snapshot.ts) do not depend on what such a read returns.
 *
 * How a store with Map-like methods fits (`BTreeStore`, see persistent.ts): `write` is
 * set/delete for each entry, then one `commit()`; `scan` collects at most `limit` entries
 * from `entries(range)`; `close` is `close()`.
 */
import { BTreeMap } from '../map.js';
import type { AdaptreeWasm } from '../wasm.js';
import type { LayoutName } from '../abi.js';
import { MAX_KEY_SIZE } from '../encoding/codec.js';

export type Awaitable<T> = T | Promise<T>;

/** A key range of a scan: at most one lower and one upper bound, bytes compared unsigned. */
export interface StoreRange {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  /** Descending key order. */
  reverse?: boolean;
}

/** One entry of a scan; `value` is undefined when the scan was asked for keys only. */
export type StoreEntry = [key: Uint8Array, value: Uint8Array | undefined];

export interface LevelStore {
  /**
   * True when every method answers at once (enables `db.getSync()`). Exception: `write` and
   * `deleteRange` of a sync store may return a promise, but only to say when the change is
   * durable; the change itself must be applied (visible) before they return.
   */
  readonly sync: boolean;
  /** Longest key the store accepts (bytes). Longer keys cannot be present. */
  readonly maxKeySize: number;
  get(key: Uint8Array): Awaitable<Uint8Array | undefined>;
  getMany(keys: Uint8Array[]): Awaitable<(Uint8Array | undefined)[]>;
  has(key: Uint8Array): Awaitable<boolean>;
  /** Sets every put and removes every del, atomically (all or nothing). Keys are distinct. */
  write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Awaitable<void>;
  /** Removes every key within the bounds (none: all). Need not be atomic. */
  deleteRange(range: StoreRange): Awaitable<void>;
  /** At most `limit` (≥ 1) entries within the range, in key order (or reverse). */
  scan(range: StoreRange, limit: number, values: boolean): Awaitable<StoreEntry[]>;
  /** Releases what the store holds open. The level may open it again through its factory. */
  close(): Awaitable<void>;
}

/** Options of the in-memory store. */
export interface MemoryStoreOptions {
  /** Node layout configuration of the tree (default `'adaptive'`). */
  layout?: LayoutName;
  /** The wasm instance (default: the one `init()` loaded). */
  wasm?: AdaptreeWasm;
}

/**
 * The synchronous calls the level stores make on what holds their data: a `BTreeMap` or a
 * `BTreeStore` on a synchronous backend, both with `bytes` keys and values.
 */
export interface BytesMap {
  get(key: Uint8Array): Uint8Array | undefined;
  has(key: Uint8Array): boolean;
  getMany(keys: Iterable<Uint8Array>): (Uint8Array | undefined)[];
  setMany(entries: Iterable<readonly [Uint8Array, Uint8Array]>): unknown;
  delete(key: Uint8Array): boolean;
  deleteRange(range: { gt?: Uint8Array; gte?: Uint8Array; lt?: Uint8Array; lte?: Uint8Array }): number;
  entries(range?: StoreRange & { limit?: number }): Iterator<[Uint8Array, Uint8Array]>;
  keys(range?: StoreRange & { limit?: number }): Iterator<Uint8Array>;
}

/**
 * A `LevelStore` over a synchronous `BytesMap`: every method answers at once. Keys longer than
 * `MAX_KEY_SIZE` cannot be present (reads answer "absent", deletes do nothing) and range bounds
 * of any length are clamped to an equivalent storable bound.
 */
export class BytesMapStore implements LevelStore {
  readonly sync: boolean = true;
  readonly maxKeySize = MAX_KEY_SIZE;
  readonly #target: BytesMap;

  constructor(target: BytesMap) {
    this.#target = target;
  }

  get(key: Uint8Array): Uint8Array | undefined {
    return key.length > MAX_KEY_SIZE ? undefined : this.#target.get(key);
  }

  getMany(keys: Uint8Array[]): (Uint8Array | undefined)[] {
    if (keys.every((k) => k.length <= MAX_KEY_SIZE)) return this.#target.getMany(keys);
    return keys.map((k) => this.get(k));
  }

  has(key: Uint8Array): boolean {
    return key.length <= MAX_KEY_SIZE && this.#target.has(key);
  }

  write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Awaitable<void> {
    // setMany checks every entry before it writes anything: a bad one throws, map unchanged.
    // Deletes cannot fail after that (a key too long to store cannot be present).
    if (puts.length > 0) this.#target.setMany(puts);
    for (const k of dels) if (k.length <= MAX_KEY_SIZE) this.#target.delete(k);
  }

  deleteRange(range: StoreRange): Awaitable<void> {
    const r = clampRange(range);
    this.#target.deleteRange({ gt: r.gt, gte: r.gte, lt: r.lt, lte: r.lte });
  }

  scan(range: StoreRange, limit: number, values: boolean): StoreEntry[] {
    const r = clampRange(range);
    const out: StoreEntry[] = [];
    if (values) {
      const it = this.#target.entries({ ...r, limit });
      for (let e = it.next(); !e.done; e = it.next()) out.push(e.value);
    } else {
      const it = this.#target.keys({ ...r, limit });
      for (let e = it.next(); !e.done; e = it.next()) out.push([e.value, undefined]);
    }
    return out;
  }

  close(): Awaitable<void> {}
}

/**
 * The in-memory store: one `BTreeMap` with `bytes` keys and values. Synchronous. `close()`
 * keeps the data (as memory-level does: a closed and reopened db sees its entries); `free()`
 * releases the wasm memory for good.
 */
export class MemoryStore extends BytesMapStore {
  readonly #map: BTreeMap<Uint8Array, Uint8Array>;

  constructor(options: MemoryStoreOptions = {}) {
    const map = new BTreeMap<Uint8Array, Uint8Array>(null, {
      keys: 'bytes',
      values: 'bytes',
      ...(options.layout !== undefined ? { layout: options.layout } : {}),
      ...(options.wasm !== undefined ? { wasm: options.wasm } : {}),
    });
    super(map);
    this.#map = map;
  }

  /** The map underneath (for stats and tests). */
  get map(): BTreeMap<Uint8Array, Uint8Array> {
    return this.#map;
  }

  override write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): void {
    super.write(puts, dels);
  }

  override deleteRange(range: StoreRange): void {
    super.deleteRange(range);
  }

  override close(): void {}

  /** Releases the tree's wasm memory; the store cannot be used afterwards. */
  free(): void {
    this.#map.free();
  }
}

/**
 * Bounds longer than the longest storable key, rewritten to the equivalent bound of at most
 * `MAX_KEY_SIZE` bytes (t = the bound's first MAX_KEY_SIZE bytes): for keys k of at most that
 * length, k > b ⟺ k > t and k < b ⟺ k ≤ t. Undefined bounds are dropped.
 */
export function clampRange(range: StoreRange): StoreRange {
  const out: StoreRange = { reverse: !!range.reverse };
  const lo = range.gte ?? range.gt;
  if (lo !== undefined) {
    if (lo.length > MAX_KEY_SIZE) out.gt = lo.subarray(0, MAX_KEY_SIZE);
    else if (range.gte !== undefined) out.gte = lo;
    else out.gt = lo;
  }
  const hi = range.lte ?? range.lt;
  if (hi !== undefined) {
    if (hi.length > MAX_KEY_SIZE) out.lte = hi.subarray(0, MAX_KEY_SIZE);
    else if (range.lte !== undefined) out.lte = hi;
    else out.lt = hi;
  }
  return out;
}
