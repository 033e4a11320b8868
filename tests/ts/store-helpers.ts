// Shared by the store tests: temp dirs, a plain model of committed states, and backend
// wrappers that inject faults (disk full past a byte budget, a "crash" after the k-th
// write/sync/truncate, failing syncs).
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryFile, memoryStorage } from '../../ts/src/storage/memory.js';
import type { AsyncBackend, AsyncStorePages, SyncBackend, SyncFile, SyncStoreFiles } from '../../ts/src/storage/types.js';

export function tempDir(tag: string): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), `adaptree-${tag}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

let names = 0;
/** A fresh name for the in-process memory backends. */
export function uniqueName(tag: string): string {
  return `${tag}-${process.pid}-${++names}-${Math.random().toString(36).slice(2)}`;
}

/** Entries of a Map sorted by key (numbers or strings). */
export function sortedEntries<K extends number | string, V>(m: Map<K, V>): [K, V][] {
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Wraps each file of a sync backend. */
export function wrapFiles(inner: SyncBackend, name: string, wrap: (f: SyncFile, which: 'data' | 'log') => SyncFile, onClose?: () => void): SyncBackend {
  return {
    kind: 'sync',
    name,
    async open(path, options): Promise<SyncStoreFiles> {
      const files = await inner.open(path, options);
      return {
        data: wrap(files.data, 'data'),
        log: wrap(files.log, 'log'),
        close() {
          files.close();
          onClose?.();
        },
      };
    },
  };
}

/** `inner` (an async backend, its other fields kept) with `onRead` called before each read
 * request of an opened store: readPage and readPages alike, one call per request. */
export function onReads<B extends AsyncBackend>(inner: B, onRead: () => void): B {
  return {
    ...inner,
    async open(path: string, options: { create: boolean; readOnly?: boolean }): Promise<AsyncStorePages> {
      const pages = await inner.open(path, options);
      return {
        ...pages,
        readPage: (id: number) => { onRead(); return pages.readPage(id); },
        readPages: (ids: readonly number[]) => { onRead(); return pages.readPages!(ids); },
        writePages: pages.writePages.bind(pages),
        close: pages.close.bind(pages),
      };
    },
  };
}

/** An async backend over `inner` whose commits go through `writePages` (given the inner
 * store's own writePages), with `extra` fields on the opened store (say viewsOfOneCopy). */
export function wrapPages(
  inner: AsyncBackend,
  name: string,
  writePages: (images: Parameters<AsyncStorePages['writePages']>[0], write: AsyncStorePages['writePages']) => Promise<void>,
  extra: Partial<AsyncStorePages> = {},
): AsyncBackend {
  return {
    kind: 'async',
    name,
    async open(path, options): Promise<AsyncStorePages> {
      const pages = await inner.open(path, options);
      return {
        readPage: (id) => pages.readPage(id),
        readPages: pages.readPages?.bind(pages),
        writePages: (images) => writePages(images, (i) => pages.writePages(i)),
        close: () => pages.close(),
        ...extra,
      };
    },
  };
}

/** ENOSPC past a byte budget: a write that would make the two files together larger than
 * `budget` bytes fails with an error whose code is ENOSPC (what Node's fs throws). */
export function quotaBackend(inner: SyncBackend, budget: { bytes: number }): SyncBackend {
  const files: SyncFile[] = [];
  const total = () => files.reduce((s, f) => s + f.size(), 0);
  return wrapFiles(inner, 'quota', (f) => {
    files.push(f);
    return {
      read: (d, o) => f.read(d, o),
      write(src, off) {
        const grow = Math.max(0, off + src.length - f.size());
        if (total() + grow > budget.bytes) {
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28 });
        }
        f.write(src, off);
      },
      sync: () => f.sync(),
      size: () => f.size(),
      truncate: (n) => f.truncate(n),
    };
  });
}

/**
 * A "crashing" backend over the memory backend: every write, sync and truncate is an
 * operation; the first `k` reach the memory volume `path` (the "disk"), later ones only the
 * live copy the store keeps working on, as if the machine had died after operation k while
 * the process did not notice. Reopen the memory volume to see what survived.
 * `ops` counts every operation (set k = Infinity to measure a workload).
 */
export class CrashBackend implements SyncBackend {
  readonly kind = 'sync' as const;
  readonly name = 'crash';
  ops = 0;
  /** tear: if operation k is a write, only its first half reaches the disk. */
  constructor(public k: number, public tear = false) {}

  async open(path: string, options: { create: boolean }): Promise<SyncStoreFiles> {
    const disk = memoryStorage.open(path, options);
    const live = { data: copyOf(disk.data as MemoryFile), log: copyOf(disk.log as MemoryFile) };
    const wrap = (d: SyncFile, l: MemoryFile): SyncFile => ({
      read: (dst, off) => l.read(dst, off),
      write: (src, off) => {
        l.write(src, off);
        const n = ++this.ops;
        if (n < this.k || (n === this.k && !this.tear)) d.write(src, off);
        else if (n === this.k) d.write(src.subarray(0, src.length >> 1), off);
      },
      sync: () => {
        if (++this.ops <= this.k) d.sync();
      },
      size: () => l.size(),
      truncate: (n) => {
        l.truncate(n);
        if (++this.ops <= this.k) d.truncate(n);
      },
    });
    return { data: wrap(disk.data, live.data), log: wrap(disk.log, live.log), close: () => disk.close() };
  }
}

function copyOf(f: MemoryFile): MemoryFile {
  const c = new MemoryFile();
  c.write(f.snapshot(), 0);
  return c;
}

/** Counts the calls per file and kind (to see flushes per commit). */
export function countingBackend(inner: SyncBackend, counts: Record<string, number>): SyncBackend {
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  return wrapFiles(inner, 'counting', (f, which) => ({
    read: (d, o) => (bump(`${which}.read`), f.read(d, o)),
    write: (s, o) => (bump(`${which}.write`), f.write(s, o)),
    sync: () => (bump(`${which}.sync`), f.sync()),
    size: () => f.size(),
    truncate: (n) => (bump(`${which}.truncate`), f.truncate(n)),
  }));
}

/** CRC-32C (the store's checksum, docs/FORMAT.md), bitwise: for patching test files. */
export function crc32c(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** Makes a closed store on node files look like one written before stores recorded their
 * encodings: zeroes StoreMeta's two encoding bytes (superblock bytes 53, 54) in both slots
 * and reseals them. The log must hold nothing newer (a clean close checkpoints it). */
export function forgetEncodings(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    for (const slot of [0, 2048]) {
      const b = new Uint8Array(60);
      readSync(fd, b, 0, 60, slot);
      if (String.fromCharCode(...b.subarray(0, 8)) !== 'ADAPTREE') continue;
      b[24 + 29] = 0;
      b[24 + 30] = 0;
      new DataView(b.buffer).setUint32(56, crc32c(b.subarray(0, 56)), true);
      writeSync(fd, b, 0, 60, slot);
    }
  } finally {
    closeSync(fd);
  }
}
