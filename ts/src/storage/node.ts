/**
 * `node`: a synchronous backend on Node's `fs` (openSync/readSync/writeSync/fdatasyncSync/
 * ftruncateSync). The store at `path` is the data file `path` and the log `path + '-log'`;
 * page faults are served inside the wasm call, so the whole API is synchronous.
 *
 * Errors: ENOSPC/EDQUOT reach the API as QuotaExceededError, every other errno as IoError
 * (the fs error is the `cause`).
 *
 * Locking: Node has no flock, so the lock is a file `path + '-lock'` holding the owner's pid,
 * linked into place already written (see takeLock). A lock whose pid is dead (`process.kill(pid, 0)` fails with
 * ESRCH) is stale and taken over; a live one gives LockedError. A second open of the same
 * path in this process is refused too (LockedError), before the lock file is looked at, and so
 * is one of the same files under another name (by device and inode: a directory renamed or
 * bind-mounted while open). A lock naming a live pid whose start (/proc) is not the one the
 * lock records is stale as well (the pid was reused).
 * Limits: the pid test is per host (a store on a network share used by two hosts is not
 * protected). A stale lock is removed under `path + '-lock.break'` (see takeLock).
 */
import { InvalidArgumentError, IoError, LockedError, QuotaExceededError } from '../errors.js';
import { absentLog, filesGone, refuseNamesOfAnotherStore } from './names.js';
import type { OpenStorageOptions, SyncBackend, SyncFile, SyncStoreFiles } from './types.js';

/** The part of node:fs this backend uses (the package builds without @types/node). */
interface NodeFs {
  openSync(path: string, flags: number, mode?: number): number;
  closeSync(fd: number): void;
  readSync(fd: number, buf: Uint8Array, offset: number, length: number, position: number): number;
  writeSync(fd: number, buf: Uint8Array, offset: number, length: number, position: number | null): number;
  fdatasyncSync(fd: number): void;
  ftruncateSync(fd: number, len: number): void;
  fstatSync(fd: number): { size: number; ino: number; dev: number; nlink: number };
  readFileSync(path: string, enc: 'utf8'): string;
  unlinkSync(path: string): void;
  linkSync(existingPath: string, newPath: string): void;
  statSync(path: string): { mtimeMs: number; isDirectory(): boolean };
  realpathSync: ((path: string) => string) & { native?: (path: string) => string };
  readlinkSync?(path: string): string;
  readdirSync(path: string): string[];
  constants: { O_RDWR: number; O_RDONLY: number; O_CREAT: number; O_EXCL: number; O_WRONLY: number; O_TRUNC: number };
}
interface NodePath {
  resolve(...p: string[]): string;
  dirname(p: string): string;
  basename(p: string): string;
  join(...p: string[]): string;
}

/**
 * The store's path with symlinks resolved (of the file, or of its directory when the file
 * does not exist yet): a store opened through a symlink and through its target would
 * otherwise take two locks and write two logs beside one data file. (Hard links are not
 * told apart.)
 */
function canonical(fs: NodeFs, np: NodePath, path: string): string {
  // The system's realpath on the path as given: `resolve` (and fs.realpathSync's JS version,
  // which resolves first) takes `a/link/../x.db` for `a/x.db`, where the system goes through
  // the link first (a probe, session 34: an empty store was created beside the existing one).
  const real = fs.realpathSync.native ?? fs.realpathSync;
  try {
    return real(path);
  } catch {
    try {
      return np.join(real(np.dirname(path)), np.basename(path));
    } catch {
      return np.resolve(path);
    }
  }
}
interface NodeProcess {
  pid: number;
  kill(pid: number, signal: number): boolean;
  getBuiltinModule?(name: string): unknown;
  on?(event: 'exit', listener: () => void): unknown;
}

/**
 * The stores a worker thread has open and never shared, closed when the thread ends. Another
 * thread of this process cannot tell a live thread from an ended one (the pid is the same), so
 * without this a thread that ended without `close()` left its stores locked until the process
 * exited. Node runs `process.on('exit')` in a worker thread that returns, calls
 * `process.exit()` or throws; not in one ended by `worker.terminate()`, whose locks stay.
 * A shared store stays locked: the threads it was given to may still write through its files.
 */
const closeAtThreadExit = new Set<{ close(): void; shared: boolean }>();
let exitHookSet = false;

function closeAtExit(proc: NodeProcess, threadId: number, files: { close(): void; shared: boolean }): void {
  if (threadId === 0) return; // the main thread's locks name a pid that is gone with it
  closeAtThreadExit.add(files);
  if (exitHookSet || typeof proc.on !== 'function') return;
  exitHookSet = true;
  proc.on('exit', () => {
    for (const f of closeAtThreadExit) {
      if (f.shared) continue;
      try {
        f.close();
      } catch {
        /* ending anyway: nothing to report it to */
      }
    }
    closeAtThreadExit.clear();
  });
}

let mods: { fs: NodeFs; path: NodePath; proc: NodeProcess; threadId: number } | undefined;

async function nodeModules(): Promise<{ fs: NodeFs; path: NodePath; proc: NodeProcess; threadId: number }> {
  if (mods !== undefined) return mods;
  const proc = (globalThis as { process?: NodeProcess }).process;
  if (proc === undefined) throw new InvalidArgumentError("the 'node' storage needs Node.js (or a runtime with node:fs)");
  // Hidden from bundlers: this file is only loaded where node:fs exists.
  const fsName = 'node:fs', pathName = 'node:path', wtName = 'node:worker_threads';
  const fs = (proc.getBuiltinModule?.(fsName) ?? (await import(/* @vite-ignore */ /* webpackIgnore: true */ fsName))) as NodeFs;
  const path = (proc.getBuiltinModule?.(pathName) ?? (await import(/* @vite-ignore */ /* webpackIgnore: true */ pathName))) as NodePath;
  let threadId = 0;
  try {
    const wt = (proc.getBuiltinModule?.(wtName) ?? (await import(/* @vite-ignore */ /* webpackIgnore: true */ wtName))) as { threadId?: number };
    threadId = typeof wt.threadId === 'number' ? wt.threadId : 0;
  } catch {
    // (a runtime without worker threads: one thread)
  }
  mods = { fs, path, proc, threadId };
  return mods;
}

/** Absolute paths of the stores open in this thread, with their data files (`dev:ino`; '' while
 * the open runs): a path whose file is another one now (the store's directory renamed, and a new
 * store made at the old path) is not that store (it was refused, a probe, session 34). */
const openPaths = new Map<string, string>();
/** The data files (`dev:ino`) of the stores this thread has open, by their store's path. A
 * store's directory renamed (or bind-mounted elsewhere) while open gives its files a second name
 * that openPaths does not know: an open under it took the lock of this very thread for a stale
 * one, and two stores wrote one file (a probe, session 34: a resolved commit lost). (The data
 * file, held open, keeps its inode; a lock file's, once unlinked, went to another file, and an
 * unrelated store was refused.) */
const openFiles = new Map<string, string>();
const fileKey = (st: { dev: number; ino: number }) => `${st.dev}:${st.ino}`;

function errnoOf(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

class NodeFile implements SyncFile {
  /** The data file's names were checked since its last sync (namesChecked). */
  #checked = false;

  /** `store`: the descriptors of every file of the store (this one among them), checked at each
   * sync (a commit's flush) and before the data file's first write or cut after one. */
  constructor(private readonly fs: NodeFs, readonly fd: number, private readonly store: readonly number[] = [fd]) {}

  read(dst: Uint8Array, offset: number): number {
    let done = 0;
    while (done < dst.length) {
      const n = this.fs.readSync(this.fd, dst, done, dst.length - done, offset + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  write(src: Uint8Array, offset: number): void {
    this.#beforeDataChange();
    let done = 0;
    while (done < src.length) {
      done += this.fs.writeSync(this.fd, src, done, src.length - done, offset + done);
    }
  }

  sync(): void {
    // A store whose files were deleted while open (rm, or its directory removed) took every
    // commit after that into files nobody can open again, and said nothing (a new-user probe,
    // session 27): a commit now fails while any of its files has no name left.
    this.#checkNames();
    this.fs.fdatasyncSync(this.fd);
    this.#checked = false;
  }

  size(): number {
    return this.fs.fstatSync(this.fd).size;
  }

  truncate(size: number): void {
    this.#beforeDataChange();
    this.fs.ftruncateSync(this.fd, size);
  }

  /** The data file changes only in a checkpoint (and at creation), which copies the log into it:
   * with the log deleted, those writes replaced committed pages that no log could finish any more
   * (a probe, session 30: close() after `rm store-log` left a store that was CORRUPT on reopen,
   * the state checkpointed before lost too). Its first write or cut after each sync checks that
   * every file still has a name, before anything changes. */
  #beforeDataChange(): void {
    if (this.#checked || this.fd !== this.store[0]) return;
    this.#checkNames();
    this.#checked = true;
  }

  #checkNames(): void {
    for (const fd of this.store) {
      if (this.fs.fstatSync(fd).nlink === 0) throw filesGone(new IoError(`its ${fd === this.store[0] ? 'data file' : 'log'} was deleted while the store was open: nothing written since can be kept`));
    }
  }
}

function pidAlive(proc: NodeProcess, pid: number): boolean {
  try {
    proc.kill(pid, 0);
    return true;
  } catch (e) {
    return errnoOf(e) !== 'ESRCH'; // EPERM: alive, another user's
  }
}

/** The start (field 22 of /proc/<pid>/stat) of process `pid`, or '' where it cannot be read. */
function startOf(fs: NodeFs, pid: number | 'self'): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');  // (fields from the third on)
    return /^\d+$/.test(f[19] ?? '') ? f[19]! : '';
  } catch {
    return '';
  }
}

/** Whether `p` is a directory (false where it cannot be told). */
function isDirectory(fs: NodeFs, p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** An empty lock file older than this is stale (its writer died before writing its pid). */
const EMPTY_LOCK_STALE_MS = 10_000;
/** This process's start (clock ticks after boot, field 22 of /proc/self/stat), the same in
 * each of its threads and another for a later process with the same pid; '' where there is no
 * /proc. A lock records it (`<pid>[ thread <n>] start <ticks>`). */
let startTicks: string | undefined;
function processStart(fs: NodeFs): string {
  startTicks ??= startOf(fs, 'self');
  return startTicks;
}

/** What this thread's lock file holds. */
function lockTextOf(fs: NodeFs, proc: NodeProcess, threadId: number): string {
  const start = processStart(fs);
  return `${proc.pid}${threadId === 0 ? '' : ` thread ${threadId}`}${start === '' ? '' : ` start ${start}`}`;
}
/** A `.break` file older than this is stale (its process died while removing a stale lock). */
const BREAK_STALE_MS = 5_000;

/** Takes the lock file; throws LockedError when a live process holds it.
 *
 * The lock appears with the pid already in it: the pid is written to a file of this process's
 * own (`lock.<pid>`), which is then hard-linked to the lock's name (the link fails when the
 * lock exists, as O_EXCL does). Created with O_EXCL and then written, a lock was empty for a
 * moment; a process killed in that moment left an empty lock, which every later open took for
 * one being written: the store stayed locked for good (a kill test hit it). Where the file
 * system has no hard links, the lock is created with O_EXCL as before; an empty lock older
 * than EMPTY_LOCK_STALE_MS counts as stale. */
function takeLock(fs: NodeFs, proc: NodeProcess, threadId: number, lockPath: string, storePath: string, dir: string, noCreate?: string): void {
  // The pid, and the worker thread past the main one: `openPaths` is per thread (each worker
  // loads its own copy of this module), so a lock of this pid from another thread is held.
  const pidBytes = new TextEncoder().encode(lockTextOf(fs, proc, threadId));
  const write = (fd: number) => {
    try {
      fs.writeSync(fd, pidBytes, 0, pidBytes.length, 0);
      fs.fdatasyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  };
  const own = threadId === 0 ? `${lockPath}.${proc.pid}` : `${lockPath}.${proc.pid}.${threadId}`;
  let linked = true;
  const removeOwn = () => {
    try {
      fs.unlinkSync(own);
    } catch {
      // (gone already)
    }
  };
  try {
    write(fs.openSync(own, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o644));
  } catch (e) {
    removeOwn(); // a full disk can fail the write after the create
    // The first file the open creates: ENOENT here is the store's directory missing, which the
    // message says, naming it (it was "cannot create the lock file …/x.db-lock.<pid>: ENOENT",
    // for the README's own `open('data/index.db')` run where there is no data/).
    // Only where the directory is indeed missing: ENOENT from a directory that is there (a
    // file system that refuses new files, such as /proc) was said to be a missing directory
    // too (a level probe, session 35). An open that creates nothing (`noCreate`, its reason)
    // finds no store there, as for a missing data file.
    if (errnoOf(e) === 'ENOENT' && !isDirectory(fs, dir)) {
      if (noCreate !== undefined) throw new InvalidArgumentError(`no store at ${storePath} (${noCreate}; its directory ${dir} does not exist)`, { cause: e });
      throw new IoError(`cannot open ${storePath}: its directory ${dir} does not exist (open creates the store's files, not directories)`, { cause: e });
    }
    throw fileError(`cannot create the lock file ${own}`, e);
  }
  // Creates the lock: true, or false when it exists. The first failure other than EEXIST
  // of a link means no hard links here: O_EXCL from then on.
  const create = (): boolean => {
    if (linked) {
      try {
        fs.linkSync(own, lockPath);
        return true;
      } catch (e) {
        const code = errnoOf(e);
        if (code === 'EEXIST') return false;
        if (code === 'ENOENT') throw new IoError(`cannot create the lock file ${lockPath}: ${(e as Error).message}`, { cause: e });
        linked = false;
      }
    }
    let fd: number;
    try {
      fd = fs.openSync(lockPath, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644);
    } catch (e) {
      if (errnoOf(e) === 'EEXIST') return false;
      throw fileError(`cannot create the lock file ${lockPath}`, e);
    }
    try {
      write(fd);
    } catch (e) {
      try {
        fs.unlinkSync(lockPath); // not left empty for others to wait on
      } catch {
        // (its removal is what EMPTY_LOCK_STALE_MS is for)
      }
      throw fileError(`cannot write the lock file ${lockPath}`, e);
    }
    return true;
  };
  // Removing a stale lock takes `<lock>.break` first, and looks at the lock again under it:
  // two processes that both read the same stale lock took turns, and the second removed the
  // lock the first had just taken, so both held the store (a probe: 3 of 26 takeovers of a
  // killed writer's lock by six openers at once). A `.break` left by a process killed while
  // it held it is stale after BREAK_STALE_MS.
  const breakPath = lockPath + '.break';
  const takeBreak = (): boolean => {
    for (let tries = 0; tries < 2; tries++) {
      try {
        fs.closeSync(fs.openSync(breakPath, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644));
        return true;
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw fileError(`cannot create ${breakPath}`, e);
      }
      try {
        if (Date.now() - fs.statSync(breakPath).mtimeMs < BREAK_STALE_MS) return false;
        fs.unlinkSync(breakPath);
      } catch (e) {
        if (errnoOf(e) !== 'ENOENT') throw fileError(`cannot remove the stale ${breakPath}`, e);
      }
    }
    return false;
  };
  const busy = () => new LockedError(`the store ${storePath} is being opened by another process (lock file ${lockPath})`);
  try {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (create()) return;
      let text = '';
      let ageMs = 0;
      try {
        text = readLockText(fs, lockPath);
        ageMs = Date.now() - fs.statSync(lockPath).mtimeMs;
      } catch (e2) {
        if (errnoOf(e2) === 'ENOENT') continue; // released meanwhile
        throw new IoError(`cannot read the lock file ${lockPath}`, { cause: e2 });
      }
      // Not what a lock holds (a pid, '<pid> thread <n>', '<pid> flock'): another file of that
      // name, such as a store's data file, never to be removed as a stale lock.
      if (text !== '' && !/^\d+( thread \d+)?( start \d+)?( flock)?\s*$/.test(text)) {
        throw new InvalidArgumentError(`cannot open the store ${storePath}: ${lockPath}, its lock file's name, is a file that is not a lock (another store's data file?); give one of them another name`);
      }
      const pid = Number.parseInt(text, 10);
      const thread = Number(/ thread (\d+)/.exec(text)?.[1] ?? 0);
      // An empty file: its owner is between creating and writing it (O_EXCL), unless it has
      // been empty for longer than that takes. This process: held by another of its threads
      // (two worker threads opened one store, both writing: one's commits were lost), stale
      // if this thread's (it has the path in openPaths while open). No thread can tell
      // whether another still runs: a thread closes its unshared stores as it ends
      // (closeAtExit), except when terminate()d.
      const ours = pid === proc.pid;
      // A lock of this pid from another start is not any of this process's threads': it is a
      // process's that had the pid before and is gone (a container restarted runs as pid 1
      // again: the lock a worker thread of the killed one held, "1 thread 1", refused every
      // restart as held by a thread of this process; a probe, session 32). Told by the start
      // the lock records, not by its age: a lock's mtime moved back, or the clock moved on,
      // made a live thread's lock look older than the process, and two threads wrote.
      const lockStart = / start (\d+)/.exec(text)?.[1];
      const before = ours && lockStart !== undefined && processStart(fs) !== '' && lockStart !== processStart(fs);
      // ('<pid> flock' of this pid: the 'deno' backend of this Deno process holds it)
      // Another pid: held while that process runs, and is the one that wrote the lock: a pid
      // the system gave to an unrelated process since is not (the store stayed locked until
      // that process ended, although the lock recorded another start; a probe, session 34).
      const otherStart = !ours && lockStart !== undefined ? startOf(fs, pid) : '';
      const held = text === '' ? ageMs < EMPTY_LOCK_STALE_MS : Number.isInteger(pid) && pid > 0 && (ours ? !before && (thread !== threadId || /\bflock\b/.test(text)) : pidAlive(proc, pid) && (otherStart === '' || otherStart === lockStart));
      if (held) {
        // (a thread ended by worker.terminate() runs no code: its locks stay until the process exits)
        const who = ours ? (thread === 0 ? 'the main thread of this process' : `worker thread ${thread} of this process (or was, if that thread was ended by worker.terminate(): its stores stay locked until the process exits)`) : `process ${text || '(starting)'}`;
        throw new LockedError(`the store ${storePath} is open in ${who} (lock file ${lockPath})`);
      }
      // Stale: its process is gone (or it was this thread's, which has no open handle on it).
      if (!takeBreak()) throw busy();
      try {
        let again: string;
        try {
          again = readLockText(fs, lockPath);
        } catch (e3) {
          if (errnoOf(e3) === 'ENOENT') continue; // released or removed meanwhile
          throw fileError(`cannot read the lock file ${lockPath}`, e3);
        }
        if (again !== text) continue; // another process's lock by now: look at it again
        try {
          fs.unlinkSync(lockPath);
        } catch (e3) {
          if (errnoOf(e3) !== 'ENOENT') throw fileError(`cannot remove the stale lock file ${lockPath}`, e3);
        }
      } finally {
        removeQuietly(fs, breakPath);
      }
    }
    throw busy();
  } finally {
    removeOwn();
  }
}

/** The file a lock's name stands for (device and inode), or null where it cannot be read. */
interface LockId {
  dev: number;
  ino: number;
}

function lockIdOf(fs: NodeFs, lockPath: string): LockId | null {
  try {
    const fd = fs.openSync(lockPath, fs.constants.O_RDONLY);
    try {
      const st = fs.fstatSync(fd);
      return { dev: st.dev, ino: st.ino };
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/**
 * Removes the lock file if it is still the one this open took (the same file, holding this
 * thread's text); the error of a failed removal, else undefined. A store's directory removed
 * and made again under an open store holds another opener's lock by then: close() removed it by
 * name, and a third process then opened the store beside the second, both writing (a probe,
 * session 32: resolved commits lost).
 */
function releaseLock(fs: NodeFs, lockPath: string, id: LockId | null, text: string): unknown {
  if (id !== null) {
    const now = lockIdOf(fs, lockPath);
    if (now === null || now.dev !== id.dev || now.ino !== id.ino) return undefined;
  }
  try {
    if (readLockText(fs, lockPath).trim() !== text) return undefined;
  } catch (e) {
    return errnoOf(e) === 'ENOENT' ? undefined : e;
  }
  try {
    fs.unlinkSync(lockPath);
  } catch (e) {
    if (errnoOf(e) !== 'ENOENT') return e;
  }
  return undefined;
}

/** A lock file's text: at most 128 bytes are read (a lock holds a pid; a longer file is not a
 * lock, and may be a store of gigabytes), so the text of a longer one ends in a NUL. */
function readLockText(fs: NodeFs, lockPath: string): string {
  const fd = fs.openSync(lockPath, fs.constants.O_RDONLY);
  try {
    const buf = new Uint8Array(129);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return new TextDecoder().decode(buf.subarray(0, Math.min(n, 128))) + (n > 128 ? '\u0000' : '');
  } finally {
    fs.closeSync(fd);
  }
}

/** An error of the lock's files: QuotaExceededError on a full disk, else IoError. */
function fileError(what: string, e: unknown): Error {
  const code = errnoOf(e);
  if (code === 'ENOSPC' || code === 'EDQUOT') return new QuotaExceededError(`${what}: ${(e as Error).message}`, { cause: e });
  return new IoError(`${what}: ${(e as Error).message}`, { cause: e });
}

/**
 * Removes the `<lock>.<pid>[.<thread>]` files of processes that are gone: takeLock writes one and
 * removes it again, but a process killed in between (a probe: 13 of 20 kills during open)
 * left it for good. Called with the lock held.
 */
function removeDeadOwnFiles(fs: NodeFs, np: NodePath, proc: NodeProcess, lockPath: string): void {
  const base = np.basename(lockPath) + '.';
  let names: string[];
  try {
    names = fs.readdirSync(np.dirname(lockPath));
  } catch {
    return;
  }
  for (const n of names) {
    if (!n.startsWith(base)) continue;
    const m = /^(\d+)(?:\.\d+)?$/.exec(n.slice(base.length));
    if (m === null) continue;
    const pid = Number(m[1]);
    if (pid !== proc.pid && pid > 0 && !pidAlive(proc, pid)) removeQuietly(fs, np.join(np.dirname(lockPath), n));
  }
}

export interface NodeStorage extends SyncBackend {
  open(path: string, options: OpenStorageOptions): Promise<SyncStoreFiles>;
}

/** The path the file open on `fd` has now (Linux's /proc/self/fd), or undefined: none, deleted,
 * or no /proc. */
function pathNow(fs: NodeFs, fd: number): string | undefined {
  try {
    const p = fs.readlinkSync?.(`/proc/self/fd/${fd}`);
    return typeof p === 'string' && p.startsWith('/') && !p.endsWith(' (deleted)') ? p : undefined;
  } catch {
    return undefined;
  }
}

/** Closes every descriptor; the first error, if any. */
function closeAll(fs: NodeFs, fds: readonly number[]): unknown {
  let err: unknown;
  for (const fd of fds) {
    try {
      fs.closeSync(fd);
    } catch (e) {
      err ??= e;
    }
  }
  return err;
}

function removeQuietly(fs: { unlinkSync(p: string): void }, p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    /* gone already */
  }
}

export const nodeStorage: NodeStorage = {
  kind: 'sync',
  name: 'node',
  /** The files of a store another thread of this process opened (its SyncStoreFiles#share):
   * opened again here, without the lock (the owner holds it); close() closes these two.
   * Not the owner's descriptors: Node closes the descriptors a worker thread opened when it
   * ends, so a store shared by a thread that then ended went on writing through numbers that
   * the process had since given to other files (a probe's commit landed in an unrelated file).
   * The files opened here must be the ones the owner opened (device and inode). */
  async attach(shared: unknown): Promise<SyncStoreFiles> {
    const d = shared as { path?: unknown; ids?: unknown; readOnly?: unknown } | null;
    const abs = d?.path, ids = d?.ids, readOnly = d?.readOnly === true;
    // (ids: dev and inode of the data file, then of the log; a reader without a log has none)
    if (typeof abs !== 'string' || abs === '' || !Array.isArray(ids) || !(ids.length === 4 || (readOnly && ids.length === 2)) || !ids.every((x) => typeof x === 'number')) {
      throw new InvalidArgumentError('node: not a description of shared store files');
    }
    const { fs } = await nodeModules();
    const fds: number[] = [];
    try {
      for (const [i, p] of [abs, abs + '-log'].slice(0, ids.length / 2).entries()) {
        const fd = fs.openSync(p, readOnly ? fs.constants.O_RDONLY : fs.constants.O_RDWR);
        fds.push(fd);
        const st = fs.fstatSync(fd);
        if (st.dev !== ids[2 * i] || st.ino !== ids[2 * i + 1]) throw new Error('it is not the file the store was opened on (replaced or moved since)');
      }
    } catch (e) {
      for (const fd of fds) fs.closeSync(fd);
      throw new IoError(`cannot open the shared store ${abs}: ${(e as Error).message}`, { cause: e });
    }
    let closed = false;
    return {
      data: new NodeFile(fs, fds[0]!, fds),
      log: fds.length === 1 ? absentLog() : new NodeFile(fs, fds[1]!, fds),
      close() {
        if (closed) return;
        closed = true;
        const err = closeAll(fs, fds);
        if (err !== undefined) throw new IoError(`closing ${abs}: ${(err as Error).message}`, { cause: err });
      },
    };
  },
  async open(path: string, options: OpenStorageOptions): Promise<SyncStoreFiles> {
    const { fs, path: np, proc, threadId } = await nodeModules();
    // (a store is a file: 'x.db/' opened the file x.db, where the system says ENOTDIR)
    if (/[\\/]$/.test(path)) throw new InvalidArgumentError(`the store path ${path} ends in a separator: a store is a file (its data file), not a directory`);
    const abs = canonical(fs, np, path);
    let st: { dev: number; ino: number; nlink: number } | undefined;
    try {
      st = fs.statSync(abs) as unknown as { dev: number; ino: number; nlink: number };
    } catch {
      st = undefined; // (not there: not an open store's)
    }
    const held = openPaths.get(abs);
    if (held !== undefined && (held === '' || (st !== undefined && fileKey(st) === held))) throw new LockedError(`the store ${abs} is already open in this process`);
    refuseNamesOfAnotherStore(abs, (p) => fs.statSync(p));
    const lockPath = abs + '-lock';
    // The same files under another name (a directory renamed or bind-mounted while open).
    // (a data file with hard links is refused below, saying so)
    const other = st === undefined || st.nlink > 1 ? undefined : openFiles.get(fileKey(st));
    if (other !== undefined) throw new LockedError(`the store ${abs} is already open in this process, as ${other} (its files have both names: a directory renamed or mounted elsewhere)`);
    openPaths.set(abs, '');
    let locked = false;
    const fds: number[] = [];
    const created: string[] = []; // by this open: removed again if the store's open fails
    const readOnly = options.readOnly === true;
    let logAbsent = false;
    const lockText = lockTextOf(fs, proc, threadId);
    let lockId: LockId | null = null;
    try {
      takeLock(fs, proc, threadId, lockPath, abs, np.dirname(abs), options.create ? undefined : readOnly ? 'readOnly: true creates nothing' : 'create: false');
      locked = true;
      lockId = lockIdOf(fs, lockPath);
      removeDeadOwnFiles(fs, np, proc, lockPath);
      const { O_RDWR, O_RDONLY, O_CREAT, O_EXCL } = fs.constants;
      for (const p of [abs, abs + '-log']) {
        try {
          // A reader's files read-only: it writes nothing to them, and a store whose files are
          // read-only (chmod 0444) is then readable (O_RDWR failed with EACCES, session 25).
          fds.push(fs.openSync(p, readOnly ? O_RDONLY : O_RDWR));
        } catch (e) {
          if (errnoOf(e) !== 'ENOENT') throw new IoError(`cannot open ${p}: ${(e as Error).message}`, { cause: e });
          // A data file without its log (copied alone, as a backup of a closed store is): the
          // store. A writer creates the log, create: false or not; a reader reads it without.
          if (p !== abs && readOnly) {
            logAbsent = true;
            continue;
          }
          if (!options.create && p === abs) throw new InvalidArgumentError(`no store at ${abs} (${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`, { cause: e });
          try {
            fds.push(fs.openSync(p, O_RDWR | O_CREAT | O_EXCL, 0o644));
            created.push(p);
          } catch (e2) {
            if (errnoOf(e2) === 'ENOENT') throw new IoError(`cannot create ${p}: its directory ${np.dirname(abs)} does not exist`, { cause: e2 });
            throw new IoError(`cannot create ${p}: ${(e2 as Error).message}`, { cause: e2 });
          }
        }
      }
      // A file of the store with another name (a hard link) is the file of a second store to
      // the lock files, which go by name: two writers, commits lost. Node has no flock to
      // lock the file itself (Deno's backend does), so a writer refuses such files; a reader
      // writes nothing and may read them.
      if (!readOnly) {
        for (const [i, fd] of fds.entries()) {
          const links = fs.fstatSync(fd).nlink;
          if (links > 1) {
            throw new InvalidArgumentError(
              `${i === 0 ? abs : abs + '-log'} has ${links} names (hard links): opened under another name it would be a second store writing the same file, and commits would be lost. Copy the store's files instead of linking them (a reader, readOnly: true, may open it)`,
            );
          }
        }
      }
    } catch (e) {
      for (const p of created) removeQuietly(fs, p);
      for (const fd of fds) fs.closeSync(fd);
      if (locked) releaseLock(fs, lockPath, lockId, lockText);
      if (openPaths.get(abs) === '') openPaths.delete(abs);
      throw e;
    }
    const dataKey = fileKey(fs.fstatSync(fds[0]!));
    openFiles.set(dataKey, abs);
    openPaths.set(abs, dataKey);
    let closed = false;
    const atExit = { shared: false, close: () => files.close() };
    const files: SyncStoreFiles = {
      data: new NodeFile(fs, fds[0]!, fds),
      log: logAbsent ? absentLog() : new NodeFile(fs, fds[1]!, fds),
      // Another thread opens the files again (nodeStorage.attach), and checks that they are
      // these (a reader's: read-only, the log only if it has one).
      share: () => {
        atExit.shared = true;
        const ids = fds.flatMap((fd) => {
          const st = fs.fstatSync(fd);
          return [st.dev, st.ino];
        });
        return { path: abs, ids, readOnly };
      },
      close(discardCreated?: boolean) {
        if (closed) return;
        closed = true;
        closeAtThreadExit.delete(atExit);
        // Where the data file is now: its directory renamed while open took the lock file along,
        // and close() left it there, named by this process, so the store stayed locked for
        // every other one until this process ended (a probe, session 34).
        const now = pathNow(fs, fds[0]!);
        let err = closeAll(fs, fds);
        // (before the lock goes: no one else can have begun using them)
        if (discardCreated === true) for (const p of created) removeQuietly(fs, p);
        if (now !== undefined && now !== abs) err ??= releaseLock(fs, now + '-lock', lockId, lockText);
        err ??= releaseLock(fs, lockPath, lockId, lockText);
        if (openFiles.get(dataKey) === abs) openFiles.delete(dataKey);
        if (openPaths.get(abs) === dataKey) openPaths.delete(abs);
        if (err !== undefined) throw new IoError(`closing ${abs}: ${(err as Error).message}`, { cause: err });
      },
    };
    closeAtExit(proc, threadId, atExit);
    return files;
  },
};
