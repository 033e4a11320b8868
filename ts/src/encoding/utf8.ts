/**
 * `utf8` keys (the default): a string is stored as its UTF-8 bytes, nothing else.
 *
 * Order: UTF-8 byte order is Unicode code point order. It equals JavaScript's `<` on strings
 * except that characters above U+FFFF (surrogate pairs in UTF-16) sort after U+E000..U+FFFF
 * here and before them with `<`.
 *
 * Lone surrogates (a UTF-16 string that is not valid Unicode) are rejected with
 * InvalidKeyError: UTF-8 cannot represent them, and replacing them with U+FFFD would make
 * two different JavaScript strings the same key.
 *
 * Short strings are encoded and decoded by hand: for keys of a few dozen bytes that is
 * faster than a TextEncoder/TextDecoder call, and it writes straight into wasm memory.
 */
import { InvalidKeyError, InvalidValueError, KeyTooLargeError } from '../errors.js';
import { type KeyEncoder, decodeWith, encodeWith } from './codec.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Why a string could not be encoded: the caller picks the error class. */
export const LONE_SURROGATE = -1;
export const TOO_LONG = -2;

/**
 * Writes `s` as UTF-8 at `off`, not past `end`. With `escapeZero`, a 0x00 byte is written as
 * 0x00 0xFF (the tuple encoding's escape). Returns the end offset, or LONE_SURROGATE / TOO_LONG.
 */
export function writeUtf8(s: string, u8: Uint8Array, off: number, end: number, escapeZero: boolean): number {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      if (c === 0 && escapeZero) {
        if (off + 2 > end) return TOO_LONG;
        u8[off++] = 0;
        u8[off++] = 0xff;
      } else {
        if (off >= end) return TOO_LONG;
        u8[off++] = c;
      }
    } else if (c < 0x800) {
      if (off + 2 > end) return TOO_LONG;
      u8[off++] = 0xc0 | (c >> 6);
      u8[off++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      if (off + 3 > end) return TOO_LONG;
      u8[off++] = 0xe0 | (c >> 12);
      u8[off++] = 0x80 | ((c >> 6) & 0x3f);
      u8[off++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xdc00 || i + 1 >= n) return LONE_SURROGATE;
      const d = s.charCodeAt(i + 1);
      if (d < 0xdc00 || d > 0xdfff) return LONE_SURROGATE;
      i++;
      c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
      if (off + 4 > end) return TOO_LONG;
      u8[off++] = 0xf0 | (c >> 18);
      u8[off++] = 0x80 | ((c >> 12) & 0x3f);
      u8[off++] = 0x80 | ((c >> 6) & 0x3f);
      u8[off++] = 0x80 | (c & 0x3f);
    }
  }
  return off;
}

/** True if `s` has no lone surrogates. */
export function isWellFormed(s: string): boolean {
  const f = (s as { isWellFormed?: () => boolean }).isWellFormed;
  if (typeof f === 'function') return f.call(s);
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

/** Exact UTF-8 length of a well-formed string. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) n += c < 0x800 ? 1 : c >= 0xd800 && c <= 0xdbff ? 1 : c >= 0xdc00 && c <= 0xdfff ? 0 : 2;
  }
  return n;
}

/**
 * Writes a long string with TextEncoder.encodeInto (fast for long strings). The caller has
 * checked that it is well formed and that `u8` has room for `3 * s.length` bytes from `off`.
 */
export function encodeIntoLong(s: string, u8: Uint8Array, off: number): number {
  return off + encoder.encodeInto(s, u8.subarray(off, off + 3 * s.length)).written;
}

const hasIsWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === 'function';

/** Strings longer than this many UTF-16 units are worth a TextEncoder.encodeInto call: it costs
 * ~50 ns at any length (Node 20), the hand loop ~2 ns per unit (45 units: 93 vs 60 ns). */
export const ENCODE_INTO_MIN = 24;

/** Whether encodeIntoView can be used here (String.prototype.isWellFormed exists). */
export const ENCODE_INTO_VIEW = hasIsWellFormed;

/**
 * Writes `s` as UTF-8 at the start of `view` with TextEncoder.encodeInto; returns the bytes
 * written, or -1 when the caller must take the hand-written path (which reports the error):
 * `s` has a lone surrogate (encodeInto would write U+FFFD) or does not fit in `view`.
 * Only for views of non-shared memory (browsers refuse shared ones) and ENCODE_INTO_VIEW.
 */
export function encodeIntoView(s: string, view: Uint8Array): number {
  const r = encoder.encodeInto(s, view);
  if (r.read !== s.length || !(s as unknown as { isWellFormed(): boolean }).isWellFormed()) return -1;
  return r.written;
}

/** Writes a well-formed string at the start of `view` (room for 3 * s.length bytes); returns the bytes written. */
export function encodeIntoStart(s: string, view: Uint8Array): number {
  return encoder.encodeInto(s, view).written;
}

/** Encodes a well-formed string to a new array (for long values). */
export function encodeToArray(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Up to this many bytes a string is decoded by hand; longer ones by TextDecoder. A TextDecoder
 * call costs ~90 ns whatever the length (V8, Node 20); the hand loop ~5 ns per byte and, past 12
 * characters, builds a cons string. Measured on 45-byte URL keys: 220 ns by hand, 95 ns. */
const SHORT = 12;
/** A private non-shared copy for decoding from shared memory (browsers refuse shared views). */
let copyBuf = new Uint8Array(256);

/** Decodes UTF-8 `u8[off, end)`. Invalid sequences become U+FFFD (they never come from us). */
export function readUtf8(u8: Uint8Array, off: number, end: number, shared?: boolean): string {
  const n = end - off;
  if (n <= SHORT) {
    let s = '';
    let i = off;
    while (i < end) {
      const b = u8[i]!;
      if (b >= 0x80) break;
      s += String.fromCharCode(b);
      i++;
    }
    if (i === end) return s;
    const rest = readUtf8Slow(u8, i, end);
    if (rest !== null) return s + rest;
  }
  if (shared === undefined) shared = isShared(u8);
  if (shared) {
    // TextDecoder refuses views of a SharedArrayBuffer in browsers: decode a copy.
    if (n > 65536) return decoder.decode(u8.slice(off, end));
    if (copyBuf.length < n) copyBuf = new Uint8Array(Math.max(n, 2 * copyBuf.length));
    copyBuf.set(u8.subarray(off, end));
    return decoder.decode(copyBuf.subarray(0, n));
  }
  return decoder.decode(u8.subarray(off, end));
}

/** Hand-written decoder for short multi-byte strings; null when a sequence is invalid. */
function readUtf8Slow(u8: Uint8Array, i: number, end: number): string | null {
  let s = '';
  while (i < end) {
    const b = u8[i]!;
    let cp: number;
    if (b < 0x80) {
      cp = b;
      i += 1;
    } else if (b >= 0xc2 && b < 0xe0 && i + 1 < end) {
      const b1 = u8[i + 1]!;
      if ((b1 & 0xc0) !== 0x80) return null;
      cp = ((b & 0x1f) << 6) | (b1 & 0x3f);
      i += 2;
    } else if (b >= 0xe0 && b < 0xf0 && i + 2 < end) {
      const b1 = u8[i + 1]!, b2 = u8[i + 2]!;
      if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80) return null;
      cp = ((b & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f);
      if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return null;
      i += 3;
    } else if (b >= 0xf0 && b < 0xf5 && i + 3 < end) {
      const b1 = u8[i + 1]!, b2 = u8[i + 2]!, b3 = u8[i + 3]!;
      if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80 || (b3 & 0xc0) !== 0x80) return null;
      cp = ((b & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f);
      if (cp < 0x10000 || cp > 0x10ffff) return null;
      i += 4;
    } else {
      return null;
    }
    if (cp < 0x10000) {
      s += String.fromCharCode(cp);
    } else {
      cp -= 0x10000;
      s += String.fromCharCode(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
    }
  }
  return s;
}

export const utf8Key: KeyEncoder<string> = {
  name: 'utf8',
  encodeInto(key: string, u8: Uint8Array, _dv: DataView, off: number, end: number): number {
    if (typeof key !== 'string') throw new InvalidKeyError(`utf8 key must be a string, got ${describe(key)}`);
    // Every UTF-16 code unit takes at least one byte: a longer string cannot fit.
    if (key.length > end - off) throw new KeyTooLargeError(`utf8 key of ${key.length} characters is longer than ${end - off} bytes`);
    const r = writeUtf8(key, u8, off, end, false);
    if (r >= 0) return r;
    if (r === LONE_SURROGATE) throw new InvalidKeyError('utf8 key contains a lone surrogate (not valid Unicode)');
    throw new KeyTooLargeError(`utf8 key is longer than ${end - off} bytes`);
  },
  decodeFrom(u8: Uint8Array, _dv: DataView, off: number, end: number, shared?: boolean): string {
    return readUtf8(u8, off, end, shared);
  },
  encode(key: string): Uint8Array {
    return encodeWith(utf8Key, key);
  },
  decode(bytes: Uint8Array): string {
    return decodeWith(utf8Key, bytes);
  },
};

/** @internal */
export function isShared(u8: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && u8.buffer instanceof SharedArrayBuffer;
}


/** @internal A short description of a value for error messages. */
export function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (x instanceof Uint8Array) return 'a Uint8Array';
  const t = typeof x;
  if (t === 'object') return `an object (${Object.prototype.toString.call(x).slice(8, -1)})`;
  if (t === 'number' || t === 'bigint' || t === 'boolean') return `${t} ${String(x)}${t === 'bigint' ? 'n' : ''}`;
  return t === 'string' ? 'a string' : t;
}

/** @internal Throws the right error for a string value that failed to encode. */
export function invalidUtf8Value(): never {
  throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
}
