/**
 * The level's persistent store: a `BTreeStore` (bytes keys and values) at a location.
 *
 * ```ts
 * import { AdaptreeLevel } from 'adaptree/level';
 * const db = new AdaptreeLevel('data/db', { valueEncoding: 'json' });   // node files in Node
 * await db.put('a', { n: 1 });          // resolves once the write is committed (durable)
 * await db.close();                     // commits, checkpoints, releases the lock
 * ```
 *
 * Durability: every write (`put`, `del`, `batch`, `clear`) is visible at once and resolves
 * when the commit that contains it has been flushed. Writes issued in the same turn of the
 * event loop share one commit (one `fdatasync` on the node backend: BTreeStore's group commit).
 * A crash reopens to the last flushed commit, never to half of a batch.
 *
 * On a synchronous backend (`node`, `deno`, `memory`) reads answer at once, so `getSync` works;
 * on an asynchronous one the store uses BTreeStore's `...Async` twins.
 */
import { BTreeStore, type StorageName } from '../store.js';
import type { StorageBackend } from '../storage/types.js';
import type { AdaptreeWasm, WasmUrl } from '../wasm.js';
import type { LayoutName } from '../abi.js';
import { MAX_KEY_SIZE } from '../encoding/codec.js';
import { InvalidArgumentError, IoError, isAdaptreeError } from '../errors.js';
import { opfsSyncAvailable } from '../storage/opfs.js';
import { BytesMapStore, clampRange, type Awaitable, type LevelStore, type StoreEntry, type StoreRange } from './store.js';

/** Options of a persistent level store (`persistentStore`, or `location` on `AdaptreeLevel`). */
export interface PersistentStoreOptions {
  /** The data file (a name for the memory backends); `location + '-log'` is the log. */
  location: string;
  /** BTreeStore's backend: default `'node'` in Node, `'deno'` in Deno. */
  storage?: StorageName | StorageBackend;
  /** Layout of a new store (an existing one keeps its own). Default `'adaptive'`. */
  layout?: LayoutName;
  /** Buffer pool bytes (default 64 MiB, at least 1 MiB). */
  poolSize?: number;
  /** storage `'opfs'` on a browser's main thread: BTreeStore's `workerUrl`. */
  workerUrl?: string | WasmUrl;
}

/** What `open` may be asked besides the wasm: abstract-level's open options. */
export interface StoreOpenOptions {
  /** Default true: create the store when it is missing; false: a missing store is an error. */
  createIfMissing?: boolean;
  /** Default false: true makes opening an existing store an error. */
  errorIfExists?: boolean;
}

/** A sync-backend `BTreeStore` as a `LevelStore`: reads at once, writes resolve on commit. */
class SyncFileStore extends BytesMapStore {
  readonly #store: BTreeStore<Uint8Array, Uint8Array>;

  constructor(store: BTreeStore<Uint8Array, Uint8Array>) {
    super(store);
    this.#store = store;
  }

  override write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Promise<void> {
    super.write(puts, dels);
    return this.#store.commit();
  }

  override deleteRange(range: StoreRange): Promise<void> {
    super.deleteRange(range);
    return this.#store.commit();
  }

  override close(): Promise<void> {
    return this.#store.close();
  }
}

/** An async-backend `BTreeStore` as a `LevelStore`: every call through the `...Async` twins. */
class AsyncFileStore implements LevelStore {
  readonly sync = false;
  readonly maxKeySize = MAX_KEY_SIZE;
  readonly #store: BTreeStore<Uint8Array, Uint8Array>;

  constructor(store: BTreeStore<Uint8Array, Uint8Array>) {
    this.#store = store;
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return key.length > MAX_KEY_SIZE ? undefined : this.#store.getAsync(key);
  }

  async getMany(keys: Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    if (keys.every((k) => k.length <= MAX_KEY_SIZE)) return this.#store.getManyAsync(keys);
    const out: (Uint8Array | undefined)[] = [];
    for (const k of keys) out.push(await this.get(k));
    return out;
  }

  async has(key: Uint8Array): Promise<boolean> {
    return key.length <= MAX_KEY_SIZE && this.#store.hasAsync(key);
  }

  async write(puts: [Uint8Array, Uint8Array][], dels: Uint8Array[]): Promise<void> {
    if (puts.length > 0) await this.#store.setManyAsync(puts);
    for (const k of dels) if (k.length <= MAX_KEY_SIZE) await this.#store.deleteAsync(k);
    await this.#store.commit();
  }

  async deleteRange(range: StoreRange): Promise<void> {
    const r = clampRange(range);
    await this.#store.deleteRangeAsync({ gt: r.gt, gte: r.gte, lt: r.lt, lte: r.lte });
    await this.#store.commit();
  }

  async scan(range: StoreRange, limit: number, values: boolean): Promise<StoreEntry[]> {
    const r = { ...clampRange(range), limit };
    const out: StoreEntry[] = [];
    if (values) for await (const e of this.#store.entriesAsync(r)) out.push(e);
    else for await (const k of this.#store.keysAsync(r)) out.push([k, undefined]);
    return out;
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

/**
 * On an asynchronous backend (indexeddb, async-memory) a store exists once a commit has
 * written it, and a commit with nothing changed writes nothing; a db opened and closed empty
 * would not exist at its next open (createIfMissing: false, errorIfExists). So an empty store
 * gets one commit when the level opens it with create: a marker key written and deleted.
 */
async function materialize(store: BTreeStore<Uint8Array, Uint8Array>): Promise<void> {
  const marker = new Uint8Array([0]);
  await store.setAsync(marker, new Uint8Array(0));
  await store.deleteAsync(marker);
  await store.commit();
}

/** A factory of the `store` option: where `AdaptreeLevel` keeps its data. */
export interface LevelStoreFactory {
  /** Whether the stores it opens are synchronous (decides `supports.getSync`). */
  readonly sync: boolean;
  /** Whether data outlives the process (`supports.permanence`). */
  readonly permanence: boolean;
  /** Whether `open` honours `createIfMissing` and `errorIfExists` (the manifest says so). */
  readonly createIfMissing?: boolean;
  /** Called at every open (a closed db may be opened again). */
  open(wasm: AdaptreeWasm, options?: StoreOpenOptions): Awaitable<LevelStore>;
  /** Releases what the factory keeps for a reopen (`AdaptreeLevel#free`): the in-memory
   * store's wasm memory. The next open starts empty. */
  free?(): void;
}

/** Whether BTreeStore opens `storage` synchronous here: 'indexeddb' and 'async-memory' never
 * are; 'opfs' is in a dedicated worker (sync access handles) and not on a main thread (the
 * store then runs in a worker of its own and answers through promises). */
function isSyncBackend(storage: PersistentStoreOptions['storage']): boolean {
  if (storage === 'indexeddb' || storage === 'async-memory') return false;
  if (storage === 'opfs') return opfsSyncAvailable();
  if (storage === undefined || typeof storage === 'string') return true;
  return storage.kind === 'sync';
}

/**
 * With file storage and createIfMissing, makes the location's parent directory (classic-level
 * creates its location too). `node:fs` is loaded only then, under a name bundlers do not follow.
 */
async function makeParentDir(location: string, storage: PersistentStoreOptions['storage']): Promise<void> {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } } };
  const files = storage === 'node' || storage === 'deno' || (storage === undefined && (g.Deno !== undefined || g.process?.versions?.node !== undefined));
  const cut = Math.max(location.lastIndexOf('/'), location.lastIndexOf('\\'));
  if (!files || cut <= 0) return;
  const fsName = 'node:fs/promises';
  const fs = (await import(/* @vite-ignore */ /* webpackIgnore: true */ fsName)) as { mkdir(p: string, o: { recursive: boolean }): Promise<unknown> };
  try {
    await fs.mkdir(location.slice(0, cut), { recursive: true });
  } catch (e) {
    // (it came out as Node's own error: a location under a file gave EEXIST from mkdir)
    throw new IoError(`cannot create the directory of '${location}': ${(e as Error)?.message ?? String(e)}`, { cause: e });
  }
}

/**
 * The persistent store factory: opens a `BTreeStore` at `location` at every open of the db
 * and closes it (commit + checkpoint + unlock) at every close. Permanence: yes.
 */
export function persistentStore(options: PersistentStoreOptions): LevelStoreFactory {
  if (options === null || typeof options !== 'object' || typeof options.location !== 'string' || options.location === '') {
    throw new InvalidArgumentError('persistentStore: options.location must be a non-empty string');
  }
  const { location, storage, layout, poolSize, workerUrl } = options;
  return {
    sync: isSyncBackend(storage),
    permanence: true,
    createIfMissing: true,
    async open(wasm: AdaptreeWasm, o: StoreOpenOptions = {}): Promise<LevelStore> {
      const create = o.createIfMissing !== false;
      const base = {
        path: location,
        keys: 'bytes' as const,
        values: 'bytes' as const,
        wasm,
        ...(storage !== undefined ? { storage } : {}),
        ...(layout !== undefined ? { layout } : {}),
        ...(poolSize !== undefined ? { poolSize } : {}),
        ...(workerUrl !== undefined ? { workerUrl } : {}),
      };
      let store: BTreeStore<Uint8Array, Uint8Array>;
      if (o.errorIfExists) {
        // Opening without create tells whether it exists, whatever the backend.
        let existing: BTreeStore<Uint8Array, Uint8Array> | undefined;
        try {
          existing = await BTreeStore.open<Uint8Array, Uint8Array>({ ...base, create: false });
        } catch (e) {
          if (!(e instanceof InvalidArgumentError && /no store at/.test(e.message))) throw e;
        }
        if (existing !== undefined) {
          await existing.close();
          throw new InvalidArgumentError(`the store at '${location}' already exists (errorIfExists)`);
        }
      }
      if (create) await makeParentDir(location, storage);
      try {
        store = await BTreeStore.open<Uint8Array, Uint8Array>({ ...base, create });
      } catch (e) {
        if (!create && isAdaptreeError(e) && e.code === 'INVALID_ARGUMENT' && /no store at/.test(e.message)) {
          throw new InvalidArgumentError(`the store at '${location}' does not exist (createIfMissing: false)`);
        }
        throw e;
      }
      if (!store.isAsync) return new SyncFileStore(store);
      if (create && store.size === 0) await materialize(store);
      return new AsyncFileStore(store);
    },
  };
}
