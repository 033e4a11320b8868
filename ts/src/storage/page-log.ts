/**
 * The page log of the IndexedDB backend (indexeddb.ts), kept apart from IndexedDB itself so
 * that its rules are testable without a browser.
 *
 * A commit on IndexedDB was one readwrite transaction with one record per changed page; in
 * Chromium the cost of a transaction is its number of records, not its bytes (870 puts of
 * 4 KiB: 78 ms; the same bytes as one record: 7 ms; docs/DECISIONS.md "IndexedDB commits
 * append one record"). So a commit now appends ONE record, a *frame*, to the object store
 * `log`: every changed page image of the commit, page 0 (the superblock) first. The newest
 * image of each page named by the log stays in memory (`PageLog`), so reads of those pages
 * never touch IndexedDB. Once the log holds more than `checkpointBytes`, the commit that would
 * pass it is a *checkpoint* instead: one transaction that writes the newest image of every
 * logged page, and this commit's, as records of `pages` and clears `log`.
 *
 * A frame: `magic u32 | count u32 | count × (page id u32 | size u32 | size bytes)`,
 * little-endian. Size 4096: the page's image. Smaller: a delta against the page's image in an
 * earlier frame of the log: runs of `offset u16 | length u16 | length bytes` that replace
 * those bytes of it. A
 * commit logs a delta where the page is in the log already and its runs come to at most half a
 * page (a leaf insert changes a few hundred bytes; a split rewrites the page). The core's
 * checksum in every page image is verified when the page is handed to it, so a delta applied
 * to the wrong image is a CorruptionError there, not a wrong answer.
 * A frame with the magic 'ATL3' may also hold copy runs, from the core's deltas
 * (at_store_set_log_deltas 2): `offset u16 | length u16 + 0x8000 | source u16 | 0 u16`, the
 * bytes the base holds at [source, source + length) (an insert's shifted slots, a compaction's
 * moved records: 8 bytes each instead of their own; the log holds about half the bytes).
 * A frame with the magic 'ATL2' (or 'ATL3') may also hold deltas of pages that no earlier frame of the log
 * holds: against the page's record in `pages`, which the last checkpoint wrote (a checkpoint
 * writes `pages` and clears `log` in one transaction, so that record is the base the writer
 * had). The first commit of each page after a checkpoint logged the whole page: ~3400 images,
 * 14 MB, of each 64 MiB log generation of a 100k-record store under random writes.
 * Its key in `log` is the commit sequence of its page 0, so keys only grow, across
 * checkpoints and reopens: a reader that saw keys {5, 6} and now finds {9} knows a checkpoint
 * ran in between (its logged pages are now in `pages`) and starts over from {9}.
 */
import { CorruptionError } from '../errors.js';
import type { PageDelta } from './types.js';

export const PAGE_BYTES = 4096;
/** 'ATL1': adaptree log frame, version 1. */
export const FRAME_MAGIC = 0x314c5441;
/** 'ATL2': a frame that holds a delta against a page's record in `pages` (see above). */
export const FRAME_MAGIC_STORED = 0x324c5441;
/** 'ATL3': as 'ATL2', and its deltas may hold copy runs (see above). */
export const FRAME_MAGIC_COPIES = 0x334c5441;
/** A run whose length word has this bit is a copy run: (u16 offset, u16 length | COPY_RUN,
 * u16 source, u16 zero). */
const COPY_RUN = 0x8000;
const HEADER = 8;
/** A delta whose runs come to more than this is logged as the image. */
const MAX_DELTA = PAGE_BYTES / 2;
/** Unchanged words between two changed ones that a run takes along rather than start anew
 * (a run costs 4 bytes of header). */
const GAP_WORDS = 1;

/** The commit sequence a page 0 image carries: the higher of its two superblock slots (not
 * verified; the core checks page 0 when it is handed over). */
export function superblockSequence(page0: Uint8Array): bigint {
  const dv = new DataView(page0.buffer, page0.byteOffset, page0.byteLength);
  const a = dv.getBigUint64(16, true), b = dv.getBigUint64(2048 + 16, true);
  return a > b ? a : b;
}

/** superblockSequence as a number: the key of a commit's frame in the log. */
export const commitSequence = (page0: Uint8Array): number => Number(superblockSequence(page0));

const words = (a: Uint8Array) => (a.byteOffset % 4 === 0 ? new Uint32Array(a.buffer, a.byteOffset, PAGE_BYTES / 4) : new Uint32Array(a.slice().buffer));

/** The runs of `next` that differ from `base`, as [start, end) byte offsets; undefined when
 * their bytes and headers would pass MAX_DELTA. */
export function changedRuns(base: Uint8Array, next: Uint8Array): number[] | undefined {
  const a = words(base), b = words(next);
  const runs: number[] = [];
  let size = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    let j = i + 1;
    // Extend over changed words and short gaps of unchanged ones.
    for (let gap = 0; j < a.length; j++) {
      if (a[j] !== b[j]) gap = 0;
      else if (++gap > GAP_WORDS) {
        j -= gap - 1;
        break;
      }
    }
    while (j > i + 1 && a[j - 1] === b[j - 1]) j--;
    runs.push(i * 4, j * 4);
    size += 4 + (j - i) * 4;
    if (size > MAX_DELTA) return undefined;
    i = j;
  }
  return runs;
}

/** One frame holding `pages` (page 0 first, as a commit hands them); a page whose image in
 * the log so far is `base(id)`, or, when the log has none, whose record in `pages` is
 * `stored(id)`, is logged as a delta against it where that is small. `given[i]`: page i's
 * delta as the core made it (types.ts PageDelta), used as it is when it applies to that same
 * image (the trailers match); else the delta is found here. */
export function encodeFrame(
  pages: readonly (readonly [id: number, image: Uint8Array])[],
  base: (id: number) => Uint8Array | undefined = () => undefined,
  stored: (id: number) => Uint8Array | undefined = () => undefined,
  given?: readonly (PageDelta | undefined)[],
): Uint8Array {
  const parts: (number[] | Uint8Array | undefined)[] = [];
  let bytes = HEADER;
  let onStored = false, copies = false;
  pages.forEach(([id, image], i) => {
    if (image.length !== PAGE_BYTES) throw new RangeError(`page ${id}: an image of ${image.length} bytes`);
    let b = base(id);
    const fromStored = b === undefined && (b = stored(id)) !== undefined;
    const g = b === undefined ? undefined : given?.[i];
    const runs = b === undefined ? undefined : g !== undefined && sameTrailer(b, g.base) ? g.runs : changedRuns(b, image);
    if (runs !== undefined && fromStored) onStored = true;
    parts.push(runs);
    if (runs === undefined) bytes += 8 + PAGE_BYTES;
    else if (runs instanceof Uint8Array) {
      bytes += 8 + runs.length;
      if (!copies) copies = hasCopyRun(runs);
    }
    else {
      for (let r = 0; r < runs.length; r += 2) bytes += 4 + runs[r + 1]! - runs[r]!;
      bytes += 8;
    }
  });
  const out = new Uint8Array(bytes);
  const dv = new DataView(out.buffer);
  // Runs start and end on 4-byte words, and so does every entry of the frame: their bytes are
  // copied a word at a time (a subarray() and set() per run cost more than the copy).
  const o32 = new Uint32Array(out.buffer);
  dv.setUint32(0, copies ? FRAME_MAGIC_COPIES : onStored ? FRAME_MAGIC_STORED : FRAME_MAGIC, true);
  dv.setUint32(4, pages.length, true);
  let at = HEADER;
  pages.forEach(([id, image], i) => {
    const runs = parts[i];
    dv.setUint32(at, id, true);
    if (runs === undefined) {
      dv.setUint32(at + 4, PAGE_BYTES, true);
      out.set(image, at + 8);
      at += 8 + PAGE_BYTES;
      return;
    }
    if (runs instanceof Uint8Array) {
      // The core's: runs on words already, copied as they are.
      dv.setUint32(at + 4, runs.length, true);
      out.set(runs, at + 8);
      at += 8 + runs.length;
      return;
    }
    const sizeAt = at + 4;
    at += 8;
    const from = at;
    const w = words(image);
    for (let r = 0; r < runs.length; r += 2) {
      const s = runs[r]!, e = runs[r + 1]!;
      dv.setUint16(at, s, true);
      dv.setUint16(at + 2, e - s, true);
      for (let k = s >> 2, d = (at + 4) >> 2, end = e >> 2; k < end; ) o32[d++] = w[k++]!;
      at += 4 + e - s;
    }
    dv.setUint32(sizeAt, at - from, true);
  });
  return out;
}

/** Whether `image`'s trailer (its last 8 bytes: page id and checksum) is `trailer`. */
function sameTrailer(image: Uint8Array, trailer: Uint8Array): boolean {
  for (let k = 0; k < 8; k++) if (image[PAGE_BYTES - 8 + k] !== trailer[k]) return false;
  return true;
}

/** Whether the core's runs hold a copy run (the frame is then an 'ATL3'). */
function hasCopyRun(runs: Uint8Array): boolean {
  for (let at = 0; at + 4 <= runs.length; ) {
    const word = runs[at + 2]! | (runs[at + 3]! << 8);
    if ((word & COPY_RUN) !== 0) return true;
    at += 4 + word;
  }
  return false;
}

/** A frame's magic (its first 4 bytes, little-endian); 0 for anything else. */
function magicOf(frame: unknown): number {
  const b = frame instanceof Uint8Array ? frame : frame instanceof ArrayBuffer ? new Uint8Array(frame) : undefined;
  if (b === undefined || b.length < 4) return 0;
  return (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
}

/** An 'ATL2' or 'ATL3' frame (deltas against `pages` records); false for anything else. */
function isStoredFrame(frame: unknown): boolean {
  const magic = magicOf(frame);
  return magic === FRAME_MAGIC_STORED || magic === FRAME_MAGIC_COPIES;
}

/** An entry of a frame: the page's image (a view into the frame), or a delta's runs. */
export type FrameEntry = [id: number, image: Uint8Array, delta: false] | [id: number, runs: Uint8Array, delta: true];

/** The entries of a frame; CorruptionError when it is not a whole frame. */
export function decodeFrame(frame: unknown, where: string): FrameEntry[] {
  const bytes = frame instanceof Uint8Array ? frame : frame instanceof ArrayBuffer ? new Uint8Array(frame) : undefined;
  if (bytes === undefined) throw new CorruptionError(`${where}: a log record that is not a frame`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = bytes.length < HEADER ? 0 : dv.getUint32(0, true);
  if (magic !== FRAME_MAGIC && magic !== FRAME_MAGIC_STORED && magic !== FRAME_MAGIC_COPIES) throw new CorruptionError(`${where}: a log record without the frame magic`);
  const count = dv.getUint32(4, true);
  const out: FrameEntry[] = [];
  let at = HEADER;
  for (let i = 0; i < count; i++) {
    if (at + 8 > bytes.length) throw new CorruptionError(`${where}: a frame of ${bytes.length} bytes that names ${count} pages`);
    const id = dv.getUint32(at, true), size = dv.getUint32(at + 4, true);
    at += 8;
    if (size > PAGE_BYTES || at + size > bytes.length) throw new CorruptionError(`${where}: page ${id} of ${size} bytes in a frame of ${bytes.length}`);
    out.push(size === PAGE_BYTES ? [id, bytes.subarray(at, at + size), false] : [id, bytes.subarray(at, at + size), true]);
    at += size;
  }
  if (at !== bytes.length) throw new CorruptionError(`${where}: a frame of ${bytes.length} bytes that holds ${at}`);
  return out;
}

/** `base` with a delta's runs applied, as a new image; CorruptionError when a run leaves the
 * page or the runs do not fill the delta exactly. With `copies` (an 'ATL3' frame) a copy run takes
 * its bytes from `base` as it is (the image before any run); without, one is CorruptionError. */
export function applyDelta(base: Uint8Array, runs: Uint8Array, where: string, copies = false): Uint8Array {
  const out = base.slice();
  const dv = new DataView(runs.buffer, runs.byteOffset, runs.byteLength);
  let at = 0;
  while (at < runs.length) {
    if (at + 4 > runs.length) throw new CorruptionError(`${where}: a delta run cut short`);
    const offset = dv.getUint16(at, true), word = dv.getUint16(at + 2, true), length = word & ~COPY_RUN;
    if ((word & COPY_RUN) !== 0) {
      // (only an 'ATL3' frame has copy runs: elsewhere such a length is a run off the page)
      if (!copies) throw new CorruptionError(`${where}: a delta run of ${length} bytes at ${offset} (a copy run outside an 'ATL3' frame)`);
      if (at + 8 > runs.length) throw new CorruptionError(`${where}: a copy run cut short`);
      const source = dv.getUint16(at + 4, true);
      if (length === 0 || offset + length > PAGE_BYTES || source + length > PAGE_BYTES || dv.getUint16(at + 6, true) !== 0) {
        throw new CorruptionError(`${where}: a copy run of ${length} bytes from ${source} to ${offset}`);
      }
      out.set(base.subarray(source, source + length), offset);
      at += 8;
      continue;
    }
    at += 4;
    if (offset + length > PAGE_BYTES || at + length > runs.length) throw new CorruptionError(`${where}: a delta run of ${length} bytes at ${offset}`);
    out.set(runs.subarray(at, at + length), offset);
    at += length;
  }
  return out;
}

/** True when `a` is a whole buffer of its own (a view into a larger one would keep, and
 * IndexedDB would store, all of that buffer). */
export const ownsBuffer = (a: Uint8Array) => a.byteOffset === 0 && a.buffer.byteLength === a.length;

/** Pages a slab of the log's images holds (1 MiB). */
const SLAB_PAGES = 256;

/**
 * What one process knows of the log: the frames it applied (by key) and the newest image of
 * every page they hold. Those images live in slots of the log's own slabs, a slot per logged
 * page, overwritten in place when a later frame holds the page again: memory is the logged
 * pages' (4 KiB each, at most the store's size), not the log's bytes, and a commit does not
 * allocate an ArrayBuffer per page (~2.6 us each in a Chromium worker). `latest` hands out
 * views of the slots, to read before the next add or apply; `image` a copy to keep. The writer
 * keeps it by adding its own commits; a reader brings it up to date from the keys it finds in
 * the log (`plan`) before each read.
 */
export class PageLog {
  /** The newest image of each logged page: a view of its slot (see above). */
  readonly latest = new Map<number, Uint8Array>();
  /** Keys of the applied frames, ascending. */
  keys: number[] = [];
  /** Bytes of the applied frames. */
  bytes = 0;
  #slabs: Uint8Array[] = [];
  #slots = 0;
  /** The page ids of each applied frame, by key (changedSince; readers only). */
  #changes = new Map<number, number[]>();
  /** changedSince's last answer (the log it was for: `keys` and its length). A reader asks for
   * every page it is handed, with the same key until it follows a commit. */
  #since: { key: number; keys: number[]; count: number; ids: number[] } | undefined;

  /** `tracksChanges`: keep the pages of each frame for changedSince (a reader's log; the
   * writer's has no use for them). */
  constructor(readonly tracksChanges = true) {}

  /** A copy of page `id`'s newest logged image, or undefined when no frame holds it. */
  image(id: number): Uint8Array | undefined {
    return this.latest.get(id)?.slice();
  }

  /** Applies the frame stored under `key` (keys ascend; pages of later frames win). `stored`:
   * the records of `pages` that storedBases() named (an 'ATL2' frame's deltas of pages that no
   * earlier frame holds are against them). */
  apply(key: number, frame: unknown, where: string, stored: (id: number) => Uint8Array | undefined = () => undefined): void {
    const at = `${where}, log frame ${key}`;
    const entries = decodeFrame(frame, at);
    const onStored = isStoredFrame(frame), copies = magicOf(frame) === FRAME_MAGIC_COPIES;
    // Every delta is decoded before any slot changes: a corrupt frame leaves the log as it was.
    const pages = entries.map(([id, bytes, delta]): [number, Uint8Array] => {
      if (!delta) return [id, bytes];
      const base = this.latest.get(id) ?? (onStored ? stored(id) : undefined);
      if (base === undefined) throw new CorruptionError(`${at}: a delta of page ${id}, which no earlier frame${onStored ? ' nor `pages`' : ''} holds`);
      return [id, applyDelta(base, bytes, `${at}, page ${id}`, copies)];
    });
    this.add(key, pages, (frame as Uint8Array | ArrayBuffer).byteLength, where);
  }

  /** Adds the commit `key` whose frame held `pages` (page 0 first) and was `bytes` long. The
   * images are copied into the log's slots (the arrays given are not kept). */
  add(key: number, pages: readonly (readonly [id: number, image: Uint8Array])[], bytes: number, where: string): void {
    const last = this.keys[this.keys.length - 1];
    if (last !== undefined && key <= last) throw new CorruptionError(`${where}: log frame ${key} after frame ${last}`);
    if (pages.length === 0 || pages[0]![0] !== 0) throw new CorruptionError(`${where}: log frame ${key} does not begin with page 0`);
    for (const [id, image] of pages) {
      let slot = this.latest.get(id);
      if (slot === undefined) {
        const i = this.#slots++;
        const s = Math.floor(i / SLAB_PAGES), o = (i % SLAB_PAGES) * PAGE_BYTES;
        if (s === this.#slabs.length) this.#slabs.push(new Uint8Array(SLAB_PAGES * PAGE_BYTES));
        slot = this.#slabs[s]!.subarray(o, o + PAGE_BYTES);
        this.latest.set(id, slot);
      }
      slot.set(image);
    }
    this.keys.push(key);
    this.bytes += bytes;
    if (this.tracksChanges) this.#changes.set(key, pages.map((p) => p[0]));
  }

  /** The pages the frames after frame `key` hold (a reader following a newer commit keeps the
   * others), or undefined when `key` is not an applied frame: the log was reset since (a
   * checkpoint), or that commit was a checkpoint itself, so what changed after it is unknown
   * (and always for a log that does not track changes). Each page once; the same array until
   * the log changes (do not modify it). */
  changedSince(key: number): readonly number[] | undefined {
    if (!this.tracksChanges) return undefined;
    const keys = this.keys;
    let lo = 0, hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    if (keys[lo] !== key) return undefined;
    const m = this.#since;
    if (m !== undefined && m.key === key && m.keys === keys && m.count === keys.length) return m.ids;
    const seen = new Set<number>();
    for (let i = lo + 1; i < keys.length; i++) for (const id of this.#changes.get(keys[i]!)!) seen.add(id);
    const ids = [...seen];
    this.#since = { key, keys, count: keys.length, ids };
    return ids;
  }

  /** Every page the frames hold (each once): what the commits since the last checkpoint wrote. */
  pagesOfFrames(): number[] {
    const seen = new Set<number>();
    for (const key of this.keys) for (const id of this.#changes.get(key) ?? []) seen.add(id);
    return [...seen];
  }

  /** The pages whose records in `pages` the frames (in key order, to be applied next) have
   * deltas against: in an 'ATL2' frame, a delta of a page that neither the log so far nor an
   * earlier one of the frames holds. */
  storedBases(frames: readonly unknown[], where: string): number[] {
    const seen = new Set(this.latest.keys());
    const need: number[] = [];
    for (const f of frames) {
      const onStored = isStoredFrame(f);
      for (const [id, , delta] of decodeFrame(f, where)) {
        if (onStored && delta && !seen.has(id)) need.push(id);
        seen.add(id);
      }
    }
    return need;
  }

  /** Forgets every frame (after a checkpoint moved them into `pages`). */
  reset(): void {
    this.latest.clear();
    this.#changes.clear();
    this.keys = [];
    this.bytes = 0;
    this.#slots = 0;
    this.#slabs.length = Math.min(this.#slabs.length, 1); // the first slab is used again
  }

  /**
   * A reader found `present` (ascending) in the log: which keys to read and apply. `reset` when
   * a frame it applied is gone (a checkpoint ran since): then every present key is read anew.
   */
  plan(present: readonly number[]): { reset: boolean; read: number[] } {
    const have = new Set(present);
    if (this.keys.some((k) => !have.has(k))) return { reset: true, read: [...present] };
    const last = this.keys[this.keys.length - 1] ?? -Infinity;
    return { reset: false, read: present.filter((k) => k > last) };
  }
}
