/**
 * The storage interface: what a persistent store needs from the place its pages live.
 * One file per backend in this folder implements it (memory.ts, node.ts, deno.ts, opfs.ts,
 * durable-object.ts, durable-object-kv.ts, indexeddb.ts, async-memory.ts); your own backend is an object of one of the two shapes below, passed as
 * `BTreeStore.open({ storage: yourBackend, path })`.
 *
 * **Synchronous backends** (`kind: 'sync'`: files you can read and write without awaiting,
 * e.g. Node and Deno files, OPFS sync access handles, a Durable Object's synchronous SQL). The core reads and writes them from
 * inside a wasm call, through the `at_host_*` imports (bindings/adaptree.h), so reads of
 * resident or not-yet-resident pages alike are synchronous and the whole `BTreeMap` API works
 * synchronously. A store is two files: `data` (pages at `id * 4096`, the superblock at 0)
 * and `log` (the write-ahead log). The core decides what goes where; the backend only moves
 * bytes. Each method throws on failure: a `QuotaExceededError` (or any error whose `code` is
 * `'ENOSPC'`, `'EDQUOT'` or `'QUOTA_EXCEEDED'`) for a full disk, anything else counts as an
 * I/O error (`IoError` at the API, with the backend's error as `cause`).
 *
 * **Asynchronous backends** (`kind: 'async'`: IndexedDB, a key-value Durable Object, a network). The core
 * never calls them: an operation that needs a page that is not in the buffer pool stops with
 * NEED_PAGE, the store awaits `readPage(id)`, hands the image to the core and retries. A commit
 * hands `writePages` every changed page image (the superblock, page 0, first), which must be
 * written all or nothing (one transaction; or build the new state aside and swap).
 *
 * **Locking** is the backend's job, at `open`: a store open in another process (or already
 * open in this one) makes `open` throw `LockedError` and touch nothing. `close()` releases.
 */

/** One file of a store on a synchronous backend. Offsets and sizes are byte counts < 2^53. */
export interface SyncFile {
  /** Reads into `dst` from `offset`; returns the bytes read (fewer only at the end of the file). */
  read(dst: Uint8Array, offset: number): number;
  /**
   * Optional, what `read` does with `dst = mem.subarray(at, at + len)`, without making that view:
   * a page fault reads into wasm memory, and a fresh view of it per fault costs more than the
   * rest of the call around the read (bench/browser/diagnose.mjs split).
   */
  readInto?(mem: Uint8Array, at: number, len: number, offset: number): number;
  /** Writes all of `src` at `offset` (the file grows as needed). */
  write(src: Uint8Array, offset: number): void;
  /** Makes every write so far durable (fdatasync). */
  sync(): void;
  /** The file's length in bytes. */
  size(): number;
  /** Sets the file's length. */
  truncate(size: number): void;
}

/** The two files of an open store, and its lock. */
export interface SyncStoreFiles {
  readonly data: SyncFile;
  readonly log: SyncFile;
  /** Closes both files and releases the lock. Called once. `discardCreated`: the store could
   * not be opened; remove the files this open created (a backend may ignore it). `abandoned`:
   * the store was dropped without close() and collected: release the lock and write nothing
   * (writes after the last sync may be dropped, as a crash drops them). */
  close(discardCreated?: boolean, abandoned?: boolean): void;
  /**
   * Optional: a structured-cloneable description from which another worker of this process
   * reaches the same two files (the backend's `attach`), for a store shared with workers
   * (`BTreeStore#share`, docs/THREADS.md). Backends without it cannot be shared.
   */
  share?(): unknown;
}

export interface OpenStorageOptions {
  /** Create the store's files when they do not exist (default true). Without, a missing store
   * is an InvalidArgumentError. */
  create: boolean;
  /** When the store is locked elsewhere: false (default) throws LockedError at once; true
   * waits until the lock is free. Backends that cannot wait (node, deno, memory) ignore it. */
  wait?: boolean;
  /** A reader (`BTreeStore.open({ readOnly: true })`): the core writes nothing through these
   * files/pages. A backend that can share its lock among readers does (opfs: a shared Web Lock
   * and read-only access handles; indexeddb: no lock, readonly transactions); the others take
   * their usual exclusive lock. `create` is false then. */
  readOnly?: boolean;
  /** The store's `checkpointBytes` option, when given: an async backend with a log of its own
   * (indexeddb) checkpoints by it. Sync backends get it through the core instead. */
  checkpointBytes?: number;
  /** The store's `logDeltas` option, when given: false makes indexeddb log whole images. */
  logDeltas?: boolean;
}

export interface SyncBackend {
  readonly kind: 'sync';
  /** Shown in stats() and error messages: 'node', 'deno', 'memory', ... */
  readonly name: string;
  /** Opens (or creates) the store's files at `path` and takes its lock (LockedError if held). */
  open(path: string, options: OpenStorageOptions): SyncStoreFiles | Promise<SyncStoreFiles>;
  /** Optional: the log size past which commits checkpoint, for stores opened without the
   * `checkpointBytes` option (the core's default is 64 MiB). */
  readonly checkpointBytes?: number;
  /** Optional: false makes a checkpoint that a commit runs cut the log to its header before
   * the next log is written (true, the default: the next log is written over the old one in
   * place, so the log file keeps its size while the store is open and close() cuts it; writes
   * into blocks a file has cost less than appends, and the checkpoint has no truncation).
   * Storage that only pays for a kept log (its truncation gives space back, its writes reuse
   * nothing: a Durable Object's rows) says false. */
  readonly reuseLog?: boolean;
  /** Optional, with SyncStoreFiles#share: the same files in this worker, from that
   * description. Takes no lock (the store's owner holds it); its close() releases only what
   * it opened itself. */
  attach?(shared: unknown): SyncStoreFiles | Promise<SyncStoreFiles>;
}

/** What a commit's page changed since its previous committed image: runs of (u16 offset,
 * u16 length, bytes) on 4-byte words, at most 2048 bytes, that turn the image whose last 8
 * bytes (the trailer: page id, checksum) are `base` into the new one (bindings/adaptree.h,
 * at_store_commit_begin). With `copyRuns` (AsyncStorePages) a run may also be a copy run:
 * (u16 offset, u16 length | 0x8000, u16 source, u16 zero), the bytes the base holds at
 * [source, source + length) (docs/FORMAT.md). */
export interface PageDelta {
  readonly base: Uint8Array;
  readonly runs: Uint8Array;
}

/** An open store on an asynchronous backend: 4 KiB page images by page id. */
export interface AsyncStorePages {
  /** The stored image of page `id`, or undefined if there is none (a new store has no page 0). */
  readPage(id: number): Promise<Uint8Array | undefined>;
  /** Optional: several pages in one request, from ONE committed state (read-ahead on scans
   * uses it; a read-only store needs it: it reads page 0 with every page to detect a commit
   * made meanwhile by a writer elsewhere). */
  readPages?(ids: readonly number[]): Promise<(Uint8Array | undefined)[]>;
  /** Writes every image given, all or nothing (the superblock, page 0, comes first). After the
   * promise resolves they are durable; if it rejects, none of them is visible on reopen. The
   * arrays are the backend's to keep (the store makes them for this call and never reuses them),
   * unless viewsOfOneCopy says otherwise. */
  writePages(pages: readonly (readonly [id: number, image: Uint8Array])[], deltas?: readonly (PageDelta | undefined)[]): Promise<void>;
  /** Optional: true when writePages takes `deltas` (the core then keeps a copy of each page a
   * commit changes, as it was before, and diffs the two). */
  readonly wantsDeltas?: boolean;
  /** Optional, with wantsDeltas: true when writePages' deltas may hold copy runs (PageDelta):
   * a slot array shifted by an insert, or records moved by a compaction, then take a few bytes
   * instead of their own. */
  readonly copyRuns?: boolean;
  /**
   * Optional: true when writePages copies what it keeps of the images and never stores an
   * image array as it is. The store then hands views into one copy of the commit's pages
   * instead of an ArrayBuffer per page (structured clone, as IndexedDB's put, stores a view
   * with its whole buffer: a backend that stores the arrays themselves must leave this unset).
   * The views are valid until writePages settles: the store writes the next commit's pages
   * into the same copy.
   */
  readonly viewsOfOneCopy?: boolean;
  /**
   * Optional, for readers: every page that the commits after commit `sequence` (a superblock's
   * commit sequence) wrote, as far as the backend has seen them (a later commit's pages may be
   * included; repeats allowed), or undefined when it cannot tell (it did not see `sequence`
   * itself, or not every commit since). A reader that follows a newer commit then keeps the
   * pages outside the list instead of dropping all of them. A wrong list gives wrong answers:
   * a backend that is not sure says undefined.
   */
  changedSince?(sequence: number): readonly number[] | undefined;
  /**
   * Optional, for readers: the newest commit sequence the backend has heard of without a read
   * (the writer's announcements: indexeddb's BroadcastChannel, async-memory's own volume), or
   * undefined. A reader's next async call moves to a newer one first.
   */
  newestCommit?(): number | undefined;
  /** Releases the lock. Called once. `abandoned`: the store was dropped without close() and
   * collected: release the lock and write nothing (no checkpoint). */
  close(abandoned?: boolean): void | Promise<void>;
}

export interface AsyncBackend {
  readonly kind: 'async';
  readonly name: string;
  /** Opens the store at `path` and takes its lock (LockedError if held). */
  open(path: string, options: OpenStorageOptions): Promise<AsyncStorePages>;
}

export type StorageBackend = SyncBackend | AsyncBackend;
