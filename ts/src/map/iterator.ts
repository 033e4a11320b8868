/**
 * Iterators over a key range that stay correct while the map changes: each pulls records in
 * batches, each batch through a core cursor borrowed for that one call, and resumes by key.
 */
import { BATCH_MORE, BatchFlags, SeekFlags, StopFlags, Result } from '../abi.js';
import { Status } from '../errors.js';
import { type Handle, borrowCursor, returnCursor, fail, stateError } from './handle.js';
import { putKeyA } from './put.js';
import type { Bounds } from './range.js';
import { BATCH_HEADER, LAST_KEY, decodeColumns, decodeNumbers, decodeRecords } from './batch.js';
import { utf8Key } from '../encoding/utf8.js';
import { numberKey } from '../encoding/number.js';
import { bigintKey } from '../encoding/bigint.js';

/** Records and bytes per iterator batch: small first (cheap `limit: 1` scans), then larger. A range
 * with a limit up to LIMIT_BATCH_RECORDS asks for all of it at once (one call into wasm). */
const FIRST_BATCH_RECORDS = 16;
const LIMIT_BATCH_RECORDS = 64;
const MAX_BATCH_RECORDS = 1024;
const MAX_BATCH_BYTES = 256 * 1024;

export const MODE_ENTRIES = 0;
export const MODE_KEYS = 1;
export const MODE_VALUES = 2;

const NONE: never[] = [];

/** Scratch buffers for the records of iterators over keys that are objects (see #buf): an
 * iterator takes one for its life instead of allocating one (a new ArrayBuffer per short
 * scan cost more than the scan). One dropped unfinished is simply collected. */
const SCRATCH: Uint8Array[] = [];
const SCRATCH_KEPT = 8;
const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined }) as IteratorReturnResult<undefined>;

/**
 * An entry [key, value] made by the Array constructor, not the literal `[k, v]`. V8 tracks
 * where each array literal allocates (an AllocationSite) and, when it sees that site's arrays
 * survive a young-generation GC, allocates the site's arrays in the old generation from then
 * on ("pretenuring"). Short scans (`entries({gte, limit})`, a few dozen entries each) hit
 * that misjudgement in the inmem benchmark 3 runs in 4 over `number` keys: every entry went
 * to the old generation and the scans ran 2.5x slower, 29% of the time in GC (V8 11.3,
 * Node 20; `--no-allocation-site-pretenuring` made every run fast). With the constructor
 * every run was fast (5 of 5, `--trace-pretenuring-statistics` shows no decision): V8 tracks
 * an Array constructor's site only while the arrays' elements kind may still change, which it
 * stops doing once they hold objects. Every entry the map hands out is made here (also
 * first/last/nextHigher/nextLower), so a loop over those cannot meet the same misjudgement.
 */
export function entry<K, V>(k: K, v: V): [K, V] {
  const e = new Array(2) as [K, V];
  e[0] = k;
  e[1] = v;
  return e;
}

/**
 * An iterator over a key range that stays correct while the map changes (see the top of
 * this file). Records come from the core a batch at a time and are decoded at once into
 * two plain arrays, so a batch costs no ArrayBuffer. Each batch after the first, and a batch
 * after a modification, seeks just after the last key returned: strings, numbers and bigints
 * are encoded again (encodings are canonical: encode(decode(b)) = b), keys that are objects
 * resume after their stored bytes (#buf).
 *
 * Cursors: an iterator borrows a core cursor from its map's pool for each batch and gives it
 * back before the batch is handed out; the next batch seeks again just after the last key
 * returned (one descent a batch: batches grow to 1024 records). So an iterator holds no wasm
 * memory between calls. One that kept its cursor (~2 KiB of wasm memory) until it was
 * collected made a synchronous loop of abandoned peeks (`m.keys().next()`) grow memory by
 * 1.9 GB before any finalizer could run, and wasm memory never shrinks.
 */
export class BTreeIterator<K, V, T> {
  #h: Handle<K, V> | null;
  /** Keeps the map reachable while the iterator is: otherwise its finalizer could free the tree. */
  #owner: object | null;
  readonly #mode: number;
  readonly #b: Bounds;
  #remaining: number;
  /** Seeked at least once (a later batch seeks after the last key returned). */
  #started = false;
  /** The last batch reached the end of the range: no more batches without a re-seek. */
  #drained = false;
  #batchRecords = FIRST_BATCH_RECORDS;
  /** The decoded batch and the read position in it. */
  #keys: K[] = [];
  #vals: V[] = [];
  #i = 0;
  #n = 0;
  /** The handle's modification count when the batch was read. */
  #mod = 0;
  /** mt: the tree's removal counter (at_tree_erase_epoch) and its value when the batch was read:
   * another thread's removals (a map shared between threads) drop the batch as this handle's
   * own writes do (h.mod). A batch went on returning entries a worker had deleted (a probe,
   * session 31: 408 keys after a deleteRange). */
  #epoch: Int32Array | null = null;
  #epochSeen = 0;
  /** The last key returned (valid when #hasLast). */
  #last: K | undefined = undefined;
  #hasLast = false;
  /** Keys that are objects (`bytes`, tuples, custom codecs) are the caller's to change, so
   * the iteration resumes after the stored bytes of the last key returned, never after an
   * encoding of the object handed out (a changed key moved the resume point: keys skipped,
   * or the same few returned for ever). #buf: a copy of the batch's records (a scratch buffer
   * from SCRATCH, rewritten by each batch, given back when the iteration ends); #lastOff:
   * where the batch's last key's record starts in it; #resume: what the next seek uses (a
   * view of #buf taken before the next batch is copied there, kept across a page fault). */
  readonly #objectKeys: boolean;
  #buf: Uint8Array | null = null;
  #hasBytes = false;
  #lastOff = 0;
  #resume: Uint8Array | null = null;

  constructor(owner: object, h: Handle<K, V>, mode: number, b: Bounds) {
    this.#owner = owner;
    this.#h = h;
    this.#mode = mode;
    this.#b = b;
    this.#remaining = b.limit;
    const kenc = h.kenc as unknown;
    this.#objectKeys = kenc !== utf8Key && kenc !== numberKey && kenc !== bigintKey;
    if (b.limit <= LIMIT_BATCH_RECORDS) this.#batchRecords = b.limit;
    if (b.limit === 0) this.#finish();
  }

  next(): IteratorResult<T, undefined> {
    const h = this.#h;
    if (h === null) return DONE;
    if (this.#i === this.#n || h.mod !== this.#mod || (this.#epoch !== null && this.#epoch[0] !== this.#epochSeen)) {
      if (!this.#refill(h)) return DONE;
    }
    const i = this.#i++;
    const k = this.#keys[i]!;
    this.#last = k;
    this.#hasLast = true;
    const mode = this.#mode;
    const value = mode === MODE_KEYS ? k : mode === MODE_VALUES ? this.#vals[i] : entry(k, this.#vals[i]);
    if (--this.#remaining === 0) this.#finish();
    return { done: false, value: value as T };
  }

  /** Calls f(value, key) for each entry left (BTreeMap.forEach): straight from the batch's
   * arrays, without an entry array and an iterator result per entry. The same walk as next():
   * a change f makes to the map re-seeks after the key just visited. On a throw from f the
   * iteration ends (its cursor goes back) and the error propagates. */
  each(f: (value: V, key: K) => void): void {
    try {
      for (;;) {
        const h = this.#h;
        if (h === null) return;
        if (this.#i === this.#n || h.mod !== this.#mod || (this.#epoch !== null && this.#epoch[0] !== this.#epochSeen)) {
          if (!this.#refill(h)) return;
        }
        const i = this.#i++;
        const k = this.#keys[i]!;
        const v = this.#vals[i]!;
        this.#last = k;
        this.#hasLast = true;
        if (--this.#remaining === 0) this.#finish();
        f(v, k);
      }
    } finally {
      if (this.#h !== null) this.#finish();
    }
  }

  /** The removal counter's view, on a shared memory (the mt build) only: an st map cannot be
   * shared. Made once: a view of a SharedArrayBuffer stays valid as the memory grows. */
  #epochOf(h: Handle<K, V>): Int32Array | null {
    if (this.#epoch !== null) return this.#epoch;
    const rt = h.rt;
    rt.refresh();  // (the tree may lie past an older view's end)
    const buf = rt.u8.buffer;
    if (typeof SharedArrayBuffer === 'undefined' || !(buf instanceof SharedArrayBuffer)) return null;
    const ptr = rt.ex.at_tree_erase_epoch?.(h.tree) ?? 0;
    if (ptr === 0 || (ptr & 3) !== 0) return null;
    this.#epoch = new Int32Array(buf, ptr, 1);
    return this.#epoch;
  }

  /** Reads and decodes the next batch; false when the iteration is over. */
  #refill(h: Handle<K, V>): boolean {
    const rt = h.rt;
    if (h.tree === 0 || rt.busy !== 0) {
      const e = stateError(h);
      if (h.tree === 0) this.#finish();
      throw e;
    }
    const ex = rt.ex;
    const b = this.#b;
    const rev = b.reverse ? SeekFlags.REVERSE : 0;
    let st: number, max: number;
    // Columns pay for utf8 keys (runs of ASCII keys decode at once) and number keys (doubles
    // made in wasm); others take records.
    const kenc = h.kenc as unknown;
    const flags = (this.#mode === MODE_KEYS ? 0 : BatchFlags.VALUES) |
      (kenc === utf8Key ? BatchFlags.COLUMNS : kenc === numberKey ? BatchFlags.COLUMNS | BatchFlags.NUMBERS : 0);
    const epoch = this.#epochOf(h);
    const moved = this.#started && (h.mod !== this.#mod || (epoch !== null && epoch[0] !== this.#epochSeen));
    // (read before the batch: a removal while it is read drops it at the next step)
    if (epoch !== null) this.#epochSeen = Atomics.load(epoch, 0);
    if (this.#drained && !moved) {
      this.#finish();
      return false;
    }
    // The stored bytes of the last key returned, before the batch goes (a fault below drops
    // it, and the retry must still resume there).
    if (this.#objectKeys && this.#i > 0) this.#resume = this.#resumeKey();
    // A map that changes while it is iterated would waste most of a large batch.
    if (moved) this.#batchRecords = FIRST_BATCH_RECORDS;
    this.#started = true;
    let klen = 0, seek: number = rev;
    if (this.#hasLast) {
      // Resume by key: just after the last key returned.
      rt.refresh();
      const r = this.#resume;
      if (r !== null) {
        klen = r.length;
        rt.u8.set(r, rt.keyA);
      } else {
        klen = putKeyA(h, this.#last as K);
      }
      seek |= SeekFlags.EXCLUSIVE;
    } else if (b.start === null) {
      seek |= SeekFlags.EDGE;
    } else {
      rt.refresh();
      const start = b.start, u8 = rt.u8, at = rt.keyA;
      klen = start.length;
      if (klen <= 32) for (let i = 0; i < klen; i++) u8[at + i] = start[i]!;
      else u8.set(start, at);
      if (b.startExclusive) seek |= SeekFlags.EXCLUSIVE;
    }
    this.#mod = h.mod;
    max = this.#remaining < this.#batchRecords ? this.#remaining : this.#batchRecords;
    // The seek and the batch in one call into wasm, on a cursor borrowed for it.
    const cursor = borrowCursor(h as Handle<unknown, unknown>);
    try {
      // With the range's far end, the core stops before a record past it: without, a batch
      // went on past the end and copied what lay there (a new-user probe, session 29: the entry
      // after a one-entry range held 20 MB; 3894 page reads, or OUT_OF_MEMORY under a budget).
      const stop = b.stop;
      if (stop !== null && stop.length <= rt.maxKey) {
        rt.refresh();
        const u8 = rt.u8, at = rt.keyB, sl = stop.length;
        if (sl <= 32) for (let i = 0; i < sl; i++) u8[at + i] = stop[i]!;
        else u8.set(stop, at);
        st = ex.at_cursor_seek_batch_to(cursor, rt.ctx, rt.keyA, klen, seek, max, MAX_BATCH_BYTES, flags, at, sl, b.stopInclusive ? StopFlags.INCLUSIVE : 0);
      } else {
        st = ex.at_cursor_seek_batch(cursor, rt.ctx, rt.keyA, klen, seek, max, MAX_BATCH_BYTES, flags);
      }
    } finally {
      returnCursor(h as Handle<unknown, unknown>, cursor);
    }
    if (st !== Status.OK) {
      if (st === Status.NEED_PAGE || st === Status.OUT_OF_MEMORY) {
        // Async store: nothing is lost. Drop any partial batch and re-seek after the last key
        // returned once the page is there (the caller supplies it and calls next() again).
        // Out of memory: the same; next() tries again once memory was freed or the budget raised.
        this.#mod = -1;
        this.#i = this.#n = 0;
        throw fail(h as Handle<unknown, unknown>, st, 'iterate');
      }
      this.#finish();
      if (st === Status.NOT_FOUND) return false;
      // (fail: a store's iteration names the store, as its get does; it said "iterate: corrupt")
      throw fail(h as Handle<unknown, unknown>, st, 'iterate');
    }
    rt.refresh();
    const dv = rt.dv;
    const p = dv.getUint32(rt.res + Result.VALUE_PTR, true);
    // result.key_len: 0 records, 1 columns, 2 columns with number keys as doubles; + BATCH_MORE
    // when an async store's page for the next record was missing (the batch ended before it).
    const word = dv.getUint32(rt.res + Result.KEY_LEN, true);
    const form = word & ~BATCH_MORE, more = (word & BATCH_MORE) !== 0;
    const count = dv.getUint32(rt.res + Result.AUX, true);
    // The batch's bytes as the core's max_bytes counts them (number columns: 12 a record, and the
    // values, which start at the offset in the header's third word).
    const len = dv.getUint32(rt.res + Result.VALUE_LEN, true);
    const used = form === 2 ? 12 * count + len - dv.getUint32(p + 8, true) : len - (form === 1 ? BATCH_HEADER : 0);
    // Decode now: the context buffer is overwritten by the next call into wasm. Codecs run no
    // adaptree calls meanwhile (the re-entrancy guard), so the buffer stays intact.
    const wantValues = this.#mode !== MODE_KEYS;
    let n: number;
    try {
      n = form === 2
        ? decodeNumbers(h.venc, rt.u8, dv, p, this.#keys as unknown as number[], this.#vals, wantValues, b, rt.shared)
        : form === 1
          ? decodeColumns(h.venc, rt.u8, dv, p, this.#keys as unknown as string[], this.#vals, wantValues, b, rt.shared)
          : decodeRecords(h.kenc, h.venc, rt.u8, dv, p, p + used, count, this.#keys, this.#vals, wantValues, b, rt.shared);
    } catch (e) {
      // A codec that threw half way through filled the arrays in part: the batch is gone, and
      // the next call re-seeks after the last key returned (and meets the same entry again).
      // Served on instead, the old batch's counters paired new keys with old values and skipped
      // keys (a probe, session 30: ['g', value of 'd'] after a decode error at 'g').
      this.#mod = -1;
      this.#i = this.#n = 0;
      throw e;
    }
    const pastStop = n < count;
    this.#i = 0;
    this.#n = n;
    if (this.#batchRecords < MAX_BATCH_RECORDS) this.#batchRecords *= 4;
    // Does this batch hold the rest of the range? The core ends a batch early only at the end,
    // or (more) before a page an async store must fetch: the next batch faults on it.
    this.#drained = pastStop || this.#remaining <= n || (!more && count < max && used < MAX_BATCH_BYTES);
    if (n === 0) {
      this.#finish();
      return false;
    }
    // (A batch that holds the rest is copied too: a change to the map re-seeks from within it.)
    // Into a buffer of the iterator's own, used again: a slice() per batch (a new ArrayBuffer)
    // made scans of 200 `bytes` keys 39% slower.
    if (this.#objectKeys) {
      this.#hasBytes = form === 0;
      if (form === 0) {
        let pv = this.#buf ?? (this.#buf = SCRATCH.pop() ?? new Uint8Array(4096));
        if (pv.length < used) pv = this.#buf = new Uint8Array(2 ** Math.ceil(Math.log2(used)));
        pv.set(rt.u8.subarray(p, p + used));
        this.#lastOff = LAST_KEY.off - 4 - p;
      }
    }
    return true;
  }

  /** The stored bytes of the last key returned (#i - 1 of the batch), or null (not records:
   * the caller re-encodes it). */
  #resumeKey(): Uint8Array | null {
    const kb = this.#buf;
    if (kb === null || !this.#hasBytes) return null;
    // [u32 klen][key][u32 vlen][value] each: walked to the key, unless it is the batch's last.
    const u32 = (at: number) => (kb[at]! | (kb[at + 1]! << 8) | (kb[at + 2]! << 16) | (kb[at + 3]! << 24)) >>> 0;
    let at = 0;
    if (this.#i === this.#n) {
      at = this.#lastOff;
    } else {
      for (let r = 0; r < this.#i - 1; r++) {
        at += 4 + u32(at);
        at += 4 + u32(at);
      }
    }
    return kb.subarray(at + 4, at + 4 + u32(at));
  }

  #finish(): void {
    const buf = this.#buf;
    if (buf !== null) {
      this.#buf = this.#resume = null;
      if (SCRATCH.length < SCRATCH_KEPT && buf.length <= 65536) SCRATCH.push(buf);
    }
    this.#h = null;
    if (this.#owner !== null) this.#owner = null;
    // Drops the batch (no allocation: a finished iterator never decodes again).
    this.#keys = this.#vals = NONE;
    this.#i = this.#n = 0;
    this.#last = undefined;
  }

  /** Ends the iteration early and releases its cursor (for-of calls this on break). */
  return(): IteratorResult<T, undefined> {
    this.#finish();
    return DONE;
  }

  [Symbol.iterator](): this {
    return this;
  }

  /** `using it = map.entries()` releases the cursor at the end of the block. */
  [Symbol.dispose](): void {
    this.#finish();
  }

  get [Symbol.toStringTag](): string {
    return 'BTreeMap Iterator';
  }
}


// Where the runtime has iterator helpers (map, filter, take, toArray, ...), ours get them too.
{
  const I: unknown = (globalThis as { Iterator?: unknown }).Iterator;
  const proto: unknown = typeof I === 'function' ? (I as { prototype?: unknown }).prototype : undefined;
  if (typeof proto === 'object' && proto !== null) Object.setPrototypeOf(BTreeIterator.prototype, proto);
}
// `Symbol.dispose` is missing in older runtimes; the class computed key is then 'undefined'.
if (typeof Symbol.dispose !== 'symbol') {
  delete (BTreeIterator.prototype as unknown as Record<string, unknown>)['undefined'];
}
