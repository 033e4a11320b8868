/**
 * `number` keys: every double except NaN, in numeric order.
 *
 * Rules: `-0` is stored as `+0` (as `Map` does: `get(-0)` finds the key 0 and iteration
 * returns +0); NaN is rejected with InvalidKeyError (a TypeError), since it equals nothing.
 *
 * Layout (a tag byte, then big-endian fields):
 *
 * | tag  | numbers                          | following bytes                                   |
 * |------|----------------------------------|---------------------------------------------------|
 * | 0x10 | -Infinity                        | none                                              |
 * | 0x11 | finite x <= -2^53                | 8: ~(IEEE 754 bits of x)                          |
 * | 0x12 | -2^53 < x < 2^53 (safe range)    | 8: floor(x) + 2^53 as u64; then, only if x is not |
 * |      |                                  |    an integer, 8: bits of x (~bits if x < 0)      |
 * | 0x13 | finite x >= 2^53                 | 8: IEEE 754 bits of x                             |
 * | 0x14 | +Infinity                        | none                                              |
 *
 * Integers in the safe range are 9 bytes and consecutive integers differ only in the last
 * bytes, which is what lets the core store dense integer keys in dense leaves. A fraction
 * sorts after its integer part (prefix first) and before the next integer: 1 < 1.5 < 2.
 * Within one unit interval all numbers have the same sign, so their IEEE bits (complemented
 * for negatives) order them, and decoding is exact (no arithmetic on the fraction).
 *
 * Inside a tuple the element is self-delimiting: after the 8 integer bytes of tag 0x12 comes
 * 0x00 (integer) or 0x01 followed by the 8 fraction bytes.
 */
import { CorruptionError, InvalidKeyError, KeyTooLargeError } from '../errors.js';
import { type KeyEncoder, decodeWith, encodeWith } from './codec.js';
import { describe } from './utf8.js';

export const TAG_NEG_INF = 0x10;
export const TAG_NEG_HUGE = 0x11;
export const TAG_SAFE = 0x12;
export const TAG_POS_HUGE = 0x13;
export const TAG_POS_INF = 0x14;

const TWO32 = 4294967296;
const HI_BIAS = 2097152; // 2^21: floor(x) / 2^32 lies in [-2^21, 2^21)
const MAX_SAFE = 9007199254740991;

const bitsDv = new DataView(new ArrayBuffer(8));

function fail(key: unknown): never {
  if (typeof key === 'number') throw new InvalidKeyError('number key must not be NaN');
  throw new InvalidKeyError(`number key must be a number, got ${describe(key)}`);
}

/** Writes x's double bits big-endian at off, complemented when `flip`. */
function writeBits(x: number, dv: DataView, off: number, flip: boolean): void {
  bitsDv.setFloat64(0, x);
  let hi = bitsDv.getUint32(0), lo = bitsDv.getUint32(4);
  if (flip) { hi = ~hi >>> 0; lo = ~lo >>> 0; }
  dv.setUint32(off, hi);
  dv.setUint32(off + 4, lo);
}

function readBits(dv: DataView, off: number, flip: boolean): number {
  let hi = dv.getUint32(off), lo = dv.getUint32(off + 4);
  if (flip) { hi = ~hi >>> 0; lo = ~lo >>> 0; }
  bitsDv.setUint32(0, hi);
  bitsDv.setUint32(4, lo);
  return bitsDv.getFloat64(0);
}

/**
 * @internal Writes number `x` at `off`. `inTuple` selects the self-delimiting form.
 * Throws for NaN and non-numbers; KeyTooLargeError when it does not fit before `end`.
 */
export function writeNumber(x: number, u8: Uint8Array, dv: DataView, off: number, end: number, inTuple: boolean): number {
  if (typeof x !== 'number' || x !== x) fail(x);
  if (x >= -MAX_SAFE && x <= MAX_SAFE) {
    const i = Math.floor(x);
    const frac = x !== i;
    const need = 9 + (inTuple ? 1 : 0) + (frac ? 8 : 0);
    if (off + need > end) throw new KeyTooLargeError();
    u8[off] = TAG_SAFE;
    const hi = Math.floor(i / TWO32);
    dv.setUint32(off + 1, hi + HI_BIAS);
    dv.setUint32(off + 5, i - hi * TWO32);
    off += 9;
    if (inTuple) u8[off++] = frac ? 1 : 0;
    if (frac) {
      writeBits(x, dv, off, x < 0);
      off += 8;
    }
    return off;
  }
  if (x === Infinity || x === -Infinity) {
    if (off + 1 > end) throw new KeyTooLargeError();
    u8[off] = x > 0 ? TAG_POS_INF : TAG_NEG_INF;
    return off + 1;
  }
  if (off + 9 > end) throw new KeyTooLargeError();
  u8[off] = x > 0 ? TAG_POS_HUGE : TAG_NEG_HUGE;
  writeBits(x, dv, off + 1, x < 0);
  return off + 9;
}

/** @internal Reads a number written by writeNumber; returns it and stores the end in `pos[0]`. */
export function readNumber(u8: Uint8Array, dv: DataView, off: number, end: number, inTuple: boolean, pos: number[]): number {
  const tag = u8[off];
  switch (tag) {
    case TAG_SAFE: {
      if (off + 9 > end) break;
      const i = (dv.getUint32(off + 1) - HI_BIAS) * TWO32 + dv.getUint32(off + 5);
      off += 9;
      let frac: boolean;
      if (inTuple) {
        if (off >= end) break;
        frac = u8[off++] === 1;
      } else {
        frac = end - off >= 8;
      }
      if (!frac) { pos[0] = off; return i; }
      if (off + 8 > end) break;
      pos[0] = off + 8;
      return readBits(dv, off, i < 0);
    }
    case TAG_NEG_INF: pos[0] = off + 1; return -Infinity;
    case TAG_POS_INF: pos[0] = off + 1; return Infinity;
    case TAG_NEG_HUGE:
    case TAG_POS_HUGE:
      if (off + 9 > end) break;
      pos[0] = off + 9;
      return readBits(dv, off + 1, tag === TAG_NEG_HUGE);
  }
  throw new CorruptionError(`corrupt number key encoding (tag 0x${(tag ?? 0).toString(16)})`);
}

const pos = [0];

export const numberKey: KeyEncoder<number> = {
  name: 'number',
  encodeInto(key: number, u8: Uint8Array, dv: DataView, off: number, end: number): number {
    return writeNumber(key, u8, dv, off, end, false);
  },
  decodeFrom(u8: Uint8Array, dv: DataView, off: number, end: number): number {
    return readNumber(u8, dv, off, end, false, pos);
  },
  encode(key: number): Uint8Array {
    return encodeWith(numberKey, key);
  },
  decode(bytes: Uint8Array): number {
    return decodeWith(numberKey, bytes);
  },
};
