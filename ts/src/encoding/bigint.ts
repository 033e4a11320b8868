/**
 * `bigint` keys: any bigint, in numeric order.
 *
 * | tag  | numbers                 | following bytes                                          |
 * |------|-------------------------|----------------------------------------------------------|
 * | 0x18 | x < -2^63               | u16 0xFFFF - n, then ~(magnitude, n bytes big-endian)    |
 * | 0x19 | -2^63 <= x < 2^63       | 8: x + 2^63 as u64 big-endian (fixed width)              |
 * | 0x1A | x >= 2^63               | u16 n, then magnitude (n bytes big-endian, no leading 0) |
 *
 * The 64-bit range is fixed width (9 bytes), so consecutive values differ only in the last
 * bytes (dense leaves). Outside it a longer magnitude is a larger number, hence the length
 * first (complemented for negatives, like the magnitude). Self-delimiting, so it is also the
 * tuple element form. The largest bigint that fits a 1024-byte key has 1021 magnitude bytes.
 */
import { CorruptionError, InvalidKeyError, KeyTooLargeError } from '../errors.js';
import { type KeyEncoder, decodeWith, encodeWith } from './codec.js';
import { describe } from './utf8.js';

export const TAG_BIG_NEG = 0x18;
export const TAG_BIG_FIXED = 0x19;
export const TAG_BIG_POS = 0x1a;

const SIGN = 1n << 63n;

/** Value of a lower-case hex digit by char code ('0'-'9', 'a'-'f'). */
const HEX_VALUE = new Uint8Array(128);
for (let i = 0; i < 16; i++) HEX_VALUE[i.toString(16).charCodeAt(0)] = i;
/** Char codes of the hex digits. */
const HEX_CHAR = new Uint8Array(16).map((_, i) => i.toString(16).charCodeAt(0));
/** '0x' and room for the largest magnitude a key can hold, as hex: decoded to a string at once. */
const hexBuf = new Uint8Array(2 + 2 * 1024);
hexBuf[0] = 48;
hexBuf[1] = 120;
const ascii = new TextDecoder(); // hex digits are ASCII: UTF-8 decodes them as they are, and fastest

/** @internal */
export function writeBigInt(x: bigint, u8: Uint8Array, dv: DataView, off: number, end: number): number {
  if (typeof x !== 'bigint') throw new InvalidKeyError(`bigint key must be a bigint, got ${describe(x)}`);
  if (BigInt.asIntN(64, x) === x) {
    if (off + 9 > end) throw new KeyTooLargeError();
    u8[off] = TAG_BIG_FIXED;
    dv.setBigUint64(off + 1, BigInt.asUintN(64, x) ^ SIGN);
    return off + 9;
  }
  const neg = x < 0n;
  let hex = (neg ? -x : x).toString(16);
  if (hex.length & 1) hex = '0' + hex;
  const n = hex.length >> 1;
  if (off + 3 + n > end) throw new KeyTooLargeError(`bigint key of ${n} bytes is too large`);
  u8[off] = neg ? TAG_BIG_NEG : TAG_BIG_POS;
  dv.setUint16(off + 1, neg ? 0xffff - n : n);
  off += 3;
  for (let i = 0; i < n; i++) {
    const b = (HEX_VALUE[hex.charCodeAt(2 * i)]! << 4) | HEX_VALUE[hex.charCodeAt(2 * i + 1)]!;
    u8[off + i] = neg ? 255 - b : b;
  }
  return off + n;
}

/** @internal Reads a bigint written by writeBigInt; stores the end offset in pos[0]. */
export function readBigInt(u8: Uint8Array, dv: DataView, off: number, end: number, pos: number[]): bigint {
  const tag = u8[off];
  if (tag === TAG_BIG_FIXED && off + 9 <= end) {
    pos[0] = off + 9;
    return BigInt.asIntN(64, dv.getBigUint64(off + 1) ^ SIGN);
  }
  if ((tag === TAG_BIG_POS || tag === TAG_BIG_NEG) && off + 3 <= end) {
    const neg = tag === TAG_BIG_NEG;
    const n = neg ? 0xffff - dv.getUint16(off + 1) : dv.getUint16(off + 1);
    off += 3;
    if (off + n <= end && n <= 1024) {
      // Hex digits into a byte buffer, one string from it, one BigInt parse: linear time.
      for (let i = 0; i < n; i++) {
        const b = neg ? 255 - u8[off + i]! : u8[off + i]!;
        hexBuf[2 + 2 * i] = HEX_CHAR[b >> 4]!;
        hexBuf[3 + 2 * i] = HEX_CHAR[b & 15]!;
      }
      const hex = ascii.decode(hexBuf.subarray(0, 2 + 2 * n));
      pos[0] = off + n;
      const m = BigInt(hex);
      return neg ? -m : m;
    }
  }
  throw new CorruptionError(`corrupt bigint key encoding (tag 0x${(tag ?? 0).toString(16)})`);
}

const pos = [0];

export const bigintKey: KeyEncoder<bigint> = {
  name: 'bigint',
  encodeInto(key: bigint, u8: Uint8Array, dv: DataView, off: number, end: number): number {
    return writeBigInt(key, u8, dv, off, end);
  },
  decodeFrom(u8: Uint8Array, dv: DataView, off: number, end: number): bigint {
    return readBigInt(u8, dv, off, end, pos);
  },
  encode(key: bigint): Uint8Array {
    return encodeWith(bigintKey, key);
  },
  decode(bytes: Uint8Array): bigint {
    return decodeWith(bigintKey, bytes);
  },
};
