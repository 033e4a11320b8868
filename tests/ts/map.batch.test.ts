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
      expect(again.every(([k, v]) => k !== v && k.buffer !== v.buffer && Buffer.compare(k, v) === 0)).toBe(true);
      again[0]![0][0] = 0xee; // a copy: the map is unchanged
      expect(mb.has(want[0]!)).toBe(true);
      expect([...mn.keys()]).toEqual(Array.from({ length: 300 }, (_, i) => i * 1.5 - 100));
      expect([...mn.values()].slice(0, 3)).toEqual(['v0', 'v1', 'v2']);
    } finally {
      mb.free();
      mn.free();
    }
  });
});
