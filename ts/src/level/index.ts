/**
 * `adaptree/level`: an abstract-level (v3) database over adaptree.
 *
 * ```ts
 * import { AdaptreeLevel } from 'adaptree/level';
 * const db = new AdaptreeLevel({ valueEncoding: 'json' });   // opens itself (loads the wasm)
 * await db.put('a', { n: 1 });
 * for await (const [k, v] of db.iterator({ gte: 'a' })) console.log(k, v);
 * await db.close();
 * ```
 *
 * Manifest: implicit and explicit snapshots (copy-on-write per key, see snapshot.ts), seek,
 * has/hasMany, getMany, getSync (synchronous stores), every encoding (the store holds bytes:
 * the private API speaks `view`), deferred open; permanence, createIfMissing and
 * errorIfExists with a location. Keys are at most 1024 bytes (a longer key is a
 * `KeyTooLargeError`, code `KEY_TOO_LARGE`).
 *
 * The data lives behind `LevelStore` (store.ts): the in-memory `BTreeMap` by default, a
 * `BTreeStore` at `location` (persistent.ts), or any store given through the `store` option.
 *
 * @module adaptree/level
 */
import {
  AbstractIterator,
  AbstractKeyIterator,
  AbstractLevel,
  AbstractSnapshot,
  AbstractValueIterator,
  type AbstractDatabaseOptions,
} from 'abstract-level';
import { init, initialized } from '../index.js';
import type { AdaptreeWasm, WasmUrl } from '../wasm.js';
import type { LayoutName } from '../abi.js';
import { compareBytes } from '../encoding/codec.js';
import { InvalidArgumentError } from '../errors.js';
import { MemoryStore, type Awaitable, type LevelStore, type StoreEntry, type StoreRange } from './store.js';
import { persistentStore, type LevelStoreFactory } from './persistent.js';
import type { StorageName } from '../store.js';
import type { StorageBackend } from '../storage/types.js';
import { NOT_IN_OVERLAY, Version, Versions, mergeBatch } from './snapshot.js';

export {
  BytesMapStore,
  MemoryStore,
  type Awaitable,
  type BytesMap,
  type LevelStore,
  type MemoryStoreOptions,
  type StoreEntry,
  type StoreRange,
} from './store.js';
export { persistentStore, type LevelStoreFactory, type PersistentStoreOptions, type StoreOpenOptions } from './persistent.js';

/** Options of `new AdaptreeLevel(options)`: abstract-level's, and where the data lives. */
export interface AdaptreeLevelOptions<K, V> extends AbstractDatabaseOptions<K, V> {
  /** Node layout of the tree (default `'adaptive'`; a persistent store keeps the layout it was created with). */
  layout?: LayoutName;
  /** The wasm instance (default: the one `init()` loaded, loading it on open if needed). */
  wasm?: AdaptreeWasm;
  /**
   * A path (or a name, for the `memory` storage): the data lives in a `BTreeStore` there and
   * outlives the process. Without it (and without `store`) the data lives in memory.
   */
  location?: string;
  /** With `location`: BTreeStore's backend (default `'node'` in Node, `'deno'` in Deno). */
  storage?: StorageName | StorageBackend;
  /** With `location`: buffer pool bytes (default 64 MiB). */
  poolSize?: number;
  /** With `location` and storage `'opfs'` on a browser's main thread: the URL of the package's
   * `dist/storage/opfs-worker.js`, where a bundle cannot locate it (BTreeStore's `workerUrl`). */
  workerUrl?: string | WasmUrl;
  /** Where the data lives, as a factory (`persistentStore(...)`, `memoryStore()`, your own). */
  store?: LevelStoreFactory;
}

/** The in-memory store factory: one `MemoryStore`, kept across close and reopen. */
export function memoryStore(options: { layout?: LayoutName } = {}): LevelStoreFactory {
  let store: MemoryStore | null = null;
  return {
    sync: true,
    permanence: false,
    open(wasm: AdaptreeWasm): MemoryStore {
      store ??= new MemoryStore({ wasm, ...(options.layout !== undefined ? { layout: options.layout } : {}) });
      return store;
    },
    free(): void {
      store?.free();
      store = null;
    },
  };
}

// Private-API option shapes (what abstract-level passes to the underscored methods).
interface ReadOptions {
  snapshot?: AdaptreeSnapshot | null;
}
interface RangeOptions extends ReadOptions {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
  reverse: boolean;
  limit: number;
}
interface IteratorOptions extends RangeOptions {
  keys?: boolean;
  values?: boolean;
}
interface BatchOp {
  type: 'put' | 'del';
  key: Uint8Array;
  value?: Uint8Array;
}

/**
 * An abstract-level database whose data lives in adaptree: in memory by default, in a
 * `BTreeStore` with a location (`new AdaptreeLevel('data/db')` or `{ location }`).
 */
export class AdaptreeLevel<KDefault = string, VDefault = string> extends AbstractLevel<Uint8Array, KDefault, VDefault> {
  readonly #factory: LevelStoreFactory;
  readonly #wasmOption: AdaptreeWasm | undefined;
  #store: LevelStore | null = null;
  #versions: Versions | null = null;
  /** Tail of the write queue (async stores: writes never overlap). */
  #tail: Promise<unknown> = Promise.resolve();

  /** An in-memory database, or a persistent one if `options.location` is given. */
  constructor(options?: AdaptreeLevelOptions<KDefault, VDefault>);
  /** A persistent database at `location` (classic-level's signature). */
  constructor(location: string, options?: Omit<AdaptreeLevelOptions<KDefault, VDefault>, 'location'>);
  constructor(
    locationOrOptions: string | AdaptreeLevelOptions<KDefault, VDefault> = {},
    maybeOptions: Omit<AdaptreeLevelOptions<KDefault, VDefault>, 'location'> = {},
  ) {
    if (maybeOptions === null || typeof maybeOptions !== 'object') throw new InvalidArgumentError('options must be an object');
    const options: AdaptreeLevelOptions<KDefault, VDefault> =
      typeof locationOrOptions === 'string' ? { ...maybeOptions, location: locationOrOptions } : locationOrOptions;
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options must be an object');
    if (options.store !== undefined && options.location !== undefined) {
      throw new InvalidArgumentError('give either location or store, not both');
    }
    // (without a location they were ignored: `{ storage: 'indexeddb' }` gave an in-memory
    // database that kept nothing; a probe, session 31)
    if (options.location === undefined) {
      const stray = (['storage', 'poolSize', 'workerUrl'] as const).filter((k) => options[k] !== undefined);
      if (stray.length > 0) throw new InvalidArgumentError(`${stray.join(', ')} ${stray.length > 1 ? 'need' : 'needs'} a location (the database is in memory without one)`);
    }
    const factory =
      options.store ??
      (options.location !== undefined
        ? persistentStore({
            location: options.location,
            ...(options.storage !== undefined ? { storage: options.storage } : {}),
            ...(options.layout !== undefined ? { layout: options.layout } : {}),
            ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
            ...(options.workerUrl !== undefined ? { workerUrl: options.workerUrl } : {}),
          })
        : memoryStore(options.layout !== undefined ? { layout: options.layout } : {}));
    // `getSync` is in abstract-level 3.1's manifest but not in level-supports' types.
    const manifest: Record<string, unknown> = {
      implicitSnapshots: true,
      explicitSnapshots: true,
      has: true,
      getSync: factory.sync,
      seek: true,
      permanence: factory.permanence,
      createIfMissing: !!factory.createIfMissing,
      errorIfExists: !!factory.createIfMissing,
      encodings: { view: true },
    };
    // Our own options stay out of what abstract-level forwards to open() and its hooks.
    const { layout: _layout, wasm: _wasm, store: _store, location: _location, storage: _storage, poolSize: _poolSize, workerUrl: _workerUrl, ...forward } = options;
    super(manifest, forward);
    this.#factory = factory;
    this.#wasmOption = options.wasm;
  }

  /** The open store (throws when the db is not open). For stats and tests. */
  get store(): LevelStore {
    if (this.#store === null) throw new InvalidArgumentError('the database is not open');
    return this.#store;
  }

  /** Distinct versions held open by snapshots and iterators (diagnostics; 0 when idle). */
  get openVersions(): number {
    return this.#versions?.size ?? 0;
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _open(options: { createIfMissing?: boolean; errorIfExists?: boolean } = {}): Promise<void> {
    const wasm = this.#wasmOption ?? initialized() ?? (await init());
    const store = await this.#factory.open(wasm, { createIfMissing: options.createIfMissing !== false, errorIfExists: !!options.errorIfExists });
    this.#versions ??= new Versions(wasm);
    this.#store = store;
  }

  /**
   * Closes the db and releases the wasm memory its in-memory store keeps for a reopen: the data
   * is gone, and a later `open()` starts empty. Without it that memory (~280 KiB at least) is
   * released only when the db is garbage-collected, which a loop that never yields to the event
   * loop does not allow (7,486 dbs made, used and closed in one such loop ran out of wasm
   * memory: a new-user probe, session 24). A db with a location: as `close()`.
   */
  async free(): Promise<void> {
    await this.close();
    this.#factory.free?.();
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _close(): Promise<void> {
    const s = this.#store;
    if (s === null) return;
    await this.#tail;
    this.#versions?.clear();
    this.#store = null;
    await s.close();
  }

  // ----------------------------------------------------------------- reads

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _get(key: Uint8Array, options: ReadOptions): Promise<Uint8Array | undefined> {
    const s = this.#store!;
    const snap = options.snapshot ?? null;
    if (s.sync) return readOne(s.get(key) as Uint8Array | undefined, snap?.version, key);
    // Async store: read through a version taken now, so later writes stay invisible.
    const v = snap?.version ?? this.#versions!.acquire();
    try {
      return readOne(await s.get(key), v, key);
    } finally {
      if (snap === null) this.#versions!.release(v);
    }
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _getSync(key: Uint8Array, options: ReadOptions): Uint8Array | undefined {
    const s = this.#store!;
    // abstract-level's own LEVEL_NOT_SUPPORTED error (supports.getSync is false then).
    if (!s.sync) return (AbstractLevel.prototype as unknown as { _getSync(k: Uint8Array, o: ReadOptions): never })._getSync.call(this, key, options);
    return readOne(s.get(key) as Uint8Array | undefined, options.snapshot?.version, key);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _getMany(keys: Uint8Array[], options: ReadOptions): Promise<(Uint8Array | undefined)[]> {
    const s = this.#store!;
    const snap = options.snapshot ?? null;
    if (s.sync) return readMany(s.getMany(keys) as (Uint8Array | undefined)[], snap?.version, keys);
    const v = snap?.version ?? this.#versions!.acquire();
    try {
      return readMany(await s.getMany(keys), v, keys);
    } finally {
      if (snap === null) this.#versions!.release(v);
    }
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _has(key: Uint8Array, options: ReadOptions): Promise<boolean> {
    const s = this.#store!;
    const snap = options.snapshot ?? null;
    if (s.sync) return hasOne(s.has(key) as boolean, snap?.version, key);
    const v = snap?.version ?? this.#versions!.acquire();
    try {
      return hasOne(await s.has(key), v, key);
    } finally {
      if (snap === null) this.#versions!.release(v);
    }
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _hasMany(keys: Uint8Array[], options: ReadOptions): Promise<boolean[]> {
    const s = this.#store!;
    const snap = options.snapshot ?? null;
    if (s.sync) return keys.map((k) => hasOne(s.has(k) as boolean, snap?.version, k));
    const v = snap?.version ?? this.#versions!.acquire();
    try {
      const live = await s.getMany(keys);
      return keys.map((k, i) => readOne(live[i], v, k) !== undefined);
    } finally {
      if (snap === null) this.#versions!.release(v);
    }
  }

  // ----------------------------------------------------------------- writes

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _put(key: Uint8Array, value: Uint8Array): Promise<void> {
    await this.#write([[key, value]], []);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _del(key: Uint8Array): Promise<void> {
    await this.#write([], [key]);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _batch(operations: BatchOp[]): Promise<void> {
    const { puts, dels } = fold(operations);
    await this.#write(puts, dels);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _clear(options: RangeOptions): Promise<void> {
    const s = this.#store!;
    if (s.sync) return this.#clear(s, options);
    // An async store: in the write queue, after the writes called before it and before those
    // called after it. It took its version when called: writes queued before it were not deleted,
    // and a put made after it (resolved, read back) was deleted by a later chunk (a probe,
    // session 31).
    const run = this.#tail.then(() => this.#clear(s, options));
    this.#tail = run.catch(() => {});
    return run;
  }

  /** clear(), in its turn: no write of this database runs meanwhile but its own chunks. */
  async #clear(s: LevelStore, options: RangeOptions): Promise<void> {
    const vs = this.#versions!;
    const snap = options.snapshot ?? null;
    const range = rangeOf(options);
    if (snap === null && options.limit < 0 && vs.size === 0) {
      // One deleteRange: applied at once, one commit (an async store's too: it went chunk by
      // chunk, a commit each, and readers saw it half done).
      await s.deleteRange(range);
      return;
    }
    // Delete the keys the reader sees (in the snapshot if one is given), `limit` of them.
    // With a synchronous store this whole call runs at once, in one turn, so it is atomic: one
    // commit holds every chunk. (It awaited each chunk's commit: a crash left part of a clear,
    // a put made meanwhile was deleted by a later chunk, and close() during it kept part of it;
    // a new-user probe, session 23.) On an asynchronous store the chunks are read and written
    // one after the other, as abstract-level allows ("not guaranteed to be atomic").
    const v = snap?.version ?? (s.sync ? null : vs.acquire());
    try {
      const cursor = new Cursor(s, v, options, false);
      let left = options.limit < 0 ? Infinity : options.limit;
      const durable: Promise<void>[] = [];
      while (left > 0) {
        const n = Math.min(left, CLEAR_CHUNK);
        const batch = s.sync ? cursor.readNow(n) : await cursor.read(n);
        if (batch.length === 0) break;
        left -= batch.length;
        // (an async store's chunks are written in this turn of the queue: #write would queue
        // them behind this clear)
        const w = s.sync ? this.#write([], batch.map((e) => e[0])) : this.#writeNow(s, [], batch.map((e) => e[0]));
        if (w !== undefined) {
          if (s.sync) durable.push(Promise.resolve(w));
          else await w;
        }
      }
      await Promise.all(durable);
    } finally {
      if (v !== null && snap === null) vs.release(v);
    }
  }

  /**
   * Applies a write: first the old values of its keys go into every open version, then the
   * store is written. Synchronous stores: all of it now (returns undefined, or the store's
   * promise that the write is durable). Async stores: queued behind the previous write.
   */
  #write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Awaitable<void> {
    const s = this.#store!;
    if (s.sync) return this.#writeNow(s, puts, dels);
    const run = this.#tail.then(() => this.#writeNow(s, puts, dels));
    this.#tail = run.catch(() => {});
    return run;
  }

  #writeNow(s: LevelStore, puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Awaitable<void> {
    const vs = this.#versions!;
    if (vs.size === 0) return this.#apply(s, vs, puts, dels);
    const keys = puts.length === 0 ? dels : dels.length === 0 ? puts.map((p) => p[0]) : [...puts.map((p) => p[0]), ...dels];
    const olds = s.getMany(keys);
    if (s.sync) {
      vs.recordOld(keys, olds as (Uint8Array | undefined)[]);
      return this.#apply(s, vs, puts, dels);
    }
    return Promise.resolve(olds).then((o) => {
      vs.recordOld(keys, o);
      return this.#apply(s, vs, puts, dels);
    });
  }

  #apply(s: LevelStore, vs: Versions, puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Awaitable<void> {
    if (s.sync) return s.write(puts, dels); // applied now; a promise only for durability
    vs.setPending({ puts, dels });
    let done: Promise<void>;
    try {
      done = Promise.resolve(s.write(puts, dels));
    } catch (e) {
      vs.setPending(null);
      throw e;
    }
    return done.finally(() => vs.setPending(null));
  }

  // ----------------------------------------------------------------- iterators, snapshots

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _iterator(options: IteratorOptions): AdaptreeIterator<KDefault, VDefault> {
    return new AdaptreeIterator(this, options, this.#reader(options, options.values !== false));
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _keys(options: RangeOptions): AdaptreeKeyIterator<KDefault, VDefault> {
    return new AdaptreeKeyIterator(this, options, this.#reader(options, false));
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _values(options: RangeOptions): AdaptreeValueIterator<KDefault, VDefault> {
    return new AdaptreeValueIterator(this, options, this.#reader(options, true));
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _snapshot(options: object): AdaptreeSnapshot {
    return new AdaptreeSnapshot(options, this.#versions!);
  }

  /** A reader of the range, in the given snapshot or in an implicit one taken now. */
  #reader(options: RangeOptions, values: boolean): Reader {
    const vs = this.#versions!;
    let v: Version;
    if (options.snapshot) {
      v = options.snapshot.version;
      v.refs++;
    } else {
      v = vs.acquire();
    }
    return new Reader(new Cursor(this.#store!, v, options, values), () => vs.release(v));
  }
}

// ----------------------------------------------------------------------------- reads through a version

function readOne(live: Uint8Array | undefined, v: Version | undefined, key: Uint8Array): Uint8Array | undefined {
  if (v === undefined) return live;
  const o = v.lookup(key);
  return o === NOT_IN_OVERLAY ? live : o;
}

function readMany(live: (Uint8Array | undefined)[], v: Version | undefined, keys: Uint8Array[]): (Uint8Array | undefined)[] {
  if (v === undefined || v.empty) return live;
  return keys.map((k, i) => readOne(live[i], v, k));
}

function hasOne(live: boolean, v: Version | undefined, key: Uint8Array): boolean {
  if (v === undefined) return live;
  const o = v.lookup(key);
  return o === NOT_IN_OVERLAY ? live : o !== undefined;
}

/** The net effect of a batch: the last operation on each key wins. */
function fold(ops: BatchOp[]): { puts: [Uint8Array, Uint8Array][]; dels: Uint8Array[] } {
  if (ops.length === 1) {
    const op = ops[0]!;
    return op.type === 'put' ? { puts: [[op.key, op.value!]], dels: [] } : { puts: [], dels: [op.key] };
  }
  const last = new Map<string, BatchOp>();
  for (const op of ops) {
    const id = keyId(op.key);
    last.delete(id); // keep the order of the last occurrence
    last.set(id, op);
  }
  const puts: [Uint8Array, Uint8Array][] = [];
  const dels: Uint8Array[] = [];
  for (const op of last.values()) {
    if (op.type === 'put') puts.push([op.key, op.value!]);
    else dels.push(op.key);
  }
  return { puts, dels };
}

/** A string that identifies a byte string (one char per byte). */
function keyId(key: Uint8Array): string {
  let s = '';
  for (let i = 0; i < key.length; i += 4096) {
    s += String.fromCharCode.apply(null, key.subarray(i, i + 4096) as unknown as number[]);
  }
  return s;
}

function rangeOf(o: { gt?: Uint8Array; gte?: Uint8Array; lt?: Uint8Array; lte?: Uint8Array; reverse?: boolean }): StoreRange {
  const r: StoreRange = { reverse: !!o.reverse };
  if (o.gte !== undefined) r.gte = o.gte;
  else if (o.gt !== undefined) r.gt = o.gt;
  if (o.lte !== undefined) r.lte = o.lte;
  else if (o.lt !== undefined) r.lt = o.lt;
  return r;
}

const CLEAR_CHUNK = 1024;
const FIRST_BATCH = 16;
const MAX_BATCH = 1024;
/** nextv(size) returns at most this many entries per call (fewer is allowed by the API). */
const MAX_NEXTV = 1 << 16;

interface Bound {
  key: Uint8Array;
  inclusive: boolean;
}

/**
 * A position in a range of one version: reads batches by re-scanning the store from just
 * after the last key read (so the store needs no cursors that survive writes), merged with
 * the version's overlay over the same key interval. A batch is a view of the version, which
 * never changes: nothing read ahead goes stale.
 */
class Cursor {
  readonly #store: LevelStore;
  readonly #version: Version | null;
  readonly #values: boolean;
  readonly #reverse: boolean;
  readonly #lo0: Bound | null;
  readonly #hi0: Bound | null;
  #lo: Bound | null;
  #hi: Bound | null;
  #done = false;

  constructor(store: LevelStore, version: Version | null, o: RangeOptions, values: boolean) {
    this.#store = store;
    this.#version = version;
    this.#values = values;
    this.#reverse = !!o.reverse;
    const r = rangeOf(o);
    this.#lo0 = this.#lo = r.gte !== undefined ? { key: r.gte, inclusive: true } : r.gt !== undefined ? { key: r.gt, inclusive: false } : null;
    this.#hi0 = this.#hi = r.lte !== undefined ? { key: r.lte, inclusive: true } : r.lt !== undefined ? { key: r.lt, inclusive: false } : null;
  }

  /** Up to `max` entries; an empty array only at the end of the range. */
  async read(max: number): Promise<StoreEntry[]> {
    while (!this.#done) {
      const live = await this.#store.scan(this.#range(), max, this.#values);
      const out = this.#merge(live, max);
      if (out.length > 0) return out;
    }
    return [];
  }

  /** `read` for a synchronous store. */
  readNow(max: number): StoreEntry[] {
    while (!this.#done) {
      const out = this.#merge(this.#store.scan(this.#range(), max, this.#values) as StoreEntry[], max);
      if (out.length > 0) return out;
    }
    return [];
  }

  /** Moves to the first key at or past `target` in the iteration direction. A target outside
   * the range ends the iteration (abstract-level: "the iterator will reach its natural end");
   * one before the range's start went to the start until session 29 (a probe against
   * memory-level: `{ gt: '5' }` and seek('4') gave '6', not the end). */
  seek(target: Uint8Array): void {
    this.#done = false;
    this.#lo = this.#lo0;
    this.#hi = this.#hi0;
    if (!this.#reverse) {
      const lo0 = this.#lo0;
      const c = lo0 === null ? 1 : compareBytes(target, lo0.key);
      if (c < 0 || (c === 0 && !lo0!.inclusive)) this.#done = true;
      else this.#lo = { key: target, inclusive: true };
    } else {
      const hi0 = this.#hi0;
      const c = hi0 === null ? -1 : compareBytes(target, hi0.key);
      if (c > 0 || (c === 0 && !hi0!.inclusive)) this.#done = true;
      else this.#hi = { key: target, inclusive: true };
    }
  }

  #range(): StoreRange {
    const r: StoreRange = { reverse: this.#reverse };
    const lo = this.#lo, hi = this.#hi;
    if (lo !== null) r[lo.inclusive ? 'gte' : 'gt'] = lo.key;
    if (hi !== null) r[hi.inclusive ? 'lte' : 'lt'] = hi.key;
    return r;
  }

  /**
   * Merges a store batch (read first) with the overlay entries of the same interval (read
   * second), then moves past the interval. The interval ends at the last entry of a full
   * batch (of either source), else at the end of the range; at most `max` entries return.
   */
  #merge(live: StoreEntry[], max: number): StoreEntry[] {
    const rev = this.#reverse;
    let end: Uint8Array | null = live.length >= max ? live[live.length - 1]![0] : null;
    let over: StoreEntry[] = [];
    const v = this.#version;
    if (v !== null && !v.empty) {
      const r = this.#range();
      if (end !== null) {
        if (rev) r.gte = end, delete r.gt;
        else r.lte = end, delete r.lt;
      }
      over = v.scan(r, max);
      if (over.length >= max) {
        const oe = over[over.length - 1]![0];
        if (end === null || compareBytes(oe, end) * (rev ? -1 : 1) < 0) {
          end = oe;
          live = live.filter((e) => compareBytes(e[0], oe) * (rev ? -1 : 1) <= 0);
        }
      }
    }
    let out = mergeBatch(live, over, rev, this.#values);
    if (out.length > max) {
      // Overlay entries added to a full store batch: return `max`, resume after the last one.
      out = out.slice(0, max);
      end = out[max - 1]![0];
    }
    if (end === null) this.#done = true;
    else if (rev) this.#hi = { key: end, inclusive: false };
    else this.#lo = { key: end, inclusive: false };
    return out;
  }
}

/** A cursor with a read-ahead buffer and growing batches; what the three iterators share. */
class Reader {
  readonly #cursor: Cursor;
  #release: (() => void) | null;
  #buf: StoreEntry[] = [];
  #i = 0;
  #batch = FIRST_BATCH;

  constructor(cursor: Cursor, release: () => void) {
    this.#cursor = cursor;
    this.#release = release;
  }

  async next(): Promise<StoreEntry | undefined> {
    if (this.#i === this.#buf.length) {
      this.#buf = await this.#cursor.read(this.#batch);
      this.#i = 0;
      if (this.#batch < MAX_BATCH) this.#batch *= 2;
      if (this.#buf.length === 0) return undefined;
    }
    return this.#buf[this.#i++];
  }

  async nextv(size: number): Promise<StoreEntry[]> {
    if (this.#i < this.#buf.length) {
      const out = this.#buf.slice(this.#i, this.#i + size);
      this.#i += out.length;
      return out;
    }
    return this.#cursor.read(Math.min(size, MAX_NEXTV));
  }

  async all(limit: number): Promise<StoreEntry[]> {
    const out = this.#buf.slice(this.#i, this.#i + limit);
    this.#i += out.length;
    while (out.length < limit) {
      const b = await this.#cursor.read(Math.min(limit - out.length, MAX_BATCH * 16));
      if (b.length === 0) break;
      for (const e of b) out.push(e);
    }
    return out;
  }

  seek(target: Uint8Array): void {
    this.#buf = [];
    this.#i = 0;
    this.#batch = FIRST_BATCH;
    this.#cursor.seek(target);
  }

  close(): void {
    this.#buf = [];
    this.#release?.();
    this.#release = null;
  }
}

function remaining(it: { limit: number; count: number }): number {
  return it.limit === Infinity ? Infinity : it.limit - it.count;
}

/** @hidden What `db.iterator()`/`keys()`/`values()` return: abstract-level's iterator over a version of the store. */
export class AdaptreeIterator<K, V> extends AbstractIterator<AdaptreeLevel<K, V>, Uint8Array, Uint8Array> {
  readonly #r: Reader;
  readonly #keys: boolean;
  readonly #values: boolean;

  constructor(db: AdaptreeLevel<K, V>, options: IteratorOptions, reader: Reader) {
    super(db, options as never);
    this.#r = reader;
    this.#keys = options.keys !== false;
    this.#values = options.values !== false;
  }

  #entry(e: StoreEntry): [Uint8Array, Uint8Array] {
    return [(this.#keys ? e[0] : undefined) as Uint8Array, e[1] as Uint8Array];
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _next(): Promise<[Uint8Array, Uint8Array] | undefined> {
    const e = await this.#r.next();
    return e === undefined ? undefined : this.#entry(e);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _nextv(size: number): Promise<[Uint8Array, Uint8Array][]> {
    return (await this.#r.nextv(size)).map((e) => this.#entry(e));
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _all(): Promise<[Uint8Array, Uint8Array][]> {
    return (await this.#r.all(remaining(this))).map((e) => this.#entry(e));
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _seek(target: Uint8Array): void {
    this.#r.seek(target);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _close(): Promise<void> {
    this.#r.close();
  }
}

/** @hidden What `db.iterator()`/`keys()`/`values()` return: abstract-level's iterator over a version of the store. */
export class AdaptreeKeyIterator<K, V> extends AbstractKeyIterator<AdaptreeLevel<K, V>, Uint8Array> {
  readonly #r: Reader;

  constructor(db: AdaptreeLevel<K, V>, options: RangeOptions, reader: Reader) {
    super(db, options as never);
    this.#r = reader;
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _next(): Promise<Uint8Array | undefined> {
    return (await this.#r.next())?.[0];
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _nextv(size: number): Promise<Uint8Array[]> {
    return (await this.#r.nextv(size)).map((e) => e[0]);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _all(): Promise<Uint8Array[]> {
    return (await this.#r.all(remaining(this))).map((e) => e[0]);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _seek(target: Uint8Array): void {
    this.#r.seek(target);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _close(): Promise<void> {
    this.#r.close();
  }
}

/** @hidden What `db.iterator()`/`keys()`/`values()` return: abstract-level's iterator over a version of the store. */
export class AdaptreeValueIterator<K, V> extends AbstractValueIterator<AdaptreeLevel<K, V>, Uint8Array, Uint8Array> {
  readonly #r: Reader;

  constructor(db: AdaptreeLevel<K, V>, options: RangeOptions, reader: Reader) {
    super(db, options as never);
    this.#r = reader;
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _next(): Promise<Uint8Array | undefined> {
    return (await this.#r.next())?.[1];
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _nextv(size: number): Promise<Uint8Array[]> {
    return (await this.#r.nextv(size)).map((e) => e[1]!);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _all(): Promise<Uint8Array[]> {
    return (await this.#r.all(remaining(this))).map((e) => e[1]!);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  _seek(target: Uint8Array): void {
    this.#r.seek(target);
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _close(): Promise<void> {
    this.#r.close();
  }
}

// abstract-level's types omit the constructor's options argument (`{ owner }`).
const SnapshotBase = AbstractSnapshot as unknown as new (options: object) => AbstractSnapshot;

/** An explicit snapshot: holds one version of the store until closed. */
export class AdaptreeSnapshot extends SnapshotBase {
  readonly version: Version;
  readonly #versions: Versions;

  constructor(options: object, versions: Versions) {
    super(options);
    this.#versions = versions;
    this.version = versions.acquire();
  }

  /** @hidden abstract-level's private API (called through the public method without the underscore). */
  async _close(): Promise<void> {
    this.#versions.release(this.version);
  }
}
