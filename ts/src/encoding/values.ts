/**
 * Value codecs. A value encoding is chosen per map (`values` option):
 *
 * | name    | values                   | stored as                    | notes                                     |
 * |---------|--------------------------|------------------------------|-------------------------------------------|
 * | `json`  | anything JSON can hold   | JSON.stringify text, UTF-8   | default. `undefined` is stored as the     |
 * |         | (+ `undefined`)          |                              | empty value; what JSON drops or changes   |
 * |         |                          |                              | (Dates, Maps, functions, -0) stays so     |
 * | `utf8`  | strings                  | UTF-8                        | lone surrogates: InvalidValueError        |
 * | `bytes` | Uint8Array               | the bytes                    | a copy, never a view of wasm memory;      |
 * |         |                          |                              | it may be a view of an ArrayBuffer it     |
 * |         |                          |                              | shares with other values (`get`: 65 B to  |
 * |         |                          |                              | 2 KiB, Buffer-pool style; getMany,        |
 * |         |                          |                              | iterators: one copy per batch, small      |
 * |         |                          |                              | batches in a slab)                        |
 * | custom  | anything                 | `codec.encode(v)`            | `{ encode(v): Uint8Array, decode(b): V }` |
 *
 * A value the encoding cannot take is an InvalidValueError (a TypeError) and the map is unchanged.
 */
import { CorruptionError, InvalidValueError, isAdaptreeError } from '../errors.js';
import type { ValueEncoder } from './codec.js';
import { copyOut, isUint8Array } from './bytes.js';
import { describe, encodeToArray, isWellFormed, readUtf8, writeUtf8 } from './utf8.js';

function utf8Bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length * 3);
  const n = writeUtf8(s, out, 0, out.length, false);
  if (n < 0) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
  return out.slice(0, n);
}

export const jsonValue: ValueEncoder<unknown> = {
  name: 'json',
  prepare(value: unknown): string {
    if (value === undefined) return '';
    let s: string | undefined;
    try {
      s = JSON.stringify(value);
    } catch (e) {
      if (isAdaptreeError(e)) throw e;
      // (anything may be thrown from a toJSON or a getter: null, a string; `.message` of null
      // threw a TypeError, untyped; a string's said "undefined")
      const why = e instanceof Error ? e.message : `${typeof e === 'string' ? e : describe(e)} was thrown`;
      throw new InvalidValueError(`json value cannot be serialized: ${why}`, { cause: e });
    }
    if (typeof s !== 'string') throw new InvalidValueError(`json value cannot be serialized: ${describe(value)}`);
    return s;
  },
  decodeFrom(u8: Uint8Array, off: number, len: number, shared: boolean): unknown {
    if (len === 0) return undefined;
    // Integers are common values: read up to 15 digits without making a string.
    if (len <= 16) {
      let i = off, neg = false;
      if (u8[i] === 45 /* - */ && len > 1) { neg = true; i++; }
      const end = off + len;
      // At most 15 digits (exact in a double); JSON has no leading zeros: "0" or a nonzero digit.
      if (end - i <= 15 && (u8[i] !== 48 || i + 1 === end)) {
        let x = 0;
        for (; i < end; i++) {
          const d = u8[i]! - 48;
          if (d < 0 || d > 9) break;
          x = x * 10 + d;
        }
        if (i === end) return neg ? -x : x;
      }
    }
    const text = readUtf8(u8, off, off + len, shared);
    try {
      return JSON.parse(text);
    } catch (e) {
      // Bytes the json encoding never writes: another encoding's value (a store written
      // before stores recorded their encodings) or damage. Typed, with the parser's error.
      throw new CorruptionError(`a stored value is not JSON (${(e as Error).message}): was it written with another value encoding?`, { cause: e });
    }
  },
  encode(value: unknown): Uint8Array {
    const s = jsonValue.prepare(value) as string;
    return s.length < 4096 ? utf8Bytes(s) : encodeToArray(s);
  },
  decode(bytes: Uint8Array): unknown {
    return jsonValue.decodeFrom(bytes, 0, bytes.length, false);
  },
};

export const utf8Value: ValueEncoder<string> = {
  name: 'utf8',
  prepare(value: string): string {
    if (typeof value !== 'string') throw new InvalidValueError(`utf8 value must be a string, got ${describe(value)}`);
    return value;
  },
  decodeFrom(u8: Uint8Array, off: number, len: number, shared: boolean): string {
    return readUtf8(u8, off, off + len, shared);
  },
  encode(value: string): Uint8Array {
    utf8Value.prepare(value);
    if (value.length >= 4096) {
      if (!isWellFormed(value)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
      return encodeToArray(value);
    }
    return utf8Bytes(value);
  },
  decode(bytes: Uint8Array): string {
    return readUtf8(bytes, 0, bytes.length, false);
  },
};

export const bytesValue: ValueEncoder<Uint8Array> = {
  name: 'bytes',
  prepare(value: Uint8Array): Uint8Array {
    if (!(value instanceof Uint8Array) && !isUint8Array(value)) {
      throw new InvalidValueError(`bytes value must be a Uint8Array, got ${describe(value)}`);
    }
    return value;
  },
  decodeFrom(u8: Uint8Array, off: number, len: number): Uint8Array {
    return copyOut(u8, off, len);
  },
  encode(value: Uint8Array): Uint8Array {
    return (bytesValue.prepare(value) as Uint8Array).slice();
  },
  decode(bytes: Uint8Array): Uint8Array {
    return bytes.slice();
  },
};
