/**
 * `memory`: a synchronous backend whose files are growable byte arrays in this process.
 * A store's files outlive `close()` (reopen the same path and the data is there) until the
 * process ends or `memoryStorage.remove(path)`; nothing is ever durable across processes.
 * Useful for tests, and as the model of what a synchronous backend must do.
 * Locking: a path can be open once at a time in the process (LockedError otherwise).
 */
import { InvalidArgumentError, LockedError } from '../errors.js';
import type { OpenStorageOptions, SyncBackend, SyncFile, SyncStoreFiles } from './types.js';

/** A file as a byte array that grows by doubling; `length` is the file size; the bytes past
 * it are always zero. */
export class MemoryFile implements SyncFile {
  bytes = new Uint8Array(0);
  length = 0;

  read(dst: Uint8Array, offset: number): number {
    if (offset >= this.length) return 0;
    const n = Math.min(dst.length, this.length - offset);
    dst.set(this.bytes.subarray(offset, offset + n));
    return n;
  }

  write(src: Uint8Array, offset: number): void {
    const end = offset + src.length;
    this.ensure(end);
    this.bytes.set(src, offset);
    if (end > this.length) this.length = end;
  }

  sync(): void {}

  size(): number {
    return this.length;
  }

  truncate(size: number): void {
    if (size > this.length) {
      this.ensure(size);
      this.bytes.fill(0, this.length, size);
    } else if (size <= this.bytes.length >> 2 && this.bytes.length > 65536) {
      // Cut well below its room: the room goes too (a file's blocks go back to the disk; the
      // array kept the store's peak until the process ended: a session-28 probe, 384 MB held
      // for an empty store). A new array twice the size, zero past it.
      const b = new Uint8Array(Math.max(4096, 2 ** Math.ceil(Math.log2(Math.max(1, 2 * size)))));
      b.set(this.bytes.subarray(0, size));
      this.bytes = b;
    } else {
      // Bytes past the end stay zero, so a later write past the end leaves a zeroed gap (as a file does).
      this.bytes.fill(0, size, this.length);
    }
    this.length = size;
  }

  /** A copy of the file's content. */
  snapshot(): Uint8Array {
    return this.bytes.slice(0, this.length);
  }

  private ensure(n: number): void {
    if (n <= this.bytes.length) return;
    let cap = Math.max(4096, this.bytes.length * 2);
    while (cap < n) cap *= 2;
    const b = new Uint8Array(cap);
    b.set(this.bytes.subarray(0, this.length));
    this.bytes = b;
  }
}

interface Volume {
  data: MemoryFile;
  log: MemoryFile;
  open: boolean;
}

const volumes = new Map<string, Volume>();

export interface MemoryStorage extends SyncBackend {
  /** Synchronous here (and the files are MemoryFiles). */
  open(path: string, options: OpenStorageOptions): SyncStoreFiles & { data: MemoryFile; log: MemoryFile };
  /** The files of the store at `path` (for tests that damage or inspect them). */
  files(path: string): { data: MemoryFile; log: MemoryFile } | undefined;
  /** Forgets the store at `path` (it must be closed). */
  remove(path: string): void;
}

export const memoryStorage: MemoryStorage = {
  kind: 'sync',
  name: 'memory',
  open(path: string, options: OpenStorageOptions) {
    let v = volumes.get(path);
    if (v === undefined) {
      if (!options.create) throw new InvalidArgumentError(`no store at '${path}' (memory storage, ${options.readOnly === true ? 'readOnly: true creates nothing' : 'create: false'})`);
      v = { data: new MemoryFile(), log: new MemoryFile(), open: false };
      volumes.set(path, v);
    }
    if (v.open) throw new LockedError(`the store '${path}' is already open in this process`);
    v.open = true;
    const vol = v;
    let closed = false;
    return {
      data: vol.data,
      log: vol.log,
      close() {
        if (closed) return;
        closed = true;
        vol.open = false;
      },
    };
  },
  files(path: string) {
    const v = volumes.get(path);
    return v === undefined ? undefined : { data: v.data, log: v.log };
  },
  remove(path: string) {
    const v = volumes.get(path);
    if (v?.open) throw new LockedError(`the store '${path}' is open`);
    volumes.delete(path);
  },
};
