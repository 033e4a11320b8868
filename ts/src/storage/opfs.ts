/**
 * `opfs`: a synchronous backend on the browser's Origin Private File System, through
 * `FileSystemSyncAccessHandle` (read/write at an offset, flush, getSize, truncate). Those
 * handles exist only in dedicated workers, so a store on `opfs` is opened inside a Worker;
 * there the whole API is synchronous, as on Node files. The store at `path` ('db/x') is the
 * file `x` and the log `x-log` in the directory `db/` of the origin's OPFS root (nested
 * directories are created as needed; `.`/`..` and empty parts are refused).
 *
 * Errors: a write the browser refuses for quota (a DOMException named QuotaExceededError)
 * becomes our QuotaExceededError, any other failure an IoError; the DOMException is `cause`.
 *
 * Locking: a Web Lock named `adaptree:opfs:<path>` (`navigator.locks`, shared by every tab
 * and worker of the origin), requested with `ifAvailable` and held until close: a second open
 * anywhere in the origin throws LockedError at once and touches nothing. With `wait: true` the
 * open queues for the lock instead. The browser drops the lock when the tab or worker that
 * holds it goes away (reload, crash), so there are no stale locks. The sync access handles
 * are exclusive too ('readwrite-unsafe' ones, so that workers the store is shared with can
 * open their own: no 'readwrite' or 'read-only' handle can be open beside them); a
 * NoModificationAllowedError from createSyncAccessHandle (a handle open by code that does not
 * take the lock) is also a LockedError. Workers a store is shared with hold the lock
 * `adaptree:opfs-attached:<path>` (shared) while attached, and an open waits for it to be free
 * (docs/THREADS.md, "Stores": their lock outlives an owner worker that is terminated).
 *
 * Readers (`readOnly: true`) take the same Web Lock in 'shared' mode and open 'read-only'
 * access handles: any number of readers, or one writer. A reader while the writer is open
 * gets LockedError at once (or waits with `wait: true`), and so does a writer while readers
 * are open: OPFS cannot give a reader a stable view while a writer changes the files. Seen
 * in headless Chromium 156: while a 'readwrite' handle is open, createSyncAccessHandle in any
 * mode (and createWritable) fails with NoModificationAllowedError; only getFile() works, an
 * asynchronous read of bytes the writer keeps changing (no page faults inside a wasm call,
 * no consistent view across the data file and the log).
 */
import { ClosedError, InvalidArgumentError, IoError, LockedError, QuotaExceededError } from '../errors.js';
import { isWellFormed } from '../encoding/utf8.js';
import { absentLog, refuseNamesOfAnotherStore } from './names.js';
import type { OpenStorageOptions, SyncBackend, SyncFile, SyncStoreFiles } from './types.js';
import { lockFree, lockHeld, takeLock, type LockManager } from './web-locks.js';
export { webLocksReleased as opfsLocksReleased } from './web-locks.js';

/** The part of FileSystemSyncAccessHandle used here (the package builds with the DOM lib only). */
export interface OpfsAccessHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number;
  write(buffer: Uint8Array, options?: { at?: number }): number;
  flush(): void;
  getSize(): number;
  truncate(size: number): void;
  close(): void;
  /** The handle's mode where the browser has modes (Chromium 121+): 'readwrite-unsafe' ones
   * can be open in several workers at once. */
  readonly mode?: string;
}
type HandleMode = 'readwrite' | 'read-only' | 'readwrite-unsafe';
interface FileHandle {
  createSyncAccessHandle?(options?: { mode?: 'readwrite' | 'read-only' | 'readwrite-unsafe' }): Promise<OpfsAccessHandle>;
}
interface DirHandle {
  getDirectoryHandle(name: string, options?: { create?: boolean }): Promise<DirHandle>;
  getFileHandle(name: string, options?: { create?: boolean }): Promise<FileHandle>;
  removeEntry?(name: string): Promise<void>;
}
interface Nav {
  storage?: { getDirectory?(): Promise<DirHandle> };
  locks?: LockManager;
}

const nav = () => (globalThis as { navigator?: Nav }).navigator;

/** True where OPFS sync access handles can be created: a dedicated worker with OPFS. */
export function opfsSyncAvailable(): boolean {
  const n = nav();
  const fh = (globalThis as { FileSystemFileHandle?: { prototype: FileHandle } }).FileSystemFileHandle;
  return typeof n?.storage?.getDirectory === 'function' && typeof fh?.prototype.createSyncAccessHandle === 'function';
}

const nameOf = (e: unknown) => (e as { name?: unknown } | null)?.name;

/** Shared memory (the mt build's) goes through a private buffer: not every browser takes it. */
function isShared(u: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && u.buffer instanceof SharedArrayBuffer;
}

/** Reads up to this many bytes (a page, a log frame) go through OpfsFile's own buffer. */
const SMALL_READ = 8192;
/** A small read that starts where the one before it ended reads this much at once (see
 * OpfsFile.readInto). */
const READ_AHEAD = 256 * 1024;

class OpfsFile implements SyncFile {
  /** `readAhead`: false where other workers write the same file (attach; share() turns it off). */
  constructor(private readonly h: OpfsAccessHandle, private readonly what: string, private readAhead = true) {}

  /** Small reads (a page fault's 4 KiB) land here and are copied out: Chromium's read() into a
   * small buffer of its own plus a 4 KiB copy costs less than a read() into a view of the wasm
   * memory (bench/browser/diagnose.mjs split), and a shared memory needs a copy anyway. */
  private small: Uint8Array | undefined;
  private page: Uint8Array | undefined;  // its first 4 KiB
  /** One options object for every read: read() takes the offset before it returns. */
  private readonly opt = { at: 0 };
  /**
   * Sequential small reads (the log read back at open: a header, then a page or a delta, per
   * frame) take READ_AHEAD bytes at once and are served from them: a read() call costs the
   * same whatever its size up to far more than a page, and in a private (incognito) window
   * Chromium's cost 0.3 ms each (a session-28 probe: a 39 MB log, 42,962 reads, reopened in
   * 15.7 s after a reload). `ahead` holds the file's bytes [aheadAt, aheadAt + aheadLen);
   * any write or truncate drops them. `next`: where the last small read ended.
   */
  private ahead: Uint8Array | undefined;
  private aheadAt = 0;
  private aheadLen = 0;
  private next = -1;

  read(dst: Uint8Array, offset: number): number {
    const len = dst.length;
    if (len <= SMALL_READ) return this.readInto(dst, 0, len, offset);
    const buf = isShared(dst) ? new Uint8Array(len) : dst;
    const done = this.readAll(buf, offset);
    if (buf !== dst) dst.set(buf.subarray(0, done));
    return done;
  }

  /** Reads into buf (all of it, short of the end of the file). */
  private readAll(buf: Uint8Array, offset: number): number {
    const len = buf.length;
    let done = 0;
    try {
      while (done < len) {
        this.opt.at = offset + done;
        const n = this.h.read(done === 0 ? buf : buf.subarray(done), this.opt);
        if (n === 0) break;
        done += n;
      }
    } catch (e) {
      throw this.error('read', e);
    }
    return done;
  }

  readInto(mem: Uint8Array, at: number, len: number, offset: number): number {
    if (len > SMALL_READ) return this.read(mem.subarray(at, at + len), offset);
    if (offset >= this.aheadAt && offset + len <= this.aheadAt + this.aheadLen) {
      const from = offset - this.aheadAt;
      mem.set(this.ahead!.subarray(from, from + len), at);
      this.next = offset + len;
      return len;
    }
    if (offset === this.next && this.readAhead) {
      const ahead = (this.ahead ??= new Uint8Array(READ_AHEAD));
      this.aheadLen = 0; // (a read that throws leaves nothing behind)
      const n = this.readAll(ahead, offset);
      this.aheadAt = offset;
      this.aheadLen = n;
      const got = Math.min(len, n);
      mem.set(ahead.subarray(0, got), at);
      this.next = offset + got;
      return got;
    }
    const small = (this.small ??= new Uint8Array(SMALL_READ));
    const buf = len === 4096 ? (this.page ??= small.subarray(0, 4096)) : small.subarray(0, len);
    const n = this.readAll(buf, offset);
    mem.set(n === len ? buf : buf.subarray(0, n), at);
    this.next = offset + n;
    return n;
  }

  /** The bytes read ahead are the file's no more. */
  private dropAhead(): void {
    this.aheadLen = 0;
    this.next = -1;
  }

  /** For good: other workers are about to write the file too (share()). */
  stopReadAhead(): void {
    this.readAhead = false;
    this.dropAhead();
    this.ahead = undefined;
  }

  write(src: Uint8Array, offset: number): void {
    this.dropAhead();
    const buf = isShared(src) ? src.slice() : src;
    let done = 0;
    try {
      while (done < buf.length) {
        const n = this.h.write(buf.subarray(done), { at: offset + done });
        if (!(n > 0 && n <= buf.length - done)) throw writeRefused(n, this.what, offset + done);
        done += n;
      }
    } catch (e) {
      throw this.error('write', e);
    }
  }

  sync(): void {
    try {
      this.h.flush();
    } catch (e) {
      throw this.error('flush', e);
    }
  }

  size(): number {
    try {
      return this.h.getSize();
    } catch (e) {
      throw this.error('getSize', e);
    }
  }

  truncate(size: number): void {
    this.dropAhead();
    try {
      this.h.truncate(size);
    } catch (e) {
      throw this.error('truncate', e);
    }
  }

  private error(op: string, e: unknown): Error {
    if (e instanceof IoError || e instanceof QuotaExceededError) return e;
    const msg = `${op} ${this.what}: ${e instanceof Error ? e.message : String(e)}`;
    if (nameOf(e) === 'QuotaExceededError') return new QuotaExceededError(msg, { cause: e });
    return new IoError(msg, { cause: e });
  }
}

/** A sync handle's write() that did not write: 0, or a count past what it was given. Chromium
 * (156) does not throw at the origin's quota: it writes what fits and returns a negative
 * base::File::Error read as unsigned, 2^32 - 8 (FILE_ERROR_NO_SPACE). Added to the count, it
 * ended the loop as if all was written; flush() then succeeded, commits resolved, and were not
 * there after reopening (a probe, session 30, under Storage.overrideQuotaForOrigin). */
function writeRefused(n: number, what: string, at: number): Error {
  const code = Number.isInteger(n) && n > 2 ** 31 && n < 2 ** 32 ? n - 2 ** 32 : undefined;
  if (code === -8) return new QuotaExceededError(`writing ${what}: the browser refused to grow it at offset ${at} (no space: the origin's quota)`);
  if (code !== undefined) return new IoError(`writing ${what}: the browser's file error ${code} at offset ${at}`);
  return new IoError(`writing ${what}: ${n === 0 ? 'no progress' : `write() returned ${String(n)}`} at offset ${at}`);
}

/** 'db//x/' → ['db', 'x']; refuses '.', '..', an empty name, NUL and lone surrogates. The
 * last two: OPFS names a file `\ud800` and `\udc00` alike (U+FFFD) and cuts a name at NUL, but
 * the Web Lock is named by the path as given, so two paths were one store under two locks (a
 * new-user probe, session 23: a commit lost, another store made CORRUPT). */
function splitPath(path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts.length === 0 || parts.some((p) => p === '.' || p === '..' || p.includes('\\'))) {
    throw new InvalidArgumentError(`opfs: '${path}' is not a usable store path (names separated by '/', no '.' or '..')`);
  }
  if (path.includes('\u0000') || !isWellFormed(path)) {
    throw new InvalidArgumentError(`opfs: a store path cannot hold NUL or a lone surrogate (OPFS would name two paths' files alike)`);
  }
  return parts;
}

/** Whether `dir` holds a file `name`. */
async function hasFile(dir: DirHandle, name: string): Promise<boolean> {
  try {
    await dir.getFileHandle(name, { create: false });
    return true;
  } catch {
    return false;
  }
}

async function openHandle(dir: DirHandle, name: string, create: boolean, path: string, mode: HandleMode, created?: string[]): Promise<OpfsAccessHandle> {
  let fh: FileHandle;
  try {
    // (a file this open creates is removed again if the open fails: it left empty files on a
    // full origin, session 23)
    if (create && created !== undefined && !(await hasFile(dir, name))) created.push(name);
    fh = await dir.getFileHandle(name, { create });
  } catch (e) {
    if (nameOf(e) === 'NotFoundError') throw new InvalidArgumentError(`no store at '${path}' (opfs)`, { cause: e });
    if (nameOf(e) === 'TypeMismatchError') throw new InvalidArgumentError(`opfs: '${name}' in '${path}' is a directory`, { cause: e });
    // (creating a file on a full origin: QUOTA_EXCEEDED, as a handle's; it was IO_ERROR)
    throw handleError(e, name, path);
  }
  if (typeof fh.createSyncAccessHandle !== 'function') {
    throw new InvalidArgumentError("the 'opfs' storage needs a dedicated worker: sync access handles do not exist here");
  }
  // We hold the lock, so a handle still open is most likely a previous holder's that is going
  // away (a reloaded tab's worker: the browser may free its lock before its handles): retry
  // for a while before calling it locked.
  for (let delay = 10; ; delay *= 2) {
    try {
      // Readers share 'read-only' handles (any number of them, none while a writer's is open).
      // A writer asks for 'readwrite-unsafe' (the Web Lock keeps every other opener out, and
      // such handles exclude 'readwrite' and 'read-only' ones as a 'readwrite' handle does), so
      // that workers its store is shared with can open their own (BTreeStore#share); a browser
      // without modes ignores the option and gives a 'readwrite' handle, which is not shared.
      return await fh.createSyncAccessHandle({ mode });
    } catch (e) {
      if (nameOf(e) !== 'NoModificationAllowedError' || delay > HANDLE_RETRY_MS) throw handleError(e, name, path);
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** Retries of createSyncAccessHandle on NoModificationAllowedError: after 10, 20, ..., 640 ms (1.3 s in all). */
const HANDLE_RETRY_MS = 1000;

function handleError(e: unknown, name: string, path: string): Error {
  if (nameOf(e) === 'NoModificationAllowedError') return new LockedError(`the store '${path}' is open elsewhere (its file '${name}' has an open access handle)`, { cause: e });
  if (nameOf(e) === 'QuotaExceededError') return new QuotaExceededError(`opfs: opening '${path}': ${(e as Error).message}`, { cause: e });
  return new IoError(`opfs: cannot open '${name}' of '${path}': ${(e as Error).message}`, { cause: e });
}

/** The Web Lock that workers a store is shared with hold (shared) while attached. */
const usersLock = (parts: readonly string[]) => 'adaptree:opfs-attached:' + parts.join('/');

/** Handles other workers can open beside (Chromium's 'readwrite-unsafe'): the store can be shared. */
const shareable = (handles: OpfsAccessHandle[]) => handles.length === 2 && handles.every((h) => h.mode === 'readwrite-unsafe');

function token(): string {
  const c = (globalThis as { crypto?: { randomUUID?(): string } }).crypto;
  return c?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

export const opfsStorage: SyncBackend & { open(path: string, options: OpenStorageOptions): Promise<SyncStoreFiles> } = {
  kind: 'sync',
  name: 'opfs',
  /** The files of a store a worker of this origin opened and shared (its SyncStoreFiles#share):
   * handles of this worker's own, 'readwrite-unsafe' as the owner's; no lock (the owner holds
   * it). close() closes these handles only. */
  async attach(shared: unknown): Promise<SyncStoreFiles> {
    const parts = (shared as { parts?: unknown } | null)?.parts;
    if (!Array.isArray(parts) || parts.length === 0 || !parts.every((p) => typeof p === 'string' && p !== '')) {
      throw new InvalidArgumentError('opfs: not a description of shared store files');
    }
    if (!opfsSyncAvailable()) throw new InvalidArgumentError("the 'opfs' storage works in a dedicated worker only: attach the store in a Worker");
    const path = parts.join('/');
    const locks = nav()!.locks!;
    // The store's users lock, shared, for as long as this worker is attached: an open anywhere
    // in the origin waits for it (open() below), also after the owner's worker ended. Not to be
    // had: an open is waiting for it, so the owner is gone.
    const release = await takeLock(locks, usersLock(parts), false, path, 'shared').catch((e: unknown) => {
      throw e instanceof LockedError ? new ClosedError(`the store '${path}' is no longer open by the worker that shared it`, { cause: e }) : e;
    });
    const handles: OpfsAccessHandle[] = [];
    try {
      // The owner must still be there (its lock, named in the description): once it is gone
      // (closed, or its worker ended before this attach took the users lock) another open may
      // be writing the files already.
      const owner = (shared as { owner?: unknown }).owner;
      if (typeof owner === 'string' && (await lockHeld(locks, owner)) === false) {
        throw new ClosedError(`the store '${path}' is no longer open by the worker that shared it (closed, or its worker ended)`);
      }
      let dir = await nav()!.storage!.getDirectory!();
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p as string);
      const base = parts[parts.length - 1] as string;
      handles.push(await openHandle(dir, base, false, path, 'readwrite-unsafe'));
      handles.push(await openHandle(dir, base + '-log', false, path, 'readwrite-unsafe'));
    } catch (e) {
      for (const h of handles) h.close();
      release();
      throw e;
    }
    let closed = false;
    // (the owner and other workers write the files beside this worker: nothing read ahead)
    return {
      data: new OpfsFile(handles[0]!, `'${path}'`, false),
      log: new OpfsFile(handles[1]!, `'${path}-log'`, false),
      close() {
        if (closed) return;
        closed = true;
        try {
          for (const h of handles) h.close();
        } finally {
          release();
        }
      },
    };
  },
  async open(path: string, options: OpenStorageOptions): Promise<SyncStoreFiles> {
    const n = nav();
    if (typeof n?.storage?.getDirectory !== 'function') throw new InvalidArgumentError("the 'opfs' storage needs a browser with the Origin Private File System");
    if (!opfsSyncAvailable()) throw new InvalidArgumentError("the 'opfs' storage works in a dedicated worker only (sync access handles do not exist on the main thread): open the store in a Worker");
    if (n.locks === undefined) throw new InvalidArgumentError("the 'opfs' storage needs Web Locks (navigator.locks; a secure context)");
    const parts = splitPath(path);
    const lockName = 'adaptree:opfs:' + parts.join('/');
    const readOnly = options.readOnly === true;
    const create = options.create && !readOnly;
    const release = await takeLock(n.locks, lockName, options.wait === true, path, readOnly ? 'shared' : 'exclusive');
    let releaseOwner: (() => void) | undefined;
    const releaseAll = () => {
      releaseOwner?.();
      release();
    };
    const handles: OpfsAccessHandle[] = [];
    const created: string[] = [];
    let dirOf: DirHandle | undefined;
    let ownerLock: string | undefined;
    const removeCreated = async () => {
      for (const name of created) {
        try {
          await dirOf?.removeEntry?.(name);
        } catch {
          /* gone already, or not ours to remove */
        }
      }
    };
    try {
      // Workers a store was shared with hold its users lock while attached, and write through
      // 'readwrite-unsafe' handles that do not keep ours out. The owner's lock (this one) goes
      // when its worker is terminated, theirs stay: an open then was a second writer beside
      // them, and every key they committed was lost (a new-user probe, session 25). Wait for
      // them to close (as for a handle going away, below; with wait: true as long as it takes).
      if (!(await lockFree(n.locks, usersLock(parts), options.wait === true ? undefined : HANDLE_RETRY_MS))) {
        throw new LockedError(`the store '${path}' is still used by workers it was shared with (its owner is gone: they hold it until they close it)`);
      }
      let dir: DirHandle;
      try {
        dir = await n.storage.getDirectory();
        for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create });
      } catch (e) {
        if (nameOf(e) === 'NotFoundError') throw new InvalidArgumentError(`no store at '${path}' (opfs, ${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`, { cause: e });
        if (nameOf(e) === 'TypeMismatchError') throw new InvalidArgumentError(`opfs: a part of '${path}' is a file, not a directory`, { cause: e });
        // (a directory the origin has no room for: it was IO_ERROR, a probe, session 34)
        if (nameOf(e) === 'QuotaExceededError') throw new QuotaExceededError(`opfs: creating the directory of '${path}': ${(e as Error).message}`, { cause: e });
        throw new IoError(`opfs: cannot open the directory of '${path}': ${(e as Error).message}`, { cause: e });
      }
      const base = parts[parts.length - 1]!;
      const mode: HandleMode = readOnly ? 'read-only' : 'readwrite-unsafe';
      dirOf = dir;
      if (await hasFile(dir, base + '-log-log')) refuseNamesOfAnotherStore(path, () => undefined); // (found: its log is there)
      handles.push(await openHandle(dir, base, create, path, mode, created));
      // A data file without its log (copied alone, as a backup of a closed store is): the
      // store. A writer creates the log, create: false or not; a reader reads it without.
      if (!readOnly || (await hasFile(dir, base + '-log'))) handles.push(await openHandle(dir, base + '-log', !readOnly, path, mode, created));
      // A lock of this open's own while it is open, which a worker attaching later checks for
      // (the description names it): the owner is still there, nobody else writes.
      if (shareable(handles)) {
        const owner = `adaptree:opfs-owner:${parts.join('/')}:${token()}`;
        releaseOwner = await takeLock(n.locks, owner, false, path);
        ownerLock = owner;
      }
    } catch (e) {
      for (const h of handles) h.close();
      await removeCreated();
      releaseAll();
      throw e;
    }
    let closed = false;
    const data = new OpfsFile(handles[0]!, `'${path}'`);
    const log = handles.length > 1 ? new OpfsFile(handles[1]!, `'${path}-log'`) : undefined;
    return {
      data,
      log: log ?? absentLog(),
      // Another worker of this origin opens its own 'readwrite-unsafe' handles (opfsStorage.attach)
      // and writes through them: from then on nothing is read ahead here (it could go stale).
      share: ownerLock !== undefined ? () => {
        data.stopReadAhead();
        log?.stopReadAhead();
        return { parts, owner: ownerLock };
      } : undefined,
      close(discardCreated?: boolean) {
        if (closed) return;
        closed = true;
        let err: unknown;
        for (const h of handles) {
          try {
            h.close();
          } catch (e) {
            err ??= e;
          }
        }
        // A failed open (the core refused the files, or a full origin): the files it created go,
        // and then the lock.
        if (discardCreated === true && created.length > 0) void removeCreated().finally(releaseAll);
        else releaseAll();
        if (err !== undefined) throw new IoError(`closing '${path}': ${(err as Error).message}`, { cause: err });
      },
    };
  },
};
