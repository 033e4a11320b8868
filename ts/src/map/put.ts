/**
 * Writes keys and values into wasm memory: keys into a key area, values (prepared by the
 * value encoder) into the data area, as UTF-8 by hand or with TextEncoder.encodeInto.
 */
import { InvalidValueError, ValueTooLargeError } from '../errors.js';
import {
  writeUtf8,
  encodeIntoLong,
  encodeIntoStart,
  encodeIntoView,
  encodeToArray,
  isWellFormed,
  ENCODE_INTO_MIN,
  ENCODE_INTO_VIEW,
  LONE_SURROGATE,
} from '../encoding/utf8.js';
import type { Runtime } from './runtime.js';
import type { Handle } from './handle.js';

/** Strings up to this many UTF-16 units are written by hand; longer with TextEncoder. */
const SHORT_STRING = 256;
/** Longer strings are encoded to a JS array first (exact length) instead of reserving 3x. */
const HUGE_STRING = 1 << 20;

/** Encodes a key into key area A; returns its length. The views must be fresh (rt.refresh()). */
export function putKeyA<K>(h: Handle<K, unknown>, key: K): number {
  const rt = h.rt;
  if (h.encodeIntoKeys && typeof key === 'string' && key.length > ENCODE_INTO_MIN) {
    const n = encodeIntoView(key, rt.keyAView);
    if (n >= 0) return n;
  }
  if (h.guardKeys && !(h.bytesKeys && ArrayBuffer.isView(key))) return guardedPut(h, key, rt.keyA);
  return h.kenc.encodeInto(key, rt.u8, rt.dv, rt.keyA, rt.keyA + rt.maxKey) - rt.keyA;
}

/** Encodes a key into key area `area`; returns its length. */
export function putKey<K>(h: Handle<K, unknown>, key: K, area: number): number {
  const rt = h.rt;
  if (h.guardKeys && !(h.bytesKeys && ArrayBuffer.isView(key))) return guardedPut(h, key, area);
  return h.kenc.encodeInto(key, rt.u8, rt.dv, area, area + rt.maxKey) - area;
}

/** A tuple's or a Uint8Array's encoding reads the key object: a getter or a Proxy trap runs
 * user code then, and one that called into this instance (a set) overwrote the key areas and
 * the scratch mid-call: a probe (session 27) got a malformed key stored (every iteration then
 * CORRUPT) and a poisoned instance. Under the guard such a call is ReentrancyError. A real
 * Uint8Array (no Proxy passes ArrayBuffer.isView) is read without user code and skips it: the
 * guard's try/finally cost bytes-key lookups ~3% (session 27). */
function guardedPut<K>(h: Handle<K, unknown>, key: K, area: number): number {
  const rt = h.rt;
  rt.busy++;
  try {
    return h.kenc.encodeInto(key, rt.u8, rt.dv, area, area + rt.maxKey) - area;
  } finally {
    rt.busy--;
  }
}

/** Upper bound of the bytes a prepared value needs (exact for bytes and huge strings). */
export function preparedSize(p: string | Uint8Array): number {
  return typeof p === 'string' ? 3 * p.length : p.length;
}

/** Writes a prepared value at `off`; returns the end. Strings: UTF-8, checked for lone surrogates.
 * Browsers refuse TextEncoder.encodeInto into shared memory (mt): there every string is written by hand. */
export function putValue(rt: Runtime, p: string | Uint8Array, off: number, wellFormed: boolean): number {
  if (typeof p !== 'string') {
    if (p.length <= 16) {
      const u8 = rt.u8;
      for (let i = 0; i < p.length; i++) u8[off + i] = p[i]!;
    } else {
      rt.u8.set(p, off);
    }
    return off + p.length;
  }
  // By hand: shared memory (browsers refuse encodeInto there), short strings (a TextEncoder call
  // costs more; in setMany also a subarray), and without a native isWellFormed strings that may
  // hold lone surrogates.
  const n = p.length;
  if (rt.shared || n <= ENCODE_INTO_MIN || (n <= SHORT_STRING && ((off !== rt.data && n <= 64) || (!wellFormed && !ENCODE_INTO_VIEW)))) {
    const r = writeUtf8(p, rt.u8, off, off + 3 * p.length, false);
    if (r === LONE_SURROGATE) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    return r;
  }
  if (!wellFormed && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
  // set() writes at the start of the data area, which has a view of its own; setMany needs one per value.
  if (off === rt.data) return off + encodeIntoStart(p, rt.dataView);
  return encodeIntoLong(p, rt.u8, off);
}

/** putValue into `u8`, a JS buffer of setMany's (not wasm memory): bytes copied, strings UTF-8
 * (TextEncoder after the lone-surrogate check putValue makes). */
export function putValueInto(u8: Uint8Array, p: string | Uint8Array, off: number, wellFormed: boolean): number {
  if (typeof p !== 'string') {
    u8.set(p, off);
    return off + p.length;
  }
  if (p.length <= SHORT_STRING) {
    const r = writeUtf8(p, u8, off, off + 3 * p.length, false);
    if (r === LONE_SURROGATE) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    return r;
  }
  if (!wellFormed && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
  return encodeIntoLong(p, u8, off);
}

/** A huge string becomes exact bytes first, so the data area is not 3x its length. */
export function prepareValue<V>(h: Handle<unknown, V>, value: V): string | Uint8Array {
  let p = h.venc.prepare(value);
  if (typeof p === 'string' && p.length > HUGE_STRING) {
    if (!h.wellFormedValues && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    p = encodeToArray(p);
  }
  // Before any memory is reserved for it: past the core's limit a value was an
  // OutOfMemoryError (its staging area asked for 2 GiB), never ValueTooLargeError.
  if (typeof p !== 'string' && p.length > MAX_VALUE_BYTES) {
    throw new ValueTooLargeError(`a value of ${p.length} bytes (at most ${MAX_VALUE_BYTES}, 1 GiB)`);
  }
  return p;
}

/** The core's kMaxValueSize (core/config.h). */
export const MAX_VALUE_BYTES = 2 ** 30;
