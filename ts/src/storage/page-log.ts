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
 * A frame: `magic u32 | count u32 | count × (page id u32 | 4096-byte image)`, little-endian.
 * Its key in `log` is the commit sequence of its page 0, so keys only grow, across
 * checkpoints and reopens: a reader that saw keys {5, 6} and now finds {9} knows a checkpoint
 * ran in between (its logged pages are now in `pages`) and starts over from {9}.
 */
import { CorruptionError } from '../errors.js';

export const PAGE_BYTES = 4096;
/** 'ATL1': adaptree log frame, version 1. */
export const FRAME_MAGIC = 0x314c5441;
const HEADER = 8;
const ENTRY = 4 + PAGE_BYTES;

/** The commit sequence a page 0 image carries (the higher of its two superblock slots). */
export function commitSequence(page0: Uint8Array): number {
  const dv = new DataView(page0.buffer, page0.byteOffset, page0.byteLength);
  const a = dv.getBigUint64(16, true), b = dv.getBigUint64(2048 + 16, true);
  return Number(a > b ? a : b);
}

/** Bytes of the frame of `count` pages. */
export const frameBytes = (count: number) => HEADER + count * ENTRY;

/** One frame holding `pages` (page 0 first, as a commit hands them). */
export function encodeFrame(pages: readonly (readonly [id: number, image: Uint8Array])[]): Uint8Array {
  const out = new Uint8Array(frameBytes(pages.length));
  const dv = new DataView(out.buffer);
  dv.setUint32(0, FRAME_MAGIC, true);
  dv.setUint32(4, pages.length, true);
  let at = HEADER;
  for (const [id, image] of pages) {
    if (image.length !== PAGE_BYTES) throw new RangeError(`page ${id}: an image of ${image.length} bytes`);
    dv.setUint32(at, id, true);
    out.set(image, at + 4);
    at += ENTRY;
  }
  return out;
}

/** The pages of a frame as views into it; CorruptionError when it is not a whole frame. */
export function decodeFrame(frame: unknown, where: string): [id: number, image: Uint8Array][] {
  const bytes = frame instanceof Uint8Array ? frame : frame instanceof ArrayBuffer ? new Uint8Array(frame) : undefined;
  if (bytes === undefined) throw new CorruptionError(`${where}: a log record that is not a frame`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < HEADER || dv.getUint32(0, true) !== FRAME_MAGIC) throw new CorruptionError(`${where}: a log record without the frame magic`);
  const count = dv.getUint32(4, true);
  if (bytes.length !== frameBytes(count)) throw new CorruptionError(`${where}: a frame of ${bytes.length} bytes that names ${count} pages`);
  const out: [number, Uint8Array][] = [];
  for (let i = 0, at = HEADER; i < count; i++, at += ENTRY) out.push([dv.getUint32(at, true), bytes.subarray(at + 4, at + ENTRY)]);
  return out;
}

/** True when `a` is a whole buffer of its own (a view into a larger one would keep, and
 * IndexedDB would store, all of that buffer). */
export const ownsBuffer = (a: Uint8Array) => a.byteOffset === 0 && a.buffer.byteLength === a.length;

/**
 * What one process knows of the log: the frames it applied (by key) and the newest image of
 * every page they hold, each in a buffer of its own, so that memory is the logged pages'
 * (4 KiB each, at most the store's size), not the log's bytes. The writer keeps it by adding
 * its own commits; a reader brings it up to date from the keys it finds in the log (`plan`)
 * before each read.
 */
export class PageLog {
  readonly latest = new Map<number, Uint8Array>();
  /** Keys of the applied frames, ascending. */
  keys: number[] = [];
  /** Bytes of the applied frames. */
  bytes = 0;

  /** Applies the frame stored under `key` (keys ascend; pages of later frames win). */
  apply(key: number, frame: unknown, where: string): void {
    const pages = decodeFrame(frame, `${where}, log frame ${key}`);
    this.add(key, pages, (frame as Uint8Array | ArrayBuffer).byteLength, where);
  }

  /** Adds the commit `key` whose frame held `pages` (page 0 first) and was `bytes` long. The
   * images are kept: copies are made of those that do not own their buffer. */
  add(key: number, pages: readonly (readonly [id: number, image: Uint8Array])[], bytes: number, where: string): void {
    const last = this.keys[this.keys.length - 1];
    if (last !== undefined && key <= last) throw new CorruptionError(`${where}: log frame ${key} after frame ${last}`);
    if (pages.length === 0 || pages[0]![0] !== 0) throw new CorruptionError(`${where}: log frame ${key} does not begin with page 0`);
    for (const [id, image] of pages) this.latest.set(id, ownsBuffer(image) ? image : image.slice());
    this.keys.push(key);
    this.bytes += bytes;
  }

  /** Forgets every frame (after a checkpoint moved them into `pages`). */
  reset(): void {
    this.latest.clear();
    this.keys = [];
    this.bytes = 0;
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
