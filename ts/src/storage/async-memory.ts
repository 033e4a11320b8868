/**
 * `async-memory`: the asynchronous test backend. Pages live in a Map<pageId, Uint8Array> per
 * path in this process (they survive close/reopen), and every read is answered only after a
 * timer (`delayMs`, default 0: a macrotask), as IndexedDB or a network would. It proves the
 * page-fault path of asynchronous backends (NEED_PAGE -> await readPage -> at_store_supply ->
 * retry) and is the template for IndexedDB and Durable Object backends.
 *
 * Commits are atomic: writePages builds the new page map aside and swaps it in.
 * Locking: a path can be open once at a time in the process (LockedError otherwise, or with
 * `wait: true` the open waits until it is closed, in the order the opens came, as on IndexedDB); readers
 * (`readOnly`) take no lock and read beside the writer, as on IndexedDB (readPages reads one
 * committed page map).
 */
import { InvalidArgumentError, LockedError } from '../errors.js';
import { commitSequence } from './page-log.js';
import type { AsyncBackend, AsyncStorePages } from './types.js';

interface Volume {
  pages: Map<number, Uint8Array>;
  open: boolean;
  /** Opens with `wait: true` waiting for the writer to close. */
  waiters: (() => void)[];
  /** The last HISTORY commits: their sequence and the pages they wrote (readers' changedSince). */
  history: { seq: number; ids: number[] }[];
}

const HISTORY = 64;

export interface AsyncMemoryStorage extends AsyncBackend {
  /** Statistics of all stores of this backend: page reads and writePages calls. */
  readonly counters: { reads: number; commits: number; pagesWritten: number };
  /** The committed pages of the store at `path` (for tests). */
  pages(path: string): Map<number, Uint8Array> | undefined;
  remove(path: string): void;
}

/** A new asynchronous in-memory backend (its own namespace of paths). */
export function createAsyncMemoryStorage(options: { delayMs?: number } = {}): AsyncMemoryStorage {
  const volumes = new Map<string, Volume>();
  const delayMs = options.delayMs ?? 0;
  const later = () => new Promise<void>((r) => setTimeout(r, delayMs));
  const counters = { reads: 0, commits: 0, pagesWritten: 0 };
  return {
    kind: 'async',
    name: 'async-memory',
    counters,
    async open(path: string, opts: { create: boolean; readOnly?: boolean; wait?: boolean }): Promise<AsyncStorePages> {
      await later();
      let v = volumes.get(path);
      const reader = opts.readOnly === true;
      if (v === undefined) {
        if (!opts.create || reader) throw new InvalidArgumentError(`no store at '${path}' (async-memory storage, ${reader ? 'readOnly: true creates nothing' : 'create: false'})`);
        v = { pages: new Map(), open: false, waiters: [], history: [] };
        volumes.set(path, v);
      }
      // (wait: true was ignored here, unlike on IndexedDB, which this backend stands in for: a
      // probe, session 33)
      if (v.open && !reader && opts.wait === true) {
        const w = v;
        while (w.open) await new Promise<void>((wake) => w.waiters.push(wake));
      }
      if (v.open && !reader) throw new LockedError(`the store '${path}' is already open in this process`);
      if (!reader) v.open = true;
      const vol = v;
      let closed = false;
      return {
        async readPage(id: number): Promise<Uint8Array | undefined> {
          counters.reads++;
          await later();
          const p = vol.pages.get(id);
          return p === undefined ? undefined : p.slice();
        },
        async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
          counters.reads += ids.length;
          await later();
          const map = vol.pages; // one committed state (commits swap the map)
          return ids.map((id) => map.get(id)?.slice());
        },
        async writePages(pages): Promise<void> {
          if (reader) throw new InvalidArgumentError(`the store '${path}' is open read-only`);
          await later();
          const next = new Map(vol.pages);
          for (const [id, image] of pages) next.set(id, image.slice());
          vol.pages = next; // the swap: all or nothing
          vol.history.push({ seq: commitSequence(pages[0]![1]), ids: pages.map((p) => p[0]) });
          if (vol.history.length > HISTORY) vol.history.shift();
          counters.commits++;
          counters.pagesWritten += pages.length;
        },
        newestCommit(): number | undefined {
          return reader ? vol.history[vol.history.length - 1]?.seq : undefined;
        },
        changedSince(sequence: number): number[] | undefined {
          const h = vol.history;
          const i = h.findIndex((c) => c.seq === sequence);
          if (i < 0) return undefined;
          return h.slice(i + 1).flatMap((c) => c.ids);
        },
        close(): void {
          if (closed) return;
          closed = true;
          if (!reader) {
            vol.open = false;
            vol.waiters.shift()?.();  // the next open that waits (it takes the lock in its turn)
          }
        },
      };
    },
    pages(path: string) {
      return volumes.get(path)?.pages;
    },
    remove(path: string) {
      if (volumes.get(path)?.open) throw new LockedError(`the store '${path}' is open`);
      volumes.delete(path);
    },
  };
}

/** The process-wide instance (`storage: 'async-memory'`). */
export const asyncMemoryStorage: AsyncMemoryStorage = createAsyncMemoryStorage();
