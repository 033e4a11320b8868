/**
 * `bytes` keys: a Uint8Array (or a subclass such as Node's Buffer) stored as is and ordered
 * byte-wise, unsigned. Keys are compared by content, not identity (unlike `Map`), and the
 * keys an iterator returns are fresh copies.
 */
import { InvalidKeyError, KeyTooLargeError } from '../errors.js';
import { type KeyEncoder, decodeWith, encodeWith } from './codec.js';
import { describe } from './utf8.js';

export const bytesKey: KeyEncoder<Uint8Array> = {
  name: 'bytes',
  encodeInto(key: Uint8Array, u8: Uint8Array, _dv: DataView, off: number, end: number): number {
    if (!(key instanceof Uint8Array) && !isUint8Array(key)) throw new InvalidKeyError(`bytes key must be a Uint8Array, got ${describe(key)}`);
    const n = key.length;
    if (n > end - off) throw new KeyTooLargeError(`bytes key of ${n} bytes is longer than ${end - off} bytes`);
    if (n <= 16) {
      for (let i = 0; i < n; i++) u8[off + i] = key[i]!;
    } else {
      u8.set(key, off);
    }
    return off + n;
  },
  decodeFrom(u8: Uint8Array, _dv: DataView, off: number, end: number): Uint8Array {
    return copyOut(u8, off, end - off);
  },
  encode(key: Uint8Array): Uint8Array {
    return encodeWith(bytesKey, key);
  },
  decode(bytes: Uint8Array): Uint8Array {
    return decodeWith(bytesKey, bytes);
  },
};

/**
 * Keys and values of 65 B to SLAB_MAX bytes leave wasm memory as views into a shared slab, as
 * Node's Buffer pool hands out small Buffers: V8 keeps a typed array over 64 B off the JS heap,
 * and a `slice()` of its own costs an allocation of a backing store (1.2 µs for 100 B in Node
 * 20, more in a Chromium worker) where a copy into the slab and a view of it cost ~0.2 µs.
 * The values of a batch (getMany, iterators) of up to SLAB_BATCH_MAX bytes go into a slab of
 * their own in one copy, whatever their sizes: a view costs ~20 ns where an 8-byte array of its own, filled
 * by hand, costs ~35-50 ns (V8's CreateTypedArray builtin was a sixth of a scan of 1..50).
 * A view's `buffer` is the slab: other keys and values share it, so `value.buffer` is not the
 * value alone (view it with byteOffset and length, or `slice()` it before transferring it).
 * A transferred (detached) slab is replaced, never written again.
 */
const ON_HEAP_MAX = 64;
export const SLAB_MAX = 2048;

/** @internal An ArrayBuffer handed out in pieces; a full or detached one is replaced. */
export class Slab {
  buffer = new ArrayBuffer(0);
  #u8 = new Uint8Array(this.buffer);
  #pos = 0;
  constructor(readonly size: number) {}
  /** Copies u8[off, off+len) (len <= size) in; returns where it starts in `buffer` (which may
   * be a new one after the call). */
  put(u8: Uint8Array, off: number, len: number): number {
    let pos = this.#pos;
    if (pos + len > this.buffer.byteLength) {
      // A new slab when this one is full, or was detached (byteLength 0: transferred).
      this.buffer = new ArrayBuffer(this.size);
      this.#u8 = new Uint8Array(this.buffer);
      pos = 0;
    }
    const to = this.#u8;
    if (len <= 16) {
      for (let i = 0; i < len; i++) to[pos + i] = u8[off + i]!;
    } else {
      to.set(u8.subarray(off, off + len), pos);
    }
    this.#pos = (pos + len + 7) & ~7;
    return pos;
  }
}

/** Single values (get). */
const valueSlab = new Slab(16384);
/** @internal Batches (getMany, iterators): larger, as a batch's copy kept alive by one of its
 * values was already up to the whole batch. */
export const batchSlab = new Slab(65536);
/** A batch's values up to this many bytes in all are copied into batchSlab (see above). */
export const SLAB_BATCH_MAX = 32768;

/** @internal A copy of u8[off, off+len) that never aliases wasm memory. Small arrays live on
 * the JS heap: allocating one and copying by hand beats slice() (~35 vs ~75 ns for 8 bytes);
 * slice() up to 64 B (still on the heap); up to SLAB_MAX, a view into the slab (above);
 * longer, an array of its own. */
export function copyOut(u8: Uint8Array, off: number, len: number): Uint8Array {
  if (len <= 16) {
    const out = new Uint8Array(len);
    for (let i = 0; i < len; i++) out[i] = u8[off + i]!;
    return out;
  }
  // Up to V8's 64 B a slice is a JS-heap array: cheaper than a view of the slab.
  if (len <= ON_HEAP_MAX || len > SLAB_MAX) return u8.slice(off, off + len);
  const pos = valueSlab.put(u8, off, len);
  return new Uint8Array(valueSlab.buffer, pos, len);
}

/** A Uint8Array from another realm (iframe, vm context) fails `instanceof`. */
export function isUint8Array(x: unknown): x is Uint8Array {
  return ArrayBuffer.isView(x) && Object.prototype.toString.call(x) === '[object Uint8Array]';
}
