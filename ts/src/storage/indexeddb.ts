/**
 * `indexeddb`: an asynchronous backend on the browser's IndexedDB, on the main thread or in any
 * worker. The store at `path` is the database `adaptree:<path>` with one object store `pages`:
 * 4 KiB page images (Uint8Array) keyed by page id; page 0 is the superblock.
 *
 * Page faults go the asynchronous way (NEED_PAGE -> readPage -> retry, store.ts); a commit is
 * ONE readwrite transaction holding every changed page, so it is atomic by construction: after
 * a crash the database holds the pages of the last completed transaction. Read-ahead on scans
 * reads the run of pages in one transaction. (This is idb-keyval's setMany/getMany pattern;
 * the package does not depend on idb-keyval itself because it must load unbundled, in a
 * browser or workerd, where a bare module specifier cannot be resolved.)
 *
 * Durability: 'strict' by default (the transaction completes once the browser has flushed it
 * to disk); `indexedDBStorage({ durability: 'relaxed' })` completes as soon as the browser has
 * the data (faster; a power loss or OS crash may lose the last commits, never mix them).
 *
 * Locking: the Web Lock `adaptree:idb:<path>` from open to close, as for opfs: a second open
 * anywhere in the origin throws LockedError at once (or waits with `wait: true`). A database
 * upgrade or deletion from elsewhere (versionchange) closes our connection; later page reads
 * and commits then fail with IoError.
 *
 * Readers (`readOnly: true`) take no lock and run alongside the writer: every page they read
 * comes in one readonly transaction together with page 0, whose commit sequence tells whether
 * a commit landed since the reader's pages were read (IndexedDB serialises a readonly
 * transaction with the writer's readwrite ones, so the pair is from one commit). The store
 * then follows: it drops its pages and retries the read on the newer commit (store.ts).
 *
 * Errors: a transaction aborted for quota (QuotaExceededError) becomes QuotaExceededError, any
 * other failure IoError, with the browser's error as `cause`.
 */
import { InvalidArgumentError, IoError, QuotaExceededError } from '../errors.js';
import type { AsyncBackend, AsyncStorePages, OpenStorageOptions } from './types.js';
import { takeLock, webLocks } from './web-locks.js';

/** The parts of IndexedDB used here (the package builds without the DOM lib). */
interface IdbRequest<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  transaction: { abort(): void } | null;
  onupgradeneeded: ((ev: { oldVersion: number }) => void) | null;
  onblocked: (() => void) | null;
}
interface IdbObjectStore {
  get(key: number): IdbRequest<unknown>;
  put(value: unknown, key: number): IdbRequest<unknown>;
}
interface IdbTransaction {
  objectStore(name: string): IdbObjectStore;
  abort(): void;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
  error: unknown;
}
interface IdbDatabase {
  objectStoreNames: { contains(name: string): boolean };
  createObjectStore(name: string): unknown;
  transaction(store: string, mode: 'readonly' | 'readwrite', options?: { durability?: string }): IdbTransaction;
  close(): void;
  onversionchange: (() => void) | null;
}
interface IdbFactory {
  open(name: string, version?: number): IdbOpenRequest;
}

export type IndexedDBDurability = 'strict' | 'relaxed' | 'default';

export interface IndexedDBStorageOptions {
  /** Durability of commit transactions (default 'strict'). */
  durability?: IndexedDBDurability;
}

const STORE = 'pages';
const nameOf = (e: unknown) => (e as { name?: unknown } | null)?.name;

function idbError(e: unknown, what: string, path: string): Error {
  const msg = `indexeddb: ${what} of '${path}': ${(e as Error | null)?.message ?? String(e)}`;
  if (nameOf(e) === 'QuotaExceededError') return new QuotaExceededError(msg, { cause: e });
  return new IoError(msg, { cause: e });
}

/** Opens (or, with create, creates) the database; undefined when it does not exist and !create. */
function openDatabase(factory: IdbFactory, name: string, create: boolean): Promise<IdbDatabase | undefined> {
  return new Promise((resolve, reject) => {
    const req = factory.open(name, 1);
    let missing = false;
    req.onupgradeneeded = (ev) => {
      if (ev.oldVersion === 0 && !create) {
        missing = true;
        req.transaction?.abort(); // nothing is created
        return;
      }
      if (!req.result.objectStoreNames.contains(STORE)) req.result.createObjectStore(STORE);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => (missing ? resolve(undefined) : reject(req.error));
    req.onblocked = () => reject(new Error('an older connection blocks the upgrade'));
  });
}

/** An IndexedDB backend; `indexedDBStorage()` with no options is the `'indexeddb'` storage. */
export function indexedDBStorage(options: IndexedDBStorageOptions = {}): AsyncBackend & { open(path: string, o: OpenStorageOptions): Promise<AsyncStorePages> } {
  const durability = options.durability ?? 'strict';
  if (durability !== 'strict' && durability !== 'relaxed' && durability !== 'default') {
    throw new InvalidArgumentError(`indexeddb: durability must be 'strict', 'relaxed' or 'default', not ${String(durability)}`);
  }
  return {
    kind: 'async',
    name: 'indexeddb',
    async open(path: string, o: OpenStorageOptions): Promise<AsyncStorePages> {
      const factory = (globalThis as unknown as { indexedDB?: IdbFactory }).indexedDB;
      if (factory === undefined) throw new InvalidArgumentError("the 'indexeddb' storage needs IndexedDB (a browser, or a polyfill on globalThis.indexedDB)");
      if (typeof path !== 'string' || path === '') throw new InvalidArgumentError('indexeddb: the path must be a non-empty string');
      const locks = webLocks();
      // Readers take no lock: each page read is a readonly transaction with page 0 in it, so a
      // reader sees whole commits while the writer goes on (store.ts follows newer ones).
      const readOnly = o.readOnly === true;
      const release = locks !== undefined && !readOnly ? await takeLock(locks, 'adaptree:idb:' + path, o.wait === true, path) : () => {};
      let db: IdbDatabase | undefined;
      try {
        db = await openDatabase(factory, 'adaptree:' + path, o.create && !readOnly);
      } catch (e) {
        release();
        throw idbError(e, 'opening', path);
      }
      if (db === undefined) {
        release();
        throw new InvalidArgumentError(`no store at '${path}' (indexeddb, create: false)`);
      }
      const conn = db;
      let lost: unknown;
      conn.onversionchange = () => {
        lost = new Error('the database was upgraded or deleted elsewhere');
        conn.close();
      };
      /** Runs one transaction; resolves with what `body` returns once it has completed. */
      const transact = <T>(mode: 'readonly' | 'readwrite', body: (store: IdbObjectStore) => () => T): Promise<T> =>
        new Promise<T>((resolve, reject) => {
          if (lost !== undefined) throw lost;
          const tx = mode === 'readwrite' ? conn.transaction(STORE, mode, { durability }) : conn.transaction(STORE, mode);
          let result: () => T;
          try {
            result = body(tx.objectStore(STORE));
          } catch (e) {
            // A request that throws (put of a value IndexedDB refuses, ...) must not leave the
            // requests made before it to commit on their own: that would be part of a commit.
            try {
              tx.abort();
            } catch {
              /* already finished */
            }
            throw e;
          }
          tx.oncomplete = () => resolve(result());
          tx.onabort = () => reject(tx.error ?? new Error('the transaction was aborted'));
          tx.onerror = null; // an error aborts the transaction; onabort reports it
        });
      const getAll = (ids: readonly number[]) =>
        transact('readonly', (st) => {
          const reqs = ids.map((id) => st.get(id));
          return () => reqs.map((r) => r.result);
        });
      let closed = false;
      const copy = (v: unknown): Uint8Array | undefined => {
        if (v === undefined) return undefined;
        if (v instanceof Uint8Array) return v;
        if (v instanceof ArrayBuffer) return new Uint8Array(v);
        throw new IoError(`indexeddb: '${path}' holds a value that is not a page image`);
      };
      return {
        async readPage(id: number): Promise<Uint8Array | undefined> {
          try {
            const [v] = await getAll([id]);
            return copy(v);
          } catch (e) {
            throw e instanceof IoError ? e : idbError(e, `reading page ${id}`, path);
          }
        },
        async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
          try {
            return (await getAll(ids)).map(copy);
          } catch (e) {
            throw e instanceof IoError ? e : idbError(e, `reading pages ${ids[0]}..`, path);
          }
        },
        async writePages(pages): Promise<void> {
          if (readOnly) throw new IoError(`indexeddb: '${path}' is open read-only`);
          try {
            // One transaction, resolved when it has completed (with `durability`).
            await transact('readwrite', (st) => {
              for (const [id, image] of pages) st.put(image.slice(), id);
              return () => undefined;
            });
          } catch (e) {
            throw idbError(e, 'committing', path);
          }
        },
        close(): void {
          if (closed) return;
          closed = true;
          conn.close();
          release();
        },
      };
    },
  };
}

/** The default IndexedDB backend (`storage: 'indexeddb'`): strict durability. */
export const indexedDBDefault = indexedDBStorage();
