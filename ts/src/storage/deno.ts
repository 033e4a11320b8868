/**
 * `deno`: a synchronous backend on `Deno.FsFile` (seekSync + readSync/writeSync,
 * syncDataSync, truncateSync). Same files as `node`: the data file `path` and the log
 * `path + '-log'`. Needs `--allow-read` and `--allow-write` for them.
 *
 * Locking: an exclusive advisory lock on the data file (`FsFile.tryLockSync(true)`, flock),
 * which the OS drops when the process dies, so there are no stale locks among Deno processes
 * (and the native tool, which takes the same flock). Node has no flock: its backend takes the
 * lock file `path + '-lock'` holding its pid, so a Deno store takes that file too (writing
 * `<pid> flock`), and both runtimes exclude each other. A lock file found while this process
 * holds the flock is stale when it says `flock` (its writer held the flock, so it is gone) or
 * when its pid is not running; whether a pid runs is read from `/proc/<pid>` on Linux, which
 * Deno allows only under `--allow-all` (2.x: `--allow-read=/proc` is not enough). Without that (or on another OS) a lock file written by Node is
 * taken as held: LockedError, whose message names the file to remove if no process uses the
 * store. A second open of the same path in this process is refused first (LockedError).
 */
import { InvalidArgumentError, IoError, LockedError } from '../errors.js';
import { absentLog, filesGone, refuseNamesOfAnotherStore } from './names.js';
import type { OpenStorageOptions, SyncBackend, SyncFile, SyncStoreFiles } from './types.js';

/** The part of the Deno namespace this backend uses. */
interface DenoFsFile {
  seekSync(offset: number, whence: number): number;
  readSync(p: Uint8Array): number | null;
  writeSync(p: Uint8Array): number;
  syncDataSync(): void;
  truncateSync(len?: number): void;
  statSync(): { size: number; nlink?: number | null };
  tryLockSync?(exclusive?: boolean): boolean;
  lockSync(exclusive?: boolean): void;
  unlockSync(): void;
  close(): void;
}
/** Whether `p` is a directory (false where it cannot be told). */
function isDirectory(d: DenoNs, p: string): boolean {
  try {
    return (d.statSync(p) as { isDirectory?: boolean }).isDirectory === true;
  } catch {
    return false;
  }
}

interface DenoNs {
  openSync(path: string, options: { read?: boolean; write?: boolean; create?: boolean; createNew?: boolean }): DenoFsFile;
  readTextFileSync(path: string): string;
  removeSync(path: string): void;
  statSync(path: string): unknown;
  realPathSync(path: string): string;
  cwd(): string;
  pid: number;
  build: { os: string };
  errors: { NotFound: new (...a: never[]) => Error; AlreadyExists: new (...a: never[]) => Error };
}

const SEEK_START = 0;
const openPaths = new Set<string>();

function deno(): DenoNs {
  const d = (globalThis as { Deno?: DenoNs }).Deno;
  if (d === undefined) throw new InvalidArgumentError("the 'deno' storage needs Deno");
  return d;
}

function isShared(u: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && u.buffer instanceof SharedArrayBuffer;
}

class DenoFile implements SyncFile {
  #checked = false;
  /** `store`: every file of the store (this one among them), checked at each sync. */
  constructor(readonly f: DenoFsFile, private readonly store: readonly DenoFsFile[] = [f]) {}

  read(dst: Uint8Array, offset: number): number {
    // Shared memory (the mt build) is read through a private buffer.
    const buf = isShared(dst) ? new Uint8Array(dst.length) : dst;
    this.f.seekSync(offset, SEEK_START);
    let done = 0;
    while (done < buf.length) {
      const n = this.f.readSync(buf.subarray(done));
      if (n === null || n === 0) break;
      done += n;
    }
    if (buf !== dst) dst.set(buf.subarray(0, done));
    return done;
  }

  write(src: Uint8Array, offset: number): void {
    this.#beforeDataChange();
    const buf = isShared(src) ? src.slice() : src;
    this.f.seekSync(offset, SEEK_START);
    let done = 0;
    while (done < buf.length) done += this.f.writeSync(buf.subarray(done));
  }

  sync(): void {
    // A commit fails while a file of the store has no name left (deleted while open: what was
    // written since would be lost without a word; as the node backend, session 27).
    this.#checkNames();
    this.f.syncDataSync();
    this.#checked = false;
  }

  size(): number {
    return this.f.statSync().size;
  }

  truncate(size: number): void {
    this.#beforeDataChange();
    this.f.truncateSync(size);
  }

  /** As the node backend's (NodeFile): before the data file's first write or cut after a sync,
   * every file must still have a name, or a checkpoint would replace committed pages that no
   * log can finish any more (session 30). */
  #beforeDataChange(): void {
    if (this.#checked || this.f !== this.store[0]) return;
    this.#checkNames();
    this.#checked = true;
  }

  #checkNames(): void {
    for (const f of this.store) {
      if (f.statSync().nlink === 0) throw filesGone(new IoError(`its ${f === this.store[0] ? 'data file' : 'log'} was deleted while the store was open: nothing written since can be kept`));
    }
  }
}

function absolute(d: DenoNs, path: string): string {
  if (path.startsWith('/')) return path;
  const cwd = d.cwd();
  return (cwd.endsWith('/') ? cwd : cwd + '/') + path;
}

/** `absolute(path)` with symlinks resolved (of the file, or of its directory when the file
 * does not exist yet), as the node backend: one store, one lock file and one log. */
function canonical(d: DenoNs, path: string): string {
  const abs = absolute(d, path);
  try {
    return d.realPathSync(abs);
  } catch {
    const cut = abs.lastIndexOf('/');
    try {
      const dir = d.realPathSync(abs.slice(0, cut) || '/');
      return (dir.endsWith('/') ? dir : dir + '/') + abs.slice(cut + 1);
    } catch {
      return abs;
    }
  }
}

/** What `/proc` says of a pid: running, gone, or unknown (no permission, not Linux). */
function pidState(d: DenoNs, pid: number): 'alive' | 'gone' | 'unknown' {
  if (d.build.os !== 'linux') return 'unknown';
  try {
    d.statSync(`/proc/${pid}`);
    return 'alive';
  } catch (e) {
    return e instanceof d.errors.NotFound ? 'gone' : 'unknown';
  }
}

/** An empty lock file older than this is stale (node.ts has the same rule). */
const EMPTY_LOCK_STALE_MS = 10_000;

/**
 * Takes the lock file Node's backend uses (see the header); called with the data file's
 * flock held. Throws LockedError when a Node process (or one we cannot tell is gone) holds it.
 */
function takeLockFile(d: DenoNs, lockPath: string, storePath: string): void {
  for (let attempt = 0; attempt < 2; attempt++) {
    let f: DenoFsFile;
    try {
      f = d.openSync(lockPath, { write: true, createNew: true });
    } catch (e) {
      if (!(e instanceof d.errors.AlreadyExists)) throw new IoError(`cannot create the lock file ${lockPath}: ${(e as Error).message}`, { cause: e });
      let text: string;
      try {
        text = d.readTextFileSync(lockPath);
      } catch (e2) {
        if (e2 instanceof d.errors.NotFound) continue; // released meanwhile
        throw new IoError(`cannot read the lock file ${lockPath}: ${(e2 as Error).message}`, { cause: e2 });
      }
      const pid = Number.parseInt(text, 10);
      const flockHolder = /\bflock\b/.test(text);
      if (!flockHolder && (text === '' || !Number.isInteger(pid) || pid <= 0)) {
        // An empty file: a Node process without hard links between creating and writing it,
        // or a Deno process killed in that moment (it held the flock we hold now): stale once
        // it has been empty for longer than a write takes, as on Node.
        let ageMs = 0;
        try {
          const m = (d.statSync(lockPath) as { mtime: Date | null }).mtime;
          ageMs = m ? Date.now() - m.getTime() : 0;
        } catch (e2) {
          if (e2 instanceof d.errors.NotFound) continue;
          throw new IoError(`cannot read the lock file ${lockPath}: ${(e2 as Error).message}`, { cause: e2 });
        }
        if (text !== '' || ageMs < EMPTY_LOCK_STALE_MS) {
          throw new LockedError(`the store ${storePath} is being opened by another process (lock file ${lockPath})`);
        }
      } else if (!flockHolder) {
        // This process's pid without a flock: the 'node' backend holds the store in this
        // process (it takes no flock); taken for stale, both wrote and one's commits were lost.
        if (pid === d.pid) throw new LockedError(`the store ${storePath} is open in this process through the 'node' storage (lock file ${lockPath})`);
        const state = pidState(d, pid);
        if (state === 'alive') throw new LockedError(`the store ${storePath} is open in process ${pid} (lock file ${lockPath})`);
        if (state === 'unknown') {
          throw new LockedError(
            `the store ${storePath} has a lock file ${lockPath} of process ${pid}, and this Deno cannot tell whether that process runs ` +
              `(it reads /proc/${pid}, which Deno allows only with --allow-all); remove the file if no process uses the store`,
          );
        }
      }
      // Stale: its writer held the flock we now hold, or its process is gone.
      try {
        d.removeSync(lockPath);
      } catch (e3) {
        if (!(e3 instanceof d.errors.NotFound)) throw new IoError(`cannot remove the stale lock file ${lockPath}: ${(e3 as Error).message}`, { cause: e3 });
      }
      continue;
    }
    try {
      const bytes = new TextEncoder().encode(`${d.pid} flock`);
      let done = 0;
      while (done < bytes.length) done += f.writeSync(bytes.subarray(done));
      f.syncDataSync();
    } finally {
      f.close();
    }
    return;
  }
  throw new LockedError(`the store ${storePath} is being opened by another process (lock file ${lockPath})`);
}

/** Whether `path` still names the open file `f` (where Deno gives inode numbers). */
function sameFile(d: DenoNs, path: string, f: DenoFsFile): boolean {
  let a: FileId;
  try {
    a = d.statSync(path) as FileId;
  } catch {
    return false;
  }
  const b = f.statSync() as FileId;
  return a.ino == null || b.ino == null || (a.ino === b.ino && a.dev === b.dev);
}
type FileId = { ino?: number | null; dev?: number };

function removeQuietly(d: { removeSync(p: string): void }, p: string): void {
  try {
    d.removeSync(p);
  } catch {
    /* gone already */
  }
}

export const denoStorage: SyncBackend = {
  kind: 'sync',
  name: 'deno',
  /** The files of a store another worker of this process opened and shared (its
   * SyncStoreFiles#share): opened again here (an FsFile belongs to its worker), without the
   * lock (the owner holds it); close() closes these two. */
  attach(shared: unknown): SyncStoreFiles {
    const desc = shared as { path?: unknown; readOnly?: unknown; logAbsent?: unknown } | null;
    const abs = desc?.path;
    if (typeof abs !== 'string' || abs === '') throw new InvalidArgumentError('deno: not a description of shared store files');
    // (a reader's files: read-only, and its log only if it has one)
    const readOnly = desc?.readOnly === true, logAbsent = readOnly && desc?.logAbsent === true;
    const d = deno();
    const files: DenoFsFile[] = [];
    try {
      for (const p of logAbsent ? [abs] : [abs, abs + '-log']) files.push(d.openSync(p, { read: true, write: !readOnly }));
    } catch (e) {
      for (const f of files) f.close();
      throw new IoError(`cannot open the shared store ${abs}: ${(e as Error).message}`, { cause: e });
    }
    let closed = false;
    return {
      data: new DenoFile(files[0]!, files),
      log: logAbsent ? absentLog() : new DenoFile(files[1]!, files),
      close() {
        if (closed) return;
        closed = true;
        for (const f of files) f.close();
      },
    };
  },
  open(path: string, options: OpenStorageOptions): SyncStoreFiles {
    const d = deno();
    const abs = canonical(d, path);
    if (openPaths.has(abs)) throw new LockedError(`the store ${abs} is already open in this process`);
    refuseNamesOfAnotherStore(abs, (p) => d.statSync(p));
    const files: DenoFsFile[] = [];
    const created: string[] = []; // by this open: removed again if the store's open fails
    const readOnly = options.readOnly === true;
    let logAbsent = false;
    openPaths.add(abs);
    try {
      for (const p of [abs, abs + '-log']) {
        try {
          // A reader's files read-only: it writes nothing to them, and read-only files (chmod
          // 0444) are then readable. (The flock below works on a read-only file.)
          files.push(d.openSync(p, { read: true, write: !readOnly }));
        } catch (e) {
          if (!(e instanceof d.errors.NotFound)) throw new IoError(`cannot open ${p}: ${(e as Error).message}`, { cause: e });
          // A data file without its log (copied alone, as a backup of a closed store is): the
          // store. A writer creates the log, create: false or not; a reader reads it without.
          if (p !== abs && readOnly) {
            logAbsent = true;
            continue;
          }
          if (!options.create && p === abs) throw new InvalidArgumentError(`no store at ${abs} (${readOnly ? 'readOnly: true creates nothing' : 'create: false'})`, { cause: e });
          try {
            files.push(d.openSync(p, { read: true, write: true, createNew: true }));
            created.push(p);
          } catch (e2) {
            // (only where it is missing: NotFound in a directory that is there, such as /proc,
            // was said to be a missing directory too: a level probe, session 35)
            if (e2 instanceof d.errors.NotFound && !isDirectory(d, p.slice(0, Math.max(1, p.lastIndexOf('/'))))) throw new IoError(`cannot create ${p}: its directory does not exist`, { cause: e2 });
            throw new IoError(`cannot create ${p}: ${(e2 as Error).message}`, { cause: e2 });
          }
        }
      }
      const data = files[0]!;
      if (typeof data.tryLockSync !== 'function') {
        throw new IoError('this Deno has no FsFile.tryLockSync (Deno 2.7 or later is needed for locking)');
      }
      if (!data.tryLockSync(true)) throw new LockedError(`the store ${abs} is open in another process`);
      // Locked: the paths must still name the files opened (a process whose open failed
      // removes the files it created, and another may have opened them in between).
      if (!sameFile(d, abs, files[0]!) || (!logAbsent && !sameFile(d, abs + '-log', files[1]!))) {
        throw new LockedError(`the store ${abs} was being created by another process whose open failed; open it again`);
      }
      takeLockFile(d, abs + '-lock', abs);
    } catch (e) {
      for (const f of files) f.close();
      // (a file this open created while another process holds the store cannot be: it
      // would have found it)
      if (!(e instanceof LockedError)) for (const p of created) removeQuietly(d, p);
      openPaths.delete(abs);
      throw e;
    }
    let closed = false;
    return {
      data: new DenoFile(files[0]!, files),
      log: logAbsent ? absentLog() : new DenoFile(files[1]!, files),
      // Another worker opens the same paths (denoStorage.attach).
      share: () => ({ path: abs, readOnly, logAbsent }),
      close(discardCreated?: boolean) {
        if (closed) return;
        closed = true;
        // (while the store is still locked: no one else can have begun using them)
        if (discardCreated === true) for (const p of created) removeQuietly(d, p);
        // Before the flock goes, so no one finds it stale-but-held; only if it is still this
        // process's (a directory removed and made again under the store holds another opener's
        // lock by then: removed by name, a third opener wrote beside it; a probe, session 32).
        try {
          if (d.readTextFileSync(abs + '-lock').trim() === `${d.pid} flock`) d.removeSync(abs + '-lock');
        } catch {
          /* gone already; a stale file is taken over by the next open */
        }
        try {
          files[0]!.unlockSync();
        } catch {
          /* closing drops it anyway */
        }
        for (const f of files) f.close();
        openPaths.delete(abs);
      },
    };
  },
};
