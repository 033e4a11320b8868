// The page checksum in wasm (issue 10): the SIMD kernel of the st and mt builds gives
// CRC-32C's values, as a bytewise definition written here in JS computes them, at every
// length around its thresholds (2048: a padded partial chunk; 4096: whole chunks), at
// unaligned addresses; and the page-sized values pinned natively (tests/core/hash_test.cc).
import { describe, expect, it } from 'vitest';
import { loadWasm } from '../../ts/src/wasm.js';

const TABLE = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  TABLE[i] = c >>> 0;
}
function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = (c >>> 8) ^ TABLE[(c ^ bytes[i]) & 0xff];
  return (c ^ 0xffffffff) >>> 0;
}
const pattern = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + 7) & 255);

// the same pins as Hash.Crc32cPinnedPageSizedValues
const PINNED: [number, number][] = [
  [2047, 0xbcc06929], [2048, 0x4fa26a4d], [3841, 0x035efc8b], [4092, 0xdf032110],
  [4096, 0xe6adc5b2], [4120, 0x02ca9320], [8192, 0xfd5bed27], [12289, 0xd0dd452f],
];

describe.each(['st', 'mt'] as const)('%s build: at_checksum', (build) => {
  it('gives the pinned page-sized values', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    const data = pattern(12289);
    const p = w.exports.at_alloc(data.length);
    w.u8().set(data, p);
    for (const [len, want] of PINNED) {
      expect(crc32c(data.subarray(0, len))).toBe(want); // the JS definition agrees with the pin
      expect(w.exports.at_checksum(p, len) >>> 0).toBe(want);
    }
    w.exports.at_free(p);
  });

  it('equals the bytewise definition around every threshold, unaligned', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    const data = new Uint8Array(3 * 4096 + 64);
    let s = 0x2545f491;
    for (let i = 0; i < data.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; data[i] = s >>> 24; }
    const p = w.exports.at_alloc(data.length);
    w.u8().set(data, p);
    const lens = [0, 1, 3, 4, 5, 15, 16, 17, 255, 256, 257, 1000];
    for (const c of [2048, 2304, 3840, 4096, 6144, 8192, 12288]) for (let n = c - 5; n <= c + 5; n++) lens.push(n);
    let checked = 0;
    for (const len of lens) {
      for (const off of [0, 1, 3, 7]) {
        expect(w.exports.at_checksum(p + off, len) >>> 0, `len ${len} off ${off}`).toBe(crc32c(data.subarray(off, off + len)));
        checked++;
      }
    }
    expect(checked).toBe(lens.length * 4);
    w.exports.at_free(p);
  });
});

// page_hash (format version 2's page checksum, core/util/page_hash.cc), defined again here in
// JS from docs/FORMAT.md: NH over 32-byte blocks with SplitMix64 keys, per 4 KiB chunk, fmix64.
const M64 = (1n << 64n) - 1n;
const KEYS = (() => {
  const k = new Uint32Array(1024);
  let s = 0x6565727470616461n;
  for (let i = 0; i < 512; i++) {
    s = (s + 0x9e3779b97f4a7c15n) & M64;
    let z = s;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M64;
    z ^= z >> 31n;
    k[2 * i] = Number(z & 0xffffffffn);
    k[2 * i + 1] = Number(z >> 32n);
  }
  return k;
})();
function fmix64(x: bigint): bigint {
  x ^= x >> 33n;
  x = (x * 0xff51afd7ed558ccdn) & M64;
  x ^= x >> 33n;
  x = (x * 0xc4ceb9fe1a85ec53n) & M64;
  return x ^ (x >> 33n);
}
function pageHash(b: Uint8Array): number {
  let h = 0x9e3779b97f4a7c15n ^ BigInt(b.length);
  for (let at = 0; at < b.length; at += 4096) {
    const chunk = new Uint8Array(Math.ceil(Math.min(4096, b.length - at) / 32) * 32); // zero-padded
    chunk.set(b.subarray(at, Math.min(b.length, at + 4096)));
    const dv = new DataView(chunk.buffer);
    let acc = 0n;
    for (let blk = 0; blk < chunk.length / 32; blk++) {
      for (let t = 0; t < 4; t++) {
        const x = (dv.getUint32(32 * blk + 4 * t, true) + KEYS[8 * blk + t]!) >>> 0;
        const y = (dv.getUint32(32 * blk + 16 + 4 * t, true) + KEYS[8 * blk + t + 4]!) >>> 0;
        acc = (acc + BigInt(x) * BigInt(y)) & M64;
      }
    }
    h = fmix64((h + acc) & M64);
  }
  if (b.length === 0) h = fmix64(h);
  return Number(h & 0xffffffffn);
}
// the same pins as Hash.PageHashPinnedValues
const PAGE_HASH_PINNED: [number, number][] = [
  [0, 0xa4ab2eea], [1, 0x9dde71ad], [31, 0xf634d998], [32, 0x36b6f960], [33, 0x6049e960],
  [4092, 0xf41959a0], [4096, 0x3875c5cf], [4097, 0x39145d10], [8192, 0x977ca54c], [12289, 0x924faee6],
];

describe.each(['st', 'mt'] as const)('%s build: at_page_hash', (build) => {
  it('gives the pinned values and the definition written in JS, unaligned, at every length around blocks and chunks', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    const data = pattern(12289);
    const p = w.exports.at_alloc(data.length + 8);
    w.u8().set(data, p);
    for (const [len, want] of PAGE_HASH_PINNED) {
      expect(pageHash(data.subarray(0, len))).toBe(want); // the JS definition agrees with the pin
      expect(w.exports.at_page_hash(p, len) >>> 0).toBe(want);
    }
    const rnd = new Uint8Array(2 * 4096 + 64);
    let s = 0x2545f491;
    for (let i = 0; i < rnd.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; rnd[i] = s >>> 24; }
    w.u8().set(rnd, p);
    const lens = [0, 1, 7, 8, 100];
    for (const c of [32, 64, 4064, 4092, 4096, 8192]) for (let n = c - 3; n <= c + 3; n++) lens.push(n);
    let checked = 0;
    for (const len of lens) {
      for (const off of [0, 1, 5]) {
        expect(w.exports.at_page_hash(p + off, len) >>> 0, `len ${len} off ${off}`).toBe(pageHash(rnd.subarray(off, off + len)));
        checked++;
      }
    }
    expect(checked).toBe(lens.length * 3);
    w.exports.at_free(p);
  });
});
