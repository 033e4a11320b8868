/**
 * Decodes an iterator batch that the core wrote in columns (at_cursor_next_batch with
 * BatchFlags.COLUMNS; bindings/adaptree.h): a header [count][key bytes][flags][0], the key
 * lengths, the value lengths, then all keys and all values back to back.
 *
 * Why columns: utf8 keys are the common case, and a TextDecoder call per key costs more than
 * the rest of an iteration step. With the keys of a batch contiguous, a run of ASCII keys (the
 * core marks every key holding a byte >= 0x80) is decoded by one TextDecoder call and cut
 * into keys with String.prototype.slice, where a character is a byte. A run is at most
 * RUN_KEYS keys and RUN_BYTES bytes: V8 may keep a slice as a view of the run's string, so a
 * key kept by the caller holds at most that much other text alive.
 *
 * Other key encodings gain nothing from columns and take records (decodeRecords), as does a
 * large batch of utf8 keys (big values): result.key_len says which.
 */
import type { KeyEncoder, ValueEncoder } from '../encoding/codec.js';
import { readUtf8 } from '../encoding/utf8.js';
import { CorruptionError } from '../errors.js';
import { bytesValue } from '../encoding/values.js';
import { SLAB_BATCH_MAX, batchSlab, bytesKey } from '../encoding/bytes.js';
import { type Bounds, past } from './range.js';

/**
 * `bytes` values of a batch that fits the slab (SLAB_BATCH_MAX bytes of output, encoding/bytes.ts)
 * are views of one copy of it there. In a larger batch, values up to OWN_COPY_MAX bytes are copied
 * one by one into arrays of their own (so a small value kept does not keep a large batch alive),
 * and longer ones are views of one copy of the batch: V8 keeps a typed array over 64 bytes off
 * the heap, and slice() per such value cost 2-5 µs in a Chromium worker (issue 10), ~2 µs here.
 */
export const OWN_COPY_MAX = 16;

/**
 * One copy per batch of its `bytes` values, `u8[lo, hi)` (the batch's output), made on the first
 * value asked for: into the slab when it fits, else an ArrayBuffer of its own (values over
 * OWN_COPY_MAX only). The copy never aliases wasm memory; values of one batch share its
 * ArrayBuffer, and values of small batches share it with other values (documented on
 * BTreeMap.getMany and the iterators).
 */
export class BatchCopy {
  copy: ArrayBuffer | null = null;
  /** Where u8[lo] is in `copy`, minus lo. */
  shift = 0;
  /** The batch goes into the slab: every value is a view. */
  readonly slab: boolean;
  constructor(readonly u8: Uint8Array, readonly lo: number, readonly hi: number) {
    this.slab = hi - lo <= SLAB_BATCH_MAX;
  }
  value(off: number, len: number): Uint8Array {
    if (!this.slab && len <= OWN_COPY_MAX) return this.own(off, len);
    let c = this.copy;
    if (c === null) {
      if (this.slab) {
        this.shift = batchSlab.put(this.u8, this.lo, this.hi - this.lo) - this.lo;
        c = this.copy = batchSlab.buffer;
      } else {
        c = this.copy = this.u8.slice(this.lo, this.hi).buffer;
        this.shift = -this.lo;
      }
    }
    // A view made with the constructor costs a third of subarray() (V8, measured).
    return new Uint8Array(c, off + this.shift, len);
  }
  private own(off: number, len: number): Uint8Array {
    const u8 = this.u8, out = new Uint8Array(len);
    for (let i = 0; i < len; i++) out[i] = u8[off + i]!;
    return out;
  }
}

/** The header: count, key bytes, flags, reserved. */
export const BATCH_HEADER = 16;
const KEY_LEN = 0x7fffffff;
const NON_ASCII = 0x80000000;
const RUN_KEYS = 32;
const RUN_BYTES = 2048;

/**
 * Decodes a batch in records ([u32 klen][key][u32 vlen][value] each): what the core gives
 * instead of columns for a large batch (big values) or when memory for columns is short.
 * Same contract as decodeColumns; `end` is the end of the batch's output.
 */
export function decodeRecords<K, V>(
  kenc: KeyEncoder<K>,
  venc: ValueEncoder<V>,
  u8: Uint8Array,
  dv: DataView,
  p: number,
  end: number,
  count: number,
  keys: K[],
  vals: V[],
  wantValues: boolean,
  b: Bounds,
  shared: boolean,
): number {
  const stop = b.stop;
  // `bytes` keys and values: one copy of the batch's records (end: `end`), views of it.
  const bytesKeys = (kenc as unknown) === bytesKey;
  const bytesValues = wantValues && (venc as unknown) === bytesValue;
  const bc = bytesValues || bytesKeys ? new BatchCopy(u8, p, end) : null;
  for (let n = 0; n < count; n++) {
    const klen = dv.getUint32(p, true);
    const koff = p + 4;
    if (stop !== null && past(u8, koff, klen, b)) return n;
    keys[n] = bytesKeys ? (bc!.value(koff, klen) as K) : kenc.decodeFrom(u8, dv, koff, koff + klen, shared);
    LAST_KEY.off = koff;
    LAST_KEY.len = klen;
    p = koff + klen;
    const vlen = dv.getUint32(p, true);
    if (wantValues) vals[n] = bytesValues ? (bc!.value(p + 4, vlen) as V) : venc.decodeFrom(u8, p + 4, vlen, shared);
    p += 4 + vlen;
  }
  return count;
}

/** Where decodeRecords found the last key it decoded (in its `u8`, until the next call into
 * wasm): the iterator keeps a copy to resume after (iterator.ts, #lastKey). */
export const LAST_KEY = { off: 0, len: 0 };

/**
 * Decodes the batch in columns at `p` (utf8 keys: the iterator asks for columns only for them)
 * into keys[0..n) (and vals, if wanted); returns n, which is less than the batch's count when a
 * key lies beyond the stop bound (it and the rest are not decoded).
 */
export function decodeColumns<V>(
  venc: ValueEncoder<V>,
  u8: Uint8Array,
  dv: DataView,
  p: number,
  keys: string[],
  vals: V[],
  wantValues: boolean,
  b: Bounds,
  shared: boolean,
): number {
  const count = dv.getUint32(p, true);
  const lens = p + BATCH_HEADER;
  const keyStart = lens + 8 * count;
  const valueStart = keyStart + dv.getUint32(p + 4, true);
  let n = count;
  if (b.stop !== null) {
    for (let i = 0, o = keyStart; i < count; i++) {
      const kl = dv.getUint32(lens + 4 * i, true) & KEY_LEN;
      if (past(u8, o, kl, b)) {
        n = i;
        break;
      }
      o += kl;
    }
  }
  decodeUtf8Keys(u8, dv, lens, keyStart, n, keys, shared);
  if (wantValues) decodeValueColumn(venc, u8, dv, lens + 4 * count, valueStart, n, vals, shared);
  return n;
}

/**
 * Decodes a batch of `number` keys given as doubles (BatchFlags.NUMBERS, result.key_len 2: a
 * header [n][keys offset][values offset][0], the value lengths, one f64 per key, the values).
 * Same contract as decodeColumns; the stop bound is compared as a number (the encoding orders
 * numbers as `<` does). A key the core could not read as a number (NaN) is corrupt.
 */
export function decodeNumbers<V>(
  venc: ValueEncoder<V>,
  u8: Uint8Array,
  dv: DataView,
  p: number,
  keys: number[],
  vals: V[],
  wantValues: boolean,
  b: Bounds,
  shared: boolean,
): number {
  const count = dv.getUint32(p, true);
  const keyStart = p + dv.getUint32(p + 4, true);
  let n = count;
  const stop = b.stop === null ? NaN : b.stopNumber, incl = b.stopInclusive, rev = b.reverse;
  for (let i = 0; i < count; i++) {
    const k = dv.getFloat64(keyStart + 8 * i, true);
    if (k !== k) throw new CorruptionError('corrupt number key encoding');
    // (comparisons with a NaN stop are false: no stop bound)
    if (rev ? (incl ? k < stop : k <= stop) : incl ? k > stop : k >= stop) {
      n = i;
      break;
    }
    keys[i] = k;
  }
  if (wantValues) decodeValueColumn(venc, u8, dv, p + BATCH_HEADER, p + dv.getUint32(p + 8, true), n, vals, shared);
  return n;
}

/** The first n values of a value column: lengths at `vlens`, bytes back to back from `off`. */
function decodeValueColumn<V>(venc: ValueEncoder<V>, u8: Uint8Array, dv: DataView, vlens: number, off: number, n: number, vals: V[], shared: boolean): void {
  if ((venc as unknown) === bytesValue) {
    // One copy of the values of the n records decoded, subarrays of it.
    let end = off;
    for (let i = 0; i < n; i++) end += dv.getUint32(vlens + 4 * i, true);
    const bc = new BatchCopy(u8, off, end);
    for (let i = 0; i < n; i++) {
      const vl = dv.getUint32(vlens + 4 * i, true);
      vals[i] = bc.value(off, vl) as V;
      off += vl;
    }
    return;
  }
  for (let i = 0; i < n; i++) {
    const vl = dv.getUint32(vlens + 4 * i, true);
    vals[i] = venc.decodeFrom(u8, off, vl, shared);
    off += vl;
  }
}

/** utf8 keys: runs of ASCII keys with one TextDecoder call each, other keys one by one. */
function decodeUtf8Keys(u8: Uint8Array, dv: DataView, lens: number, off: number, n: number, keys: string[], shared: boolean): void {
  let i = 0;
  while (i < n) {
    const w = dv.getUint32(lens + 4 * i, true);
    if ((w & NON_ASCII) !== 0) {
      const end = off + (w & KEY_LEN);
      keys[i++] = readUtf8(u8, off, end, shared);
      off = end;
      continue;
    }
    // The run of ASCII keys starting at i.
    let j = i + 1, end = off + w;
    while (j < n && j - i < RUN_KEYS && end - off < RUN_BYTES) {
      const x = dv.getUint32(lens + 4 * j, true);
      if ((x & NON_ASCII) !== 0) break;
      end += x;
      j++;
    }
    if (j - i === 1) {
      keys[i] = readUtf8(u8, off, end, shared);
    } else {
      const s = readUtf8(u8, off, end, shared);
      for (let m = i, pos = 0; m < j; m++) {
        const kl = dv.getUint32(lens + 4 * m, true);
        keys[m] = s.slice(pos, pos + kl);
        pos += kl;
      }
    }
    off = end;
    i = j;
  }
}
