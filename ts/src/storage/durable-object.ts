/**
 * `durableObjectStorage(ctx.storage)`: a synchronous backend in a Cloudflare Durable Object's
 * SQLite storage, through its synchronous SQL API (`ctx.storage.sql.exec`). Page faults are
 * served inside the wasm call, so the whole synchronous API works, as on Node files.
 *
 * ```ts
 * export class Index extends DurableObject {
 *   store = this.ctx.blockConcurrencyWhile(() =>
 *     BTreeStore.open({ path: 'main', storage: durableObjectStorage(this.ctx.storage), wasm, poolSize: 16 << 20 }));
 *   async fetch(req: Request) {
 *     const s = await this.store;
 *     s.set('k', 1);
 *     await s.commit();           // see "Durability" below
 *     return new Response('ok');
 *   }
 * }
 * ```
 *
 * Layout: the two files of the store at `path` (`data`, file 0, and `log`, file 1) are rows of
 * fixed-size chunks in `adaptree_chunks(store, file, idx, data)`; their sizes and the chunk
 * size are in `adaptree_files(store, file, size, chunk)`. A chunk may be shorter than the chunk
 * size, and missing (a file that grew by truncate): the missing bytes read as zeros. Several
 * stores (paths) can share one object's database.
 *
 * Writes are buffered per chunk in memory (a read sees them) and go to SQL at `sync()`, once
 * per touched chunk (or earlier when more than 4 MiB are buffered), inside `transactionSync`:
 * a commit's log records cost about one row per chunk, not one statement per record.
 * `truncate` goes to SQL at once.
 *
 * Durability: SQLite-backed Durable Objects commit the writes of each event (the code that
 * runs between two awaits) as one transaction, and hold every outgoing message of the object
 * (its response, its subrequests) until that transaction is durable (the output gate). So when
 * `await store.commit()` resolves, the commit's rows are written to SQLite but their storage
 * commit may still be in flight; no one outside the object can see anything that depends on
 * the commit before it is durable, and if the storage commit fails the object is reset and
 * nothing it said after the commit ever leaves. Await `ctx.storage.sync()` after `commit()`
 * if code must know the rows are on disk (e.g. before an action that is not gated).
 *
 * Errors: a SQL error that is a size limit (SQLITE_FULL, SQLITE_TOOBIG, "exceeded ... size")
 * is a QuotaExceededError, anything else an IoError; the runtime's error is the `cause`.
 *
 * Locking: a Durable Object runs in one place at a time, so the lock is per isolate: one open
 * per (storage object, path); a second open throws LockedError until the first is closed.
 */
import { InvalidArgumentError, IoError, LockedError, QuotaExceededError } from '../errors.js';
import { knownFields } from '../options.js';
import { isOpenInObject, openInObject, releaseInObject } from './object-locks.js';
import type { OpenStorageOptions, SyncBackend, SyncFile, SyncStoreFiles } from './types.js';

/** The part of a Durable Object's `SqlStorageCursor` used here. */
export interface DurableObjectSqlCursorLike {
  toArray(): Record<string, unknown>[];
}

/** The part of `ctx.storage.sql` (SqlStorage) used here. */
export interface DurableObjectSqlLike {
  exec(query: string, ...bindings: any[]): DurableObjectSqlCursorLike;
}

/** The part of `ctx.storage` (DurableObjectStorage, SQLite-backed) this backend uses; the
 * package builds without @cloudflare/workers-types, whose `DurableObjectStorage` fits this. */
export interface DurableObjectStorageLike {
  readonly sql: DurableObjectSqlLike;
  transactionSync?<T>(closure: () => T): T;
}

export interface DurableObjectBackendOptions {
  /** Bytes per row for a new store: a power of two from 4096 to 1 MiB (default 16384). An
   * existing store keeps the chunk size it was created with. */
  chunkSize?: number;
  /** The log size past which a commit checkpoints, for stores opened without the store's own
   * `checkpointBytes` option (default 8 MiB, not the core's 64 MiB: an object reopens its
   * store after every eviction and replays the log then, and every log row is billed). */
  checkpointBytes?: number;
}

export interface DurableObjectBackend extends SyncBackend {
  open(path: string, options: OpenStorageOptions): SyncStoreFiles | Promise<SyncStoreFiles>;
  /** Deletes the store at `path` from this object's storage (it must not be open). */
  remove(path: string): void;
  /** The stores (paths) in this object's storage. */
  list(): string[];
}

const DEFAULT_CHUNK = 16384;
const DEFAULT_CHECKPOINT = 8 << 20;
/** Buffered bytes per file that make a write go to SQL before the next sync. */
const MAX_BUFFERED = 4 << 20;
const DATA = 0, LOG = 1;
/** Stored chunks kept per file after a read. */
const CLEAN_CHUNKS = 4;

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Our error for a failed storage call: a size limit is a QuotaExceededError, SQL on an object
 * without SQLite an InvalidArgumentError, the rest IoError. */
export function durableObjectError(what: string, e: unknown): Error {
  if (e instanceof QuotaExceededError || e instanceof IoError) return e;
  const msg = message(e);
  if (/SQL is not enabled/i.test(msg)) {
    return new InvalidArgumentError(`durableObjectStorage needs a SQLite-backed Durable Object; on a key-value-backed one use durableObjectKvStorage(ctx.storage), an asynchronous backend (${msg})`, { cause: e });
  }
  if (/SQLITE_FULL|SQLITE_TOOBIG|database or disk is full|too big|exceeded.*(size|storage|limit)|storage.*(limit|quota)/i.test(msg)) {
    return new QuotaExceededError(`durable object storage: ${what}: ${msg}`, { cause: e });
  }
  return new IoError(`durable object storage: ${what}: ${msg}`, { cause: e });
}

function toBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v === null || v === undefined) return new Uint8Array(0);
  throw new IoError(`durable object storage: a chunk is not a BLOB (${typeof v})`);
}

class Sql {
  constructor(readonly storage: DurableObjectStorageLike) {}

  exec(what: string, query: string, ...bindings: unknown[]): Record<string, unknown>[] {
    try {
      return this.storage.sql.exec(query, ...bindings).toArray();
    } catch (e) {
      throw durableObjectError(what, e);
    }
  }

  /** Runs `f` as one storage transaction where the runtime has transactionSync. */
  atomically<T>(f: () => T): T {
    const t = this.storage.transactionSync;
    return typeof t === 'function' ? (t.call(this.storage, f) as T) : f();
  }
}

function ensureSchema(sql: Sql): void {
  sql.exec('create table', 'CREATE TABLE IF NOT EXISTS adaptree_files (store TEXT NOT NULL, file INTEGER NOT NULL, size INTEGER NOT NULL, chunk INTEGER NOT NULL, PRIMARY KEY (store, file))');
  sql.exec('create table', 'CREATE TABLE IF NOT EXISTS adaptree_chunks (store TEXT NOT NULL, file INTEGER NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (store, file, idx))');
}

/** One file of a store as chunk rows, with a write buffer of whole chunks. */
class ChunkFile implements SyncFile {
  /** Chunks written since the last flush: their full current content (may be shorter than `chunk`). */
  private readonly dirty = new Map<number, Uint8Array>();
  /** A few stored chunks read lately (never also in `dirty`). */
  private readonly clean = new Map<number, Uint8Array>();
  private buffered = 0;
  /** The size recorded in adaptree_files. */
  private storedSize: number;

  constructor(
    private readonly sql: Sql,
    private readonly store: string,
    private readonly file: number,
    private readonly chunk: number,
    private length: number,
    private readonly what: string,
  ) {
    this.storedSize = length;
  }

  /** The stored content of chunk `idx` (empty if there is none). */
  private stored(idx: number): Uint8Array {
    const hit = this.clean.get(idx);
    if (hit !== undefined) return hit;
    const rows = this.sql.exec(`read ${this.what}`, 'SELECT data FROM adaptree_chunks WHERE store = ? AND file = ? AND idx = ?', this.store, this.file, idx);
    return rows.length === 0 ? new Uint8Array(0) : toBytes(rows[0]!.data);
  }

  /** Remembers a stored chunk just read (the last few: sequential reads of log records and
   * their headers hit the same chunk). */
  private remember(idx: number, c: Uint8Array): void {
    this.clean.delete(idx);
    this.clean.set(idx, c);
    if (this.clean.size > CLEAN_CHUNKS) this.clean.delete(this.clean.keys().next().value!);
  }

  read(dst: Uint8Array, offset: number): number {
    if (offset >= this.length) return 0;
    const n = Math.min(dst.length, this.length - offset);
    if (n <= 0) return 0;
    const first = Math.floor(offset / this.chunk), last = Math.floor((offset + n - 1) / this.chunk);
    const stored = new Map<number, Uint8Array>();
    // One query for the chunks not in the buffer.
    let need = false;
    for (let i = first; i <= last; i++) if (!this.dirty.has(i) && !this.clean.has(i)) need = true;
    if (need) {
      const rows = this.sql.exec(`read ${this.what}`, 'SELECT idx, data FROM adaptree_chunks WHERE store = ? AND file = ? AND idx >= ? AND idx <= ?', this.store, this.file, first, last);
      for (const r of rows) stored.set(Number(r.idx), toBytes(r.data));
      for (let i = first; i <= last; i++) if (!this.dirty.has(i)) this.remember(i, stored.get(i) ?? new Uint8Array(0));
    }
    for (let i = first; i <= last; i++) {
      const c = this.dirty.get(i) ?? this.clean.get(i) ?? stored.get(i);
      const start = i * this.chunk;
      const from = Math.max(offset, start), to = Math.min(offset + n, start + this.chunk);
      const out = dst.subarray(from - offset, to - offset);
      const have = c === undefined ? 0 : Math.max(0, Math.min(c.length, to - start) - (from - start));
      if (have > 0) out.set(c!.subarray(from - start, from - start + have));
      if (have < out.length) out.fill(0, Math.max(0, have));
    }
    return n;
  }

  write(src: Uint8Array, offset: number): void {
    if (src.length === 0) return; // as pwrite: an empty write does not extend the file
    const end = offset + src.length;
    let pos = offset;
    while (pos < end) {
      const idx = Math.floor(pos / this.chunk), start = idx * this.chunk;
      const to = Math.min(end, start + this.chunk);
      const need = to - start; // bytes of the chunk that must exist after this write
      let c = this.dirty.get(idx);
      if (c === undefined) {
        // Not buffered: start from the stored chunk, unless this write covers all of it.
        const whole = pos === start && need === this.chunk;
        const old = whole ? undefined : this.stored(idx);
        c = new Uint8Array(Math.max(need, old?.length ?? 0));
        if (old !== undefined) c.set(old);
        this.clean.delete(idx);
        this.dirty.set(idx, c);
        this.buffered += c.length;
      } else if (c.length < need) {
        const grown = new Uint8Array(need);
        grown.set(c);
        this.buffered += need - c.length;
        this.dirty.set(idx, (c = grown));
      }
      c.set(src.subarray(pos - offset, to - offset), pos - start);
      pos = to;
    }
    if (end > this.length) this.length = end;
    if (this.buffered > MAX_BUFFERED) this.flush();
  }

  /** Writes the buffered chunks and the size to SQL. */
  flush(): void {
    if (this.dirty.size === 0 && this.storedSize === this.length) return;
    this.sql.atomically(() => {
      // The file's row first: it is there as long as the store is (the size goes with it).
      this.putSize();
      for (const [idx, c] of this.dirty) {
        // Bytes past the end of the file are not stored (a truncate may have cut the chunk).
        const keep = Math.min(c.length, Math.max(0, this.length - idx * this.chunk));
        if (keep === 0) continue;
        this.sql.exec(`write ${this.what}`, 'INSERT OR REPLACE INTO adaptree_chunks (store, file, idx, data) VALUES (?, ?, ?, ?)', this.store, this.file, idx, keep === c.length ? c : c.subarray(0, keep));
      }
    });
    this.storedSize = this.length;  // (once the transaction stood)
    this.dirty.clear();
    this.buffered = 0;
  }

  /** Records the size, in the file's row, which must still exist: `ctx.storage.deleteAll()` (or
   * a DROP) under an open store took its rows, and another store's open made the tables anew,
   * so commits wrote chunks beside no row and resolved, and the store came back empty after a
   * restart (a new-user probe, session 29). Now such a write fails (IoError, rolled back).
   * The row must also still hold the size this file wrote last: store writes made inside the
   * caller's own `ctx.storage.transactionSync()` that threw were rolled back with it (the
   * chunks spilled there too), and the next commit resolved over a hole in the log and was
   * gone after a restart (a probe, session 31). */
  private putSize(): void {
    const rows = this.sql.exec(`write ${this.what}`, 'UPDATE adaptree_files SET size = ? WHERE store = ? AND file = ? AND size = ? RETURNING size', this.length, this.store, this.file, this.storedSize);
    if (rows.length !== 1) {
      const now = this.sql.exec(`read ${this.what}`, 'SELECT size FROM adaptree_files WHERE store = ? AND file = ?', this.store, this.file);
      if (now.length === 1) {
        throw new IoError(`durable object storage: ${this.what} holds ${String(now[0]!.size)} bytes in this object's storage where this store wrote ${this.storedSize}: its writes were rolled back (store writes inside ctx.storage.transactionSync() or transaction() that threw?): nothing more of it can be written. Close it and reopen it (the last commit that stood is there)`);
      }
      throw new IoError(`durable object storage: the rows of ${this.what} are gone from this object's storage (ctx.storage.deleteAll() or a DROP while it was open?): nothing more of it can be written. Close it, and remove() or reopen it`);
    }
  }

  sync(): void {
    this.flush();
  }

  size(): number {
    return this.length;
  }

  truncate(size: number): void {
    this.clean.clear();
    if (size >= this.length) {
      // Growing: the new bytes are zeros (missing or short chunks read as zeros).
      this.length = size;
      this.sql.atomically(() => this.putSize());
      this.storedSize = this.length;
      return;
    }
    const keepIdx = Math.ceil(size / this.chunk); // chunks from here on go entirely
    for (const idx of [...this.dirty.keys()]) {
      if (idx >= keepIdx) {
        this.buffered -= this.dirty.get(idx)!.length;
        this.dirty.delete(idx);
      }
    }
    const cutIdx = Math.floor(size / this.chunk), cutAt = size - cutIdx * this.chunk;
    const d = this.dirty.get(cutIdx);
    if (cutAt > 0 && d !== undefined && d.length > cutAt) d.fill(0, cutAt);
    this.length = size;
    this.sql.atomically(() => {
      this.sql.exec(`truncate ${this.what}`, 'DELETE FROM adaptree_chunks WHERE store = ? AND file = ? AND idx >= ?', this.store, this.file, keepIdx);
      if (cutAt > 0) {
        this.sql.exec(`truncate ${this.what}`, 'UPDATE adaptree_chunks SET data = substr(data, 1, ?) WHERE store = ? AND file = ? AND idx = ? AND length(data) > ?', cutAt, this.store, this.file, cutIdx, cutAt);
      }
      this.putSize();
    });
    this.storedSize = this.length;
  }
}

function checkChunk(n: number): number {
  if (!Number.isInteger(n) || n < 4096 || n > 1 << 20 || (n & (n - 1)) !== 0) {
    throw new InvalidArgumentError(`durableObjectStorage: chunkSize must be a power of two from 4096 to 1048576 (got ${String(n)})`);
  }
  return n;
}

/**
 * A backend over a Durable Object's SQLite storage: `durableObjectStorage(this.ctx.storage)`.
 * Needs a SQLite-backed object (`new_sqlite_classes` in wrangler's migrations; `enableSql` in
 * workerd); on a key-value-backed object it throws InvalidArgumentError: use
 * `durableObjectKvStorage(ctx.storage)` there (durable-object-kv.ts, asynchronous).
 */
export function durableObjectStorage(storage: DurableObjectStorageLike, options: DurableObjectBackendOptions = {}): DurableObjectBackend {
  if (storage === null || typeof storage !== 'object') throw new InvalidArgumentError('durableObjectStorage: pass the Durable Object\'s ctx.storage');
  knownFields(options, 'durableObjectStorage', ['chunkSize', 'checkpointBytes']);
  const chunkSize = checkChunk(options.chunkSize ?? DEFAULT_CHUNK);
  const checkpointBytes = options.checkpointBytes ?? DEFAULT_CHECKPOINT;
  if (typeof checkpointBytes !== 'number' || !(checkpointBytes >= 0) || !Number.isFinite(checkpointBytes)) {
    throw new InvalidArgumentError('durableObjectStorage: checkpointBytes must be a number of bytes >= 0');
  }
  const sqlOf = (): Sql => {
    let s: DurableObjectSqlLike | undefined;
    try {
      s = storage.sql;
    } catch (e) {
      throw new InvalidArgumentError(`durableObjectStorage needs a SQLite-backed Durable Object (ctx.storage.sql): ${message(e)}`, { cause: e });
    }
    if (s === undefined || s === null || typeof s.exec !== 'function') {
      throw new InvalidArgumentError('durableObjectStorage needs a SQLite-backed Durable Object (ctx.storage.sql is missing); on a key-value-backed one use durableObjectKvStorage(ctx.storage), an asynchronous backend');
    }
    return new Sql(storage);
  };
  const openNow = (path: string, options: OpenStorageOptions): SyncStoreFiles => {
      const sql = sqlOf();
      ensureSchema(sql);
      const rows = sql.exec('open', 'SELECT file, size, chunk FROM adaptree_files WHERE store = ? ORDER BY file', path);
      let sizes = [0, 0], chunk = chunkSize;
      if (rows.length === 0) {
        if (!options.create) throw new InvalidArgumentError(`no store at '${path}' (durable object storage, ${options.readOnly === true ? 'readOnly: true creates nothing' : 'create: false'})`);
        sql.atomically(() => {
          for (const f of [DATA, LOG]) sql.exec('create', 'INSERT INTO adaptree_files (store, file, size, chunk) VALUES (?, ?, 0, ?)', path, f, chunk);
        });
      } else {
        if (rows.length !== 2) throw new IoError(`durable object storage: the store '${path}' has ${rows.length} file rows, not 2`);
        sizes = rows.map((r) => Number(r.size));
        chunk = Number(rows[0]!.chunk);
      }
      let closed = false;
      const release = () => releaseInObject(storage, path);
      const data = new ChunkFile(sql, path, DATA, chunk, sizes[0]!, `'${path}'`);
      const log = new ChunkFile(sql, path, LOG, chunk, sizes[1]!, `'${path}-log'`);
      return {
        data,
        log,
        close(_discardCreated?: boolean, abandoned?: boolean) {
          if (closed) return;
          closed = true;
          try {
            // Writes after the last sync may be dropped (as unsynced file writes may); writing
            // them is harmless, and keeps what close() checkpointed without another sync. Not
            // for a store the garbage collector found dropped: its finalizer runs outside any
            // request, where the object's storage refuses calls.
            if (abandoned !== true) {
              data.flush();
              log.flush();
            }
          } finally {
            release();
          }
        },
      };
  };
  return {
    kind: 'sync',
    name: 'durable-object',
    checkpointBytes,
    // Rows are billed and a kept log's rows would stay (a rewritten row reuses no blocks).
    reuseLog: false,
    open(path: string, options: OpenStorageOptions): SyncStoreFiles | Promise<SyncStoreFiles> {
      // wait: true queues until the store is closed here (another request of this object holds it).
      return openInObject(storage, path, options.wait === true, () => openNow(path, options));
    },
    remove(path: string): void {
      if (isOpenInObject(storage, path)) throw new LockedError(`the store '${path}' is open`);
      const sql = sqlOf();
      ensureSchema(sql);
      sql.atomically(() => {
        sql.exec('remove', 'DELETE FROM adaptree_chunks WHERE store = ?', path);
        sql.exec('remove', 'DELETE FROM adaptree_files WHERE store = ?', path);
      });
    },
    list(): string[] {
      const sql = sqlOf();
      ensureSchema(sql);
      return sql.exec('list', 'SELECT DISTINCT store FROM adaptree_files ORDER BY store').map((r) => String(r.store));
    },
  };
}
