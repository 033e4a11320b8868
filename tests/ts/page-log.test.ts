// The IndexedDB backend's page log (ts/src/storage/page-log.ts), without a browser: frames
// round-trip, images and deltas (random changes of random pages: a delta applied to its base is
// the new image, and large changes are logged as images); a record that is not a whole frame,
// or a delta without a base or with a run off the page, is a CorruptionError, never a wrong
// page; the newest image of a page wins; kept images own their buffers (so memory is the pages', and
// IndexedDB never stores a frame along with a page); and a reader's plan reads only new frames,
// or starts over when a frame it had is gone (a checkpoint cleared the log). The backend itself
// runs in real Chromium (tests/ts/runtimes/indexeddb.test.ts, faults, readers). A model test
// drives a writer, a reader that follows with plan() and readers that replay from scratch over
// 600 random commits and the checkpoints of a 24 KiB log: every page resolves as the model.
import { describe, expect, it } from 'vitest';
import { CorruptionError } from '../../ts/src/errors.js';
import { FRAME_MAGIC, FRAME_MAGIC_COPIES, FRAME_MAGIC_STORED, PAGE_BYTES, PageLog, applyDelta, changedRuns, commitSequence, decodeFrame, encodeFrame, ownsBuffer } from '../../ts/src/storage/page-log.js';

const frameBytes = (count: number) => 8 + count * (8 + 4096);

const image = (fill: number) => new Uint8Array(4096).fill(fill);
/** A page 0 whose superblock slots carry commit sequences a and b. */
function page0(a: number, b = 0): Uint8Array {
  const p = new Uint8Array(4096);
  const dv = new DataView(p.buffer);
  dv.setBigUint64(16, BigInt(a), true);
  dv.setBigUint64(2048 + 16, BigInt(b), true);
  return p;
}
const corrupt = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof CorruptionError ? (e as CorruptionError).code : `not a CorruptionError: ${String(e)}`;
  }
  return 'no error';
};

describe('page log frames', () => {
  it('round-trip page ids and images, page 0 first', () => {
    const pages: [number, Uint8Array][] = [[0, page0(7)], [12, image(1)], [4_000_000_000, image(2)]];
    const frame = encodeFrame(pages);
    expect(frame.length).toBe(frameBytes(3));
    expect(new DataView(frame.buffer).getUint32(0, true)).toBe(FRAME_MAGIC);
    const back = decodeFrame(frame, 't');
    expect(back.map(([id]) => id)).toEqual([0, 12, 4_000_000_000]);
    back.forEach(([, img, delta], i) => {
      expect(delta).toBe(false);
      expect(img).toEqual(pages[i]![1]);
    });
    // An ArrayBuffer (what a structured clone may give back) decodes the same.
    expect(decodeFrame(frame.buffer, 't').map(([id]) => id)).toEqual([0, 12, 4_000_000_000]);
    expect(() => encodeFrame([[0, new Uint8Array(100)]])).toThrow(RangeError);
  });

  it('a record that is not a whole frame is CORRUPT', () => {
    const frame = encodeFrame([[0, page0(1)], [3, image(3)]]);
    expect(corrupt(() => decodeFrame('text', 't'))).toBe('CORRUPT');
    expect(corrupt(() => decodeFrame(new Uint8Array(4), 't'))).toBe('CORRUPT');
    expect(corrupt(() => decodeFrame(frame.subarray(0, frame.length - 1), 't'))).toBe('CORRUPT');
    const longer = new Uint8Array(frame.length + 4100);
    longer.set(frame);
    expect(corrupt(() => decodeFrame(longer, 't'))).toBe('CORRUPT');
    const magic = frame.slice();
    magic[0]! ^= 1;
    expect(corrupt(() => decodeFrame(magic, 't'))).toBe('CORRUPT');
    const count = frame.slice();
    new DataView(count.buffer).setUint32(4, 0xffffffff, true);
    expect(corrupt(() => decodeFrame(count, 't'))).toBe('CORRUPT');
  });

  it('deltas: runs of the changed words, applied to the base give the image; large changes are images', () => {
    let x = 12345;
    const rnd = (n: number) => ((x = (x * 1103515245 + 12345) >>> 0), x % n);
    for (let round = 0; round < 400; round++) {
      const base = new Uint8Array(4096);
      for (let i = 0; i < 4096; i++) base[i] = rnd(256);
      const next = base.slice();
      const changes = rnd(4) === 0 ? rnd(300) : rnd(12);
      for (let c = 0; c < changes; c++) {
        const at = rnd(4096), len = 1 + rnd(rnd(3) === 0 ? 600 : 20);
        for (let i = at; i < Math.min(4096, at + len); i++) next[i] = rnd(256);
      }
      const runs = changedRuns(base, next);
      if (runs === undefined) {
        // Logged as the image: the runs would have passed half a page.
        let differ = 0;
        for (let i = 0; i < 4096; i += 4) if (base[i] !== next[i] || base[i + 1] !== next[i + 1] || base[i + 2] !== next[i + 2] || base[i + 3] !== next[i + 3]) differ++;
        expect(differ * 4, `round ${round}`).toBeGreaterThan(2048 / 3); // runs cost at most 12 bytes a changed word
        continue;
      }
      for (let r = 0; r < runs.length; r += 2) expect(runs[r]! % 4 + (runs[r + 1]! - runs[r]!) % 4).toBe(0);
      const frame = encodeFrame([[0, page0(1)], [9, next]], (id) => (id === 9 ? base : undefined));
      const [, [id, bytes, delta]] = decodeFrame(frame, 't');
      expect([id, delta]).toEqual([9, true]);
      expect(applyDelta(base, bytes, 't')).toEqual(next);
      expect(frame.length).toBeLessThan(8 + 2 * (8 + 4096));
    }
    // An unchanged page is an empty delta; a rewritten one is an image.
    const img = image(5);
    expect(changedRuns(img, img.slice())).toEqual([]);
    expect(changedRuns(img, image(6))).toBeUndefined();
    // Unaligned views are compared as well.
    const holder = new Uint8Array(4097);
    holder.set(img, 1);
    const changed = img.slice();
    changed[100] = 1;
    expect(changedRuns(holder.subarray(1), changed)).toEqual([100, 104]);
  });

  it("the core's delta of a page is used as it is when its base's trailer is the log's image's; else the delta is found here", () => {
    const base = image(3), next = base.slice();
    next.fill(7, 200, 240);
    base.fill(9, 4088); // the trailer: page id and checksum
    next.fill(8, 4092);
    // The core's runs (u16 offset, u16 length, bytes), here covering more than changed
    // (any runs that turn the base into the image are a valid delta).
    const runs = new Uint8Array(4 + 48 + 4 + 8);
    const dv = new DataView(runs.buffer);
    dv.setUint16(0, 196, true);
    dv.setUint16(2, 48, true);
    runs.set(next.subarray(196, 244), 4);
    dv.setUint16(52, 4088, true);
    dv.setUint16(54, 8, true);
    runs.set(next.subarray(4088), 56);
    const given = { base: base.slice(4088), runs };
    const frame = encodeFrame([[0, page0(1)], [9, next]], (id) => (id === 9 ? base : undefined), undefined, [undefined, given]);
    const [, [, bytes, delta]] = decodeFrame(frame, 't');
    expect(delta).toBe(true);
    expect(bytes).toEqual(runs); // the core's, not the 40 + 4 changed bytes found here
    expect(applyDelta(base, bytes, 't')).toEqual(next);
    // Against another image of the page (another trailer): found here, from the log's image.
    const other = base.slice();
    other[4095] = 1;
    other[500] = 2;
    const f2 = encodeFrame([[0, page0(1)], [9, next]], (id) => (id === 9 ? other : undefined), undefined, [undefined, given]);
    const [, [, b2, d2]] = decodeFrame(f2, 't');
    expect(d2).toBe(true);
    expect(b2).not.toEqual(runs);
    expect(applyDelta(other, b2, 't')).toEqual(next);
    // No image in the log or in `pages`: the page is logged whole, whatever the core says.
    const [, [, b3, d3]] = decodeFrame(encodeFrame([[0, page0(1)], [9, next]], undefined, undefined, [undefined, given]), 't');
    expect([d3, b3]).toEqual([false, next]);
  });

  // The core's deltas with copy runs (at_store_set_log_deltas 2): (offset, length | 0x8000,
  // source, 0) takes the base's bytes at source, as the base was before any run. A frame that
  // carries one is an 'ATL3'; readers apply it like any other (log, `pages` records).
  it("copy runs: the base's bytes from elsewhere in the page; a frame with one is 'ATL3'; malformed ones are CORRUPT", () => {
    const base = new Uint8Array(4096);
    for (let i = 0; i < 4096; i++) base[i] = (i * 37 + (i >> 8)) & 0xff;
    // an insert: 30 slots of 8 bytes at 64 + 80 move up 8 bytes, a new slot goes in, the
    // first 8 bytes are rewritten (a literal run before the copy overwrites what it reads)
    const next = base.slice();
    next.copyWithin(64 + 88, 64 + 80, 64 + 80 + 240);
    next.fill(0xee, 64 + 80, 64 + 88);
    next.fill(0xaa, 0, 8);
    const runs = new Uint8Array(4 + 8 + 4 + 8 + 8);
    const dv = new DataView(runs.buffer);
    dv.setUint16(0, 0, true);
    dv.setUint16(2, 8, true);
    runs.fill(0xaa, 4, 12);
    dv.setUint16(12, 64 + 80, true);
    dv.setUint16(14, 8, true);
    runs.fill(0xee, 16, 24);
    dv.setUint16(24, 64 + 88, true);
    dv.setUint16(26, 240 | 0x8000, true);
    dv.setUint16(28, 64 + 80, true);
    expect(applyDelta(base, runs, 't', true)).toEqual(next);
    // outside an 'ATL3' frame a copy run is CORRUPT (the core refuses them in the file log too)
    expect(corrupt(() => applyDelta(base, runs, 't'))).toBe('CORRUPT');
    // a copy that reads what the first run overwrote reads the base's bytes
    const r2 = new Uint8Array(4 + 8 + 8);
    const d2 = new DataView(r2.buffer);
    d2.setUint16(2, 8, true);
    r2.fill(0xaa, 4, 12);
    d2.setUint16(12, 1000, true);
    d2.setUint16(14, 16 | 0x8000, true);
    d2.setUint16(16, 0, true);
    expect(applyDelta(base, r2, 't', true).subarray(1000, 1016)).toEqual(base.subarray(0, 16));
    // in a frame, given by the core (trailers match): 'ATL3', applied by a log and a reader
    base.fill(9, 4088);
    next.fill(9, 4088);
    const frame = encodeFrame([[0, page0(3)], [9, next]], (id) => (id === 9 ? base : undefined), undefined, [undefined, { base: base.slice(4088), runs }]);
    expect(new DataView(frame.buffer).getUint32(0, true)).toBe(FRAME_MAGIC_COPIES);
    expect(frame.length).toBe(8 + 8 + 4096 + 8 + runs.length);
    const log = new PageLog();
    log.apply(2, encodeFrame([[0, page0(2)], [9, base]]), 't');
    log.apply(3, frame, 't');
    expect(log.latest.get(9)).toEqual(next);
    // against a `pages` record, as an 'ATL2' frame's deltas are
    const onStored = encodeFrame([[0, page0(4)], [9, next]], () => undefined, (id) => (id === 9 ? base : undefined), [undefined, { base: base.slice(4088), runs }]);
    expect(new DataView(onStored.buffer).getUint32(0, true)).toBe(FRAME_MAGIC_COPIES);
    const reader = new PageLog();
    expect(reader.storedBases([onStored], 't')).toEqual([9]);
    reader.apply(4, onStored, 't', (id) => (id === 9 ? base : undefined));
    expect(reader.latest.get(9)).toEqual(next);
    // malformed copy runs: from past the page, to past the page, empty, a pad word that is not 0, cut short
    for (const [offset, length, source, pad, cut] of [[0, 8, 4092, 0, 0], [4092, 8, 0, 0, 0], [0, 0, 0, 0, 0], [0, 8, 0, 1, 0], [0, 8, 0, 0, 2]]) {
      const bad = new Uint8Array(8);
      const bv = new DataView(bad.buffer);
      bv.setUint16(0, offset!, true);
      bv.setUint16(2, length! | 0x8000, true);
      bv.setUint16(4, source!, true);
      bv.setUint16(6, pad!, true);
      expect(corrupt(() => applyDelta(base, bad.subarray(0, 8 - cut!), 't', true)), `${offset} ${length} ${source} ${pad} ${cut}`).toBe('CORRUPT');
    }
  });

  it('a delta with no base in the log, or a run off the page, is CORRUPT', () => {
    const base = image(1), next = base.slice();
    next[10] = 9;
    const frame = encodeFrame([[0, page0(2)], [4, next]], (id) => (id === 4 ? base : undefined));
    expect(corrupt(() => new PageLog().apply(2, frame, 't'))).toBe('CORRUPT');
    const log = new PageLog();
    log.apply(1, encodeFrame([[0, page0(1)], [4, base]]), 't');
    log.apply(2, frame, 't');
    expect(log.latest.get(4)).toEqual(next);
    expect(ownsBuffer(log.image(4)!)).toBe(true);
    const bad = new Uint8Array([0xfc, 0x0f, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]); // 8 bytes at 4092
    expect(corrupt(() => applyDelta(base, bad, 't'))).toBe('CORRUPT');
    expect(corrupt(() => applyDelta(base, new Uint8Array([0, 0, 9, 0, 1]), 't'))).toBe('CORRUPT');
    expect(corrupt(() => applyDelta(base, new Uint8Array([0, 0]), 't'))).toBe('CORRUPT');
  });

  it("a delta against a page's record in `pages` ('ATL2'): applied on that record; CORRUPT without it; an 'ATL1' frame never takes one", () => {
    const base = image(3), next = base.slice();
    next[200] = 7;
    const frame = encodeFrame([[0, page0(5)], [6, next]], () => undefined, (id) => (id === 6 ? base : undefined));
    expect(new DataView(frame.buffer).getUint32(0, true)).toBe(FRAME_MAGIC_STORED);
    expect(frame.length).toBeLessThan(PAGE_BYTES * 2); // page 0 whole, page 6 a delta
    const log = new PageLog();
    expect(log.storedBases([frame], 't')).toEqual([6]);
    expect(corrupt(() => new PageLog().apply(5, frame, 't'))).toBe('CORRUPT');
    log.apply(5, frame, 't', (id) => (id === 6 ? base : undefined));
    expect(log.latest.get(6)).toEqual(next);
    // the log's own image wins over `pages` (and a later frame's delta is against it)
    const next2 = next.slice();
    next2[300] = 1;
    const f2 = encodeFrame([[0, page0(6)], [6, next2]], (id) => log.latest.get(id), () => base);
    expect(new DataView(f2.buffer).getUint32(0, true)).toBe(FRAME_MAGIC);
    expect(log.storedBases([f2], 't')).toEqual([]);
    log.apply(6, f2, 't', () => base);
    expect(log.latest.get(6)).toEqual(next2);
    // no stored base: images, and an ATL1 frame
    const f3 = encodeFrame([[0, page0(7)], [8, next]]);
    expect(new DataView(f3.buffer).getUint32(0, true)).toBe(FRAME_MAGIC);
  });

  it('commitSequence is the higher superblock slot', () => {
    expect(commitSequence(page0(5, 9))).toBe(9);
    expect(commitSequence(page0(12, 3))).toBe(12);
  });
});

describe('PageLog', () => {
  it('keeps the newest image of each page, copied into its slots', () => {
    const log = new PageLog();
    const f1 = encodeFrame([[0, page0(1)], [5, image(1)], [6, image(1)]]);
    log.apply(1, f1, 't');
    const view5 = log.latest.get(5)!;
    const copy5 = log.image(5)!;
    // Views of one buffer, as the store hands a commit's pages to this backend.
    const block = new Uint8Array(2 * PAGE_BYTES);
    block.set(page0(2), 0);
    block.set(image(2), PAGE_BYTES);
    const given: [number, Uint8Array][] = [[0, block.subarray(0, PAGE_BYTES)], [5, block.subarray(PAGE_BYTES)]];
    log.add(2, given, frameBytes(2), 't');
    expect([...log.latest.keys()].sort((a, b) => a - b)).toEqual([0, 5, 6]);
    expect(log.latest.get(5)![0]).toBe(2);
    expect(log.latest.get(6)![0]).toBe(1);
    expect(commitSequence(log.latest.get(0)!)).toBe(2);
    // Nothing of the frame or of the arrays given is kept: changing them changes no image.
    f1.fill(0xee);
    block.fill(0xee);
    expect(log.latest.get(5)).toEqual(image(2));
    expect(log.latest.get(6)).toEqual(image(1));
    expect(log.latest.get(5)!.buffer).not.toBe(block.buffer);
    // A page's slot is overwritten in place: a view from `latest` follows, a copy from image() not.
    expect(log.latest.get(5)).toBe(view5);
    expect(view5).toEqual(image(2));
    expect(copy5).toEqual(image(1));
    expect(ownsBuffer(copy5)).toBe(true);
    expect(log.image(7)).toBeUndefined();
    expect(log.keys).toEqual([1, 2]);
    expect(log.bytes).toBe(f1.length + frameBytes(2));
    log.reset();
    expect([log.latest.size, log.keys.length, log.bytes]).toEqual([0, 0, 0]);
  });

  it('holds more pages than a slab, and uses its slots again after a reset', () => {
    const log = new PageLog();
    const img = (id: number, round: number) => {
      const a = new Uint8Array(PAGE_BYTES);
      new DataView(a.buffer).setUint32(8, id * 1000 + round, true);
      a[PAGE_BYTES - 1] = round;
      return a;
    };
    const stamp = (a: Uint8Array) => new DataView(a.buffer, a.byteOffset).getUint32(8, true);
    for (let round = 1; round <= 3; round++) {
      let seq = round * 10;
      for (let from = 1; from < 700; from += 250) {
        const pages: [number, Uint8Array][] = [[0, page0(++seq)]];
        for (let id = from; id < from + 250 && id < 700; id++) pages.push([id, img(id, round)]);
        log.add(seq, pages, 1, 't');
      }
      expect(log.latest.size).toBe(700);
      for (let id = 1; id < 700; id++) {
        expect(stamp(log.latest.get(id)!)).toBe(id * 1000 + round);
        expect(log.latest.get(id)![PAGE_BYTES - 1]).toBe(round);
      }
      if (round === 2) log.reset();
    }
  });

  it('refuses frames out of order or without page 0 first', () => {
    const log = new PageLog();
    log.apply(4, encodeFrame([[0, page0(4)]]), 't');
    expect(corrupt(() => log.apply(4, encodeFrame([[0, page0(4)]]), 't'))).toBe('CORRUPT');
    expect(corrupt(() => log.apply(3, encodeFrame([[0, page0(3)]]), 't'))).toBe('CORRUPT');
    expect(corrupt(() => log.apply(5, encodeFrame([[7, image(1)], [0, page0(5)]]), 't'))).toBe('CORRUPT');
    expect(corrupt(() => log.apply(5, encodeFrame([]), 't'))).toBe('CORRUPT');
    expect(log.keys).toEqual([4]);
  });

  it("plans a reader's reads: only new frames, or all of them after a checkpoint", () => {
    const log = new PageLog();
    expect(log.plan([])).toEqual({ reset: false, read: [] });
    expect(log.plan([3, 4])).toEqual({ reset: false, read: [3, 4] });
    for (const k of [3, 4]) log.apply(k, encodeFrame([[0, page0(k)]]), 't');
    expect(log.plan([3, 4])).toEqual({ reset: false, read: [] });
    expect(log.plan([3, 4, 5, 6])).toEqual({ reset: false, read: [5, 6] });
    // A checkpoint cleared frames 3 and 4; later commits appended 7.
    expect(log.plan([7])).toEqual({ reset: true, read: [7] });
    expect(log.plan([])).toEqual({ reset: true, read: [] });
    expect(log.plan([4, 5])).toEqual({ reset: true, read: [4, 5] });
  });

  it('changedSince: the pages of the frames after a frame it applied; undefined for one it did not, or after a reset', () => {
    const log = new PageLog();
    log.apply(3, encodeFrame([[0, page0(3)], [5, image(1)]]), 't');
    log.apply(4, encodeFrame([[0, page0(4)], [6, image(1)], [9, image(1)]]), 't');
    log.add(7, [[0, page0(7)], [5, image(2)]], 1, 't');
    expect(log.changedSince(7)).toEqual([]);
    expect(log.changedSince(4)).toEqual([0, 5]);
    // each page once (a reader far behind asks with long lists)
    expect(log.changedSince(3)).toEqual([0, 6, 9, 5]);
    // the same answer until the log changes: a reader asks for every page it is handed
    const a = log.changedSince(4);
    expect(log.changedSince(4)).toBe(a);
    log.add(10, [[0, page0(10)], [11, image(2)]], 1, 't');
    expect(log.changedSince(4)).not.toBe(a);
    expect(log.changedSince(4)).toEqual([0, 5, 11]);
    // 2 came before the log (a checkpoint), 5 and 6 never were commits: not known
    for (const k of [2, 5, 6, 8]) expect(log.changedSince(k)).toBeUndefined();
    log.reset();
    expect(log.changedSince(3)).toBeUndefined();
    log.apply(8, encodeFrame([[0, page0(8)], [2, image(3)]]), 't');
    expect(log.changedSince(7)).toBeUndefined();
    expect(log.changedSince(8)).toEqual([]);
    // The writer's log keeps no lists: it never knows.
    const writer = new PageLog(false);
    writer.apply(3, encodeFrame([[0, page0(3)], [5, image(1)]]), 't');
    writer.apply(4, encodeFrame([[0, page0(4)], [6, image(1)]]), 't');
    expect(writer.changedSince(3)).toBeUndefined();
  });
});

describe('PageLog against a model (what IndexedDB would hold)', () => {
  it('a writer, a reader replaying from scratch and a reader following with plan() resolve every page as the model, over random commits and checkpoints', () => {
    let x = 777;
    const rnd = (n: number) => ((x = (x * 1103515245 + 12345) >>> 0), (x >>> 8) % n);
    const PAGES = 40;
    const model = new Map<number, Uint8Array>(); // the committed image of every page
    const stored = new Map<number, Uint8Array>(); // the object store `pages`
    let frames: [number, Uint8Array][] = []; // the object store `log`
    const writer = new PageLog();
    const follower = new PageLog();
    let seq = 0, checkpoints = 0, deltas = 0, onStored = 0;
    /** The follower's pool (see below), the commit it holds pages of, and how often it could
     * keep them. */
    const pool = new Map<number, Uint8Array>();
    let followerAt = 0, kept = 0, unknown = 0;
    const resolve = (log: PageLog, id: number) => log.latest.get(id) ?? stored.get(id);
    const same = (a: Uint8Array | undefined, b: Uint8Array) => a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);
    const check = (log: PageLog, what: string) => {
      for (const [id, img] of model) if (!same(resolve(log, id), img)) expect(resolve(log, id), `${what}: page ${id} after commit ${seq}`).toEqual(img);
    };
    for (let c = 0; c < 600; c++) {
      seq++;
      const p0 = page0(seq);
      const changed: [number, Uint8Array][] = [[0, p0]];
      const ids = new Set<number>();
      for (let n = 1 + rnd(6); n > 0; n--) ids.add(1 + rnd(PAGES));
      for (const id of ids) {
        const before = model.get(id);
        const img = before === undefined || rnd(5) === 0 ? image(rnd(256)) : before.slice();
        for (let k = rnd(rnd(4) === 0 ? 400 : 8); k > 0; k--) img[rnd(4096)] = rnd(256);
        changed.push([id, img]);
      }
      // (deltas of pages the log does not hold are against `pages`, as the backend's writer
      // makes them after a checkpoint: 'ATL2' frames)
      const frame = encodeFrame(changed, (id) => writer.latest.get(id), (id) => stored.get(id));
      if (writer.bytes + frame.length > 24 << 10) {
        // a checkpoint: every logged page and this commit's into `pages`, the log cleared
        // (copied, as the backend's puts copy them: the slots are used again after reset)
        for (const [id, img] of writer.latest) stored.set(id, img.slice());
        for (const [id, img] of changed) stored.set(id, img);
        frames = [];
        writer.reset();
        checkpoints++;
      } else {
        onStored += writer.storedBases([frame], 't').length;
        frames.push([seq, frame]);
        writer.add(seq, changed, frame.length, 't');
        deltas += decodeFrame(frame, 't').filter((e) => e[2]).length;
      }
      for (const [id, img] of changed) model.set(id, img);
      check(writer, 'writer');
      if (rnd(3) === 0) {
        // A reader that follows: plans from the keys it finds, reads only what the plan says.
        const plan = follower.plan(frames.map(([k]) => k));
        if (plan.reset) follower.reset();
        for (const k of plan.read) follower.apply(k, frames.find(([f]) => f === k)![1], 't', (id) => stored.get(id));
        check(follower, 'follower');
        // Its pool: the pages it read at commit `followerAt`. Moving to `seq`, it keeps those
        // that changedSince does not name (all go when it cannot tell): each kept one must be
        // the model's image.
        const changedIds = follower.changedSince(followerAt);
        if (changedIds === undefined) {
          pool.clear();
          unknown++;
        } else {
          for (const id of changedIds) pool.delete(id);
          kept += pool.size;
        }
        for (const [id, img] of pool) expect(same(img, model.get(id)!), `kept page ${id} at commit ${seq}`).toBe(true);
        for (let n = rnd(PAGES); n > 0; n--) {
          const id = 1 + rnd(PAGES);
          const img = model.get(id);
          if (img !== undefined) pool.set(id, img.slice());
        }
        followerAt = seq;
      }
      if (rnd(25) === 0) {
        const fresh = new PageLog();
        const need = new Set(fresh.storedBases(frames.map(([, f]) => f), 't'));
        for (const [k, f] of frames) fresh.apply(k, f.slice(), 't', (id) => (need.has(id) ? stored.get(id) : undefined));
        check(fresh, 'replay');
      }
    }
    expect(checkpoints).toBeGreaterThan(10);
    expect(kept).toBeGreaterThan(200);
    expect(unknown).toBeGreaterThan(5);
    expect(deltas).toBeGreaterThan(150);
    expect(onStored).toBeGreaterThan(50);
  });
});
