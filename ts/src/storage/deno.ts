/**
 * `deno`: a synchronous backend on `Deno.FsFile` (seekSync + readSync/writeSync,
 * syncDataSync, truncateSync). Same files as `node`: the data file `path` and the log
 * `path + '-log'`. Needs `--allow-read` and `--allow-write` for them.
 *
 * Locking: an exclusive advisory lock on the data file (`FsFile.tryLockSync(true)`, flock),
 * which the OS drops when the process dies, so there are no stale locks. A second open of
 * the same path in this process is refused before that (LockedError).
 */
import { InvalidArgumentError, IoError, LockedError } from '../errors.js';
import type { SyncBackend, SyncFile, SyncStoreFiles } from './types.js';

/** The part of the Deno namespace this backend uses. */
interface DenoFsFile {
  seekSync(offset: number, whence: number): number;
  readSync(p: Uint8Array): number | null;
  writeSync(p: Uint8Array): number;
  syncDataSync(): void;
  truncateSync(len?: number): void;
  statSync(): { size: number };
  tryLockSync?(exclusive?: boolean): boolean;
  lockSync(exclusive?: boolean): void;
  unlockSync(): void;
  close(): void;
}
interface DenoNs {
  openSync(path: string, options: { read?: boolean; write?: boolean; create?: boolean }): DenoFsFile;
  realPathSync(path: string): string;
  cwd(): string;
  errors: { NotFound: new (...a: never[]) => Error };
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
  constructor(readonly f: DenoFsFile) {}

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
    const buf = isShared(src) ? src.slice() : src;
    this.f.seekSync(offset, SEEK_START);
    let done = 0;
    while (done < buf.length) done += this.f.writeSync(buf.subarray(done));
  }

  sync(): void {
    this.f.syncDataSync();
  }

  size(): number {
    return this.f.statSync().size;
  }

  truncate(size: number): void {
    this.f.truncateSync(size);
  }
}

function absolute(d: DenoNs, path: string): string {
  if (path.startsWith('/')) return path;
  const cwd = d.cwd();
  return (cwd.endsWith('/') ? cwd : cwd + '/') + path;
}

export const denoStorage: SyncBackend = {
  kind: 'sync',
  name: 'deno',
  open(path: string, options: { create: boolean }): SyncStoreFiles {
    const d = deno();
    const abs = absolute(d, path);
    if (openPaths.has(abs)) throw new LockedError(`the store ${abs} is already open in this process`);
    const files: DenoFsFile[] = [];
    openPaths.add(abs);
    try {
      for (const p of [abs, abs + '-log']) {
        try {
          files.push(d.openSync(p, { read: true, write: true, create: options.create }));
        } catch (e) {
          if (e instanceof d.errors.NotFound) throw new InvalidArgumentError(`no store at ${abs} (create: false)`, { cause: e });
          throw new IoError(`cannot open ${p}: ${(e as Error).message}`, { cause: e });
        }
      }
      const data = files[0]!;
      if (typeof data.tryLockSync !== 'function') {
        throw new IoError('this Deno has no FsFile.tryLockSync (Deno 2.7 or later is needed for locking)');
      }
      if (!data.tryLockSync(true)) throw new LockedError(`the store ${abs} is open in another process`);
    } catch (e) {
      for (const f of files) f.close();
      openPaths.delete(abs);
      throw e;
    }
    let closed = false;
    return {
      data: new DenoFile(files[0]!),
      log: new DenoFile(files[1]!),
      close() {
        if (closed) return;
        closed = true;
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
