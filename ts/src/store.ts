/**
 * BTreeStore: a persistent BTreeMap. Its 4 KiB pages live in a buffer pool in wasm memory over
 * a storage backend (storage/*.ts): files in Node or Deno, OPFS in a browser's dedicated
 * worker (on a main thread the store runs in a worker the package starts: storage/opfs-remote.ts),
 * a Cloudflare Durable Object's SQLite (storage/durable-object.ts), an in-process memory volume, or an asynchronous backend (IndexedDB-like;
 * storage/async-memory.ts is the test one).
 *
 * ```ts
 * await using s = await BTreeStore.open('data/index.db');   // node files; recovers if needed
 * s.set('a', 1);                     // visible at once
 * s.get('a');                        // synchronous on sync backends (node, deno, memory)
 * await s.commit();                  // durable when this resolves
 * for await (const [k, v] of s.entriesAsync({ gte: 'a' })) {}   // every backend
 * ```
 *
 * Methods: every BTreeMap method with the same meaning and errors (get, has, set, delete,
 * clear, size, keys/values/entries(range), iteration, forEach, first, last, nextHigher,
 * nextLower, deleteRange, getMany, setMany, checkInvariants; the BTreeMap's `stats()` is
 * `treeStats()` here), and an `...Async` twin of each (`getAsync`, `setAsync`, ...,
 * `entriesAsync(range)` and `for await (const e of store)`). The BTreeMap code runs both:
 * a store holds a BTreeMap attached to the store's tree (map.ts ATTACH_TREE).
 *
 * - Sync backends: the sync methods do everything (page faults are served inside the wasm
 *   call); the async twins just call them.
 * - Async backends: the async twins are the API. A sync method works while the pages it needs
 *   are in the pool and otherwise throws PageFaultError (NEED_PAGE) having changed nothing;
 *   the async twin catches that, awaits the page, hands it to the core (at_store_supply) and
 *   retries. Iterators that fault re-seek after the last key they returned; when a scan
 *   faults, the next pages by id are read ahead (a cache answers their faults at once).
 *
 * Durability: writes are visible at once and durable after the `commit()` that follows them
 * resolves. Commits requested before a flush starts (in the same turn of the event loop)
 * share one flush (group commit); a commit requested while an asynchronous flush is running
 * gets the next one. `autoCommit: { writes: n, ms: t }` requests a commit after n writes or
 * t ms after the first uncommitted write. `close()` commits pending writes, then releases
 * the store; a crash (or a process that ends without close) loses the writes after the last
 * completed commit and nothing before it. A failed commit (disk full, I/O error) leaves the
 * last commit intact and the store read-only (ReadOnlyError) until reopened; later commits
 * and close() reject (ReadOnlyError) rather than resolve over the writes that were lost.
 */
import { ASYNC_STORE_FUNCTIONS, LayoutConfig, Result, Status, STORE_FUNCTIONS, StoreOpenFlags, type LayoutName } from './abi.js';
import {
  AbortedError,
  AdaptreeError,
  ClosedError,
  ReadOnlyError,
  CorruptionError,
  InvalidArgumentError,
  IoError,
  OutOfMemoryError,
  PageFaultError,
  QuotaExceededError,
  ReentrancyError,
  errorFromStatus,
  isAdaptreeError,
  listOf,
  ThreadsUnsupportedError,
  withApplied,
} from './errors.js';
import {
  ATTACH_TREE,
  BTreeMap,
  frozenKey,
  frozenValue,
  getDefaultWasm,
  treeMoved,
  type BTreeMapOptions,
  type BTreeStats,
  type DeleteRange,
  type KeyEncodingFor,
  type Range,
  type ValueEncodingFor,
} from './map.js';
import type { KeyCodec, ValueCodec } from './encoding/codec.js';
import { checkWasmOption, loadWasm, type AdaptreeWasm, type WasmUrl } from './wasm.js';
import { TREE_OF, checkNamedEncodings, detachInstance, trackAttached, untrackAttached, type AttachMapOptions, type SharedMapHandle } from './threads.js';
import { checkStoreEncodings } from './store-encodings.js';
import { registerHost, statusOfError, unregisterHost, type HostEntry } from './storage/host.js';
import { runtimeOf } from './map/runtime.js';
import { checkDeleteRange } from './map/range.js';
import type { AsyncStorePages, PageDelta, StorageBackend, SyncStoreFiles } from './storage/types.js';
import { memoryStorage } from './storage/memory.js';
import { isFilesGone } from './storage/names.js';
import { nodeStorage } from './storage/node.js';
import { denoStorage } from './storage/deno.js';
import { opfsStorage, opfsSyncAvailable } from './storage/opfs.js';
import { indexedDBDefault } from './storage/indexeddb.js';
import { OpfsWorkerStore, WORKER_MODULE, linkOpfsWorkerStore, opfsRemoteAvailable } from './storage/opfs-remote.js';
import { asyncMemoryStorage } from './storage/async-memory.js';
import { superblockSequence } from './storage/page-log.js';
import { pageCountOf } from './storage/superblock.js';
import { booleanFields } from './options.js';
import { PROGRESS_BYTES, batchOptions, progressOption, report, type ProgressCallback } from './progress.js';

export type StorageName = 'node' | 'deno' | 'opfs' | 'indexeddb' | 'memory' | 'async-memory';

/** How long close() waits for the async calls under way (ms) before it goes on without them. */
const CLOSE_WAIT_MS = 5000;
/** Why a store commits no more (#torn). */
const TORN = 'an async write was stopped part way by close() (its backend answered no page for 5 s)';

export interface StoreOptions<K, V> {
  /** Where the store is: a file path (node, deno) or a name (memory backends). */
  path: string;
  /** The backend; default `'node'` in Node, `'deno'` in Deno, `'opfs'` in a browser's dedicated worker.
   * A backend object otherwise, e.g. `durableObjectStorage(ctx.storage)` in a Durable Object. */
  storage?: StorageName | StorageBackend;
  /** Layout of a new store (an existing store keeps its own); default 'adaptive'. */
  layout?: LayoutName;
  /** Key and value encodings, as for BTreeMap. The store records them (custom codecs only as
   * "custom"): opened with others, open() throws InvalidArgumentError naming both. */
  keys?: KeyEncodingFor<K> | KeyCodec<K>;
  values?: ValueEncodingFor<V> | ValueCodec<V>;
  /** Buffer pool size in bytes (default 64 MiB; at least 1 MiB). */
  poolSize?: number;
  /** Sync backends: a commit checkpoints the log into the data file once the log is larger
   * than this (default: the backend's, else 64 MiB; at least 64 KiB). Smaller: less to replay
   * at open and less space, more checkpoint writes. `indexeddb`: its log of commit records
   * (default 64 MiB, 0 allowed: no log; the newest logged pages stay in memory). Other async
   * backends have no log: ignored. */
  checkpointBytes?: number;
  /** Sync backends: a commit logs the bytes that changed in each page (a delta) when that is
   * smaller than the page (default true). false: whole pages, as before deltas (a log older
   * versions read). `indexeddb`: the same for its log's frames. Other async backends: ignored.
   * docs/DECISIONS.md, "Commits log deltas". */
  logDeltas?: boolean;
  /** Commit automatically after this many writes and/or this many ms after the first
   * uncommitted write. Default: only explicit commit() and close(). */
  autoCommit?: { ms?: number; writes?: number };
  /** Create the store if it does not exist (default true). */
  create?: boolean;
  /** Open as a reader: writes throw ReadOnlyError, nothing is ever written to the storage
   * (not even recovery), a store that does not exist is an InvalidArgumentError. The reader
   * sees one committed state: opfs readers share the store's Web Lock (any number of readers
   * or one writer: a reader while the writer is open gets LockedError, or waits with
   * `wait: true`); indexeddb readers run beside the writer and move to a newer commit when a
   * page read meets one (or on `refresh()`); node, deno and memory take their usual exclusive
   * lock. docs/STORE.md, "Readers". */
  readOnly?: boolean;
  /** With `readOnly: true`, on stores whose log is a file (node, deno, opfs, memory,
   * `durableObjectStorage`): a log damaged part way (a frame whose checksum fails, with intact
   * commits after it) is read up to the damage, and the store opens as of the last commit
   * before it, instead of throwing CorruptionError; the commits after the damage are not read.
   * Nothing is written: copy what you need into a new store. A store whose log is intact opens
   * as usual. docs/STORE.md, "A damaged log". */
  salvage?: boolean;
  /** If the store is open elsewhere: false (default) throws LockedError at once, true waits
   * until it is closed there (opfs: queues for its Web Lock; node, deno, memory: no effect). */
  wait?: boolean;
  /** The wasm instance; default the one init() loaded, else a private one loaded now. An opfs
   * store opened on a browser's main thread lives in a worker, which instantiates the same
   * module (this one's, or init()'s) in its own memory. */
  wasm?: AdaptreeWasm;
  /** An opfs store opened on a browser's main thread: the URL of the package's
   * `dist/storage/opfs-worker.js` as deployed, where a bundle cannot locate it from
   * `import.meta.url` (a CommonJS or classic-script bundle). Ignored elsewhere. */
  workerUrl?: string | WasmUrl;
  /** Called while opening (recovery reads the log), phase 'open': bytes read so far of about
   * `total`; the last call has `done === total`. Sync backends only (an async backend's open
   * reads one page). If it throws: AbortedError, the store stays closed (progress.ts). */
  onProgress?: ProgressCallback;
  /** Receives the error of a failed automatic commit (the store is then read-only). */
  onError?: (e: Error) => void;
  /** Node fill (docs: README, "Node fill"): `redistribute` lets a full leaf share records with
   * its neighbours before it splits (leaves ~0.85 full after random inserts instead of ~0.70),
   * `xmerge` packs underfull neighbour leaves into fewer when the buffer pool has to evict,
   * `edges` makes an append past the last key (a prepend before the first) fill the leaf
   * beside the full last (first) one, else start a new leaf and leave the full one as it is.
   * All default to true; `{ redistribute: false, xmerge: false, edges: false }` gives the
   * paper's splits. */
  fill?: { redistribute?: boolean; xmerge?: boolean; edges?: boolean };
}

/** @internal A StoreOptions flag: the keys and values given to the store are already encoded
 * (`bytes` in, `bytes` out), by the encodings that `keys` and `values` name ('custom' for a
 * codec object), which the store records as any store with them does. The worker behind a
 * main-thread opfs store (storage/opfs-worker.ts) opens its store so: the main thread encodes. */
export const ENCODED_ELSEWHERE: unique symbol = Symbol('adaptree.encodedElsewhere') as never;

const KNOWN = new Set(['path', 'storage', 'layout', 'keys', 'values', 'poolSize', 'checkpointBytes', 'logDeltas', 'autoCommit', 'create', 'wait', 'readOnly', 'salvage', 'wasm', 'onProgress', 'onError', 'fill', 'workerUrl']);

/** at_tree_set_fill's flags for a store's `fill` option (undefined: the tree's defaults). */
function fillFlags(fill: StoreOptions<unknown, unknown>['fill']): number | undefined {
  if (fill === undefined) return undefined;
  const f = booleanFields(fill, 'fill', ['redistribute', 'xmerge', 'edges'] as const);
  return (f.redistribute === false ? 0 : 1) | (f.xmerge === false ? 0 : 2) | (f.edges === false ? 4 : 0);
}

/** Each field of `o` is one of `fields` with that type (or undefined): a misspelt one
 * (`{ wrties: 10 }`) was taken silently as the defaults. */
function checkFields(o: object, what: string, fields: Record<string, 'boolean' | 'number'>): void {
  for (const [k, v] of Object.entries(o)) {
    const t = fields[k];
    if (t === undefined) throw new InvalidArgumentError(`${what}: unknown field '${k}' (${Object.keys(fields).join(', ')})`);
    if (v !== undefined && typeof v !== t) throw new InvalidArgumentError(`${what}.${k} must be a ${t}`);
  }
}
const DEFAULT_POOL = 64 << 20;
const PAGE_SIZE = 4096;
/** The largest copy of a commit's pages an async store keeps for its next commits (#flushAsync). */
const COMMIT_BLOCK_KEPT = 16 << 20;
/** A page without a delta entry (at_store_commit_begin). */
const NO_DELTA = 0xffffffff;
/** Entries per core call when setManyAsync resumes after a page fault. */
const ASYNC_BATCH = 512;
/** Pages read ahead (by id) when a scan faults on an async backend. */
const READ_AHEAD = 8;
/** Faults on consecutive page ids (an overflow chain: a large value's pages, which a new
 * chain gets in descending order) read ahead in their direction, twice as far each time, up
 * to this many pages (1 MiB: one IndexedDB transaction). One page per round trip made an
 * 8 MB value take 1.5 s to read from IndexedDB with a cold pool. */
const MAX_READ_AHEAD = 256;
/** Pages of such a run supplied to the core with the one that faulted (a retry reads the
 * chain again from its start: one page per retry made that quadratic). Two 20 MB values on a
 * 1 MiB pool, read, read together, iterated, deleted: 52/101/105/52 requests with 256,
 * 84/168/172/84 with 64. The pool grows past its size for them meanwhile (the pages of the
 * operation that faulted, and of the one before, are not evicted: BufferPool::supply). */
const RUN_SUPPLY = 256;

/** What stats() reports: the core's at_store_stats JSON plus the backend's name and path. */
export interface StoreStats {
  storage: string;
  path: string;
  /** Buffer pool: frames (its size), frames_allocated (those made so far), resident pages, dirty
   * pages; page_table_bytes: the pool's page table. */
  frames: number;
  frames_allocated: number;
  page_table_bytes: number;
  /** Async backends: memory held by large-value reads kept across page faults for the async
   * twins' retries. */
  kept_read_bytes: number;
  /** Pages of the store (its end), and of those free for reuse. */
  pages: number;
  free_pages: number;
  resident: number;
  dirty: number;
  hits: number;
  misses: number;
  evictions: number;
  /** A store shared between threads: point writes that ran beside other threads' calls
   * (their leaf resident and changed since the last commit; docs/THREADS.md, "Stores"). */
  shared_writes: number;
  reads: number;
  writes: number;
  syncs: number;
  /** Commit sequence number of the last commit. */
  commit_sequence: number;
  commits: number;
  checkpoints: number;
  /** Sync backends: checkpoints after a commit that failed (the commit was durable; onError
   * was told; the next commit tries again). */
  checkpoint_failures: number;
  /** Dirty pages written to the log before their commit (pool pressure). On a reader, which
   * writes nothing: pages its reads changed in memory (a fingerprint leaf sorted, a layout
   * converted) and that eviction dropped, to be read again as stored. */
  spills: number;
  /** Bytes of the data file and the log (sync backends). */
  data_bytes: number;
  log_bytes: number;
  /** Sync backends (docs/STORE.md, stats()): frames and bytes commits and spills appended to the
   * log; images checkpoints appended for pages whose deltas start at the data file; free pages
   * at the store's end commits cut off, checkpoints that then shortened the data file, page
   * versions checkpoints copied from clean frames. 0 on async backends. */
  image_frames: number;
  delta_frames: number;
  commit_log_bytes: number;
  restated_pages: number;
  trimmed_pages: number;
  data_truncations: number;
  checkpoint_frames: number;
  /** Node fill since open (README, "Node fill"): leaves regrouped with a neighbour before a
   * split, of which 2-to-3 splits; XMerge groups packed into one leaf less, and the attempts
   * the pool's evictions triggered. redistributions_shared, splits_2to3_shared: of those, the
   * ones made by a write under the shared latch of a store shared between threads
   * (docs/THREADS.md). */
  redistributions: number;
  redistributions_shared: number;
  splits_2to3: number;
  splits_2to3_shared: number;
  /** Appends past the last key (prepends before the first) that started a new leaf beside the
   * full last (first) one, and those whose neighbour leaf took records instead. */
  edge_splits: number;
  edge_refills: number;
  /** The same one level up or more: a full inner node at the tree's edge whose neighbour took
   * entries instead of it splitting. */
  inner_refills: number;
  xmerges: number;
  xmerge_attempts: number;
  /** Pages compact() moved from the store's end into free pages below since open, so that the
   * next commit ends the store below them and the next checkpoint cuts its files there. */
  relocated_pages: number;
  /** data_bytes + log_bytes. */
  fileBytes: number;
  /** Entries written or removed since the last commit (counted by the TypeScript side: a
   * setMany counts its entries, a deleteRange or clear the entries it removed). A store shared with workers:
   * this object's writes only, set back to 0 when stats() finds nothing pending in the store
   * (another thread's commit covered them). */
  uncommittedWrites: number;
  [field: string]: unknown;
}

let privateWasm: Promise<AdaptreeWasm> | undefined;

function resolveStorage(s: StoreOptions<unknown, unknown>['storage']): StorageBackend {
  if (s === undefined) {
    if (typeof (globalThis as { Deno?: unknown }).Deno !== 'undefined') return denoStorage;
    const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
    if (p?.versions?.node !== undefined) return nodeStorage;
    if (opfsSyncAvailable()) return opfsStorage;
    throw new InvalidArgumentError("no default storage in this runtime: pass options.storage (a backend object, or 'memory')");
  }
  if (typeof s === 'string') {
    switch (s) {
      case 'node': return nodeStorage;
      case 'deno': return denoStorage;
      case 'opfs': return opfsStorage;
      case 'indexeddb': return indexedDBDefault;
      case 'memory': return memoryStorage;
      case 'async-memory': return asyncMemoryStorage;
      default: throw new InvalidArgumentError(`unknown storage '${s}' (node, deno, opfs, indexeddb, memory, async-memory, or a backend object)`);
    }
  }
  if (s !== null && typeof s === 'object' && (s.kind === 'sync' || s.kind === 'async') && typeof s.open === 'function') return s;
  throw new InvalidArgumentError("options.storage must be 'node', 'deno', 'opfs', 'indexeddb', 'memory', 'async-memory' or a backend object");
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(e: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void, reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Runs `f` after the current turn of the event loop: commits requested meanwhile join.
 * Browsers clamp chained `setTimeout(0)` to 4 ms, which cost a one-commit write there about
 * 5 ms on top of its 2-3 ms write and flush (bench/browser/diagnose.mjs commit); a message to
 * ourselves through a MessageChannel is the same "next turn" without the clamp.
 */
const later: (f: () => void) => void = (() => {
  const g = globalThis as unknown as {
    setImmediate?: (f: () => void) => void;
    MessageChannel?: new () => {
      port1: { onmessage: ((e: unknown) => void) | null; close(): void };
      port2: { postMessage(m: unknown): void; close(): void };
    };
  };
  if (typeof g.setImmediate === 'function') return (f: () => void) => g.setImmediate!(f);
  if (typeof g.MessageChannel !== 'function') return (f: () => void) => void setTimeout(f, 0);
  const queue: (() => void)[] = [];
  return (f: () => void) => {
    queue.push(f);
    if (queue.length > 1) return; // a message is already on its way
    // A channel per turn, closed when it has delivered: an open port with a listener would
    // keep a Deno process (or a worker) alive after the store is closed.
    const channel = new g.MessageChannel!();
    channel.port1.onmessage = () => {
      channel.port1.close();
      channel.port2.close();
      for (const h of queue.splice(0)) {
        try {
          h();
        } catch (e) {
          queueMicrotask(() => {
            throw e;
          });
        }
      }
    };
    channel.port2.postMessage(0);
  };
})();

/** A typed error for a failed status of a store call, with the backend's error as cause. */
/** The backend's error the host functions kept, once (a later failure must not carry it). */
function takeError(entry: HostEntry): unknown {
  const e = entry.lastError;
  entry.lastError = undefined;
  return e;
}

function storeError(st: number, what: string, cause: unknown): Error {
  const detail = cause instanceof Error ? cause.message : cause !== undefined ? String(cause) : undefined;
  const e = errorFromStatus(st, what, detail);
  if (cause !== undefined && (e as { cause?: unknown }).cause === undefined) {
    Object.defineProperty(e, 'cause', { value: cause, configurable: true, writable: true, enumerable: false });
  }
  return e;
}

type Sync = { kind: 'sync'; files: SyncStoreFiles; io: number; entry: HostEntry };
/** reader: the page 0 whose commit the pool holds pages of (readOnly stores). */
type Async = {
  kind: 'async';
  pages: AsyncStorePages;
  /** A reader: page 0 of the commit its pool holds pages of, and that commit's sequence. */
  reader: { page0: Uint8Array; seq: number } | undefined;
  /** Set when the store let go of its pages: settles once the backend's close() has (with the
   * error of a close that failed: indexeddb folds its log there). */
  closed: { done?: Promise<unknown> };
};
/** A page read on an async backend; a reader's comes with the page 0 read in the same request. */
type Fetched = { image: Uint8Array | undefined; page0?: Uint8Array | undefined };


function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A `BTreeMap` whose 4 KiB pages live in a buffer pool over a storage backend (files in Node
 * and Deno, an in-process volume, or your own backend), with atomic durable commits and
 * recovery on open. Open one with `await BTreeStore.open(path | options)`; close it with
 * `await close()` (or `await using`).
 *
 * Every `BTreeMap` method is here with the same meaning and errors (`stats()` is `treeStats()`).
 * On synchronous backends (`node`, `deno`, `memory`) they answer at once. Each also has an
 * async twin named `...Async` (`getAsync`, `setManyAsync`, `entriesAsync`, ...) that works on
 * every backend: on an asynchronous one it awaits the pages a call needs and retries.
 *
 * Writes are visible at once and durable once a `commit()` requested after them resolves
 * (commits requested in the same turn of the event loop share one flush). Errors:
 * `LockedError` (open elsewhere), `CorruptionError`, `IoError`, `QuotaExceededError`,
 * `ReadOnlyError` (after a failed commit), `ClosedError`. Reference: docs/STORE.md.
 */
const STORE_HANDLE = 'adaptree.shared-store';

/** What `store.share()` returns and `BTreeStore.attach()` takes; structured-cloneable: a
 * map's handle (module, memory, stack, tree, encodings) plus the files. */
export interface SharedStoreHandle extends Omit<SharedMapHandle, 'kind'> {
  readonly kind: typeof STORE_HANDLE;
  /** The files' host handle in the shared memory (storage/host.ts). */
  readonly io: number;
  /** The backend's name and its description of the files (SyncStoreFiles#share). */
  readonly storage: string;
  readonly files: unknown;
  readonly path: string;
  /** The owner is a reader: so is every attached store. */
  readonly readOnly?: boolean;
  /** The BroadcastChannel the owner's close() posts on: attached stores then let go of their
   * files at once (#ownerClosed). */
  readonly closedChannel?: string;
}

/** Options of `BTreeStore.attach`: a map's (the codecs of a store shared with custom
 * encodings), and: */
export interface AttachStoreOptions<K, V> extends AttachMapOptions<K, V> {
  /** The backend object, when the owner's was not one of the built-in names. */
  storage?: StorageBackend;
  /** As for open(): this worker's own commit schedule and error callback. */
  autoCommit?: { ms?: number; writes?: number };
  onError?: (e: Error) => void;
}

export class BTreeStore<K = string, V = unknown> {
  readonly #map: BTreeMap<K, V>;
  readonly #wasm: AdaptreeWasm;
  readonly #tree: number;
  readonly #b: Sync | Async;
  readonly #storage: string;
  readonly #path: string;
  readonly #autoWrites: number;
  readonly #autoMs: number;
  readonly #onError: ((e: Error) => void) | undefined;
  readonly #readOnly: boolean;
  /** Attached in a worker (BTreeStore.attach): close() detaches; the owner ends the store. */
  readonly #attached: boolean;
  /** share() was called: other workers may write too (close commits whatever is pending). */
  #shared = false;
  /** The owner, once shared: the channel its close() tells the attached stores on. */
  #closedChannel: string | undefined;
  /** Attached: the owner closed the store and this one let go of its files and instance. */
  #released = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** close()'s promise has settled, and whether that close commits (commit(): see there). */
  #closeSettled = false;
  #closeCommits = false;
  /** Writes since the last commit began. */
  #uncommitted = 0;
  /** A new store on an async backend, which stores nothing before its first commit: that
   * commit (or close()) stores it even with nothing written, so that its encodings and layout
   * are recorded (opened and closed without a write, it was gone, and a reopen with other
   * encodings created it anew: a new-user probe, session 26). */
  #unstored = false;
  /** The commit that the next flush will complete, if one was requested. */
  #next: Deferred | undefined;
  /** The writes the requested flush (#next) waits for (#writeTail when #flushAfterWrites ran;
   * #nextWaits: it has run). A commit requested after writes made since does not join it, but
   * #then, the flush after it: joined, it resolved without those writes (a probe, session 36:
   * `setAsync; commit()` in two turns on a cold store, the first commit still waiting for its
   * write's pages; the second resolved with the first's flush, and `close({ commit: false })`
   * then dropped its write). */
  #nextTail: Promise<void> | undefined;
  #nextWaits = false;
  #then: Deferred | undefined;
  /** The asynchronous flush in progress. */
  #flushing: Promise<void> | undefined;
  /** The commit an automatic commit last asked for (#auto). */
  #autoCommit: Promise<void> | undefined;
  /** The running async commit got past at_store_commit_begin (its images are the backend's). */
  #handedOver = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Async: while a commit's images are being written, operations wait for this. */
  #gate: Promise<void> | undefined;
  /** Async: page fetches in flight (deduplicated), and pages read ahead by scans. */
  readonly #faults = new Map<number, Promise<void>>();
  readonly #ahead = new Map<number, { gen: number; image: Promise<Fetched | undefined> }>();
  /** The last page fault, and the read-ahead of a run of faults on consecutive ids: its
   * direction (+1, -1) and window (0: not a run). */
  #lastFault = -1;
  #runDir = 0;
  #runWindow = 0;
  /** Bumped by every async commit: pages read ahead before it may be stale. */
  #gen = 0;
  /** A commit failed: the store refuses writes until reopened. */
  #failed = false;
  /** Sync calls into the core that the async twins' loops make, under way (no await inside). */
  #inAsync = 0;
  /** Async calls under way (the ...Async twins, not iterators): close() lets them finish. */
  #active = 0;
  #idle: (() => void)[] = [];
  /** close() is waiting for #active calls: they go on, new calls are refused. */
  #draining = false;
  /** Steps the async calls took (#openAsync passed): close() waits while they progress. */
  #steps = 0;
  /** Entries written, ever (#wrote): a write call that changed the tree shows as a change. */
  #written = 0;
  /** An async write that close() stopped part way (its backend answered no page for
   * CLOSE_WAIT_MS) left part of itself in the tree: nothing more is committed (#startFlush). */
  #torn: string | undefined;
  /** Async write calls made and not settled (running or queued, #sequence). */
  #writesPending = 0;
  /** The async write call running (one at a time, #sequence): #written when it began. */
  #writeRun: { before: number } | undefined;
  /** close() gave up waiting for a write whose backend answers no page: commits go ahead
   * without waiting for it (#flushAfterWrites); it changed nothing, or the store is #torn. */
  #stalled = false;
  /** Rejects once close() gave up on the calls under way: their page reads stop waiting. */
  #gaveUp: Promise<never> | undefined;
  #giveUp: ((e: Error) => void) | undefined;
  /** Async backends: calls run in the order they were made (#sequence). The last write made,
   * until it settles; the calls that began running and have not settled; who waits for none. */
  #writeTail: Promise<void> | undefined;
  #started = 0;
  #quiet: (() => void)[] = [];
  /** A sync call's fault kept a read while async calls were under way: the core's kept reads
   * are dropped once none is (#faultOutside). */
  #dropWhenIdle = false;
  /** Async, viewsOfOneCopy: the copy of a commit's pages, kept for the next commits when it
   * is at most COMMIT_BLOCK_KEPT bytes. */
  #commitBlock: Uint8Array | undefined;
  /** That commit's error: later commits and close() reject with it as the cause. */
  #failure: unknown;
  /** Async: a 4 KiB area in wasm memory for at_store_supply. */
  #pageBuf = 0;

  private constructor(init: {
    map: BTreeMap<K, V>; wasm: AdaptreeWasm; tree: number; b: Sync | Async; storage: string; path: string;
    options: StoreOptions<K, V>; pageBuf: number; attached?: boolean;
  }) {
    this.#attached = init.attached === true;
    this.#map = init.map;
    this.#wasm = init.wasm;
    this.#tree = init.tree;
    this.#b = init.b;
    this.#storage = init.storage;
    this.#path = init.path;
    this.#pageBuf = init.pageBuf;
    const ac = init.options.autoCommit;
    this.#autoWrites = ac?.writes !== undefined && ac.writes > 0 ? ac.writes : Infinity;
    this.#autoMs = ac?.ms !== undefined && ac.ms >= 0 ? ac.ms : -1;
    this.#onError = init.options.onError;
    this.#readOnly = init.options.readOnly === true;
    this.#poolPages = Math.floor((init.options.poolSize ?? DEFAULT_POOL) / PAGE_SIZE);
  }

  /**
   * Opens the store at a path (default backend of the runtime) or as the options say, creating
   * it if needed (unless `create: false`) and recovering it after a crash. Throws LockedError
   * if it is open elsewhere, CorruptionError for a file that is not an adaptree store or is
   * damaged beyond repair, IoError/QuotaExceededError from the storage.
   */
  /**
   * Threads (docs/THREADS.md, "Stores"): a handle for `BTreeStore.attach()` in a worker of this
   * process, which then works on this same store: the same tree and buffer pool in the shared
   * memory, the same files (each worker reaches them through its own host functions). Point
   * reads and writes (get, has, getMany, set, delete, setMany entry by entry) of a shared store
   * run side by side in several workers, each holding only its leaf; what changes the tree's
   * structure or reads through the pool (page faults, splits, merges, cursors, commits,
   * deleteRange, clear) holds the tree latch exclusive and runs alone (docs/THREADS.md,
   * "Stores"). Needs the mt build (`await init({ threads: true })` before opening)
   * and a backend whose files other threads can reach: `node` (file descriptors are the
   * process's), `deno` and `opfs` in a dedicated worker (each attaching worker opens its own
   * handles). Others throw ThreadsUnsupportedError: IndexedDB and Durable Objects (pages come
   * through the opening thread's JavaScript), `memory`, an `opfs` store opened on the main
   * thread.
   *
   * A commit in any worker makes durable what that worker wrote, and everything any worker
   * wrote before it (one tree). This store stays the owner: its close() commits what any worker
   * left pending (unless `{ commit: false }`) and ends the store for every worker (their calls
   * then throw ClosedError, and they let go of their files at once). Each call reserves one
   * stack (1 MiB by default) for one attach. An attached store of a reader on node or deno
   * files is a reader; an opfs reader cannot be shared (THREADS_UNSUPPORTED: open a reader in
   * each worker).
   */
  share(stackSize?: number): SharedStoreHandle {
    this.#open();
    if (this.#attached) throw new ThreadsUnsupportedError('share(): share the owner\'s store (this one is attached)');
    const b = this.#b;
    if (b.kind !== 'sync') {
      throw new ThreadsUnsupportedError(`share(): a store on the asynchronous '${this.#storage}' storage cannot be shared with workers (its pages come through this thread's JavaScript)`);
    }
    const files = b.files.share?.();
    if (files === undefined && this.#readOnly && this.#storage === 'opfs') {
      throw new ThreadsUnsupportedError("share(): an 'opfs' reader cannot be shared (its 'read-only' access handles are its own): open a reader (readOnly: true) in each worker instead; readers do not keep each other out");
    }
    if (files === undefined) throw new ThreadsUnsupportedError(`share(): the '${this.#storage}' storage's files cannot be reached from other workers`);
    const w = this.#wasm;
    if (w.build !== 'mt') {
      throw new ThreadsUnsupportedError('share(): the store is on the single-threaded build; open it after `await init({ threads: true })` (or with an mt `wasm`)');
    }
    const st = w.exports.at_tree_share(this.#tree);
    if (st !== Status.OK) throw errorFromStatus(st, 'share');
    this.#shared = true;
    this.#closedChannel ??= `adaptree:store-closed:${randomToken()}`;
    return {
      kind: STORE_HANDLE,
      readOnly: this.#readOnly,
      closedChannel: this.#closedChannel,
      instance: w.attachHandle(stackSize),
      tree: this.#tree,
      io: b.io,
      storage: this.#storage,
      files,
      path: this.#path,
      keys: this.#map.keyEncoding,
      values: this.#map.valueEncoding,
    };
  }

  /**
   * The store `share()` made a handle of, in this worker (see share()). Custom codecs must be
   * passed again (`options.keys` / `options.values`), and a backend object that is not one of
   * the built-in names as `options.storage`. Its close() commits what this worker wrote
   * (unless `{ commit: false }`) and detaches; the owner's close() ends the store.
   */
  static async attach<K = string, V = unknown>(handle: SharedStoreHandle, options: AttachStoreOptions<K, V> = {}): Promise<BTreeStore<K, V>> {
    if (handle === null || typeof handle !== 'object' || handle.kind !== STORE_HANDLE || typeof handle.tree !== 'number' || typeof handle.io !== 'number') {
      throw new InvalidArgumentError('BTreeStore.attach(): not a handle from store.share()');
    }
    const keys = handle.keys === 'custom' ? options.keys : handle.keys;
    const values = handle.values === 'custom' ? options.values : handle.values;
    if (keys === undefined || values === undefined) {
      throw new InvalidArgumentError('BTreeStore.attach(): the store was shared with a custom codec: pass the same codec (options.keys / options.values)');
    }
    checkNamedEncodings(handle, options, 'BTreeStore.attach(): the store');
    const backend = options.storage ?? resolveStorage(handle.storage as StoreOptions<unknown, unknown>['storage']);
    if (backend.kind !== 'sync' || typeof backend.attach !== 'function') {
      throw new ThreadsUnsupportedError(`BTreeStore.attach(): the '${handle.storage}' storage cannot attach shared files`);
    }
    const wasm = await loadWasm({ attach: handle.instance });
    let files: SyncStoreFiles;
    try {
      files = await backend.attach(handle.files);
    } catch (e) {
      detachInstance(wasm);
      throw e;
    }
    let entry: HostEntry | undefined;
    // The owner's close() says so on this channel: this store then lets go of its files (they
    // stayed open until its own close(), 2 descriptors per attach in a worker that attached
    // again and again, and on OPFS its access handles kept readers in other tabs out; a
    // new-user probe, session 25).
    let store: BTreeStore<K, V> | undefined;
    let map: BTreeMap<K, V> | undefined;
    const watch = watchOwner(handle.closedChannel, () => map?.closed === true, () => {
      if (store !== undefined) store.#ownerClosed(true);
    });
    const detach = (): void => {
      untrackAttached(detach);
      watch?.close();
      unregisterHost(wasm.memory, handle.io);
      try {
        files.close();
      } finally {
        detachInstance(wasm);
      }
    };
    try {
      const e = (entry = registerHost(wasm.memory, handle.io, files));
      const hooks = { where: handle.path, cause: () => takeError(e) };
      const opts = { wasm, keys, values, [ATTACH_TREE]: { tree: handle.tree, borrowed: true, onFree: detach, closed: 'the store is closed', hooks } } as unknown as BTreeMapOptions<K, V>;
      map = new BTreeMap<K, V>(null, opts);
      trackAttached(detach, wasm, handle.tree);
      // (readOnly: the attached store of a reader said readOnly === false; a probe, session 25)
      const storeOptions = { path: handle.path, autoCommit: options.autoCommit, onError: options.onError, readOnly: handle.readOnly === true } as StoreOptions<K, V>;
      store = new BTreeStore<K, V>({ map, wasm, tree: handle.tree, b: { kind: 'sync', files, io: handle.io, entry }, storage: handle.storage, path: handle.path, options: storeOptions, pageBuf: 0, attached: true });
    } catch (e) {
      watch?.close();
      if (entry !== undefined) unregisterHost(wasm.memory, handle.io);
      detachInstance(wasm);
      files.close();
      throw e;
    }
    // Closed before the channel was listened to (the message went by), or before this attach:
    // ClosedError, as THREADS.md says, with what it attached let go again. It resolved, and
    // every call then threw CLOSED (the sharedstore probe, session 36).
    if (map.closed) {
      store.#ownerClosed();
      throw new ClosedError(`BTreeStore.attach(): the store '${handle.path}' was closed by its owner`);
    }
    return store;
  }

  /** `open(path)`, `open({ path, ...options })`, or `open(path, options)` (the same as
   * `open({ ...options, path })`; a second argument after an options object is refused, not
   * ignored). */
  static async open<K = string, V = unknown>(pathOrOptions: string | StoreOptions<K, V>, more?: Omit<StoreOptions<K, V>, 'path'>): Promise<BTreeStore<K, V>> {
    if (more !== undefined) {
      if (typeof pathOrOptions !== 'string') {
        throw new InvalidArgumentError('BTreeStore.open: give open(path, options) or open({ path, ...options }), not both an options object and a second argument');
      }
      if (more === null || typeof more !== 'object' || 'path' in more) {
        throw new InvalidArgumentError("BTreeStore.open(path, options): options must be an object without 'path' (the path is the first argument)");
      }
    }
    const options: StoreOptions<K, V> = typeof pathOrOptions === 'string' ? { ...more, path: pathOrOptions } : pathOrOptions;
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('BTreeStore.open: give a path or an options object');
    if ('threads' in options) {
      throw new ThreadsUnsupportedError("BTreeStore.open: there is no 'threads' option: open the store on the mt build (`await init({ threads: true })` first) and call share()");
    }
    for (const name of Object.keys(options)) {
      if (!KNOWN.has(name)) throw new InvalidArgumentError(`BTreeStore.open: unknown option '${name}' (${[...KNOWN].join(', ')})`);
    }
    if (typeof options.path !== 'string' || options.path === '') throw new InvalidArgumentError('BTreeStore.open: options.path must be a non-empty string');
    const layoutName = options.layout ?? 'adaptive';
    if (!Object.prototype.hasOwnProperty.call(LayoutConfig, layoutName)) {
      throw new InvalidArgumentError(`unknown layout '${String(layoutName)}' (${Object.keys(LayoutConfig).join(', ')})`);
    }
    const layout = LayoutConfig[layoutName];
    const pool = options.poolSize ?? DEFAULT_POOL;
    if (typeof pool !== 'number' || !(pool > 0) || !Number.isFinite(pool)) throw new InvalidArgumentError('poolSize must be a positive number of bytes');
    const ac = options.autoCommit;
    // (ms past 2^31 - 1, Infinity too, was a 1 ms timer: a timer's limit)
    if (ac !== undefined && (ac === null || typeof ac !== 'object' || (ac.ms !== undefined && !(ac.ms >= 0 && ac.ms <= 0x7fffffff)) || (ac.writes !== undefined && !(ac.writes >= 1)))) {
      throw new InvalidArgumentError('autoCommit must be { ms?: number from 0 to 2147483647, writes?: number >= 1 }');
    }
    if (ac !== undefined) checkFields(ac, 'autoCommit', { ms: 'number', writes: 'number' });
    if (options.create !== undefined && typeof options.create !== 'boolean') throw new InvalidArgumentError('create must be a boolean');
    if (options.onError !== undefined && typeof options.onError !== 'function') throw new InvalidArgumentError('onError must be a function');
    if (options.onProgress !== undefined && typeof options.onProgress !== 'function') throw new InvalidArgumentError('onProgress must be a function');
    if (options.wait !== undefined && typeof options.wait !== 'boolean') throw new InvalidArgumentError('wait must be a boolean');
    if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') throw new InvalidArgumentError('readOnly must be a boolean');
    const readOnly = options.readOnly === true;
    if (options.salvage !== undefined && typeof options.salvage !== 'boolean') throw new InvalidArgumentError('salvage must be a boolean');
    const salvage = options.salvage === true;
    if (salvage && !readOnly) throw new InvalidArgumentError('salvage: true needs readOnly: true (a salvage writes nothing: copy what it reads into a new store)');
    if (options.logDeltas !== undefined && typeof options.logDeltas !== 'boolean') throw new InvalidArgumentError('logDeltas must be a boolean');
    const cb = options.checkpointBytes;
    if (cb !== undefined && (typeof cb !== 'number' || !(cb >= 0) || !Number.isFinite(cb))) throw new InvalidArgumentError('checkpointBytes must be a number of bytes >= 0');
    // (checked before the main-thread opfs store takes the options: a fill it cannot send was
    // INVALID_VALUE "cannot send to the store's worker"; a new-user probe, session 24)
    const fill = fillFlags(options.fill);
    // (checked here too: the main-thread opfs store below does not use it, and opened with
    // `wasm: 5`, a probe found, session 27)
    if (options.wasm !== undefined) checkWasmOption(options.wasm, 'BTreeStore.open');
    const backend = resolveStorage(options.storage as StoreOptions<unknown, unknown>['storage']);
    if (backend === opfsStorage && !opfsSyncAvailable() && opfsRemoteAvailable()) {
      // A browser's main thread: the store lives in a worker (storage/opfs-remote.ts). The
      // module this thread has goes along: the worker's own search beside its script found
      // nothing where the app had passed init({ wasm }) a URL of its own (a probe, session 30).
      const mine = options.wasm !== undefined ? checkWasmOption(options.wasm, 'BTreeStore.open') : getDefaultWasm();
      const module = mine === undefined ? undefined : { module: mine.module, threads: mine.build === 'mt' };
      return (await OpfsWorkerStore.open({ ...(options as unknown as Record<string, unknown> & { path: string }), [WORKER_MODULE]: module })) as unknown as BTreeStore<K, V>;
    }
    const wasm = options.wasm !== undefined ? checkWasmOption(options.wasm, 'BTreeStore.open') : (getDefaultWasm() ?? (await (privateWasm ??= loadWasm())));
    const ex = wasm.exports;
    const needed = backend.kind === 'sync' ? STORE_FUNCTIONS : [...STORE_FUNCTIONS.filter((f) => f !== 'at_store_open'), ...ASYNC_STORE_FUNCTIONS];
    const missing = needed.filter((f) => typeof ex[f] !== 'function');
    if (missing.length > 0) {
      throw new AdaptreeError(`this wasm build cannot open a store on ${backend.kind === 'sync' ? 'a synchronous' : 'an asynchronous'} backend (missing ${missing.join(', ')})`, 'INTERNAL');
    }
    const create = (options.create ?? true) && !readOnly;
    const storageOptions = { create, wait: options.wait === true, readOnly, ...(cb !== undefined ? { checkpointBytes: cb } : {}), ...(options.logDeltas !== undefined ? { logDeltas: options.logDeltas } : {}) };
    // The store sets onFault once it exists (a fault outside its async loops drops kept reads).
    // `where` names the store in the errors of the map's calls (a corrupt page: which store?).
    const hooks: { onFault?: () => void; where?: string; cause?: () => unknown } = { where: String(options.path) };
    const mapOptions = (tree: number, onFree: (collected: boolean) => void): BTreeMapOptions<K, V> => {
      if (fill !== undefined) {
        if (typeof ex.at_tree_set_fill !== 'function') throw new AdaptreeError('this wasm build has no fill option (missing at_tree_set_fill)', 'INTERNAL');
        const st = ex.at_tree_set_fill(tree, fill);
        if (st < 0) throw errorFromStatus(st, 'fill');
      }
      const o: BTreeMapOptions<K, V> & { [ATTACH_TREE]?: unknown } = { layout: layoutName, wasm, [ATTACH_TREE]: { tree, onFree, closed: 'the store is closed', hooks } };
      if ((options as { [ENCODED_ELSEWHERE]?: unknown })[ENCODED_ELSEWHERE] === true) {
        o.keys = 'bytes' as never;
        o.values = 'bytes' as never;
      } else {
        if (options.keys !== undefined) o.keys = options.keys;
        if (options.values !== undefined) o.values = options.values;
      }
      return o;
    };
    // A failed open puts its (negative) status in result.aux.
    const aux = () => wasm.dv().getInt32(wasm.result + Result.AUX, true);

    if (backend.kind === 'sync') {
      const files = await backend.open(options.path, storageOptions);
      // The host's handle on the files: an address in wasm memory, unique among the stores on
      // it in every thread (storage/host.ts).
      const io = ex.at_alloc(8);
      if (io === 0) {
        files.close();
        throw errorFromStatus(Status.OUT_OF_MEMORY, 'open');
      }
      const entry = registerHost(wasm.memory, io, files);
      hooks.cause = () => takeError(entry);
      // No store came of the files (the core's open failed): files this open created go again
      // (a foreign file next to them, a full disk, a bad option must leave nothing behind).
      let discard = false;
      // collected: the store was dropped without close() (the map's finalizer): the files
      // release their lock and write nothing (a Durable Object refuses storage calls outside a
      // request, and workerd logged the uncaught error).
      const release = (collected = false) => {
        unregisterHost(wasm.memory, io);
        ex.at_free(io);
        files.close(discard, collected);
      };
      let tree = 0;
      try {
        const onProgress = progressOption(options.onProgress, 'open');
        // Recovery reads the log (and the superblock): the data file's pages are read later,
        // as needed (total counted both: a bar went 6 % to 100 %, session 23). `total` stays
        // what it is here for the whole open, and `done` never passes it (it went from 3806112
        // to 3806144 at the last call when recovery read a few bytes more than the estimate,
        // session 24). A store with nothing to read (a new one) reports nothing, as setMany of
        // no entries: its one call, { done: 0, total: 0 }, made the README's
        // `bar(p.done / p.total)` NaN.
        const total = onProgress === undefined ? 0 : files.log.size() + Math.min(files.data.size(), PAGE_SIZE);
        let read = 0, reported = 0;
        if (total > 0) {
          const rt = runtimeOf(wasm);
          entry.onRead = (n) => {
            read += n;
            if (read - reported >= PROGRESS_BYTES) {
              reported = read;
              // The callback runs inside the wasm call that opens the store: a call into the
              // same instance from it is ReentrancyError, as in setMany's (it ran: a probe made
              // 59 nested setMany calls during recovery, session 23).
              rt.busy++;
              try {
                report(onProgress!, 'open', Math.min(read, total), total);
              } finally {
                rt.busy--;
              }
            }
          };
        }
        tree = ex.at_store_open!(io, layout, pool, (create ? StoreOpenFlags.CREATE : 0) | (readOnly ? StoreOpenFlags.READ_ONLY : 0) | (salvage ? StoreOpenFlags.SALVAGE : 0) | (options.logDeltas === false ? StoreOpenFlags.NO_LOG_DELTAS : 0), wasm.ctx);
        entry.onRead = undefined;
        if (tree === 0) {
          discard = true;
          // A throwing callback failed the read it was called from: its AbortedError, as is.
          if (entry.lastError instanceof AbortedError) throw entry.lastError;
          const st = aux();
          // (a log whose header is damaged but whose commit frames are intact is the store's
          // own: "another program's file? move it" lost its commits if followed (verify36))
          // (with an empty data file, the message for a damaged log below says more)
          const headerDamaged = st === Status.CORRUPT && logHeaderDamaged(files);
          if (headerDamaged && !emptyData(files)) {
            throw new CorruptionError(
              `'${options.path}': its log's header is damaged (intact commits follow it in the log); both files were left as they are: keep the log, it holds the commits since the last checkpoint`,
            );
          }
          if (st === Status.CORRUPT && !headerDamaged && logIsForeign(files)) {
            // (a new store 'app' beside a user's 'app-log' wrote its log header over that file,
            // session 25: the core now refuses it, and this says which file and why)
            const log = ['node', 'deno', 'opfs'].includes(backend.name) ? `'${options.path}-log', the file it would use as its log,` : 'its log';
            throw new CorruptionError(
              `'${options.path}': ${log} is not an adaptree log (another program's file of that name?); it was left as it is: move it, or give the store another name`,
            );
          }
          // (result.key_len 1: the log is damaged part way, intact commits after the damage)
          if (st === Status.CORRUPT && wasm.dv().getUint32(wasm.result + Result.KEY_LEN, true) === 1) {
            throw new CorruptionError(
              salvage
                ? `'${options.path}': its log is damaged in its first commit, and the store was never checkpointed: there is nothing before the damage to open; both files were left as they are`
                : `'${options.path}': its log is damaged part way (a frame fails its checksum, and intact commits follow it); both files were left as they are. BTreeStore.open({ path, readOnly: true, salvage: true }) opens the store as of the last commit before the damage (the commits after it are lost), to copy into a new store`,
            );
          }
          const empty = st === Status.CORRUPT ? emptyDataFile(files) : undefined;
          if (empty === 'missing') {
            throw new CorruptionError(
              `'${options.path}': the data file is empty and the store's log cannot be recovered without it (was the data file deleted or truncated? restore it, or delete the log too to start a new store)`,
            );
          }
          if (empty === 'log') {
            throw new CorruptionError(
              `'${options.path}': its log is damaged, and the store has no checkpoint to fall back on (the data file is empty: the store never reached close() or a checkpoint, so the log holds every commit); both files were left as they are: keep the log, it holds the commits`,
            );
          }
          throw openError(st, options.path, entry.lastError, readOnly);
        }
        if (total > 0) report(onProgress!, 'open', total, total);
        const checkpointBytes = cb ?? backend.checkpointBytes;
        if (checkpointBytes !== undefined && !readOnly) {
          if (typeof ex.at_store_set_checkpoint_bytes !== 'function') throw new AdaptreeError('this wasm build has no checkpointBytes (missing at_store_set_checkpoint_bytes)', 'INTERNAL');
          const st = ex.at_store_set_checkpoint_bytes(tree, checkpointBytes);
          if (st < 0) throw storeError(st, 'checkpointBytes', undefined);
        }
        if (backend.reuseLog === false && !readOnly) {
          if (typeof ex.at_store_set_log_reuse !== 'function') throw new AdaptreeError('this wasm build cannot cut the log at checkpoints (missing at_store_set_log_reuse)', 'INTERNAL');
          const st = ex.at_store_set_log_reuse(tree, 0);
          if (st < 0) throw storeError(st, 'reuseLog', undefined);
        }
        // A new (empty) store records its encodings now: with no write, no commit recorded them,
        // and a store created and closed empty opened later with any encodings (session 23).
        if (checkStoreEncodings(ex, tree, options, options.path, readOnly) && ex.at_count(tree) === 0) {
          entry.lastError = undefined;
          const st = ex.at_store_commit!(tree);
          if (st < 0) throw storeError(st, 'recording the encodings', entry.lastError);
        }
        const b: Sync = { kind: 'sync', files, io, entry };
        const map = new BTreeMap<K, V>(null, mapOptions(tree, release));
        return new BTreeStore<K, V>({ map, wasm, tree, b, storage: backend.name, path: options.path, options, pageBuf: 0 });
      } catch (e) {
        // Whatever failed (a bad keys or values option is found only here, session 23): the
        // files this open created go again; files that were there stay.
        discard = true;
        if (tree !== 0) ex.at_tree_free(tree);
        release();
        throw e;
      }
    }

    if (salvage) throw new InvalidArgumentError(`salvage: the storage '${backend.name}' keeps its log in records, not a file: salvage is for node, deno, opfs, memory and durableObjectStorage stores`);
    if (readOnly && typeof ex.at_store_follow !== 'function') throw new AdaptreeError('this wasm build cannot open a reader on an asynchronous backend (missing at_store_follow)', 'INTERNAL');
    const pages = await backend.open(options.path, storageOptions);
    let pageBuf = 0;
    let tree = 0;
    const closed: Async['closed'] = {};
    const release = (collected = false) => {
      if (pageBuf !== 0) ex.at_free(pageBuf);
      pageBuf = 0;
      closed.done = Promise.resolve()
        .then(() => pages.close(collected))
        .then(() => undefined, (e: unknown) => e);
    };
    try {
      if (readOnly && typeof pages.readPages !== 'function') throw new InvalidArgumentError(`the storage '${backend.name}' cannot open readers (it has no readPages)`);
      let sb: Uint8Array | undefined;
      try {
        sb = await pages.readPage(0);
      } catch (e) {
        // (a backend's own error was the open's, untyped: session 23)
        throw isAdaptreeError(e) ? e : storeError(statusOfError(e), `reading the superblock of '${options.path}'`, e);
      }
      if (sb === undefined && !create) throw new InvalidArgumentError(`no store at '${options.path}' (${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`);
      pageBuf = ex.at_alloc(PAGE_SIZE);
      if (pageBuf === 0) throw errorFromStatus(Status.OUT_OF_MEMORY, 'open');
      if (sb !== undefined) {
        if (sb.length !== PAGE_SIZE) throw new CorruptionError(`'${options.path}': the superblock is ${sb.length} bytes, not ${PAGE_SIZE}`);
        wasm.u8().set(sb, pageBuf);
      }
      tree = ex.at_store_open_async!(sb !== undefined ? pageBuf : 0, layout, pool, wasm.ctx);
      if (tree === 0) throw openError(aux(), options.path, undefined);
      let reader: Async['reader'];
      if (readOnly && sb !== undefined) {
        const st = ex.at_store_follow!(tree, pageBuf);
        if (st < 0) throw openError(st, options.path, undefined);
        reader = { page0: sb.slice(), seq: Number(superblockSequence(sb)) };
      }
      checkStoreEncodings(ex, tree, options, options.path, readOnly);
      // (a build without it: the backend diffs the pages itself)
      if (pages.wantsDeltas === true && !readOnly) ex.at_store_set_log_deltas?.(tree, pages.copyRuns === true ? 2 : 1);
      const buf = pageBuf;
      const map = new BTreeMap<K, V>(null, mapOptions(tree, release));
      const store = new BTreeStore<K, V>({ map, wasm, tree, b: { kind: 'async', pages, reader, closed }, storage: backend.name, path: options.path, options, pageBuf: buf });
      if (sb === undefined && !readOnly) store.#unstored = true;
      // Through a WeakRef: the hooks hang off the tree handle, which the map's finalizer holds,
      // so a strong reference kept every async store dropped without close() alive, with its
      // memory and its lock (a new-user probe, session 23: 40 dropped stores, 290 MiB, none
      // collected; in workerd a KV-backed object's memory grew with every reset).
      const weak = new WeakRef(store);
      hooks.onFault = () => {
        const s = weak.deref();
        if (s !== undefined) s.#faultOutside();
      };
      return store;
    } catch (e) {
      if (tree !== 0) ex.at_tree_free(tree);
      release();
      throw e;
    }
  }

  // ------------------------------------------------------------------ state

  /** The path (or name) the store was opened with. */
  get path(): string {
    return this.#path;
  }

  /** The backend's name: 'node', 'deno', 'opfs', 'memory', 'async-memory', or yours. */
  get storage(): string {
    return this.#storage;
  }

  /** True for asynchronous backends (use the `...Async` methods there). */
  get isAsync(): boolean {
    return this.#b.kind === 'async';
  }

  /** True once close() has begun, and for an attached store once its owner closed it. */
  get closed(): boolean {
    if (this.#closed) return true;
    if (!this.#map.closed) return false;
    this.#ownerClosed();
    return true;
  }

  /** An attached store whose owner closed the store: its files and instance go now (the
   * owner's close() ended the store for every worker), not at its own close(). announced: the
   * owner said so (its channel, written to once its close() freed the tree, or failed to on a
   * poisoned instance, whose tree then never reads as freed). */
  #ownerClosed(announced = false): void {
    if (!this.#attached || this.#released || (!announced && !this.#map.closed)) return;
    this.#released = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    try {
      this.#map.free(); // detaches (attach(): files, host entry, instance)
    } catch (e) {
      this.#onError?.(e as Error);
    }
  }

  /** True for a store opened with `readOnly: true`. */
  get readOnly(): boolean {
    return this.#readOnly;
  }

  /**
   * A reader on an asynchronous backend (indexeddb) moves to the newest commit, if there is
   * a newer one than its pages are of; resolves whether it moved. (It also moves by itself
   * when a page it has to read belongs to a newer commit, and at its next async call after
   * the writer announced a commit: indexeddb's BroadcastChannel.) Other stores: nothing can change
   * under them (sync readers keep the writer out while open): resolves false.
   */
  async refresh(): Promise<boolean> {
    this.#open();
    const b = this.#b;
    if (b.kind !== 'async' || b.reader === undefined) return false;
    // (counted as a call: close() waits for it)
    this.#begin();
    try {
      return await this.#catchUp(b);
    } finally {
      this.#end();
    }
  }

  /** refresh() of a reader on an async backend. */
  async #catchUp(b: Async): Promise<boolean> {
    while (this.#gate !== undefined) await this.#gate;
    let page0: Uint8Array | undefined;
    try {
      [page0] = await b.pages.readPages!([0]);
    } catch (e) {
      throw isAdaptreeError(e) ? e : storeError(statusOfError(e), 'reading page 0', e);
    }
    this.#openAsync();
    const before = b.reader!.page0;
    this.#sameCommit(b, page0);
    return b.reader!.page0 !== before;
  }

  /** A reader read `page0` with a page: true if it is the commit the pool holds pages of. If it
   * is a newer one, the store follows it (drops the pages the commits since wrote, or all of
   * them where the backend cannot say which: at_store_follow_changed, at_store_follow) and
   * returns false; so it does for an older one (a read that started before the last follow),
   * which is just dropped. */
  #sameCommit(b: Async, page0: Uint8Array | undefined): boolean {
    const r = b.reader!;
    if (page0 === undefined || page0.length !== PAGE_SIZE) throw new CorruptionError(`the superblock (page 0) of '${this.#path}' is missing or damaged`);
    if (sameBytes(page0, r.page0)) return true;
    if (Number(superblockSequence(page0)) <= r.seq) return false;
    const w = this.#wasm, ex = w.exports;
    // The pages the commits since ours wrote, where the backend can say: the others stay in
    // the pool (without the list every page goes, and a reader beside a writer that commits
    // often spends its time reading its path again).
    const changed = ex.at_store_follow_changed !== undefined ? b.pages.changedSince?.(r.seq) : undefined;
    let st: number;
    if (changed !== undefined) {
      const ids = changed.length > 0 ? ex.at_alloc(4 * changed.length) : 0;
      if (changed.length > 0 && ids === 0) throw storeError(Status.OUT_OF_MEMORY, `moving to the newest commit of '${this.#path}'`, undefined);
      try {
        const u8 = w.u8();
        u8.set(page0, this.#pageBuf);
        const dv = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
        for (let i = 0; i < changed.length; i++) dv.setUint32(ids + 4 * i, changed[i]!, true);
        st = ex.at_store_follow_changed!(this.#tree, this.#pageBuf, ids, changed.length);
      } finally {
        if (ids !== 0) ex.at_free(ids);
      }
    } else {
      w.u8().set(page0, this.#pageBuf);
      st = ex.at_store_follow!(this.#tree, this.#pageBuf);
    }
    if (st < 0) throw storeError(st, `moving to the newest commit of '${this.#path}'`, undefined);
    r.page0 = page0.slice();
    r.seq = Number(superblockSequence(page0));
    this.#gen++;
    // Live iterators go on after their last key in the newer commit, not from the batch they
    // read before it: they served the older commit's entries (keys the reader had just seen
    // deleted) until their batch ran out (a new-user probe, session 29).
    treeMoved(this.#map as BTreeMap<unknown, unknown>);
    // (pages read ahead that the commits since did not write stay good: #readerPage)
    if (changed === undefined) this.#ahead.clear();
    return false;
  }

  /** A reader read page `id` with `page0`: whether the page is one of the commit the pool
   * holds pages of. A newer commit's is, once the store followed that commit (#sameCommit); an
   * older one's is when no commit since wrote the page (the backend's changedSince): a
   * read-ahead of the commit before. Beside a writer that commits faster than a page is read,
   * a reader that dropped such pages read every page again and again and got nowhere. */
  #readerPage(b: Async, id: number, page0: Uint8Array | undefined, pin = false): boolean {
    const r = b.reader!;
    // (pinned: a newer commit's page that the commits since ours did not write is ours too)
    if (pin && page0 !== undefined && page0.length === PAGE_SIZE && Number(superblockSequence(page0)) > r.seq) {
      const since = b.pages.changedSince?.(r.seq);
      if (since !== undefined && !this.#writtenSince(since, id)) return true;
    }
    if (this.#sameCommit(b, page0)) return true;
    if (sameBytes(page0!, r.page0)) return true; // followed just now
    const changed = b.pages.changedSince?.(Number(superblockSequence(page0!)));
    return changed !== undefined && !this.#writtenSince(changed, id);
  }

  /** Whether `id` is in `changed` (a changedSince answer). A reader asks for every page it is
   * handed, and a reader many commits behind has a long list: its set is kept while the
   * backend gives the same list (the indexeddb log does until it changes). */
  #writtenSince(changed: readonly number[], id: number): boolean {
    if (changed.length < 16) return changed.includes(id);
    if (this.#writtenList !== changed) {
      this.#writtenList = changed;
      this.#writtenSet = new Set(changed);
    }
    return this.#writtenSet!.has(id);
  }
  #writtenList: readonly number[] | undefined;
  #writtenSet: Set<number> | undefined;
  /** The pool's size in pages (poolSize). */
  readonly #poolPages: number;

  #open(): void {
    // (inside an async call that close() waits for, its own sync steps go on)
    if (this.#closed && !(this.#draining && this.#inAsync > 0)) throw new ClosedError('the store is closed');
    // (its instance is gone: no call may reach it)
    if (this.#released) throw new ClosedError('the store was closed by its owner');
  }

  /** Between the steps of an async call: refused once closed, unless close() waits for it. */
  #openAsync(): void {
    if (this.#closed && !this.#draining) throw new ClosedError('the store is closed');
    this.#steps++;
  }

  /** An async call begins (refused once close() has begun); #end when it settles. */
  #begin(): void {
    if (this.#closed) throw new ClosedError('the store is closed');
    if (this.#released) throw new ClosedError('the store was closed by its owner');
    this.#active++;
  }

  #end(): void {
    if (--this.#active === 0 && this.#idle.length > 0) for (const wake of this.#idle.splice(0)) wake();
  }

  /** Before a sync write: on async backends a commit's write window refuses sync writes. */
  #writable(): void {
    if (this.#closed && !(this.#draining && this.#inAsync > 0)) throw new ClosedError('the store is closed');
    // (as #open: deleteRange and clear of an attached store said "the map has been freed";
    // the sharedstore probe, session 36)
    if (this.#released) throw new ClosedError('the store was closed by its owner');
    if (this.#readOnly) throw new ReadOnlyError(`the store '${this.#path}' was opened read-only`);
    // (the core refuses it too, READ_ONLY: its message could not say which commit failed, or
    // why; a probe, session 30, after an autoCommit failed on a full disk without onError)
    if (this.#failed) throw this.#failedError('write');
    if (this.#gate !== undefined) throw new ReentrancyError('a commit is being written: use the ...Async write methods on asynchronous backends');
  }

  /** `entries` written or removed by a call (autoCommit.writes and uncommittedWrites count entries:
   * a setMany of 5000 counted one, and never set off `{ writes: 1000 }`; a probe, session 31). */
  #wrote(entries = 1): void {
    this.#written += entries;
    const n = (this.#uncommitted += entries);
    if (n >= this.#autoWrites) {
      this.#auto();
    } else if (n === 1 && this.#autoMs >= 0 && this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        if (!this.#closed && this.#uncommitted > 0) this.#auto();
      }, this.#autoMs);
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  #auto(): void {
    // Writes in one turn share one commit (one promise): its failure goes to onError once,
    // not once per write after autoCommit.writes (991 calls for one IoError, session 22).
    const p = this.commit();
    if (p === this.#autoCommit) return;
    this.#autoCommit = p;
    p.catch((e: unknown) => {
      if (this.#onError !== undefined) this.#onError(e as Error);
    });
  }

  // ------------------------------------------------------------------ commits

  /**
   * Makes every write so far durable; resolves when it is. Commits requested in the same turn
   * of the event loop share one flush. Rejects with QuotaExceededError / IoError when the
   * storage fails (the last commit stays intact and the store becomes read-only); every
   * commit after that rejects with ReadOnlyError (its cause: that failure) until reopened.
   */
  commit(): Promise<void> {
    // A commit() while close() is under way shares close's commit. With nothing pending,
    // close() frees the map before it returns, and commit() right after it rejected CLOSED
    // (a new-user probe, session 27).
    if (this.#map.closed && this.#closing !== undefined && !this.#closeSettled && this.#closeCommits) return this.#closing;
    if (this.#map.closed || (this.#closed && this.#closing === undefined)) {
      this.#ownerClosed();
      return Promise.reject(new ClosedError('the store is closed'));
    }
    return this.#requestCommit();
  }

  #requestCommit(): Promise<void> {
    const next = this.#next;
    if (next !== undefined) {
      if (!this.#nextWaits || this.#writeTail === this.#nextTail) return next.promise;
      return (this.#then ??= deferred()).promise;
    }
    const d = deferred();
    this.#next = d;
    // On an async backend the flush waits for the writes made before it starts (#sequence): a
    // setAsync waiting for a page was left out of a commit() made after it.
    later(() => this.#flushAfterWrites());
    return d.promise;
  }

  /** Starts the requested flush once the writes made before it are done (#writeTail). */
  #flushAfterWrites(): void {
    const tail = this.#writeTail;
    this.#nextTail = tail;
    this.#nextWaits = true;
    if (tail === undefined || this.#stalled) this.#startFlush();
    else void tail.then(() => this.#startFlush());
  }

  #startFlush(): void {
    if (this.#flushing !== undefined) return; // the running flush starts the next one when done
    const d = this.#next;
    if (d === undefined) return;
    // The flush after this one (#then) is the requested one now: it waits for the writes made
    // before it once this one is done (below, or at once where this one settles here).
    this.#next = this.#then;
    this.#then = undefined;
    this.#nextWaits = false;
    this.#nextTail = undefined;
    if (this.#next !== undefined) later(() => {
      if (this.#flushing === undefined && this.#next !== undefined && !this.#nextWaits) this.#flushAfterWrites();
    });
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#torn !== undefined) {
      // Part of a call is in the tree: no commit may make it durable (the last one stands).
      d.reject(new AbortedError(`commit of '${this.#path}': ${this.#torn}; nothing since the last commit was committed`));
      return;
    }
    if (this.#failed) {
      // The writes the failed commit held are not durable and never will be from this handle:
      // no later commit may resolve as if they were (a retry after the error would).
      d.reject(this.#failure === undefined ? new ClosedError('commit: the store was closed under a commit') : this.#failedError());
      return;
    }
    let idle = this.#uncommitted === 0 && !this.#unstored;
    try {
      if (idle) idle = !this.#othersPending();
    } catch (e) {
      // A call into wasm that may throw: the memory of a shared store is unusable after a
      // worker ended mid-call (InstanceUnusableError). Thrown here, in the turn that runs the
      // flush, it ended the process and the commit never settled (a threads probe, session 29:
      // the owner's commit after a WorkerPool worker was lost); now the commit rejects with it.
      d.reject(e);
      return;
    }
    if (idle) {
      d.resolve(); // nothing written since the last commit
      return;
    }
    const pending = this.#uncommitted;
    this.#uncommitted = 0;
    if (this.#b.kind === 'sync') {
      try {
        this.#flushSync(this.#b);
        d.resolve();
      } catch (e) {
        // Out of memory is found before the commit writes anything: the writes stay pending
        // and the store stays writable (free memory or raise the budget, then commit again).
        if (e instanceof OutOfMemoryError) this.#uncommitted += pending;
        else this.#fail(e);
        d.reject(e);
      }
      return;
    }
    const b = this.#b;
    this.#flushing = this.#flushAsync(b).then(
      () => {
        this.#unstored = false;
        d.resolve();
      },
      (e: unknown) => {
        // Out of memory for the commit's images, before anything was handed to the backend:
        // as on a synchronous backend, the writes stay pending and the store writable.
        if (e instanceof OutOfMemoryError && !this.#handedOver) this.#uncommitted += pending;
        else this.#fail(e);
        d.reject(e);
      },
    );
    void this.#flushing.then(() => {
      this.#flushing = undefined;
      // A commit requested while this one ran waits for the writes made before it, as any
      // (it started at once: `setAsync(...)` not awaited, then `await commit()`, resolved
      // without those writes, and a crash lost them; a new-user probe, session 27, IndexedDB
      // in Chromium: reopened at batch 21 of 149 resolved).
      if (this.#next !== undefined) this.#flushAfterWrites();
    });
  }

  /** The owner of a store shared with workers: whether their writes wait for a commit. Its own
   * count sees only its own writes, so `await pool.setMany(...); await store.commit()`
   * resolved without committing anything, and a crash then lost every write of the workers
   * (session 26). */
  #othersPending(): boolean {
    return this.#shared && !this.#map.closed && (this.#wasm.exports.at_store_pending?.(this.#tree) ?? 0) > 0;
  }

  #fail(e: unknown): void {
    this.#failed = true;
    // (A closed map, say a shared store's owner closed first: later commits say so themselves.)
    if (!(e instanceof ClosedError)) this.#failure ??= e;
  }

  /** What a commit (or close) after a failed commit rejects with. */
  #failedError(op = 'commit'): ReadOnlyError {
    const f = this.#failure;
    const what = isAdaptreeError(f) ? `${f.code}: ${f.message}` : String((f as Error)?.message ?? f);
    return new ReadOnlyError(
      // (close() itself: "close and reopen" told a caller of close() to close; a probe, session 34)
      `${op}: an earlier commit of '${this.#path}' failed (${what}); the writes since the last completed commit are not durable. ${this.#closed ? 'The store is closed now: reopen it to go on from that commit' : 'Close and reopen the store'}`,
      { cause: f },
    );
  }

  #flushSync(b: Sync): void {
    if (this.#map.closed) throw new ClosedError('the store is closed');
    b.entry.lastError = undefined;
    const ex = this.#wasm.exports;
    const st = ex.at_store_commit!(this.#tree);
    if (st < 0) throw storeError(st, 'commit', b.entry.lastError);
    // The checkpoint the commit ran after it was durable failed (a full disk): the commit
    // stands, the log stays the store's newest state and the next commit tries again. Not the
    // commit's error (it was, until session 23: a rejected commit that was durable all the
    // same, and a store refusing writes for nothing); onError hears of it, as at close().
    const cf = ex.at_store_checkpoint_failure?.(this.#tree) ?? 0;
    if (cf < 0) this.#onError?.(storeError(cf, 'checkpoint after a commit (the commit is durable)', b.entry.lastError));
  }

  async #flushAsync(b: Async): Promise<void> {
    let open!: () => void;
    this.#gate = new Promise<void>((r) => (open = r));
    this.#handedOver = false;
    try {
      const w = this.#wasm, ex = w.exports;
      const st = ex.at_store_commit_begin!(this.#tree, w.ctx);
      if (st < 0) throw storeError(st, 'commit', undefined);
      this.#handedOver = true;
      const dv = w.dv(), u8 = w.u8();
      const count = dv.getUint32(w.result + Result.AUX, true);
      let p = dv.getUint32(w.result + Result.VALUE_PTR, true);
      const images: [number, Uint8Array][] = [];
      let deltas: (PageDelta | undefined)[] | undefined;
      if (b.pages.viewsOfOneCopy === true) {
        // One copy of the whole output, and views of it: a slice() per page (a new
        // ArrayBuffer each) was ~2.6 us a page in a Chromium worker, 2.7 ms of a 1000-record
        // commit on IndexedDB (bench/browser/diagnose.mjs idbload). The copy goes into a block
        // the store keeps for its next commits (the backend copies what it keeps, and the
        // next commit begins once this one has settled): a new 4 MB ArrayBuffer per commit
        // of a 100k-record load was a sixth of its commit time in garbage collection.
        // The pages' delta entries follow them when the backend wants deltas (they are in
        // the block too).
        const n = dv.getUint32(w.result + Result.VALUE_LEN, true);
        let block = this.#commitBlock;
        if (block === undefined || block.length < n) {
          block = new Uint8Array(n);
          this.#commitBlock = n <= COMMIT_BLOCK_KEPT ? block : undefined;
        }
        block.set(u8.subarray(p, p + n));
        const bdv = new DataView(block.buffer);
        for (let i = 0, q = 0; i < count; i++, q += 4 + PAGE_SIZE) images.push([bdv.getUint32(q, true), block.subarray(q + 4, q + 4 + PAGE_SIZE)]);
        if (n > count * (4 + PAGE_SIZE)) {
          deltas = [];
          for (let i = 0, q = count * (4 + PAGE_SIZE); i < count; i++) {
            const size = bdv.getUint32(q, true);
            if (size === NO_DELTA) {
              deltas.push(undefined);
              q += 4;
            } else {
              deltas.push({ base: block.subarray(q + 4, q + 12), runs: block.subarray(q + 12, q + 12 + size) });
              q += 12 + size;
            }
          }
        }
      } else {
        for (let i = 0; i < count; i++) {
          images.push([dv.getUint32(p, true), u8.slice(p + 4, p + 4 + PAGE_SIZE)]);
          p += 4 + PAGE_SIZE;
        }
      }
      this.#gen++;
      this.#ahead.clear();
      let hostStatus = 0;
      let hostError: unknown;
      try {
        await b.pages.writePages(images, deltas);
      } catch (e) {
        hostError = e;
        hostStatus = statusOfError(e);
      }
      const end = ex.at_store_commit_end!(this.#tree, hostStatus);
      if (hostStatus !== 0) throw storeError(hostStatus, 'commit', hostError);
      if (end < 0) throw storeError(end, 'commit', undefined);
    } finally {
      // Pages read while the commit was being written may be the images it replaced (a fault
      // in flight reads ahead, and the pages next to it may be the commit's): they are dropped
      // now, not only when the commit began. Kept, one was supplied after its page was evicted,
      // a committed write read back as its old value, and the next commit made the old value
      // durable (a new-user probe, session 23, on IndexedDB and async-memory).
      this.#gen++;
      this.#ahead.clear();
      this.#gate = undefined;
      open();
    }
  }

  /**
   * Commits pending writes, then closes the store and releases its lock; later calls throw
   * ClosedError. If that last commit fails the store is closed anyway (the writes since the
   * previous commit are lost) and the error is thrown. `{ commit: false }` discards the
   * writes since the last commit instead (as a crash would; a commit already requested
   * still completes). Idempotent.
   */
  close(options?: { commit?: boolean }): Promise<void> {
    // (a misspelt `{ comit: false }`, or `close(false)`, committed what was meant to be dropped)
    if (options !== undefined) {
      try {
        if (options === null || typeof options !== 'object') throw new InvalidArgumentError('close: options must be an object { commit? }');
        checkFields(options, 'close', { commit: 'boolean' });
      } catch (e) {
        return Promise.reject(e);
      }
    }
    if (this.#closing !== undefined) return this.#closing;
    const commit = options?.commit ?? true;
    this.#closed = true;
    this.#closeCommits = commit;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#closing = (async () => {
      // Async calls under way finish first (a setAsync or deleteRangeAsync waiting for pages
      // was rejected CLOSED while close() committed what it had applied: a half-done
      // deleteRangeAsync made durable, a setAsync lost; a new-user probe, session 23).
      // Not for ever: a backend read that never settles held close() and the lock (a probe,
      // session 23); after CLOSE_WAIT_MS the calls still under way get ClosedError at their next
      // step, as before. close({ commit: false }) drops their writes anyway: it does not wait.
      // So does close({ commit: false }) when a commit was requested before it: that commit
      // holds the calls made before it, whole (stopping them left part of a setManyAsync or a
      // deleteRangeAsync in the tree for it to make durable: a probe, session 33). The wait goes
      // on while the calls take steps (a slow backend: stopping one after 5 s did the same).
      if (this.#active > 0 && (commit || this.#next !== undefined || this.#flushing !== undefined)) {
        this.#draining = true;
        for (;;) {
          const steps = this.#steps;
          let timer: ReturnType<typeof setTimeout> | undefined;
          await new Promise<void>((wake) => {
            this.#idle.push(wake);
            timer = setTimeout(wake, CLOSE_WAIT_MS);
          });
          clearTimeout(timer);
          // Past the first 5 s only for writes (running or queued behind others: a read stopped
          // part way tears nothing, and a reader's batch beside a fast writer may start over for
          // ever), and while something moves: a step taken, or a commit being written (the
          // calls behind its window wait without a step; a probe, session 33).
          if (this.#active === 0 || this.#writesPending === 0 || (this.#steps === steps && this.#flushing === undefined)) break;
        }
        this.#draining = false;
        // A write still under way waits for a page that does not come (no step for
        // CLOSE_WAIT_MS): the commit goes ahead without it (a commit waits for the writes made
        // before it, and close() waited for ever, the lock held: a probe, session 33), unless it
        // changed the tree already: then nothing more is committed (#torn).
        const w = this.#writeRun;
        if (this.#active > 0) this.#giveUp?.(new ClosedError(`the store '${this.#path}' was closed while this call waited for a page its backend did not answer for 5 s`));
        if (this.#active > 0 && w !== undefined) {
          if (this.#written !== w.before) this.#torn ??= TORN;
          this.#stalled = true;
          if (this.#next !== undefined && this.#flushing === undefined) this.#startFlush();
        }
      }
      let err: unknown;
      try {
        // A commit requested before close completes (with every write so far, as any flush).
        // The owner of a shared store commits what any worker left pending (its own count
        // knows only its own writes).
        // (Not a reader: its close after share() asked for a commit and rejected, session 22.)
        if (commit && this.#shared && !this.#readOnly && this.#uncommitted === 0) this.#uncommitted = 1;
        // ...and refuses other threads' writes from here on: one that landed between the last
        // commit and the free was accepted and lost, and its worker's close() resolved (a
        // new-user probe, session 23, OPFS shared with workers in Chromium).
        if (this.#shared && !this.#attached && !this.#map.closed) this.#wasm.exports.at_store_close_writes?.(this.#tree);
        // After a failed commit, close() with commit rejects: those writes are lost.
        if (this.#next !== undefined || (commit && (this.#uncommitted > 0 || this.#unstored || this.#failure !== undefined))) await this.#requestCommit();
        while (this.#flushing !== undefined) await this.#flushing;
        // Pages that reads alone changed (a leaf sorted as a scan went through it) and the pool
        // spilled to the log are a commit to come, and the checkpoint below waits for one: close()
        // left the whole log behind, so the data file alone, a backup of a closed store, missed
        // what the log held (a probe, session 32: 1 entry of 20,001), and each open replayed it.
        // With nothing of the caller's among them, they are committed; a failure goes to onError
        // (the log stays valid: nothing is lost).
        if (this.#b.kind === 'sync' && !this.#shared && !this.#attached && !this.#readOnly && !this.#failed && this.#uncommitted === 0 &&
            !this.#unstored && this.#failure === undefined && this.#next === undefined && this.#wasm.exports.at_store_pending?.(this.#tree) === 2) {
          try {
            this.#uncommitted = 1;  // (a commit of nothing the caller wrote is skipped otherwise)
            await this.#requestCommit();
            while (this.#flushing !== undefined) await this.#flushing;
          } catch (e) {
            this.#onError?.(e instanceof Error ? e : new IoError(String(e)));
          }
        }
      } catch (e) {
        // An attached store whose owner closed first: nothing left to commit into.
        if (!(this.#attached && e instanceof ClosedError)) err = e;
      }
      // Sync backends: fold the log into the data file (committed pages only), so that the
      // next open has no log to replay. A failure here loses nothing: the log stays valid.
      // Skipped after a failed commit; a failing checkpoint goes to onError, not to close().
      // On a poisoned instance (InstanceUnusableError) it is skipped too: the files and the
      // lock are still released below, and what was committed is in the files.
      if (this.#b.kind === 'sync' && !this.#attached && !this.#map.closed && !this.#failed && !this.#wasm.poisoned) {
        this.#b.entry.lastError = undefined;
        try {
          const st = this.#wasm.exports.at_store_checkpoint!(this.#tree);
          if (st < 0) {
            const e = storeError(st, 'close (checkpoint)', this.#b.entry.lastError);
            // Files deleted while open: what the log held is gone, which close() says.
            if (isFilesGone(this.#b.entry.lastError)) err ??= e;
            else this.#onError?.(e);
          }
        } catch (e) {
          err ??= e;
        }
      }
      try {
        this.#map.free(); // releases the backend (onFree)
      } catch (e) {
        err ??= e;
      }
      // The attached stores let go of their files now (BTreeStore.attach), not at their close().
      if (this.#closedChannel !== undefined) postClosed(this.#closedChannel);
      // An async backend's close may still write (indexeddb folds its log): a failure there
      // loses nothing committed and goes to onError, as a file store's checkpoint at close.
      if (this.#b.kind === 'async') {
        const e = await this.#b.closed.done;
        if (e !== undefined) this.#onError?.(isAdaptreeError(e) ? e : storeError(statusOfError(e), 'close', e));
      }
      if (err !== undefined) throw err;
    })();
    const settled = () => {
      this.#closeSettled = true;
    };
    this.#closing.then(settled, settled);
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** stats(), as a promise: what works on a store that lives in a worker (opfs on a main thread). */
  async statsAsync(): Promise<StoreStats> {
    return this.stats();
  }

  /** Pool and file figures (at_store_stats) plus the backend's name, path and fileBytes. */
  stats(): StoreStats {
    this.#open();
    const w = this.#wasm;
    const st = w.exports.at_store_stats!(this.#tree, w.ctx);
    if (st !== Status.OK) throw errorFromStatus(st, 'stats');
    const dv = w.dv();
    const p = dv.getUint32(w.result + Result.VALUE_PTR, true), n = dv.getUint32(w.result + Result.VALUE_LEN, true);
    const core = JSON.parse(new TextDecoder().decode(w.u8().slice(p, p + n))) as Record<string, unknown>;
    let fileBytes = (Number(core.data_bytes) || 0) + (Number(core.log_bytes) || 0);
    if (this.#b.kind === 'sync') {
      try {
        fileBytes = this.#b.files.data.size() + this.#b.files.log.size();
      } catch {
        /* keep the core's figure */
      }
    }
    // Shared with workers: this object's count goes back to 0 once nothing is pending in the
    // store (a worker's commit left the owner's count standing for ever, and the owner's a
    // worker's).
    if (this.#uncommitted > 0 && (this.#shared || this.#attached) && w.exports.at_store_pending?.(this.#tree) === 0) this.#uncommitted = 0;
    return { ...core, storage: this.#storage, path: this.#path, fileBytes, uncommittedWrites: this.#uncommitted } as StoreStats;
  }

  // ------------------------------------------------------------------ sync API (BTreeMap's)

  /** Number of entries; O(1). */
  get size(): number {
    this.#open();
    return this.#map.size;
  }

  /** {@inheritDoc BTreeMap.get} */
  get(key: K): V | undefined {
    this.#open();
    return this.#map.get(key);
  }

  /** {@inheritDoc BTreeMap.has} */
  has(key: K): boolean {
    this.#open();
    return this.#map.has(key);
  }

  /** {@inheritDoc BTreeMap.set} */
  set(key: K, value: V): this {
    this.#writable();
    this.#map.set(key, value);
    this.#wrote();
    return this;
  }

  /** {@inheritDoc BTreeMap.delete} */
  delete(key: K): boolean {
    this.#writable();
    const r = this.#map.delete(key);
    if (r) this.#wrote();
    return r;
  }

  /** {@inheritDoc BTreeMap.clear} */
  clear(): void {
    this.#writable();
    const before = this.#map.size;
    try {
      this.#map.clear();
    } finally {
      this.#wrote(Math.max(1, before - this.#map.size));
    }
  }

  /** {@inheritDoc BTreeMap.entries} */
  entries(range?: Range<K>): MapIterator<[K, V]> {
    this.#open();
    return this.#map.entries(range);
  }

  /** {@inheritDoc BTreeMap.keys} */
  keys(range?: Range<K>): MapIterator<K> {
    this.#open();
    return this.#map.keys(range);
  }

  /** {@inheritDoc BTreeMap.values} */
  values(range?: Range<K>): MapIterator<V> {
    this.#open();
    return this.#map.values(range);
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    this.#open();
    return this.#map.entries();
  }

  /** {@inheritDoc BTreeMap.forEach} */
  forEach(callbackfn: (value: V, key: K, store: BTreeStore<K, V>) => void, thisArg?: unknown): void {
    if (typeof callbackfn !== 'function') throw new InvalidArgumentError('forEach: callback is not a function');
    for (const [k, v] of this.entries()) callbackfn.call(thisArg, v, k, this);
  }

  /** {@inheritDoc BTreeMap.first} */
  first(): [K, V] | undefined {
    this.#open();
    return this.#map.first();
  }

  /** {@inheritDoc BTreeMap.last} */
  last(): [K, V] | undefined {
    this.#open();
    return this.#map.last();
  }

  /** {@inheritDoc BTreeMap.nextHigher} */
  nextHigher(key: K): [K, V] | undefined {
    this.#open();
    return this.#map.nextHigher(key);
  }

  /** {@inheritDoc BTreeMap.nextLower} */
  nextLower(key: K): [K, V] | undefined {
    this.#open();
    return this.#map.nextLower(key);
  }

  /**
   * Removes every entry in the range and returns how many (BTreeMap.deleteRange). On an async
   * backend a PageFaultError may come after some keys of the range were removed (they stay
   * removed); deleteRangeAsync counts them and goes on.
   */
  deleteRange(range: DeleteRange<K>): number {
    this.#writable();
    const before = this.#map.size;
    try {
      return this.#map.deleteRange(range);
    } finally {
      if (this.#map.size !== before) this.#wrote(before - this.#map.size);
    }
  }

  /** {@inheritDoc BTreeMap.getMany} */
  getMany(keys: Iterable<K>): (V | undefined)[] {
    this.#open();
    return this.#map.getMany(keys);
  }

  /** {@inheritDoc BTreeMap.setMany} */
  setMany(entries: Iterable<readonly [K, V]>, options?: { onProgress?: ProgressCallback }): this {
    this.#writable();
    const list = listOf(entries, 'setMany: entries');
    try {
      this.#map.setMany(list, options);
    } catch (e) {
      // A failed batch may have applied a prefix (its error says how much: `applied`). One
      // that applied nothing (refused before the core's call: a bad value, an aborted
      // progress callback) is no write: it counted as one, and set off an empty autoCommit (a
      // probe, session 29). Without a count, a write to be safe.
      const applied = (e as { applied?: unknown } | null)?.applied;
      if (typeof applied !== 'number' || applied > 0) this.#wrote(typeof applied === 'number' ? applied : list.length);
      throw e;
    }
    if (list.length > 0) this.#wrote(list.length);
    return this;
  }

  /** XMerge over the whole tree (core/tree/rebalance.h): neighbour leaves whose free space
   * adds up to a page are packed into one leaf less. Then the live pages at the store's end
   * move into free pages below them (core/tree/relocate.cc), so the next commit ends the store
   * there and the next checkpoint (by size, or at close()) cuts its files: docs/STORE.md.
   * Returns the pages freed (merged leaves, and pages neither the tree nor the free list held);
   * stats().relocated_pages counts the moves. Asynchronous backends: merges over the resident
   * pages, and moves only when every page of the tree is resident. */
  compact(): number {
    this.#writable();
    const ex = this.#wasm.exports;
    if (typeof ex.at_tree_compact !== 'function') throw new AdaptreeError('this wasm build has no compact (missing at_tree_compact)', 'INTERNAL');
    const st = ex.at_tree_compact(this.#tree, this.#wasm.ctx);
    // An async store's page to fetch first (its free list, read before the first write): a
    // PageFaultError, which compactAsync answers. It returned 0 as if done (session 30).
    if (st === Status.NEED_PAGE) {
      this.#faultOutside();
      throw new PageFaultError(this.#wasm.dv().getUint32(this.#wasm.result + Result.AUX, true));
    }
    if (st < 0) {
      // Moves made before a failure (a full disk refusing a spill) are whole and wait for a
      // commit, which must not take the store for idle (a probe, session 30: 254 moves, then
      // commit() stored nothing).
      if (this.#uncommitted === 0 && (ex.at_store_pending?.(this.#tree) ?? 0) > 0) this.#wrote();
      // (named as get's errors are: it said "compact: corrupt")
      throw errorFromStatus(st, `compact of '${this.#path}'`);
    }
    const freed = this.#wasm.dv().getUint32(this.#wasm.result + Result.AUX, true);
    // Pages it moved down (relocated_pages) are writes too, with none freed: the core says
    // whether a commit now has anything to store.
    if (freed > 0 || (this.#uncommitted === 0 && (ex.at_store_pending?.(this.#tree) ?? 0) > 0)) this.#wrote();
    return freed;
  }

  /** compact() on every backend: where the store may live in a worker (an opfs store opened on
   * a main thread), and on asynchronous backends, whose compact() moves pages only when every
   * page of the tree is resident (core/tree/relocate.cc): where the pool can hold the whole
   * store, this reads every page in first (a scan of the values), then compacts. */
  async compactAsync(): Promise<number> {
    if (this.#b.kind === 'async') {
      // (no #writable() here: during a commit it said "use the ...Async write methods"; #run
      // waits for the commit, and compact() inside it checks the rest)
      const st = this.stats();
      if (Number(st.pages ?? Infinity) <= Number(st.frames ?? 0)) {
        for await (const _ of this.valuesAsync()) {
          // (the values' overflow pages come in with them)
        }
      }
      return this.#run(() => this.compact(), false, true);
    }
    return this.compact();
  }

  /** The tree's figures (layouts, height, fill; BTreeMap.stats()). Reads every page. */
  treeStats(): BTreeStats {
    this.#open();
    return this.#map.stats();
  }

  /** {@inheritDoc BTreeMap.checkInvariants} */
  checkInvariants(): void {
    this.#open();
    this.#map.checkInvariants();
  }

  /** @internal The wasm runtime and the tree's address (markWorkerLost, WorkerPool). */
  get [TREE_OF](): { wasm: AdaptreeWasm; tree: number } {
    if (!(#wasm in this)) {
      // An opfs store opened on a browser's main thread (OpfsWorkerStore): its tree is in a worker.
      throw new ThreadsUnsupportedError("this store's tree lives in the package's worker (an opfs store opened on the main thread), not in this thread's memory");
    }
    return { wasm: this.#wasm, tree: this.#tree };
  }

  /** {@inheritDoc BTreeMap.keyEncoding} */
  get keyEncoding(): string {
    return this.#map.keyEncoding;
  }

  /** {@inheritDoc BTreeMap.valueEncoding} */
  get valueEncoding(): string {
    return this.#map.valueEncoding;
  }

  get [Symbol.toStringTag](): string {
    return 'BTreeStore';
  }

  // ------------------------------------------------------------------ async API (every backend)

  /**
   * The async calls in the order they were made, as on a synchronous backend: a write begins
   * once every call made before it has settled, a read once every write made before it has,
   * and commit() holds every write made before it (#requestCommit). Each ran as soon as it was
   * made and waited only for its own page faults: a setAsync made after a deleteRangeAsync
   * whose pages were not in memory ran first and was deleted by it; a commit() resolved
   * without the setAsync calls still waiting for pages, which a crash then lost; and 300
   * un-awaited setAsync calls on a cold store with a small pool evicted each other's pages
   * for good (a new-user probe, session 24, IndexedDB in Chromium). Reads between two writes
   * still run side by side. A call made before close() counts for close() from the start.
   */
  #sequence<T>(write: boolean, body: () => Promise<T>, after?: Promise<void> | null): Promise<T> {
    try {
      this.#begin();
    } catch (e) {
      return Promise.reject(e);
    }
    // (after: the writes a read waits for, taken when it was called (#chained); null: none)
    const tail = after === undefined ? this.#writeTail : (after ?? undefined);
    // (body counts itself in #started and calls #settle when it ends: a .finally() here cost
    // every warm getAsync a promise more)
    let run = body;
    const b = this.#b;
    if (b.kind !== 'async') return run();
    if (write) {
      // A write that close() stopped after it changed the tree (its step after a page fault
      // threw ClosedError) is torn: a commit would make part of it durable (a probe, session
      // 33: 3 of a rejected setManyAsync's 3000 entries, and 21,345 of 30,000 keys of a
      // deleteRangeAsync of 24,000, after close({ commit: false }) with a commit requested).
      const whole = run;
      run = () => {
        const w = { before: this.#written };
        this.#writeRun = w;
        return whole().then(
          (v) => {
            if (this.#writeRun === w) this.#writeRun = undefined;
            return v;
          },
          (e: unknown) => {
            if (this.#writeRun === w) this.#writeRun = undefined;
            if (this.#closed && this.#written !== w.before && e instanceof ClosedError) this.#torn ??= TORN;
            throw e;
          },
        );
      };
    }
    // A reader whose backend heard of a newer commit (the writer announces each) moves to it
    // first: one whose pages were all in its pool stayed on its commit until refresh().
    if (b.reader !== undefined) {
      const heard = b.pages.newestCommit?.();
      // (body ends the call, #settle; a catch-up that failed must end it here, or close()
      // would wait for it for ever)
      if (heard !== undefined && heard > b.reader.seq) {
        run = () => this.#catchUp(b).then(body, (e: unknown) => {
          this.#end();
          throw e;
        });
      }
    }
    let p: Promise<T>;
    if (!write) {
      p = tail === undefined ? run() : tail.then(run);
    } else {
      this.#writesPending++;
      p = tail === undefined && this.#started === 0 ? run() : this.#whenSettled(tail).then(run);
      const mine: Promise<void> = p.then(noop, noop).then(() => {
        this.#writesPending--;
        if (this.#writeTail === mine) this.#writeTail = undefined;
      });
      this.#writeTail = mine;
    }
    return p;
  }

  /** A #sequence body begins... */
  #starting(): void {
    this.#started++;
  }

  /** ...and ends (settled or failed). */
  #settle(): void {
    if (--this.#started === 0) {
      if (this.#dropWhenIdle) {
        this.#dropWhenIdle = false;
        this.#dropKept();
      }
      if (this.#quiet.length > 0) for (const wake of this.#quiet.splice(0)) wake();
    }
    this.#end();
  }

  /** Once `tail` and every call running by then have settled. */
  async #whenSettled(tail: Promise<void> | undefined): Promise<void> {
    if (tail !== undefined) await tail;
    while (this.#started > 0) await new Promise<void>((wake) => this.#quiet.push(wake));
  }

  /** Runs a sync operation, answering page faults (async backends) and retrying. */
  #run<T>(f: () => T, readAhead = false, write = false, after?: Promise<void> | null): Promise<T> {
    return this.#sequence(write, () => this.#retry(f, readAhead), after);
  }

  /**
   * A read that is called while `prev` (an earlier step of the same iteration) is under way: it
   * takes its place in the call order now, and runs once `prev` settled. It waits for the
   * writes made before it (#writeTail now), and stands in the write chain itself, so that later
   * writes wait for it. Chained on `prev` alone, it took its place when `prev` settled, behind
   * a write made after it (a probe, session 36: `p2 = it.next()` before `p1` settled, then
   * `deleteRangeAsync({})`: p2 was done).
   */
  #chained<T>(prev: Promise<unknown>, f: () => T, readAhead: boolean): Promise<T> {
    // (a sync backend runs each call as it is made: the previous step is done already)
    if (this.#b.kind !== 'async') return this.#run(f, readAhead);
    const tail = this.#writeTail;
    const p = Promise.all([prev.then(noop, noop), tail]).then(() => this.#run(f, readAhead, false, null));
    const mine: Promise<void> = p.then(noop, noop).then(() => {
      if (this.#writeTail === mine) this.#writeTail = undefined;
    });
    this.#writeTail = mine;
    return p;
  }

  async #retry<T>(f: () => T, readAhead: boolean): Promise<T> {
    this.#starting();
    try {
      for (;;) {
        if (this.#gate !== undefined) await this.#gate;
        this.#openAsync();
        try {
          this.#inAsync++;
          try {
            return f();
          } finally {
            this.#inAsync--;
          }
        } catch (e) {
          if (!(e instanceof PageFaultError) || this.#b.kind !== 'async') throw e;
          await this.#fault(this.#b, e.pageId, readAhead);
        }
      }
    } finally {
      this.#settle();
    }
  }

  /** A page fault that became a PageFaultError outside the async twins (a sync call on an
   * async store, which nothing retries): the large-value read it kept (which holds its
   * value's whole length) has no operation to go on with. The core drops every kept read at
   * once, so this waits until no async call is under way (#settle): async calls waiting for
   * a page (not counted in #inAsync meanwhile) go on with theirs. Dropping them at once made
   * those reads start over at each such fault: a sync get that faulted every 200 ms kept
   * three 6 MB getAsync reads (2 s alone) from ever ending. */
  #faultOutside(): void {
    if (this.#inAsync > 0) return;
    if (this.#started > 0) this.#dropWhenIdle = true;
    else this.#dropKept();
  }

  #dropKept(): void {
    const ex = this.#wasm.exports;
    if (this.#b.kind === 'async' && !this.#map.closed && typeof ex.at_store_drop_kept === 'function') ex.at_store_drop_kept(this.#tree);
  }

  /** `p`, or ClosedError once close() gave up waiting for the calls under way: a call whose
   * page never came stayed pending for ever after close() (a probe, session 33). */
  #orGaveUp<T>(p: Promise<T>): Promise<T> {
    if (this.#gaveUp === undefined) {
      this.#gaveUp = new Promise<never>((_, reject) => {
        this.#giveUp = reject;
      });
      this.#gaveUp.catch(noop);
    }
    return Promise.race([p, this.#gaveUp]);
  }

  /** `pin` (a reader's batch call): a page read at a newer commit that the commits since the
   * pool's did not write is supplied as it is, without following: the batch stays on its
   * commit instead of starting over (#readerPage). */
  #fault(b: Async, id: number, readAhead: boolean, pin = false): Promise<void> {
    let p = this.#faults.get(id);
    if (p === undefined) {
      // A run goes on at the next id, or past the pages supplied with the last fault.
      const step = id - this.#lastFault, dist = Math.abs(step), sign = Math.sign(step);
      if (this.#runWindow > 0 && sign === this.#runDir && dist <= this.#runWindow + 1) {
        this.#runWindow = Math.min(MAX_READ_AHEAD, 2 * this.#runWindow);
      } else if (dist === 1) {
        this.#runWindow = READ_AHEAD;
        this.#runDir = sign;
      } else {
        this.#runWindow = this.#runDir = 0;
      }
      this.#lastFault = id;
      const dir = this.#runWindow > 0 ? this.#runDir : readAhead ? 1 : 0;
      const window = this.#runWindow > 0 ? this.#runWindow : READ_AHEAD;
      p = (async () => {
        const gen = this.#gen;
        const ahead = this.#ahead.get(id);
        this.#ahead.delete(id);
        let got: Fetched;
        try {
          // A read-ahead that failed (undefined) is read again here, where its error counts.
          // (a reader's read-ahead of an earlier commit may still hold the page: #readerPage)
          got = await this.#orGaveUp((async () => (ahead !== undefined && (ahead.gen === gen || b.reader !== undefined) ? await ahead.image : undefined) ?? (await this.#fetch(b, [id]))[0]!)());
        } catch (e) {
          // The operations waiting on this page fail: the reads they kept have no one to go on.
          this.#dropKept();
          throw isAdaptreeError(e) ? e : storeError(statusOfError(e), `reading page ${id}`, e);
        }
        if (dir !== 0) this.#readAhead(b, id, dir, window);
        while (this.#gate !== undefined) await this.#gate;
        this.#openAsync();
        // A reader supplies only a page of the commit its pool holds (#readerPage; else the
        // retry reads again).
        if (b.reader !== undefined) {
          const at = b.reader.page0;
          if (!this.#readerPage(b, id, got.page0, pin)) return;
          // The store may have moved on meanwhile (a follow just now, or by another call while
          // this read ran) to a commit in which it is shorter: a page past its end is not
          // supplied, and after a follow neither is one whose record is gone (an IndexedDB
          // checkpoint deletes the records past the end). The retry asks for what the commit
          // needs. (Async stores write both superblock slots alike.)
          if (id >= (pageCountOf(b.reader.page0) ?? 0) || (b.reader.page0 !== at && got.image === undefined)) return;
        }
        const image = got.image;
        if (image === undefined) throw new CorruptionError(`page ${id} is missing from the store '${this.#path}'`);
        if (image.length !== PAGE_SIZE) throw new CorruptionError(`page ${id} of '${this.#path}' is ${image.length} bytes, not ${PAGE_SIZE}`);
        const w = this.#wasm;
        w.u8().set(image, this.#pageBuf);
        const st = w.exports.at_store_supply!(this.#tree, id, this.#pageBuf);
        if (st < 0) throw storeError(st, `reading page ${id}`, undefined);
        if (this.#runWindow > 0) await this.#supplyRun(b, id, dir, gen, pin);
      })().finally(() => this.#faults.delete(id));
      this.#faults.set(id, p);
    }
    return p;
  }

  /** A run of faults on consecutive ids (an overflow chain): supplies the pages after `id`
   * in direction `dir` that were read ahead, up to RUN_SUPPLY, so that the operation's retry
   * walks on through them. Stops at the first one not read ahead (or failed, or changed by a
   * commit meanwhile): its own fault reads it, and reports what is wrong with it. */
  async #supplyRun(b: Async, id: number, dir: number, gen: number, pin: boolean): Promise<void> {
    for (let i = 1; i <= RUN_SUPPLY; i++) {
      const q = id + dir * i;
      const a = this.#ahead.get(q);
      // (a reader's pages carry their commit: #readerPage says whether they are still good)
      const reader = b.reader !== undefined;
      if (a === undefined || (a.gen !== gen && !reader) || this.#faults.has(q)) return;
      // (not past close()'s giving up: the call waiting on this run stayed pending for ever, a
      // probe, session 33)
      const got = await this.#orGaveUp(a.image).catch(() => undefined);
      if (got?.image === undefined || got.image.length !== PAGE_SIZE) return;
      while (this.#gate !== undefined) await this.#gate;
      if (this.#closed || (this.#gen !== gen && !reader) || this.#ahead.get(q) !== a) return;
      if (reader && !this.#readerPage(b, q, got.page0, pin)) return;
      this.#ahead.delete(q);
      const w = this.#wasm;
      w.u8().set(got.image, this.#pageBuf);
      if (w.exports.at_store_supply!(this.#tree, q, this.#pageBuf) < 0) return;
    }
  }

  /** Starts reading the `window` pages after `id` in direction `dir` (scans tend to go on
   * upwards, overflow chains downwards); their faults then find them here. Dropped at the
   * next commit (they might be older than it). */
  #readAhead(b: Async, id: number, dir: number, window: number): void {
    // (not while a commit is being written: the pages read could be ones it replaces)
    if (this.#gate !== undefined) return;
    const gen = this.#gen;
    const want: number[] = [];
    for (let i = 1; i <= window; i++) {
      const q = id + dir * i;
      if (q <= 0) break;
      if (!this.#ahead.has(q) && !this.#faults.has(q)) want.push(q);
    }
    if (want.length === 0) return;
    if (b.pages.readPages !== undefined) {
      // One request for the run (IndexedDB: one transaction).
      const all = this.#fetch(b, want).catch(() => want.map(() => undefined));
      want.forEach((q, i) => this.#ahead.set(q, { gen, image: all.then((r) => r[i]!) }));
    } else {
      for (const q of want) this.#ahead.set(q, { gen, image: b.pages.readPage(q).then((image) => ({ image }), () => undefined) });
    }
    // Bound the cache: drop the oldest entries.
    if (this.#ahead.size > 2 * MAX_READ_AHEAD) {
      for (const k of this.#ahead.keys()) {
        this.#ahead.delete(k);
        if (this.#ahead.size <= MAX_READ_AHEAD) break;
      }
    }
  }

  /** A reader's batch starts over at a newer commit it followed, which dropped the pages that
   * commit wrote: the pages the batch faulted on (`ids`, at most half the pool) are
   * read again in one request, with page 0, and those of the commit the pool now holds are
   * supplied, so that the batch faults again only on pages it had not reached. Read one fault
   * at a time, a transaction each, beside a writer committing back to back, each read saw a
   * newer commit and the batch started over once more: a batch over most of a store's pages
   * ended only when the writer paused (verify34 probe, session 34). A read that fails or is
   * of another commit supplies nothing: the faults read what is missing, and report errors. */
  async #refetch(b: Async, ids: ReadonlySet<number>): Promise<void> {
    const want = [...ids];
    let got: Fetched[];
    try {
      got = await this.#orGaveUp(this.#fetch(b, want));
    } catch {
      return;
    }
    while (this.#gate !== undefined) await this.#gate;
    this.#openAsync();
    const page0 = got[0]?.page0;
    if (page0 === undefined || b.reader === undefined) return;
    if (!this.#sameCommit(b, page0) && !sameBytes(page0, b.reader.page0)) return;
    const end = pageCountOf(b.reader.page0) ?? 0;
    const w = this.#wasm;
    for (let i = 0; i < want.length; i++) {
      const image = got[i]!.image;
      if (want[i]! >= end || image === undefined || image.length !== PAGE_SIZE) continue;
      w.u8().set(image, this.#pageBuf);
      if (w.exports.at_store_supply!(this.#tree, want[i]!, this.#pageBuf) < 0) return;
    }
  }

  /** Reads pages in one request; a reader's come with page 0 of the same request. */
  async #fetch(b: Async, ids: number[]): Promise<Fetched[]> {
    if (b.reader !== undefined) {
      const r = await b.pages.readPages!([0, ...ids]);
      return ids.map((_, i) => ({ image: r[i + 1], page0: r[0] }));
    }
    if (ids.length === 1) return [{ image: await b.pages.readPage(ids[0]!) }];
    return (await b.pages.readPages!(ids)).map((image) => ({ image }));
  }

  /**
   * On an async backend a call runs later (behind earlier calls) and again after each page
   * fault: its key and value are taken as they are when it is made (frozenKey in map.ts), or a
   * key or value the caller changed meanwhile was read then (a probe, session 32: a deleteAsync
   * removed another key, a setAsync stored the changed value). Strings and numbers need no
   * copy; a bad key or value rejects the call at once.
   */
  #key(key: K): K {
    return this.#b.kind === 'async' && key !== null && typeof key === 'object' ? frozenKey(this.#map, key) : key;
  }

  #value(value: V): V {
    return this.#b.kind === 'async' && value !== null && typeof value === 'object' ? frozenValue(this.#map, value) : value;
  }

  /** A deleteRange's range as it is now (see #key), checked first as deleteRange checks it: a
   * copy of an array or a class instance was `{}`, every entry (a probe, session 32: the
   * deleteRangeAsync([]) of an async store emptied it). */
  #deleteRange(range: DeleteRange<K>): DeleteRange<K> {
    if (this.#b.kind !== 'async') return range;
    const r = { ...checkDeleteRange(range) } as Record<string, unknown>;
    for (const f of ['gt', 'gte', 'lt', 'lte'] as const) if (Object.hasOwn(r, f) && r[f] !== undefined) r[f] = this.#key(r[f] as K);
    return r as DeleteRange<K>;
  }

  /** f(key as it is now); a bad key rejects (never throws). */
  #keyed<T>(key: K, f: (k: K) => Promise<T>): Promise<T> {
    let k: K;
    try {
      k = this.#key(key);
    } catch (e) {
      return Promise.reject(e);
    }
    return f(k);
  }

  getAsync(key: K): Promise<V | undefined> {
    return this.#keyed(key, (k) => this.#run(() => this.get(k)));
  }

  hasAsync(key: K): Promise<boolean> {
    return this.#keyed(key, (k) => this.#run(() => this.has(k)));
  }

  async setAsync(key: K, value: V): Promise<this> {
    const k = this.#key(key), v = this.#value(value);
    return this.#run(() => this.set(k, v), false, true);
  }

  deleteAsync(key: K): Promise<boolean> {
    return this.#keyed(key, (k) => this.#run(() => this.delete(k), false, true));
  }

  async clearAsync(): Promise<void> {
    return this.#run(() => this.clear(), false, true);
  }

  firstAsync(): Promise<[K, V] | undefined> {
    return this.#run(() => this.first());
  }

  lastAsync(): Promise<[K, V] | undefined> {
    return this.#run(() => this.last());
  }

  nextHigherAsync(key: K): Promise<[K, V] | undefined> {
    return this.#keyed(key, (k) => this.#run(() => this.nextHigher(k)));
  }

  nextLowerAsync(key: K): Promise<[K, V] | undefined> {
    return this.#keyed(key, (k) => this.#run(() => this.nextLower(k)));
  }

  /**
   * getMany on every backend. On an asynchronous one a page fault used to restart the whole
   * batch, which for a batch whose pages outgrow the pool never ends; now the keys answered
   * before a fault are kept and the rest goes on after it, in slices of ASYNC_BATCH keys. A
   * commit between faults (for a reader: a newer commit it follows) starts the batch over, so
   * the values are of one committed state; this store's own uncommitted writes made while the
   * batch waits for a page can show in the later keys.
   */
  async getManyAsync(keys: Iterable<K>): Promise<(V | undefined)[]> {
    let list = listOf(keys, 'getManyAsync: keys');
    if (this.#b.kind !== 'async') return this.getMany(list);
    // (the keys as they are now, in an array of our own: see #key)
    list = list.map((k) => this.#key(k));
    return this.#sequence(false, async () => {
    this.#starting();
    try {
    let out: (V | undefined)[] = [];
    let part: K[] = list;
    let gen = this.#gen;
    const b = this.#b as Async;
    /** A reader: the pages this batch faulted on, to read again at once when it starts over. */
    const faulted = new Set<number>();
    for (;;) {
      if (this.#gate !== undefined) await this.#gate;
      this.#openAsync();
      if (this.#gen !== gen) {
        // A commit (or, for a reader, a newer commit followed) since the first answers: start
        // over, so that the batch still shows one committed state.
        // (a reader: what it read, read again at once; not past half the pool, where the run
        // would evict those pages before it reached them)
        if (b.reader !== undefined && faulted.size > 0 && faulted.size <= this.#poolPages >> 1) await this.#refetch(b, faulted);
        gen = this.#gen;
        out = [];
        part = list;
      }
      try {
        this.#inAsync++;
        let got: (V | undefined)[];
        try {
          got = this.getMany(part);
        } finally {
          this.#inAsync--;
        }
        for (const v of got) out.push(v);
        if (out.length >= list.length) return out;
      } catch (e) {
        if (!(e instanceof PageFaultError)) throw e;
        if (e.values !== undefined) for (const v of e.values) out.push(v as V | undefined);
        // (a reader's batch keeps to its commit while the pages it faults on are unchanged:
        // following each newer commit started it over, and beside a writer that commits
        // often a batch larger than the pool never ended)
        if (b.reader !== undefined) faulted.add(e.pageId);
        await this.#fault(b, e.pageId, false, true);
      }
      part = list.slice(out.length, out.length + ASYNC_BATCH);
    }
    } finally {
      this.#settle();
    }
    });
  }

  /** Sets many entries; on an async backend a retry after a page fault re-applies the batch
   * (set is idempotent, later duplicates still win). */
  async setManyAsync(entries: Iterable<readonly [K, V]>, options?: { onProgress?: ProgressCallback }): Promise<this> {
    batchOptions(options, 'setManyAsync');
    let list = listOf(entries, 'setManyAsync: entries');
    // (the entries as they are now, in an array of our own: see #key; an entry that is not a
    // pair is left for setMany to refuse, with its index)
    if (this.#b.kind === 'async') {
      try {
        // (any object: setMany takes e[0] and e[1] of any, a triple or { 0, 1 } too; copied
        // only where length was 2, the others were read when the call ran: the browser probe)
        list = list.map((e) => (e !== null && typeof e === 'object' ? [this.#key(e[0]), this.#value(e[1])] as const : e));
      } catch (e) {
        throw withApplied(e, 0);  // (as setMany's errors: none of the batch is in)
      }
    }
    // A page fault ends the core's call after the entries before it were applied: the retry
    // goes on from there, in slices of ASYNC_BATCH entries, so that a fault re-encodes at most
    // one slice (re-applying the whole batch after each fault made a batch larger than the
    // pool cost O(faults x batch): over a minute for 8k entries on a 1 MiB pool). The first
    // attempt is the whole batch: a sorted batch into an empty store is bulk loaded.
    return this.#sequence(true, async () => {
    this.#starting();
    try {
    let done = 0;
    let part: (readonly [K, V])[] = list;
    for (;;) {
      // As #run, but a fault resumes after the applied entries rather than retrying `part`.
      if (this.#gate !== undefined) await this.#gate;
      try {
        this.#openAsync();
      } catch (e) {
        throw withApplied(e, done);  // (stopped by close(): the entries in so far, as any setMany error)
      }
      try {
        this.#inAsync++;
        try {
          this.setMany(part, options);
        } finally {
          this.#inAsync--;
        }
        done += part.length;
        if (done >= list.length) return this;
      } catch (e) {
        if (!(e instanceof PageFaultError) || this.#b.kind !== 'async') {
          // The error counts the entries of every part before this one too.
          const applied = done + ((e as { applied?: number }).applied ?? 0);
          if (done > 0 && e instanceof Error) e.message += `; ${applied} of ${list.length} entries of the batch are in`;
          throw withApplied(e, applied);
        }
        done += e.applied ?? 0;
        try {
          await this.#fault(this.#b, e.pageId, false);
        } catch (f) {
          throw withApplied(f, done);  // (a page that could not be read, or close(): the entries in so far)
        }
      }
      part = list.slice(done, done + ASYNC_BATCH);
    }
    } finally {
      this.#settle();
    }
    });
  }

  /** Removes the range; on an async backend each page fault ends one call into the core,
   * which removed what it could before it (at_delete_range): the retries add up. */
  async deleteRangeAsync(range: DeleteRange<K>): Promise<number> {
    range = this.#deleteRange(range);
    let removed = 0;
    return this.#run(
      () => {
      const before = this.#map.size;
      try {
        return removed + this.deleteRange(range);
      } catch (e) {
        removed += before - this.#map.size;
        throw e;
      }
      },
      false,
      true,
    );
  }

  checkInvariantsAsync(): Promise<void> {
    return this.#run(() => this.checkInvariants());
  }

  treeStatsAsync(): Promise<BTreeStats> {
    return this.#run(() => this.treeStats());
  }

  /** Entries in key order as an async iterator (`for await`), on every backend. */
  entriesAsync(range?: Range<K>): AsyncIterableIterator<[K, V]> {
    return this.#asyncIter(this.entries(range));
  }

  keysAsync(range?: Range<K>): AsyncIterableIterator<K> {
    return this.#asyncIter(this.keys(range));
  }

  valuesAsync(range?: Range<K>): AsyncIterableIterator<V> {
    return this.#asyncIter(this.values(range));
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<[K, V]> {
    return this.entriesAsync();
  }

  #asyncIter<T>(it: Iterator<T>): AsyncIterableIterator<T> {
    const run = <R>(f: () => R) => this.#run(f, true);
    const done = { done: true, value: undefined } as IteratorReturnResult<undefined>;
    // next() calls made before the last settled wait for it, as an async generator's do: side
    // by side, two calls waiting for the same page came back in the wrong order (a new-user
    // probe, session 24).
    let last: Promise<unknown> | undefined;
    // A finished iteration answers done, also after close(), as a sync iterator does (it threw
    // ClosedError on async stores only: a new-user probe, session 26).
    let finished = false;
    const inner = (): IteratorResult<T> => {
      const r = it.next();
      if (r.done === true) finished = true;
      return r;
    };
    const step = (): Promise<IteratorResult<T>> => (finished ? Promise.resolve(done as IteratorResult<T>) : run(inner));
    // (a step whose iteration ended in the meantime answers done without a call)
    const stepped = (): IteratorResult<T> => (finished ? (done as IteratorResult<T>) : inner());
    const ai: AsyncIterableIterator<T> = {
      next: () => {
        const prev = last;
        const p = prev === undefined ? step() : finished ? prev.then(step, step) : this.#chained(prev, stepped, true);
        // Cleared as p settles, before the caller's `await` resumes (its reaction comes after
        // this one): a next() called then takes its place in the store's call order where it
        // is called. Cleared two steps later, each next() after the first was queued behind
        // what the caller did right after it (a probe, session 36: `await it.next(); const p2 =
        // it.next(); s.deleteRangeAsync({})` gave p2 done, though a getAsync in its place saw
        // the key).
        last = p;
        const clear = () => {
          if (last === p) last = undefined;
        };
        p.then(clear, clear);
        return p;
      },
      return: async () => {
        finished = true;
        it.return?.();
        return done as IteratorResult<T>;
      },
      [Symbol.asyncIterator]() {
        return ai;
      },
    };
    return ai;
  }
}

const noop = (): void => {};

/** A store that did not open (CORRUPT) with an empty data file and a log: 'missing' where the
 * log builds on a checkpoint (the data file was deleted or truncated), 'log' where its header
 * names checkpoint 0 (the store never checkpointed: a process that ended before close(), the
 * log holding every commit, and the log is what is damaged). For the error's message only; the
 * second was taken for the first, whose advice was to delete the log (a level probe, session
 * 35). */
function emptyDataFile(files: SyncStoreFiles): 'missing' | 'log' | undefined {
  try {
    if (files.data.size() !== 0 || files.log.size() === 0) return undefined;
    const h = logHeader(files);
    if (h === undefined) return 'missing';
    // (a header whose checksum fails says nothing of its checkpoint: 'log', which keeps the
    // log; its checkpoint word damaged read as a checkpoint, and gave the first message: the
    // verify35 probe)
    if (!h.sumOk) return 'log';
    return h.ours && h.dv.getUint32(24, true) === 0 && h.dv.getUint32(28, true) === 0 ? 'log' : 'missing';
  } catch {
    return undefined;
  }
}

/** CRC-32C of a few bytes (a log header's 32), bit by bit: for error messages only. */
function crc32c(b: Uint8Array): number {
  let c = ~0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

/** The log's 64-byte header: whether it has our magic and its checksum holds (undefined when
 * the log is shorter). For error messages only; may throw (the callers catch). */
function logHeader(files: SyncStoreFiles): { dv: DataView; ours: boolean; sumOk: boolean } | undefined {
  const h = new Uint8Array(64);
  if (files.log.read(h, 0) < 64) return undefined;
  const dv = new DataView(h.buffer);
  return { dv, ours: String.fromCharCode(...h.subarray(0, LOG_MAGIC.length)) === LOG_MAGIC, sumOk: crc32c(h.subarray(0, 32)) === dv.getUint32(32, true) };
}

function emptyData(files: SyncStoreFiles): boolean {
  try {
    return files.data.size() === 0;
  } catch {
    return false;
  }
}

/** The log's header fails its checksum or magic, and an intact commit frame of ours follows it
 * (kind 2, its CRC-32C over 56 bytes right; frames start at multiples of 32 after the 64-byte
 * header): the store's own log, damaged, not another program's file. Reads at most the first
 * 4 MiB. For the error's message only. */
function logHeaderDamaged(files: SyncStoreFiles): boolean {
  try {
    const size = files.log.size();
    if (size < 128) return false;
    const h = logHeader(files);
    if (h === undefined || (h.ours && h.sumOk)) return false;
    const n = Math.min(size, 4 << 20);
    const b = new Uint8Array(n);
    const got = files.log.read(b, 0);
    const dv = new DataView(b.buffer);
    for (let at = 64; at + 64 <= got; at += 32) {
      if (dv.getUint32(at, true) !== 2) continue;
      if (crc32c(b.subarray(at, at + 56)) === dv.getUint32(at + 56, true)) return true;
    }
    return false;
  } catch {
    return false;
  }
}

/** The log's first bytes are no header of ours, not even a torn one (the core's rule,
 * FilePager::log_may_be_a_torn_header: the whole magic, or a prefix of it and then zeros in at
 * most a header's 64 bytes): another file where the log goes. For the error's message only. */
function logIsForeign(files: SyncStoreFiles): boolean {
  try {
    const size = files.log.size();
    if (size === 0) return false;
    const h = new Uint8Array(Math.min(size, 64));
    const n = files.log.read(h, 0);
    let m = 0;
    while (m < n && m < LOG_MAGIC.length && h[m] === LOG_MAGIC.charCodeAt(m)) m++;
    if (m === LOG_MAGIC.length) return false;
    return size > 64 || h.subarray(m, n).some((b) => b !== 0);
  } catch {
    return false;
  }
}
const LOG_MAGIC = 'ADTRELOG';

function openError(st: number, path: string, cause: unknown, readOnly = false): Error {
  if (st === Status.CORRUPT) return new CorruptionError(`'${path}' is not an adaptree store, or it is damaged beyond what recovery can repair`, cause !== undefined ? { cause } : undefined);
  if (st === Status.NOT_FOUND) return new InvalidArgumentError(`no store at '${path}' (${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`);
  if (st === Status.QUOTA_EXCEEDED) return new QuotaExceededError(`opening '${path}': storage full`, { cause });
  if (st === Status.IO_ERROR) return new IoError(`opening '${path}': ${cause instanceof Error ? cause.message : 'I/O error'}`, { cause });
  if (st >= 0) return new AdaptreeError(`opening '${path}' failed with unexpected status ${st}`, 'INTERNAL');
  return storeError(st, `opening '${path}'`, cause);
}

if (typeof Symbol.asyncDispose !== 'symbol') {
  delete (BTreeStore.prototype as unknown as Record<string, unknown>)['undefined'];
}

// An opfs store opened on a browser's main thread is an OpfsWorkerStore: a BTreeStore whose
// sync methods throw PageFaultError (its pages are in a worker).
linkOpfsWorkerStore(BTreeStore);

/** A random name part (crypto.randomUUID where there is one). */
function randomToken(): string {
  const c = (globalThis as { crypto?: { randomUUID?(): string } }).crypto;
  return c?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

/** The part of BroadcastChannel used here (Node 18+, browsers, Deno; Node's has unref). */
interface Channel {
  onmessage: ((ev: unknown) => void) | null;
  postMessage(m: unknown): void;
  close(): void;
  unref?(): void;
}
const Broadcast = (globalThis as { BroadcastChannel?: new (name: string) => Channel }).BroadcastChannel;

/** How often an attached store in Deno looks whether its owner closed the store. */
const OWNER_POLL_MS = 200;

/** Calls `onClosed` once the owner closed the store: a message on the channel `name`, which
 * keeps no Node thread alive (unref). In Deno a listening BroadcastChannel keeps the thread
 * alive and has no unref (Deno 2.9: a script that only listens never ends), so there an unref'd
 * timer asks `isClosed` every OWNER_POLL_MS instead (until session 29 nothing did, and an
 * attached store in Deno kept its files until its next call). Undefined where neither exists:
 * the store then lets go of its files when its `closed` or `commit()` finds the store closed,
 * or at its close(). */
function watchOwner(name: string | undefined, isClosed: () => boolean, onClosed: () => void): { close(): void } | undefined {
  if (typeof name !== 'string') return undefined;
  const deno = (globalThis as { Deno?: { unrefTimer?(id: number): void } }).Deno;
  if (typeof deno?.unrefTimer === 'function') {
    const id = setInterval(() => {
      if (isClosed()) onClosed();
    }, OWNER_POLL_MS) as unknown as number;
    deno.unrefTimer(id);
    return { close: () => clearInterval(id) };
  }
  if (Broadcast === undefined) return undefined;
  const ch = new Broadcast(name);
  ch.onmessage = onClosed;
  ch.unref?.();
  return ch;
}

function postClosed(name: string): void {
  if (Broadcast === undefined) return;
  const ch = new Broadcast(name);
  try {
    ch.postMessage('closed');
  } finally {
    ch.close();
  }
}
