/**
 * The two codec interfaces and what the built-in codecs add to them.
 *
 * Public: `KeyCodec` and `ValueCodec` are plain `{encode, decode}` objects; anyone can write
 * one. A key codec must be order-preserving (byte-wise unsigned comparison of the encodings
 * is the order of the map) and canonical (`encode(decode(b))` equals `b`; iterators resume
 * after a modification by re-encoding the last key they returned). Codecs must not call
 * into adaptree maps of the same wasm instance (ReentrancyError); errors they throw become
 * InvalidKeyError / InvalidValueError with the original as `cause`.
 *
 * Internal: the built-in codecs also implement `encodeInto`/`decodeFrom`, which write to and
 * read from wasm memory directly, so the hot path allocates nothing but the returned values.
 */

/** Largest encoded key the core accepts (`at_max_key_size()`); checked again at init. */
export const MAX_KEY_SIZE = 1024;

export interface KeyCodec<K> {
  /** Encodes a key; throws a TypeError (InvalidKeyError) for a key of the wrong type. */
  encode(key: K): Uint8Array;
  /** Decodes bytes produced by `encode`. Gets a fresh copy of the stored bytes; it may keep it. */
  decode(bytes: Uint8Array): K;
}

export interface ValueCodec<V> {
  encode(value: V): Uint8Array;
  /** Gets a fresh copy of the stored bytes; it may keep it. */
  decode(bytes: Uint8Array): V;
}

/** @internal Fast path of a built-in key codec. */
export interface KeyEncoder<K> extends KeyCodec<K> {
  readonly name: string;
  /** Writes the encoding of `key` at `off`; returns the end offset. Throws InvalidKeyError for a
   * key of the wrong type and KeyTooLargeError when the encoding would pass `end`. It runs no user
   * code of its own, but reading a key object may (a tuple's getter, a Proxy): the map encodes
   * tuple and bytes keys under its re-entrancy guard (map/put.ts guardedPut). */
  encodeInto(key: K, u8: Uint8Array, dv: DataView, off: number, end: number): number;
  /** Decodes `u8[off, end)`. Must not keep `u8`. `shared`: u8 is a view of a SharedArrayBuffer
   * (undefined: not known, the codec tests it if it cares). */
  decodeFrom(u8: Uint8Array, dv: DataView, off: number, end: number, shared?: boolean): K;
}

/** @internal Fast path of a built-in value codec. `prepare` turns a value into what is written
 * (it may run user code such as toJSON, so it runs before anything is written to wasm memory). */
export interface ValueEncoder<V> extends ValueCodec<V> {
  readonly name: string;
  /** Validates and converts; returns a string (written as UTF-8) or bytes. */
  prepare(value: V): string | Uint8Array;
  /** Decodes `u8[off, off+len)`. `shared`: u8 is a view of a SharedArrayBuffer. Must not keep u8. */
  decodeFrom(u8: Uint8Array, off: number, len: number, shared: boolean): V;
}

/** @internal */
export function isKeyEncoder<K>(c: KeyCodec<K>): c is KeyEncoder<K> {
  return typeof (c as Partial<KeyEncoder<K>>).encodeInto === 'function' &&
    typeof (c as Partial<KeyEncoder<K>>).decodeFrom === 'function';
}

/** @internal */
export function isValueEncoder<V>(c: ValueCodec<V>): c is ValueEncoder<V> {
  return typeof (c as Partial<ValueEncoder<V>>).prepare === 'function' &&
    typeof (c as Partial<ValueEncoder<V>>).decodeFrom === 'function';
}

// A private buffer for the allocating `encode()` entry points of the built-in key codecs.
const SCRATCH = new Uint8Array(MAX_KEY_SIZE + 64);
const SCRATCH_DV = new DataView(SCRATCH.buffer);

/** @internal `encode()` of a built-in key codec, via its `encodeInto`. */
export function encodeWith<K>(enc: Pick<KeyEncoder<K>, 'encodeInto'>, key: K): Uint8Array {
  const end = enc.encodeInto(key, SCRATCH, SCRATCH_DV, 0, MAX_KEY_SIZE);
  return SCRATCH.slice(0, end);
}

/** @internal `decode()` of a built-in key codec, via its `decodeFrom`. */
export function decodeWith<K>(enc: Pick<KeyEncoder<K>, 'decodeFrom'>, bytes: Uint8Array): K {
  return enc.decodeFrom(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.length);
}

/** Unsigned lexicographic comparison of two byte strings (the order of the map). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}
