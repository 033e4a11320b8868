/**
 * `tuple` keys: arrays whose elements are strings, numbers, bigints, Uint8Arrays or nested
 * arrays of those, ordered element by element; a shorter tuple sorts before a longer one it
 * is a prefix of: `["a"] < ["a", 1] < ["a", "b"] < ["ab"]`.
 *
 * Each element starts with a type tag, so elements of different types order by type:
 * number < bigint < string < bytes < tuple (a number and a bigint never compare by value).
 *
 * | tag       | element  | bytes                                                               |
 * |-----------|----------|---------------------------------------------------------------------|
 * | 0x10-0x14 | number   | the `number` encoding, self-delimiting form (see number.ts)         |
 * | 0x18-0x1A | bigint   | the `bigint` encoding (self-delimiting already)                     |
 * | 0x20      | string   | UTF-8 with 0x00 escaped as 0x00 0xFF, then terminator 0x00          |
 * | 0x28      | bytes    | raw bytes with 0x00 escaped as 0x00 0xFF, then terminator 0x00      |
 * | 0x30      | tuple    | the elements, then terminator 0x00                                  |
 *
 * The top-level tuple has no terminator (the key length ends it), so `[]` is the empty key.
 * Why the escape works: a terminator 0x00 is followed by a tag (< 0xFF) or by nothing, while
 * an escaped 0x00 is followed by 0xFF, so "a" < "a\0" < "a\x01" and ["a", x] < ["a\0"].
 * `-0` is stored as `+0`; NaN, lone surrogates and other element types are InvalidKeyError.
 */
import { CorruptionError, InvalidKeyError, KeyTooLargeError } from '../errors.js';
import { type KeyEncoder, decodeWith, encodeWith } from './codec.js';
import { isUint8Array } from './bytes.js';
import { readBigInt, writeBigInt } from './bigint.js';
import { readNumber, writeNumber } from './number.js';
import { LONE_SURROGATE, describe, writeUtf8 } from './utf8.js';

/** One tuple element. */
export type TupleElement = string | number | bigint | Uint8Array | readonly TupleElement[];
/** A tuple key. */
export type Tuple = readonly TupleElement[];

export const TAG_STRING = 0x20;
export const TAG_BYTES = 0x28;
export const TAG_TUPLE = 0x30;
const TERMINATOR = 0x00;
const ESCAPE = 0xff;

function writeElements(t: Tuple, u8: Uint8Array, dv: DataView, off: number, end: number, depth: number): number {
  if (depth > 256) throw new InvalidKeyError('tuple key nested too deeply');
  for (let i = 0; i < t.length; i++) {
    const e = t[i];
    switch (typeof e) {
      case 'string': {
        if (off >= end) throw new KeyTooLargeError();
        u8[off++] = TAG_STRING;
        const r = writeUtf8(e, u8, off, end, true);
        if (r === LONE_SURROGATE) throw new InvalidKeyError('tuple key string contains a lone surrogate (not valid Unicode)');
        if (r < 0 || r >= end) throw new KeyTooLargeError();
        u8[r] = TERMINATOR;
        off = r + 1;
        break;
      }
      case 'number':
        off = writeNumber(e, u8, dv, off, end, true);
        break;
      case 'bigint':
        off = writeBigInt(e, u8, dv, off, end);
        break;
      default:
        if (Array.isArray(e)) {
          if (off >= end) throw new KeyTooLargeError();
          u8[off++] = TAG_TUPLE;
          off = writeElements(e as Tuple, u8, dv, off, end, depth + 1);
          if (off >= end) throw new KeyTooLargeError();
          u8[off++] = TERMINATOR;
        } else if (e instanceof Uint8Array || isUint8Array(e)) {
          if (off + 2 + e.length > end) throw new KeyTooLargeError();
          u8[off++] = TAG_BYTES;
          for (let j = 0; j < e.length; j++) {
            const b = e[j]!;
            if (b === 0) {
              if (off + 3 > end) throw new KeyTooLargeError();
              u8[off++] = 0;
              u8[off++] = ESCAPE;
            } else {
              if (off + 2 > end) throw new KeyTooLargeError();
              u8[off++] = b;
            }
          }
          u8[off++] = TERMINATOR;
        } else {
          throw new InvalidKeyError(
            `tuple key element ${i} must be a string, number, bigint, Uint8Array or array, got ${describe(e)}`);
        }
    }
  }
  return off;
}

/** Finds the end of an escaped run starting at off: returns the index of its terminator. */
function escapedEnd(u8: Uint8Array, off: number, end: number): [terminator: number, escapes: number] {
  let escapes = 0;
  for (let i = off; i < end; i++) {
    if (u8[i] === 0) {
      if (i + 1 < end && u8[i + 1] === ESCAPE) { escapes++; i++; continue; }
      return [i, escapes];
    }
  }
  throw new CorruptionError('corrupt tuple key encoding (unterminated element)');
}

/** Copies an escaped run [off, term) to a new array, undoing the escape. */
function unescape(u8: Uint8Array, off: number, term: number, escapes: number): Uint8Array {
  const out = new Uint8Array(term - off - escapes);
  let j = 0;
  for (let i = off; i < term; i++) {
    out[j++] = u8[i]!;
    if (u8[i] === 0) i++;
  }
  return out;
}

// ignoreBOM: a string element that starts with U+FEFF keeps it (the default drops it: ['\ufeffx']
// came back as ['x'], another key; a new-user probe, session 27).
const dec = new TextDecoder('utf-8', { ignoreBOM: true });
const pos = [0];

function readElements(u8: Uint8Array, dv: DataView, off: number, end: number, nested: boolean, out: TupleElement[]): number {
  while (off < end) {
    const tag = u8[off]!;
    if (tag === TERMINATOR && nested) return off + 1;
    if (tag >= 0x10 && tag <= 0x14) {
      out.push(readNumber(u8, dv, off, end, true, pos));
      off = pos[0]!;
    } else if (tag >= 0x18 && tag <= 0x1a) {
      out.push(readBigInt(u8, dv, off, end, pos));
      off = pos[0]!;
    } else if (tag === TAG_STRING || tag === TAG_BYTES) {
      const [term, escapes] = escapedEnd(u8, off + 1, end);
      const bytes = unescape(u8, off + 1, term, escapes);
      out.push(tag === TAG_STRING ? dec.decode(bytes) : bytes);
      off = term + 1;
    } else if (tag === TAG_TUPLE) {
      const inner: TupleElement[] = [];
      off = readElements(u8, dv, off + 1, end, true, inner);
      out.push(inner);
    } else {
      throw new CorruptionError(`corrupt tuple key encoding (tag 0x${tag.toString(16)})`);
    }
  }
  if (nested) throw new CorruptionError('corrupt tuple key encoding (unterminated tuple)');
  return off;
}

export const tupleKey: KeyEncoder<Tuple> = {
  name: 'tuple',
  encodeInto(key: Tuple, u8: Uint8Array, dv: DataView, off: number, end: number): number {
    if (!Array.isArray(key)) throw new InvalidKeyError(`tuple key must be an array, got ${describe(key)}`);
    return writeElements(key, u8, dv, off, end, 0);
  },
  decodeFrom(u8: Uint8Array, dv: DataView, off: number, end: number): Tuple {
    const out: TupleElement[] = [];
    readElements(u8, dv, off, end, false, out);
    return out;
  },
  encode(key: Tuple): Uint8Array {
    return encodeWith(tupleKey, key);
  },
  decode(bytes: Uint8Array): Tuple {
    return decodeWith(tupleKey, bytes);
  },
};
