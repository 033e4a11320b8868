// Iterator batches come from the core in columns and utf8 keys are decoded a run of ASCII keys
// at a time (ts/src/map/batch.ts). These cases aim at the seams of that decoding: runs that
// end at a non-ASCII key, at RUN_KEYS keys or RUN_BYTES bytes, keys around V8's 13-character
// slice threshold, the empty key, stop bounds inside a run, and the other key encodings.
import { beforeAll, describe, expect, it } from 'vitest';
import { BTreeMap } from '../../ts/src/index.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';
import { BUILDS, wasmFor } from './builds.js';
import { SplitMix } from './store-rng.js';

/** Keys that cover the decoding's cases, in no particular order. */
function mixedKeys(rng: SplitMix, n: number): string[] {
  const pieces = ['a', 'Z', '0', '~', 'é', '€', '😀', 'ß', '\u007f', '\u0080', '\u0000'];
  const out = new Set<string>(['', 'x'.repeat(12), 'x'.repeat(13), 'y'.repeat(1000), 'z'.repeat(1024)]);
  while (out.size < n) {
    const ascii = rng.int(4) !== 0;
    const len = rng.int(4) === 0 ? rng.int(200) : rng.int(30);
    let s = '';
    for (let i = 0; i < len; i++) {
      s += ascii ? String.fromCharCode(32 + rng.int(95)) : pieces[rng.int(pieces.length)]!;
    }
    out.add(s);
  }
  return [...out];
}

function utf8Order(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8'), y = Buffer.from(b, 'utf8');
  return Buffer.compare(x, y);
}

describe.each(BUILDS)('%s build: batched iteration decodes keys exactly', (build) => {
  let wasm: AdaptreeWasm;
  beforeAll(async () => {
    wasm = await wasmFor(build);
  });

  it('utf8 keys: ASCII runs, non-ASCII keys, long and empty keys, forward and reverse, keys and entries', () => {
    const rng = new SplitMix(7);
    const keys = mixedKeys(rng, 3000);
    const sorted = [...keys].sort(utf8Order);
    const m = new BTreeMap<string, number>(undefined, { wasm });
    try {
      keys.forEach((k, i) => m.set(k, i));
      const index = new Map(keys.map((k, i) => [k, i]));
      expect([...m.keys()]).toEqual(sorted);
      expect([...m.keys({ reverse: true })]).toEqual([...sorted].reverse());
      expect([...m.entries()]).toEqual(sorted.map((k) => [k, index.get(k)]));
      expect([...m.values()]).toEqual(sorted.map((k) => index.get(k)));
    } finally {
      m.free();
    }
  });

  it('utf8 keys: a non-ASCII character at any position of keys 1 to 48 bytes long is seen (the core checks 16 bytes at a time)', () => {
    // The core marks a key holding a byte >= 0x80 (wasm: 16-byte SIMD loads, a masked one below
    // 16 bytes, an overlapping last one above): a key it missed would be cut from an ASCII run
    // by byte count and come out wrong.
    const keys: string[] = [];
    for (let len = 1; len <= 48; len++) {
      keys.push('a'.repeat(len));
      for (let at = 0; at < len; at++) {
        // '\u00ff' is two bytes (c3 bf), '\u0080' two (c2 80): the byte length grows by one.
        keys.push('b'.repeat(at) + (at % 2 ? '\u00ff' : '\u0080') + 'b'.repeat(len - at - 1));
        keys.push('c'.repeat(at) + '\u20ac' + 'c'.repeat(Math.max(0, len - at - 2)));
      }
    }
    const sorted = [...new Set(keys)].sort(utf8Order);
    const m = new BTreeMap<string, number>(keys.map((k, i) => [k, i]), { wasm });
    try {
      expect([...m.keys()]).toEqual(sorted);
      expect([...m.keys({ reverse: true })]).toEqual([...sorted].reverse());
      const seen: string[] = [];
      m.forEach((_v, k) => seen.push(k));
      expect(seen).toEqual(sorted);
      for (let i = 0; i < sorted.length; i += 37) expect([...m.keys({ gte: sorted[i], limit: 5 })]).toEqual(sorted.slice(i, i + 5));
    } finally {
      m.free();
    }
  });

  it('utf8 keys in a batch too large for columns (values over 512 KiB) come as records, non-ASCII keys intact', () => {
    // The core marks non-ASCII keys in the records it writes for columns; a batch it then leaves
    // as records (a value too large to copy again) must come without the marks.
    const keys = ['ascii-0', 'ключ-1', 'ascii-2', 'clé-3', '€-4', 'ascii-5'];
    const big = (i: number) => new Uint8Array(600 * 1024 + i).fill(i + 1);
    const m = new BTreeMap<string, Uint8Array>(undefined, { wasm, values: 'bytes' });
    try {
      keys.forEach((k, i) => m.set(k, i % 2 ? big(i) : new Uint8Array([i])));
      const sorted = [...keys].sort(utf8Order);
      const got = [...m.entries()];
      expect(got.map(([k]) => k)).toEqual(sorted);
      for (const [k, v] of got) {
        const i = keys.indexOf(k);
        expect(v.length).toBe(i % 2 ? 600 * 1024 + i : 1);
        expect(v[0]).toBe(i % 2 ? i + 1 : i);
      }
      expect([...m.keys({ gte: 'b', limit: 3 })]).toEqual(sorted.filter((k) => k >= 'b').slice(0, 3));
    } finally {
      m.free();
    }
  });

  it('utf8 keys: a stop bound or limit inside an ASCII run ends the iteration exactly there', () => {
    const keys: string[] = [];
    for (let i = 0; i < 200; i++) keys.push(`key-${String(i).padStart(5, '0')}-${'p'.repeat(i % 40)}`);
    const m = new BTreeMap<string, number>(keys.map((k, i) => [k, i]), { wasm });
    try {
      const sorted = [...keys].sort(utf8Order);
      for (const [lo, hi] of [[0, 1], [3, 40], [10, 11], [31, 33], [50, 199]] as const) {
        expect([...m.keys({ gte: sorted[lo], lt: sorted[hi] })]).toEqual(sorted.slice(lo, hi));
        expect([...m.keys({ gt: sorted[lo], lte: sorted[hi] })]).toEqual(sorted.slice(lo + 1, hi + 1));
        expect([...m.keys({ gte: sorted[lo], lte: sorted[hi], reverse: true })]).toEqual(sorted.slice(lo, hi + 1).reverse());
        expect([...m.keys({ gte: sorted[lo], limit: hi - lo })]).toEqual(sorted.slice(lo, hi));
      }
    } finally {
      m.free();
    }
  });

  it('keys kept from a batch stay the same after later batches and modifications', () => {
    const keys = Array.from({ length: 5000 }, (_, i) => `k${String(i).padStart(6, '0')}`);
    const m = new BTreeMap<string, number>(keys.map((k, i) => [k, i]), { wasm });
    try {
      const kept: string[] = [];
      let i = 0;
      for (const k of m.keys()) {
        if (i % 97 === 0) kept.push(k);
        if (i === 2500) m.set('k002500x', -1); // a modification: the iterator re-seeks after k002500
        i++;
      }
      const seq = [...keys.slice(0, 2501), 'k002500x', ...keys.slice(2501)];
      expect(i).toBe(seq.length);
      expect(kept).toEqual(seq.filter((_, j) => j % 97 === 0));
    } finally {
      m.free();
    }
  });

  it('bytes and number keys come back as fresh copies, in order', () => {
    const mb = new BTreeMap<Uint8Array, Uint8Array>(undefined, { wasm, keys: 'bytes', values: 'bytes' });
    const mn = new BTreeMap<number, string>(undefined, { wasm, keys: 'number', values: 'utf8' });
    try {
      const want: Uint8Array[] = [];
      for (let i = 0; i < 300; i++) {
        const k = new Uint8Array(1 + (i % 40)).fill(i & 0xff);
        k[0] = i >> 2;
        mb.set(k, k);
        mn.set(i * 1.5 - 100, `v${i}`);
      }
      for (const k of mb.keys()) want.push(k);
      const again = [...mb.entries()];
      expect(again.map(([k]) => k)).toEqual(want);
      // Keys and values of one batch may be views of one copy (batch.ts BatchCopy), never overlapping.
      const apart = (a: Uint8Array, b: Uint8Array) => a.buffer !== b.buffer || a.byteOffset + a.length <= b.byteOffset || b.byteOffset + b.length <= a.byteOffset;
      expect(again.every(([k, v]) => k !== v && apart(k, v) && Buffer.compare(k, v) === 0)).toBe(true);
      const all = again.flat();
      expect(all.every((a, i) => i === 0 || apart(all[i - 1]!, a))).toBe(true);
      expect(all.some((a) => a.buffer === wasm.memory.buffer)).toBe(false);
      again[0]![0][0] = 0xee; // a copy: the map and the value beside it are unchanged
      expect(mb.has(want[0]!)).toBe(true);
      expect(again[0]![1][0]).toBe(want[0]![0]);
      expect([...mn.keys()]).toEqual(Array.from({ length: 300 }, (_, i) => i * 1.5 - 100));
      expect([...mn.values()].slice(0, 3)).toEqual(['v0', 'v1', 'v2']);
    } finally {
      mb.free();
      mn.free();
    }
  });

  // bytes values leave wasm memory in one copy per batch (getMany, iterators), views of it
  // (batch.ts BatchCopy): a batch of up to SLAB_BATCH_MAX bytes goes into a slab shared with
  // other batches; in a larger one, values up to 16 bytes are arrays of their own.
  describe('bytes values out of a batch', () => {
    const SIZES = [0, 1, 16, 17, 63, 64, 65, 100, 1000, 1022, 1023, 5000];
    const valueOf = (i: number, n: number) => {
      const v = new Uint8Array(n);
      for (let j = 0; j < n; j++) v[j] = (i * 31 + j) & 0xff;
      return v;
    };
    const fill = (m: BTreeMap<any, Uint8Array>, keyOf: (i: number) => unknown, count: number) => {
      for (let i = 0; i < count; i++) m.set(keyOf(i), valueOf(i, SIZES[i % SIZES.length]!));
    };
    const isWasm = (v: Uint8Array) => v.buffer === wasm.memory.buffer;
    /** A value as text, to compare many at once (toEqual on typed arrays is slow). */
    const sig = (v: Uint8Array | undefined) => (v === undefined ? '-' : `${v.length}:${Buffer.from(v.buffer, v.byteOffset, v.length).toString('base64')}`);
    const sigs = (vs: (Uint8Array | undefined)[]) => vs.map(sig);

    for (const keys of ['utf8', 'number'] as const) {
      // utf8 keys take columns, number keys records: both copy values once per batch.
      const keyOf = (i: number) => (keys === 'utf8' ? `k${String(i).padStart(5, '0')}` : i);
      it(`${keys} keys: getMany, entries and values return exact copies that later calls never change`, () => {
        const m = new BTreeMap<any, Uint8Array>(undefined, { wasm, keys, values: 'bytes' });
        try {
          const n = 300;
          fill(m, keyOf, n);
          const want = Array.from({ length: n }, (_, i) => valueOf(i, SIZES[i % SIZES.length]!));
          const probe = [keyOf(5), keyOf(n + 1), ...Array.from({ length: n }, (_, i) => keyOf((i * 7) % n))];
          const wantMany = sigs([want[5], undefined, ...Array.from({ length: n }, (_, i) => want[(i * 7) % n])]);
          const many = m.getMany(probe);
          expect(sigs(many)).toEqual(wantMany);
          const ents = [...m.entries()];
          const vals = [...m.values()];
          const scan = [...m.entries({ gte: keyOf(100), limit: 50 })];
          expect(sigs(ents.map(([, v]) => v))).toEqual(sigs(want));
          expect(sigs(vals)).toEqual(sigs(want));
          expect(sigs(scan.map(([, v]) => v))).toEqual(sigs(want.slice(100, 150)));
          const out = [...many.slice(2), ...vals, ...ents.map(([, v]) => v), ...scan.map(([, v]) => v)] as Uint8Array[];
          // Never views of wasm memory; within one batch, the long ones share one copy, and
          // writing into one value changes no other value and not the map.
          expect(out.some(isWasm)).toBe(false);
          const long = (many.slice(2) as Uint8Array[]).filter((v) => v.length > 16);
          expect(long.length).toBeGreaterThan(100);
          expect(new Set(long.map((v) => v.buffer)).size).toBe(1);
          const short = (many.slice(2) as Uint8Array[]).filter((v) => v.length > 0 && v.length <= 16);
          expect(short.every((v) => v.buffer !== long[0]!.buffer && v.byteLength === v.buffer.byteLength)).toBe(true);
          const copy = sigs(many);
          long[0]!.fill(0xee);
          copy[many.indexOf(long[0])] = sig(long[0]);
          expect(sigs(many)).toEqual(copy);
          expect(sigs(m.getMany(probe))).toEqual(wantMany);
          // Later calls (batches, modifications, memory growth) leave returned values alone.
          for (let i = 0; i < n; i += 3) m.set(keyOf(i), new Uint8Array(300).fill(1));
          m.getMany(probe);
          [...m.entries()];
          if (build !== 'reference') {
            const big = new Uint8Array(256 * 1024).fill(9);
            const start = wasm.memory.buffer.byteLength;
            for (let i = 0; i < 1024 && wasm.memory.buffer.byteLength === start; i++) m.set(keyOf(n + 10 + i), big);
            expect(wasm.memory.buffer.byteLength).toBeGreaterThan(start);
          }
          expect(sigs(vals)).toEqual(sigs(want));
          expect(sigs(ents.map(([, v]) => v))).toEqual(sigs(want));
          expect(sigs(many)).toEqual(copy);
        } finally {
          m.free();
        }
      });
    }

    it('small batches: views of a shared slab that later batches, writes and a transferred slab never change', () => {
      const m = new BTreeMap<number, Uint8Array>(undefined, { wasm, keys: 'number', values: 'bytes' });
      const mk = new BTreeMap<Uint8Array, Uint8Array>(undefined, { wasm, keys: 'bytes', values: 'bytes' });
      try {
        const n = 2000;
        const size = (i: number) => [0, 1, 8, 16, 17, 40][i % 6]!;
        const keyBytes = (i: number) => new Uint8Array([i >> 8, i & 0xff, 7]);
        for (let i = 0; i < n; i++) {
          m.set(i, valueOf(i, size(i)));
          mk.set(keyBytes(i), valueOf(i, size(i)));
        }
        // Scans of 1..50, getMany of 20 keys: batches well under the slab's 32 KiB.
        const got: [number, Uint8Array][] = [];
        for (let s = 0; s < n; s += 37) {
          for (const [k, v] of m.entries({ gte: s, limit: 1 + (s % 50) })) got.push([k, v]);
          const keys = Array.from({ length: 20 }, (_, j) => (s + j * 13) % n);
          m.getMany(keys).forEach((v, j) => got.push([keys[j]!, v!]));
          for (const [k, v] of mk.entries({ gte: keyBytes(s), limit: 1 + (s % 50) })) {
            expect(k.length).toBe(3);
            got.push([(k[0]! << 8) | k[1]!, v]);
          }
        }
        expect(got.length).toBeGreaterThan(3000);
        const sized = got.filter(([, v]) => v.length > 0);
        // Small values share slabs: far fewer buffers than values, none of them wasm memory.
        const buffers = new Set(sized.map(([, v]) => v.buffer));
        expect(buffers.size).toBeLessThan(sized.length / 20);
        expect(sized.some(([, v]) => v.buffer === wasm.memory.buffer)).toBe(false);
        expect(sigs(got.map(([, v]) => v))).toEqual(sigs(got.map(([k]) => valueOf(k, size(k)))));
        // Writing into a value changes no other value and not the map.
        for (const [, v] of sized) v.fill(0xee);
        expect(sized.every(([, v]) => v.every((b) => b === 0xee))).toBe(true);
        expect(sigs(m.getMany([3, 4, 5]))).toEqual(sigs([valueOf(3, size(3)), valueOf(4, size(4)), valueOf(5, size(5))]));
        // A slab transferred away (detached) is replaced: later values are right and separate.
        const one = [...m.values({ gte: 2, limit: 1 })][0]!;
        structuredClone(one.buffer, { transfer: [one.buffer] });
        expect(one.length).toBe(0);
        const later = [...m.entries({ gte: 100, limit: 50 })];
        expect(sigs(later.map(([, v]) => v))).toEqual(sigs(later.map(([k]) => valueOf(k, size(k)))));
        expect(later.every(([, v]) => v.buffer.byteLength > 0 && v.buffer !== one.buffer)).toBe(true);
      } finally {
        m.free();
        mk.free();
      }
    });

    it.skipIf(build === 'reference')('memory growth before the first batch, under a live scan and inside getMany', () => {
      const m = new BTreeMap<string, Uint8Array>(undefined, { wasm, values: 'bytes' });
      try {
        const keyOf = (i: number) => `g${String(i).padStart(5, '0')}`;
        for (let i = 0; i < 200; i++) m.set(keyOf(i), valueOf(i, 40));
        // An iterator with a start bound made before the growth seeks (with its first batch) after it.
        const it1 = m.entries({ gte: keyOf(10), limit: 30 });
        const it2 = m.values({ gt: keyOf(20) });
        expect(it2.next().value).toEqual(valueOf(21, 40));
        const big = new Uint8Array(512 * 1024).fill(5);
        const start = wasm.memory.buffer.byteLength;
        for (let i = 0; i < 1024 && wasm.memory.buffer.byteLength === start; i++) m.set(`z${i}`, big);
        expect(wasm.memory.buffer.byteLength).toBeGreaterThan(start);
        expect([...it1].map(([k, v]) => [k, Array.from(v)])).toEqual(
          Array.from({ length: 30 }, (_, j) => [keyOf(10 + j), Array.from(valueOf(10 + j, 40))]),
        );
        // it2 re-seeks by key after the modifications (seek + batch in one call).
        expect(it2.next().value).toEqual(valueOf(22, 40));
        // getMany whose output outgrows memory: the context buffer grows inside the call.
        const zs = Array.from({ length: 64 }, (_, i) => `z${i}`).filter((k) => m.has(k));
        const before = wasm.memory.buffer.byteLength;
        const got = m.getMany([...zs, ...zs, ...zs, keyOf(3)]);
        expect(wasm.memory.buffer.byteLength).toBeGreaterThanOrEqual(before);
        expect(got.length).toBe(3 * zs.length + 1);
        expect(got.slice(0, -1).every((v) => v !== undefined && v.length === big.length && v[0] === 5 && v[big.length - 1] === 5)).toBe(true);
        expect(got[got.length - 1]).toEqual(valueOf(3, 40));
        expect(got.some((v) => v!.buffer === wasm.memory.buffer)).toBe(false);
      } finally {
        m.free();
      }
    });
  });
});
