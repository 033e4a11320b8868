/**
 * `indexeddb`: an asynchronous backend on the browser's IndexedDB, on the main thread or in any
 * worker. The store at `path` is the database `adaptree:<path>` (version 2) with two object
 * stores: `pages`, 4 KiB page images keyed by page id (page 0 is the superblock), and `log`,
 * one record (a frame) per commit since the last checkpoint, keyed by the commit's sequence
 * (page-log.ts has the frame format and the rules).
 *
 * A commit is ONE readwrite transaction, so it is atomic by construction: after a crash the
 * database holds the state of the last completed transaction. Usually that transaction puts one
 * record, the commit's frame: every changed page image at once (Chromium's cost per put, not
 * per byte, made a record per page 11x slower; docs/DECISIONS.md). The newest image of each
 * page in the log stays in memory, so the pages of recent commits are read without IndexedDB;
 * so do, in the writer, the images its checkpoints wrote of the pages no frame holds since
 * (the bases of 'ATL2' deltas, page-log.ts): at most one image of each page in all.
 * Once the log would pass `checkpointBytes` (default 64 MiB), the commit is a checkpoint
 * instead: one transaction writes the newest image of every logged page (and the commit's) into
 * `pages` and clears `log`. At open the log is read back in one transaction. Databases of
 * version 1 (only `pages`: a record per page, written by adaptree before the log) are upgraded
 * in place by adding the empty `log`; version 1 code cannot open a version 2 database.
 *
 * Page faults go the asynchronous way (NEED_PAGE -> readPage -> retry, store.ts). Read-ahead on
 * scans reads the run of pages in one transaction (idb-keyval's getMany pattern; the package
 * does not depend on idb-keyval itself because it must load unbundled, in a browser or
 * workerd, where a bare module specifier cannot be resolved).
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
 * comes in one readonly transaction together with page 0 and the log's keys (new frames are
 * read in the same transaction; a frame they had that is gone means a checkpoint ran, so they
 * read the log afresh), so what they read is one commit's state (IndexedDB serialises a
 * readonly transaction with the writer's readwrite ones). Page 0's commit sequence then tells
 * the store whether a commit landed since the reader's pages were read; it then follows the newer
 * commit (store.ts): it drops the pages that the frames since its own commit hold
 * (`changedSince`, all of them when a checkpoint cleared the log in between) and keeps the rest.
 * The writer announces each commit's sequence on the BroadcastChannel
 * `adaptree:idb-commits:<path>`; a reader hears it (`newestCommit`) and its next async call
 * moves to that commit first, even with every page it needs in its pool.
 *
 * Errors: a transaction aborted for quota (QuotaExceededError) becomes QuotaExceededError, any
 * other failure IoError, with the browser's error as `cause`; a log record that is not a frame
 * is a CorruptionError.
 */
import { AdaptreeError, CorruptionError, InvalidArgumentError, IoError, QuotaExceededError } from '../errors.js';
import { knownFields } from '../options.js';
import { PageLog, commitSequence, encodeFrame, ownsBuffer } from './page-log.js';
import { pageCountOf } from './superblock.js';
import type { AsyncBackend, AsyncStorePages, OpenStorageOptions } from './types.js';
import { takeLock, webLocks } from './web-locks.js';

/** The BroadcastChannel of a store's commit announcements (the package builds without the DOM lib). */
interface CommitChannel {
  postMessage(message: unknown): void;
  close(): void;
  onmessage: ((ev: { data: unknown }) => void) | null;
  unref?(): void;
}

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
  getAll(range?: unknown): IdbRequest<unknown[]>;
  getAllKeys(range?: unknown): IdbRequest<unknown[]>;
  count(key?: unknown): IdbRequest<number>;
  clear(): IdbRequest<unknown>;
  delete(range: unknown): IdbRequest<unknown>;
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
  transaction(stores: string | string[], mode: 'readonly' | 'readwrite', options?: { durability?: string }): IdbTransaction;
  close(): void;
  onversionchange: (() => void) | null;
}
interface IdbFactory {
  open(name: string, version?: number): IdbOpenRequest;
}
interface IdbKeyRangeStatic {
  lowerBound(lower: number, open?: boolean): unknown;
}

export type IndexedDBDurability = 'strict' | 'relaxed' | 'default';

export interface IndexedDBStorageOptions {
  /** Durability of commit transactions (default 'strict'). */
  durability?: IndexedDBDurability;
  /** Log bytes past which a commit checkpoints (writes the logged pages as records of their
   * own and clears the log); default 64 MiB, as the file log's. The newest image of each logged
   * page is kept in memory (4 KiB a page, whatever the log's size), so this bounds that too. 0: every commit writes a record per page (no log).
   * A store's own `checkpointBytes` option, when given, wins. */
  checkpointBytes?: number;
}

const PAGES = 'pages';
const LOG = 'log';
/** Database version 2: `pages` and `log` (version 1 had `pages` only). */
const VERSION = 2;
const DEFAULT_CHECKPOINT = 64 << 20;
/** How long close() waits for its fold (the checkpoint at close) to get the database: another
 * connection's readwrite transaction (another tab, a reader's long scan is readonly and does not
 * hold it up) queues it for as long as it lasts. Past this the fold is aborted, the connection
 * closed and the lock released; the log stays, and the next open reads it. */
const CLOSE_FOLD_MS = 5000;
/**
 * The change record: `pages` under key -1 (no page has it; code that reads pages by id never
 * meets it, and checkpoints delete only ids past the store's end), written by each checkpoint in
 * its transaction: the pages each of the last checkpoints wrote, by commit, back to `horizon`.
 * A checkpoint clears the log, and with it what a reader knew of the commits since its own, so
 * a reader beside a writer that checkpoints often (checkpointBytes small, or 0: every commit)
 * dropped its whole pool at each newer commit, and a batch (getManyAsync) that started over at
 * each never ended (the tabs probe, session 34: 7.8 s, as long as the writer committed). The
 * record bounds what it holds (CHANGE_IDS ids); a reader further behind drops its pool as before.
 */
const CHANGES = -1;
const CHANGE_IDS = 4096;
interface ChangeRecord {
  /** Commits after this one are covered: by `seqs` (checkpoints, ascending) and what came before each. */
  horizon: number;
  seqs: number[];
  /** The pages checkpoint seqs[i] wrote: every page the commits since the checkpoint before it changed. */
  ids: number[][];
}
/** A change record as stored, or undefined when it is not one (it is advice: never an error). */
function readChanges(v: unknown): ChangeRecord | undefined {
  const r = v as { horizon?: unknown; seqs?: unknown; ids?: unknown } | null | undefined;
  if (r === null || typeof r !== 'object' || typeof r.horizon !== 'number' || !(r.seqs instanceof Float64Array) || !Array.isArray(r.ids)) return undefined;
  if (r.ids.length !== r.seqs.length || !r.ids.every((x) => x instanceof Uint32Array)) return undefined;
  return { horizon: r.horizon, seqs: [...r.seqs], ids: (r.ids as Uint32Array[]).map((x) => [...x]) };
}
const nameOf = (e: unknown) => (e as { name?: unknown } | null)?.name;


function idbError(e: unknown, what: string, path: string): Error {
  if (e instanceof AdaptreeError) return e;
  // (a DOMException's message may be empty: then its name, as 'QuotaExceededError')
  const text = (e as Error | null)?.message || nameOf(e) || String(e);
  const msg = `indexeddb: ${what} of '${path}': ${text}`;
  if (nameOf(e) === 'QuotaExceededError') return new QuotaExceededError(msg, { cause: e });
  return new IoError(msg, { cause: e });
}

function checkBytes(v: unknown, what: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v)) throw new InvalidArgumentError(`${what} must be a number of bytes >= 0`);
  return v;
}

/** Opens (or, with create, creates) the database; undefined when it does not exist and !create. */
function openDatabase(factory: IdbFactory, name: string, create: boolean): Promise<IdbDatabase | undefined> {
  return new Promise((resolve, reject) => {
    const req = factory.open(name, VERSION);
    let missing = false;
    // Rejected while blocked: the request still goes on once the other connection lets go, and
    // the connection it then opened was never closed (a later deleteDatabase waited for it for
    // good; a probe, session 34). It is undone then: the upgrade aborted, the connection closed.
    let gaveUp = false;
    req.onupgradeneeded = (ev) => {
      if (gaveUp) {
        req.transaction?.abort();
        return;
      }
      if (ev.oldVersion === 0 && !create) {
        missing = true;
        req.transaction?.abort(); // nothing is created
        return;
      }
      // From nothing, or from version 1 (pages only): the log starts empty.
      if (!req.result.objectStoreNames.contains(PAGES)) req.result.createObjectStore(PAGES);
      if (!req.result.objectStoreNames.contains(LOG)) req.result.createObjectStore(LOG);
    };
    req.onsuccess = () => {
      if (gaveUp) req.result.close();
      else resolve(req.result);
    };
    req.onerror = () => (missing ? resolve(undefined) : reject(req.error));
    req.onblocked = () => {
      gaveUp = true;
      reject(new Error('an older connection blocks the upgrade'));
    };
  });
}

/** A request's result, as a promise (inside a transaction: settle before it completes). Its
 * failure counts as handled: a transaction that aborts fails every request made before, and
 * the caller may no longer wait for those (a later request threw first). */
function result<T>(r: IdbRequest<T>): Promise<T> {
  const p = new Promise<T>((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  p.catch(() => undefined);
  return p;
}

/** An IndexedDB backend; `indexedDBStorage()` with no options is the `'indexeddb'` storage. */
export function indexedDBStorage(options: IndexedDBStorageOptions = {}): AsyncBackend & { open(path: string, o: OpenStorageOptions): Promise<AsyncStorePages> } {
  knownFields(options, 'indexedDBStorage', ['durability', 'checkpointBytes']);
  const durability = options.durability ?? 'strict';
  if (durability !== 'strict' && durability !== 'relaxed' && durability !== 'default') {
    throw new InvalidArgumentError(`indexeddb: durability must be 'strict', 'relaxed' or 'default', not ${String(durability)}`);
  }
  const backendCheckpoint = checkBytes(options.checkpointBytes, 'indexedDBStorage: checkpointBytes');
  return {
    kind: 'async',
    name: 'indexeddb',
    async open(path: string, o: OpenStorageOptions): Promise<AsyncStorePages> {
      const factory = (globalThis as unknown as { indexedDB?: IdbFactory }).indexedDB;
      if (factory === undefined) throw new InvalidArgumentError("the 'indexeddb' storage needs IndexedDB (a browser, or a polyfill on globalThis.indexedDB)");
      if (typeof path !== 'string' || path === '') throw new InvalidArgumentError('indexeddb: the path must be a non-empty string');
      const checkpointBytes = checkBytes(o.checkpointBytes, 'checkpointBytes') ?? backendCheckpoint ?? DEFAULT_CHECKPOINT;
      if (o.logDeltas !== undefined && typeof o.logDeltas !== 'boolean') throw new InvalidArgumentError('logDeltas must be a boolean');
      const deltas = o.logDeltas !== false;
      const KeyRange = (globalThis as unknown as { IDBKeyRange?: IdbKeyRangeStatic }).IDBKeyRange;
      const locks = webLocks();
      // Readers take no lock: each page read is a readonly transaction with page 0 and the
      // log's keys in it, so a reader sees whole commits while the writer goes on.
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
        throw new InvalidArgumentError(`no store at '${path}' (indexeddb, ${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`);
      }
      const conn = db;
      // Commit announcements: the writer posts each commit's sequence on a BroadcastChannel of
      // the store, readers in other tabs and workers of the origin hear them (newestCommit), so
      // that their next call moves to it. (Unref'd where the runtime has that, as Node: a
      // channel must not keep a process alive.)
      const BC = (globalThis as unknown as { BroadcastChannel?: new (name: string) => CommitChannel }).BroadcastChannel;
      let channel: CommitChannel | undefined;
      try {
        channel = typeof BC === 'function' ? new BC('adaptree:idb-commits:' + path) : undefined;
      } catch {
        channel = undefined;
      }
      let heard: number | undefined;
      if (channel !== undefined && readOnly) {
        channel.onmessage = (ev) => {
          const n = ev.data;
          if (typeof n === 'number' && (heard === undefined || n > heard)) heard = n;
        };
      }
      channel?.unref?.();
      const announce = (seq: number) => {
        try {
          channel?.postMessage(seq);
        } catch {
          /* a closed channel: readers follow at their next fault or refresh() */
        }
      };
      let lost: unknown;
      conn.onversionchange = () => {
        lost = new Error('the database was upgraded or deleted elsewhere');
        conn.close();
      };
      /** Runs one transaction; resolves with what `body`'s promise gives (body issues its
       * requests at once, or from its requests' callbacks): a readwrite one once the
       * transaction has completed (then it is durable), a readonly one at once (what it read
       * is final; waiting for its complete event cost a task, ~80 us a page fault here). */
      const transact = <T>(stores: string[], mode: 'readonly' | 'readwrite', body: (tx: IdbTransaction) => Promise<T>, started?: (tx: IdbTransaction) => void): Promise<T> =>
        new Promise<T>((resolve, reject) => {
          if (lost !== undefined) throw lost;
          const tx = mode === 'readwrite' ? conn.transaction(stores, mode, { durability }) : conn.transaction(stores, mode);
          started?.(tx);
          let value: { ok: true; v: T } | { ok: false; e: unknown } | undefined;
          const abort = () => {
            try {
              tx.abort();
            } catch {
              /* already finished */
            }
          };
          try {
            body(tx).then(
              (v) => {
                value = { ok: true, v };
                if (mode === 'readonly') resolve(v);
              },
              (e: unknown) => {
                // A request or a check that failed must not leave the requests made before it
                // to commit on their own: that would be part of a commit.
                value = { ok: false, e };
                abort();
                if (mode === 'readonly') reject(e);
              },
            );
          } catch (e) {
            abort();
            throw e;
          }
          tx.oncomplete = () => (value?.ok === true ? resolve(value.v) : reject(value?.ok === false ? value.e : new Error('the transaction completed without its result')));
          tx.onabort = () => reject(value?.ok === false ? value.e : tx.error ?? new Error('the transaction was aborted'));
          tx.onerror = null; // an error aborts the transaction; onabort reports it
        });
      const copy = (v: unknown): Uint8Array | undefined => {
        if (v === undefined) return undefined;
        if (v instanceof Uint8Array) return v;
        if (v instanceof ArrayBuffer) return new Uint8Array(v);
        // (damaged stored data: CORRUPT, as a record of the wrong length is; it was IO_ERROR)
        throw new CorruptionError(`indexeddb: '${path}' holds a value that is not a page image`);
      };

      const log = new PageLog(readOnly);
      /** The writer's change record (horizon: the commit at open), written by each checkpoint; a
       * reader's, read where its log no longer tells what changed (`covered` then says whether
       * the record and the log together span every commit up to the reader's newest). */
      let changes: ChangeRecord | undefined;
      let covered = false;
      /** The writer: the images the checkpoints wrote into `pages` of the pages no frame since
       * holds (a page leaves when a frame logs it). A commit logs a delta against them where the
       * log has no image of the page ('ATL2' frames, page-log.ts). Together with the log's
       * slots, at most one image of each page. */
      const stored = new Map<number, Uint8Array>();
      const where = `indexeddb '${path}'`;
      /** Brings `log` up to the log's state in `tx` (a reader: only what changed). */
      const syncLog = async (tx: IdbTransaction): Promise<void> => {
        const st = tx.objectStore(LOG);
        // The log loses frames only all at once (a checkpoint clears it, in the transaction that
        // writes `pages`), and its keys, commit sequences, never come back: while the first
        // frame applied is there, only keys past the last one applied can be new. Reading every
        // key made each fault cost O(frames): a probe (session 30) saw a reader's 100 cold gets
        // take 1.8 s with 100,000 one-key commits in the log, 23 ms once it was folded.
        const first = log.keys[0], last = log.keys[log.keys.length - 1];
        if (first !== undefined && last !== undefined && KeyRange !== undefined && (await result(st.count(first))) === 1) {
          const read = (await result(st.getAllKeys(KeyRange.lowerBound(last, true)))).map(Number);
          if (read.length === 0) return;
          await applyFrames(tx, read, await result(st.getAll(KeyRange.lowerBound(last, true))));
          return;
        }
        const present = (await result(st.getAllKeys())).map(Number);
        const plan = log.plan(present);
        if (plan.reset) log.reset();
        if (plan.read.length === 0) return;
        const from = plan.read[0]!;
        const frames = await result(from === present[0] || KeyRange === undefined ? st.getAll() : st.getAll(KeyRange.lowerBound(from)));
        const keys = from === present[0] || KeyRange === undefined ? present : plan.read;
        await applyFrames(tx, keys, frames);
      };
      /** Applies the log's frames under `keys` (ascending, past those applied) read in `tx`. */
      const applyFrames = async (tx: IdbTransaction, keys: readonly number[], frames: readonly unknown[]): Promise<void> => {
        if (frames.length !== keys.length) throw new IoError(`${where}: the log changed while it was read`);
        // The records of `pages` that deltas in the frames are against, read in this transaction.
        const need = log.storedBases(frames, where);
        const bases = new Map<number, Uint8Array>();
        if (need.length > 0) {
          const pst = tx.objectStore(PAGES);
          const got = await Promise.all(need.map((id) => result(pst.get(id))));
          need.forEach((id, i) => {
            const b = copy(got[i]);
            if (b !== undefined) bases.set(id, b);
          });
        }
        frames.forEach((f, i) => {
          log.apply(keys[i]!, f, where, (id) => bases.get(id));
          const seq = commitSequence(log.latest.get(0)!);
          if (seq !== keys[i]) throw new CorruptionError(`${where}: log frame ${keys[i]} holds the superblock of commit ${seq}`);
        });
      };
      /** Pages by id in one readonly transaction: from the log where it has them, else `pages`. */
      const readIn = (ids: readonly number[]): Promise<(Uint8Array | undefined)[]> =>
        transact(readOnly ? [PAGES, LOG] : [PAGES], 'readonly', async (tx) => {
          if (readOnly) await syncLog(tx);
          const st = tx.objectStore(PAGES);
          const got = ids.map((id) => log.image(id) ?? result(st.get(id)));
          const out = (await Promise.all(got)).map(copy);
          // (a reader reads page 0 with every page: whether the record it has, with the log,
          // spans the commits up to that one; else the record is read in this transaction)
          if (readOnly && ids[0] === 0 && out[0] !== undefined) {
            const spans = () => {
              const last = changes === undefined ? undefined : (changes.seqs[changes.seqs.length - 1] ?? changes.horizon);
              if (last === undefined) return false;
              return log.keys.length > 0 ? log.keys[0] === last + 1 : commitSequence(out[0]!) === last;
            };
            if (!spans()) changes = readChanges(await result(st.get(CHANGES)));
            covered = spans();
          }
          return out;
        });
      // A reader's reads run one after another: each brings the shared `log` to its own
      // transaction's state, so two side by side would apply the same new frames twice, or
      // mix one's log with the other's `pages` across a checkpoint. Each starts after the one
      // before it finished, so it sees that commit or a later one.
      let readerTail: Promise<unknown> = Promise.resolve();
      const read = (ids: readonly number[]): Promise<(Uint8Array | undefined)[]> => {
        if (!readOnly) return ids.every((id) => log.latest.has(id)) ? Promise.resolve(ids.map((id) => log.image(id))) : readIn(ids);
        const p = readerTail.then(() => readIn(ids));
        readerTail = p.catch(() => undefined);
        return p;
      };

      /** A reader: the pages the commits after `sequence` wrote: the log's frames after it, or,
       * where a checkpoint cleared those, the change record's checkpoints after it and every
       * frame since; undefined where neither can tell. */
      // (the same array while nothing changed: the store keeps a set of the list it is given)
      let since: { sequence: number; changes: ChangeRecord; keys: readonly number[]; frames: number; ids: readonly number[] } | undefined;
      const changedSince = (sequence: number): readonly number[] | undefined => {
        const fromLog = log.changedSince(sequence);
        if (fromLog !== undefined || changes === undefined || !covered) return fromLog;
        const last = changes.seqs[changes.seqs.length - 1] ?? changes.horizon;
        if (sequence < changes.horizon || sequence > last) return undefined;
        if (since !== undefined && since.sequence === sequence && since.changes === changes && since.keys === log.keys && since.frames === log.keys.length) return since.ids;
        const seen = new Set<number>(log.pagesOfFrames());
        changes.seqs.forEach((seq, i) => {
          if (seq > sequence) for (const id of changes!.ids[i]!) seen.add(id);
        });
        since = { sequence, changes, keys: log.keys, frames: log.keys.length, ids: [...seen] };
        return since.ids;
      };

      /** A checkpoint: every logged page, and `pages` over them, as records of `pages`, and
       * the log cleared, in one transaction (handed to `started`, which may abort it). */
      const checkpoint = async (pages: readonly (readonly [number, Uint8Array])[], started?: (tx: IdbTransaction) => void): Promise<void> => {
        const all = new Map(log.latest);
        for (const [id, image] of pages) all.set(id, image);
        // The store ends at its superblock's page count: pages past it were freed at its end
        // (the core cuts them, BufferPool::trim_free_tail) and their records go.
        const page0 = all.get(0);
        const end = page0 !== undefined ? pageCountOf(page0) : undefined;
        // This checkpoint's entry in the change record: the pages it writes are every page the
        // commits since the last one changed (the log's and the commit's).
        let next: ChangeRecord | undefined;
        if (changes !== undefined && page0 !== undefined) {
          next = { horizon: changes.horizon, seqs: [...changes.seqs, commitSequence(page0)], ids: [...changes.ids, [...all.keys()]] };
          let n = next.ids.reduce((a, x) => a + x.length, 0);
          while (n > CHANGE_IDS && next.seqs.length > 1) {
            n -= next.ids.shift()!.length;
            next.horizon = next.seqs.shift()!;
          }
        }
        await transact([PAGES, LOG], 'readwrite', async (tx) => {
          const st = tx.objectStore(PAGES);
          // A view would store its whole buffer with it: those are copied.
          const puts: Promise<unknown>[] = [];
          for (const [id, image] of all) {
            if (end === undefined || id < end) puts.push(result(st.put(ownsBuffer(image) ? image : image.slice(), id)));
          }
          if (end !== undefined && KeyRange !== undefined) puts.push(result(st.delete(KeyRange.lowerBound(end))));
          puts.push(result(tx.objectStore(LOG).clear()));
          if (next !== undefined) {
            puts.push(result(st.put({ horizon: next.horizon, seqs: Float64Array.from(next.seqs), ids: next.ids.map((x) => Uint32Array.from(x)) }, CHANGES)));
          }
          await Promise.all(puts);
        }, started);
        if (next !== undefined) changes = next;
        // What `pages` now holds is the base of the next commits' deltas (copies: the views of
        // the log's slots are used again after the reset).
        if (deltas && !readOnly) {
          for (const [id, image] of all) if (end === undefined || id < end) stored.set(id, image.slice());
          if (end !== undefined) for (const id of stored.keys()) if (id >= end) stored.delete(id);
        }
        log.reset();
      };

      // The writer reads the log back once; a reader does before every read.
      if (!readOnly) {
        try {
          await transact([PAGES, LOG], 'readonly', async (tx) => {
            await syncLog(tx);
            // The change record starts at the commit the store is at (its first entry, the next
            // checkpoint's, covers every change since the checkpoint before that, a superset).
            const last = log.keys[log.keys.length - 1];
            const page0 = last === undefined ? copy(await result(tx.objectStore(PAGES).get(0))) : undefined;
            changes = { horizon: last ?? (page0 !== undefined && page0.length === 4096 ? commitSequence(page0) : 0), seqs: [], ids: [] };
          });
        } catch (e) {
          conn.close();
          channel?.close();
          release();
          throw idbError(e, 'reading the log', path);
        }
      }
      let closed = false;
      return {
        // writePages copies the images into the log's slots; frames and checkpoints put
        // arrays of their own (a view would be stored with its whole buffer).
        viewsOfOneCopy: true,
        async readPage(id: number): Promise<Uint8Array | undefined> {
          try {
            return (await read([id]))[0];
          } catch (e) {
            throw idbError(e, `reading page ${id}`, path);
          }
        },
        async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
          try {
            return await read(ids);
          } catch (e) {
            throw idbError(e, `reading pages ${ids[0]}..`, path);
          }
        },
        wantsDeltas: deltas,
        copyRuns: deltas,
        // A reader: what the frames since its commit wrote (the log it keeps up to date).
        changedSince: readOnly ? changedSince : undefined,
        newestCommit: readOnly ? () => heard : undefined,
        async writePages(pages, given): Promise<void> {
          if (readOnly) throw new IoError(`indexeddb: '${path}' is open read-only`);
          if (pages.length === 0 || pages[0]![0] !== 0) throw new InvalidArgumentError('indexeddb: a commit hands page 0 first');
          try {
            // The usual commit: one record, with deltas against the pages' logged images.
            // (A frame cannot be smaller than its header and entry headers: past that, no diff.)
            const fits = log.bytes + 8 + 8 * pages.length <= checkpointBytes;
            const frame = fits ? encodeFrame(pages, deltas ? (id) => log.latest.get(id) : undefined, deltas ? (id) => stored.get(id) : undefined, deltas ? given : undefined) : undefined;
            if (frame !== undefined && log.bytes + frame.length <= checkpointBytes) {
              const key = commitSequence(pages[0]![1]);
              const last = log.keys[log.keys.length - 1];
              if (last !== undefined && key <= last) throw new IoError(`${where}: commit ${key} after commit ${last}`);
              await transact([LOG], 'readwrite', async (tx) => {
                await result(tx.objectStore(LOG).put(frame, key));
              });
              log.add(key, pages, frame.length, where);  // copies the images
              for (const [id] of pages) stored.delete(id);
              announce(key);
              return;
            }
            // Past checkpointBytes: a checkpoint instead.
            await checkpoint(pages);
            announce(commitSequence(pages[0]![1]));
          } catch (e) {
            throw idbError(e, 'committing', path);
          }
        },
        close(abandoned?: boolean): Promise<void> | void {
          if (closed) return;
          closed = true;
          try {
            channel?.close();
          } catch {
            /* already closed */
          }
          // As a file store's close: the log folded into `pages`, so that the next open has
          // none to read (and holds no logged pages in memory). A failure loses nothing: the
          // log stays. The lock is held until it is done, CLOSE_FOLD_MS at most. (Not for a store dropped without
          // close() and collected: the next open reads the log.)
          if (readOnly || log.keys.length === 0 || lost !== undefined || abandoned === true) {
            conn.close();
            release();
            return;
          }
          // Bounded: a transaction of another connection can hold the fold's up for ever, and
          // with it the lock (a reopen anywhere would wait for it). Aborted, it writes nothing.
          let tx: IdbTransaction | undefined;
          let late = false;
          const timer = setTimeout(() => {
            late = true;
            try {
              tx?.abort();
            } catch {
              /* it finished first */
            }
          }, CLOSE_FOLD_MS);
          (timer as { unref?: () => void }).unref?.();
          const fold = checkpoint([], (t) => (tx = t)).finally(() => {
            clearTimeout(timer);
            conn.close();
          });
          release(fold);
          return fold.catch((e: unknown) => {
            if (late) {
              throw new IoError(`indexeddb: checkpointing at close of '${path}': another connection held the database for ${CLOSE_FOLD_MS / 1000} s, so close() let go without it; the log stays and the next open reads it (nothing is lost)`, { cause: e });
            }
            throw idbError(e, 'checkpointing at close', path);
          });
        },
      };
    },
  };
}

/** The default IndexedDB backend (`storage: 'indexeddb'`): strict durability. */
export const indexedDBDefault = indexedDBStorage();
