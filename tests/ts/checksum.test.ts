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
