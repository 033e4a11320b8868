/**
 * Picks the key and value encoders for a map's options: the built-in ones by name, or a
 * user codec wrapped so that it runs under the re-entrancy guard and its output is checked.
 */
import { CorruptionError, InvalidArgumentError, InvalidKeyError, InvalidValueError, KeyTooLargeError, isAdaptreeError } from '../errors.js';
import {
  type KeyCodec,
  type KeyEncoder,
  type ValueCodec,
  type ValueEncoder,
  isKeyEncoder,
  isValueEncoder,
} from '../encoding/codec.js';
import { utf8Key } from '../encoding/utf8.js';
import { bytesKey, isUint8Array } from '../encoding/bytes.js';
import { numberKey } from '../encoding/number.js';
import { bigintKey } from '../encoding/bigint.js';
import { tupleKey } from '../encoding/tuple.js';
import { bytesValue, jsonValue, utf8Value } from '../encoding/values.js';
import type { Runtime } from './runtime.js';
import type { BTreeMapOptions, KeyEncodingName, ValueEncodingName } from './types.js';

/** What a codec threw, as text, whatever it was: a Symbol, an object without a prototype or
 * one whose `message` getter throws made the message itself throw, untyped (session 23). */
function thrown(e: unknown): string {
  try {
    const m = (e as { message?: unknown } | null)?.message;
    if (typeof m === 'string') return m;
    return typeof e === 'symbol' ? e.toString() : String(e);
  } catch {
    return 'a value that cannot be shown';
  }
}

const KEY_ENCODINGS: Record<KeyEncodingName, KeyEncoder<unknown>> = {
  utf8: utf8Key as KeyEncoder<unknown>,
  bytes: bytesKey as KeyEncoder<unknown>,
  number: numberKey as KeyEncoder<unknown>,
  bigint: bigintKey as KeyEncoder<unknown>,
  tuple: tupleKey as KeyEncoder<unknown>,
};

const VALUE_ENCODINGS: Record<ValueEncodingName, ValueEncoder<unknown>> = {
  json: jsonValue,
  utf8: utf8Value as ValueEncoder<unknown>,
  bytes: bytesValue as ValueEncoder<unknown>,
};

/** Wraps a user key codec: it runs under the re-entrancy guard and its output is checked. */
function customKeyEncoder<K>(codec: KeyCodec<K>, rt: Runtime): KeyEncoder<K> {
  return {
    name: 'custom',
    encodeInto(key: K, u8: Uint8Array, _dv: DataView, off: number, end: number): number {
      let b: unknown;
      rt.busy++;
      try {
        b = codec.encode(key);
      } catch (e) {
        if (isAdaptreeError(e)) throw e;
        throw new InvalidKeyError(`custom key codec rejected the key: ${thrown(e)}`, { cause: e });
      } finally {
        rt.busy--;
      }
      if (!(b instanceof Uint8Array) && !isUint8Array(b)) throw new InvalidKeyError('custom key codec must return a Uint8Array');
      if (b.length > end - off) throw new KeyTooLargeError(`encoded key of ${b.length} bytes is longer than ${end - off} bytes`);
      u8.set(b, off);
      return off + b.length;
    },
    decodeFrom(u8: Uint8Array, _dv: DataView, off: number, end: number): K {
      const copy = u8.slice(off, end);
      rt.busy++;
      try {
        return codec.decode(copy);
      } catch (e) {
        throw decodeFailed('key', e);
      } finally {
        rt.busy--;
      }
    },
    encode: (key: K) => codec.encode(key),
    decode: (bytes: Uint8Array) => codec.decode(bytes),
  };
}

/** A custom codec's decode threw on stored bytes (not what its encode made: another codec's
 * data, or a bug in the codec): CorruptionError with the codec's error as `cause`, as the
 * built-in codecs report bytes they cannot read (it surfaced raw, without a code). */
function decodeFailed(what: 'key' | 'value', e: unknown): Error {
  if (isAdaptreeError(e)) return e as Error;
  return new CorruptionError(`custom ${what} codec could not decode a stored ${what}: ${thrown(e)}`, { cause: e });
}

function customValueEncoder<V>(codec: ValueCodec<V>, rt: Runtime): ValueEncoder<V> {
  return {
    name: 'custom',
    prepare(value: V): Uint8Array {
      let b: unknown;
      rt.busy++;
      try {
        b = codec.encode(value);
      } catch (e) {
        if (isAdaptreeError(e)) throw e;
        throw new InvalidValueError(`custom value codec rejected the value: ${thrown(e)}`, { cause: e });
      } finally {
        rt.busy--;
      }
      if (!(b instanceof Uint8Array) && !isUint8Array(b)) throw new InvalidValueError('custom value codec must return a Uint8Array');
      return b;
    },
    decodeFrom(u8: Uint8Array, off: number, len: number): V {
      const copy = u8.slice(off, off + len);
      rt.busy++;
      try {
        return codec.decode(copy);
      } catch (e) {
        throw decodeFailed('value', e);
      } finally {
        rt.busy--;
      }
    },
    encode: (value: V) => codec.encode(value),
    decode: (bytes: Uint8Array) => codec.decode(bytes),
  };
}

export function keyEncoderOf<K>(opt: BTreeMapOptions<K, unknown>['keys'], rt: Runtime): KeyEncoder<K> {
  if (opt === undefined) return utf8Key as unknown as KeyEncoder<K>;
  if (typeof opt === 'string') {
    const e = Object.prototype.hasOwnProperty.call(KEY_ENCODINGS, opt) ? KEY_ENCODINGS[opt] : undefined;
    if (e === undefined) throw new InvalidArgumentError(`unknown key encoding '${opt}' (utf8, bytes, number, bigint, tuple)`);
    return e as KeyEncoder<K>;
  }
  if (opt !== null && typeof opt === 'object') {
    if (isKeyEncoder(opt) && Object.values(KEY_ENCODINGS).includes(opt as KeyEncoder<unknown>)) return opt;
    if (typeof opt.encode === 'function' && typeof opt.decode === 'function') return customKeyEncoder(opt, rt);
  }
  throw new InvalidArgumentError('options.keys must be a key encoding name or an {encode, decode} codec');
}

export function valueEncoderOf<V>(opt: BTreeMapOptions<unknown, V>['values'], rt: Runtime): ValueEncoder<V> {
  if (opt === undefined) return jsonValue as ValueEncoder<V>;
  if (typeof opt === 'string') {
    const e = Object.prototype.hasOwnProperty.call(VALUE_ENCODINGS, opt) ? VALUE_ENCODINGS[opt] : undefined;
    if (e === undefined) throw new InvalidArgumentError(`unknown value encoding '${opt}' (json, utf8, bytes)`);
    return e as ValueEncoder<V>;
  }
  if (opt !== null && typeof opt === 'object') {
    if (isValueEncoder(opt) && Object.values(VALUE_ENCODINGS).includes(opt as ValueEncoder<unknown>)) return opt;
    if (typeof opt.encode === 'function' && typeof opt.decode === 'function') return customValueEncoder(opt, rt);
  }
  throw new InvalidArgumentError('options.values must be a value encoding name or an {encode, decode} codec');
}
