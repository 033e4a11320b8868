/**
 * `durableObjectKvStorage(ctx.storage)`: an asynchronous backend on a Durable Object's
 * key-value storage API (`ctx.storage.get/put/delete/list/transaction`), for objects without
 * SQLite (key-value-backed classes: `new_classes` in wrangler's migrations; no `enableSql` in
 * workerd), where the synchronous `durableObjectStorage` cannot run. It works on SQLite-backed
 * objects too, but there `durableObjectStorage` is the better choice (page faults inside the
 * wasm call, the synchronous API).
 *
 * ```ts
 * export class Index extends DurableObject {
 *   store = this.ctx.blockConcurrencyWhile(() =>
 *     BTreeStore.open({ path: 'main', storage: durableObjectKvStorage(this.ctx.storage), wasm }));
 *   async fetch(req: Request) {
 *     const s = await this.store;
 *     await s.setAsync('k', 1);   // the ...Async methods: pages come in through await
 *     await s.commit();
 *     return Response.json(await s.getAsync('k'));
 *   }
 * }
 * ```
 *
 * Layout: page `id` of the store at `path` is the key `adaptree:<encodeURIComponent(path)>:<id>`
 * (a 4096-byte Uint8Array; page 0 is the superblock), so several stores can share one object.
 * A commit is ONE `ctx.storage.transaction()` putting every changed page (128 keys a `put`,
 * the API's limit), so it is atomic: after a crash or an eviction the object holds the pages
 * of the last completed commit. Page faults go the asynchronous way (NEED_PAGE -> readPage ->
 * retry, store.ts); read-ahead gets up to 128 keys in one `get`.
 *
 * Durability: as for `durableObjectStorage`, the output gate holds the object's responses until
 * the transaction is durable; await `ctx.storage.sync()` if code must know it is on disk.
 *
 * Errors: a storage error that is a size limit is a QuotaExceededError, anything else an
 * IoError (durable-object.ts's rules); the runtime's error is the `cause`.
 *
 * Locking: one open per (storage object, path) in the isolate (object-locks.ts); readers
 * (`readOnly`) take the same lock.
 */
import { InvalidArgumentError, IoError, LockedError } from '../errors.js';
import { durableObjectError } from './durable-object.js';
import { isOpenInObject, openInObject, releaseInObject } from './object-locks.js';
import { pageCountOf } from './superblock.js';
import type { AsyncBackend, AsyncStorePages, OpenStorageOptions } from './types.js';

/** The part of a Durable Object's transaction (and storage) object used here. */
export interface DurableObjectKvTxnLike {
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
}

/** The part of `ctx.storage` (DurableObjectStorage) this backend uses; the package builds
 * without @cloudflare/workers-types, whose `DurableObjectStorage` fits this. */
export interface DurableObjectKvStorageLike extends DurableObjectKvTxnLike {
  list(options: { prefix: string; start?: string; limit?: number }): Promise<Map<string, unknown>>;
  transaction<T>(closure: (txn: DurableObjectKvTxnLike) => Promise<T>): Promise<T>;
}

export interface DurableObjectKvBackend extends AsyncBackend {
  open(path: string, options: OpenStorageOptions): Promise<AsyncStorePages>;
  /** Deletes the store at `path` from this object's storage (it must not be open). */
  remove(path: string): Promise<void>;
  /** The stores (paths) in this object's storage. */
  list(): Promise<string[]>;
}

/** Keys per get/put/delete call (the key-value API's limit). */
const BATCH = 128;
const PREFIX = 'adaptree:';
const prefixOf = (path: string) => `${PREFIX}${encodeURIComponent(path)}:`;

function toPage(v: unknown, what: string): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  throw new IoError(`durable object storage: ${what} is not a page image (${typeof v})`);
}

/** Calls `f` on `items` BATCH at a time. */
async function batches<T>(items: readonly T[], f: (chunk: T[]) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await f(items.slice(i, i + BATCH));
}

/**
 * A backend over a Durable Object's key-value storage: `durableObjectKvStorage(this.ctx.storage)`.
 * Asynchronous: use the store's `...Async` methods.
 */
export function durableObjectKvStorage(storage: DurableObjectKvStorageLike): DurableObjectKvBackend {
  if (storage === null || typeof storage !== 'object') throw new InvalidArgumentError("durableObjectKvStorage: pass the Durable Object's ctx.storage");
  for (const m of ['get', 'put', 'delete', 'list', 'transaction'] as const) {
    if (typeof storage[m] !== 'function') throw new InvalidArgumentError(`durableObjectKvStorage: ctx.storage has no ${m}()`);
  }
  const call = async <T>(what: string, f: () => Promise<T>): Promise<T> => {
    try {
      return await f();
    } catch (e) {
      throw durableObjectError(what, e);
    }
  };
  const openNow = async (path: string, o: OpenStorageOptions): Promise<AsyncStorePages> => {
    const prefix = prefixOf(path);
    const key = (id: number) => prefix + id;
    const readOnly = o.readOnly === true;
    if (!o.create || readOnly) {
      const sb = await call(`opening '${path}'`, () => storage.get([key(0)]));
      if (!sb.has(key(0))) throw new InvalidArgumentError(`no store at '${path}' (durable object storage, ${readOnly ? 'readOnly' : 'create: false'})`);
    }
    let closed = false;
    /** The page count of the last commit written (page 0's superblock), once known. */
    let count: number | undefined;
    /** Page 0 is in the storage: the store existed at open, or this open committed. */
    let stored0 = !o.create || readOnly;
    const readPages = async (ids: readonly number[]): Promise<(Uint8Array | undefined)[]> => {
      const out: (Uint8Array | undefined)[] = [];
      await batches(ids, async (chunk) => {
        const got = await call(`reading pages of '${path}'`, () => storage.get(chunk.map(key)));
        for (const id of chunk) out.push(toPage(got.get(key(id)), `page ${id} of '${path}'`));
        if (chunk.includes(0) && got.has(key(0))) stored0 = true; // (the open reads page 0 first)
      });
      return out;
    };
    return {
      async readPage(id: number): Promise<Uint8Array | undefined> {
        return (await readPages([id]))[0];
      },
      readPages,
      async writePages(pages): Promise<void> {
        if (readOnly) throw new IoError(`durable object storage: '${path}' is open read-only`);
        if (closed) throw new IoError(`durable object storage: '${path}' is closed`);
        // The store's end (page 0 comes with every commit): when it moved down, the keys of the
        // pages past it go in the same transaction (the core cut free pages at the end).
        const page0 = pages.find(([id]) => id === 0)?.[1];
        const next = page0 !== undefined ? pageCountOf(page0) : undefined;
        if (next !== undefined && count === undefined) {
          const stored = (await call(`reading page 0 of '${path}'`, () => storage.get([key(0)]))).get(key(0));
          const prev = stored === undefined ? undefined : toPage(stored, `page 0 of '${path}'`);
          count = prev === undefined ? next : pageCountOf(prev) ?? next;
        }
        const gone: string[] = [];
        if (next !== undefined && count !== undefined) for (let id = next; id < count; id++) gone.push(key(id));
        // One transaction: all of the commit's pages or none. The images are the store's own
        // copies (never views into wasm memory).
        await call(`committing '${path}'`, () =>
          storage.transaction(async (txn) => {
            // A store that has a superblock stored keeps it: `ctx.storage.deleteAll()` under an
            // open store took every page, and its next commits wrote their few changed pages
            // and resolved; after a restart every read was CORRUPT ("page 254 is missing"; a
            // new-user probe, session 29). Such a commit now fails (IoError), writing nothing.
            if (stored0 && !(await txn.get([key(0)])).has(key(0))) {
              throw new IoError(`durable object storage: the pages of '${path}' are gone from this object's storage (ctx.storage.deleteAll() while it was open?): nothing more of it can be written. Close it, and remove() or reopen it`);
            }
            await batches(pages, async (chunk) => {
              const entries: Record<string, unknown> = {};
              for (const [id, image] of chunk) entries[key(id)] = image;
              await txn.put(entries);
            });
            await batches(gone, async (chunk) => void (await txn.delete(chunk)));
          }),
        );
        if (next !== undefined) count = next;
        if (page0 !== undefined) stored0 = true;
      },
      close(): void {
        if (closed) return;
        closed = true;
        releaseInObject(storage, path);
      },
    };
  };
  return {
    kind: 'async',
    name: 'durable-object-kv',
    open(path: string, options: OpenStorageOptions): Promise<AsyncStorePages> {
      if (typeof path !== 'string' || path === '') return Promise.reject(new InvalidArgumentError('durableObjectKvStorage: the path must be a non-empty string'));
      try {
        return Promise.resolve(openInObject(storage, path, options.wait === true, () => openNow(path, options)));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    async remove(path: string): Promise<void> {
      if (isOpenInObject(storage, path)) throw new LockedError(`the store '${path}' is open`);
      const prefix = prefixOf(path);
      for (;;) {
        const keys = [...(await call(`removing '${path}'`, () => storage.list({ prefix, limit: BATCH }))).keys()];
        if (keys.length === 0) return;
        await call(`removing '${path}'`, () => storage.delete(keys));
      }
    },
    async list(): Promise<string[]> {
      // Keys come in order: the first key of a store names it, and the next list starts past
      // every key of that store (an encoded path has no ':' or ';').
      const out: string[] = [];
      let start: string | undefined;
      for (;;) {
        const got = await call('listing stores', () => storage.list({ prefix: PREFIX, limit: 1, ...(start !== undefined ? { start } : {}) }));
        const k = got.keys().next().value;
        if (k === undefined) return out;
        const enc = k.slice(PREFIX.length, k.lastIndexOf(':'));
        out.push(decodeURIComponent(enc));
        start = `${PREFIX}${enc};`; // ';' sorts right after ':', past every key of this store
      }
    },
  };
}
