// Key encodings: round trip, canonical form and order preservation (the byte order of the
// encodings must be the natural order of the keys), checked with fast-check, plus the edge
// cases each encoding documents. Value codecs: round trip and rejection of what they cannot hold.
// No wasm needed: the codecs' `encode`/`decode` use the same code as the map's hot path.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compareBytes, type KeyCodec } from '../../ts/src/encoding/codec.js';
import { utf8Key } from '../../ts/src/encoding/utf8.js';
import { bytesKey } from '../../ts/src/encoding/bytes.js';
import { numberKey } from '../../ts/src/encoding/number.js';
import { bigintKey } from '../../ts/src/encoding/bigint.js';
import { tupleKey, type Tuple, type TupleElement } from '../../ts/src/encoding/tuple.js';
import { bytesValue, jsonValue, utf8Value } from '../../ts/src/encoding/values.js';
import { InvalidKeyError, InvalidValueError, KeyTooLargeError, isAdaptreeError } from '../../ts/src/errors.js';
import { compareCodePoints, compareTuples, stringArb, tupleArb, bigintArb, numberArb, bytesArb } from './model.js';

const RUNS = 3000;

const sign = (x: number) => (x < 0 ? -1 : x > 0 ? 1 : 0);

/** The three properties every key codec must have, for one arbitrary and one comparator. */
function keyCodecProperties<K>(name: string, codec: KeyCodec<K>, arb: fc.Arbitrary<K>, cmp: (a: K, b: K) => number, same: (a: K, b: K) => boolean) {
  describe(`${name} key encoding (properties)`, () => {
    it('round-trips', () => {
      fc.assert(fc.property(arb, (k) => same(codec.decode(codec.encode(k)), k)), { numRuns: RUNS });
    });
    it('is canonical: encode(decode(bytes)) === bytes', () => {
      fc.assert(fc.property(arb, (k) => {
        const b = codec.encode(k);
        return compareBytes(codec.encode(codec.decode(b)), b) === 0;
      }), { numRuns: RUNS });
    });
    it('orders like the keys', () => {
      fc.assert(fc.property(arb, arb, (a, b) => sign(compareBytes(codec.encode(a), codec.encode(b))) === sign(cmp(a, b))), { numRuns: RUNS * 3 });
    });
    it('sorting encodings sorts keys', () => {
      fc.assert(fc.property(fc.array(arb, { maxLength: 40 }), (ks) => {
        const byKey = [...ks].sort(cmp);
        const byBytes = ks.map((k) => [codec.encode(k), k] as const).sort((x, y) => compareBytes(x[0], y[0])).map((x) => x[1]);
        return byKey.every((k, i) => cmp(k, byBytes[i]!) === 0);
      }), { numRuns: 500 });
    });
  });
}

const bytesEqual = (a: Uint8Array, b: Uint8Array) => compareBytes(a, b) === 0;

keyCodecProperties('utf8', utf8Key, stringArb, compareCodePoints, (a, b) => a === b);
keyCodecProperties('bytes', bytesKey, bytesArb, compareBytes, bytesEqual);
keyCodecProperties('number', numberKey, numberArb, (a, b) => (a < b ? -1 : a > b ? 1 : 0), (a, b) => a === b && !Object.is(a, -0));
keyCodecProperties('bigint', bigintKey, bigintArb, (a, b) => (a < b ? -1 : a > b ? 1 : 0), (a, b) => a === b);
keyCodecProperties('tuple', tupleKey, tupleArb, compareTuples, (a, b) => compareTuples(a, b) === 0 && JSON.stringify(a, rep) === JSON.stringify(b, rep));

function rep(_k: string, v: unknown) {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `bytes:${Array.from(v)}`;
  return v;
}

/** Asserts that the encodings of `keys` are strictly increasing and round-trip. */
function expectStrictlyIncreasing<K>(codec: KeyCodec<K>, keys: K[]) {
  const enc = keys.map((k) => codec.encode(k));
  for (let i = 1; i < keys.length; i++) {
    expect(compareBytes(enc[i - 1]!, enc[i]!), `${String(keys[i - 1])} < ${String(keys[i])}`).toBe(-1);
  }
  keys.forEach((k, i) => expect(codec.decode(enc[i]!)).toEqual(k));
}

describe('utf8 keys', () => {
  it('is plain UTF-8', () => {
    expect(Array.from(utf8Key.encode('aé€😀'))).toEqual(Array.from(new TextEncoder().encode('aé€😀')));
    expect(utf8Key.encode('').length).toBe(0);
  });
  it('orders by code point (U+FFFF < U+10000, unlike UTF-16 order)', () => {
    expectStrictlyIncreasing(utf8Key, ['', '\0', '\0\0', 'a', 'a\0', 'ab', 'b', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff', '\u{10000}', '\u{10ffff}']);
  });
  it('rejects lone surrogates with InvalidKeyError (a TypeError)', () => {
    for (const s of ['\ud800', 'a\udc00', '\ud800a', '\udbff\udbff', 'x\udfff\ud800']) {
      const e = catchError(() => utf8Key.encode(s));
      expect(e).toBeInstanceOf(InvalidKeyError);
      expect(e).toBeInstanceOf(TypeError);
      expect((e as InvalidKeyError).code).toBe('INVALID_KEY');
    }
  });
  it('rejects non-strings with InvalidKeyError', () => {
    for (const k of [1, 1n, null, undefined, {}, ['a'], new Uint8Array(1), Symbol('s')]) {
      expect(catchError(() => utf8Key.encode(k as never))).toBeInstanceOf(InvalidKeyError);
    }
  });
  it('accepts exactly 1024 bytes and rejects 1025 with KeyTooLargeError (a RangeError)', () => {
    expect(utf8Key.encode('x'.repeat(1024)).length).toBe(1024);
    expect(utf8Key.encode('é'.repeat(512)).length).toBe(1024);
    for (const s of ['x'.repeat(1025), 'é'.repeat(513), '€'.repeat(342), 'x'.repeat(1_000_000), '😀'.repeat(257)]) {
      const e = catchError(() => utf8Key.encode(s));
      expect(e).toBeInstanceOf(KeyTooLargeError);
      expect(e).toBeInstanceOf(RangeError);
      expect((e as KeyTooLargeError).code).toBe('KEY_TOO_LARGE');
    }
  });
  it('decodes long and non-ASCII strings (TextDecoder path) and strings in a SharedArrayBuffer', () => {
    const s = 'ä'.repeat(100) + '😀' + 'z'.repeat(100);
    expect(utf8Key.decode(utf8Key.encode(s))).toBe(s);
    const bytes = utf8Key.encode(s);
    const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
    shared.set(bytes);
    expect(utf8Key.decode(shared)).toBe(s);
  });
});

describe('bytes keys', () => {
  it('orders byte-wise, unsigned, shorter prefix first', () => {
    const k = (...b: number[]) => new Uint8Array(b);
    expectStrictlyIncreasing(bytesKey, [k(), k(0), k(0, 0), k(0, 255), k(1), k(127), k(128), k(255), k(255, 0)]);
  });
  it('returns copies, accepts Buffer-like subclasses and rejects other views', () => {
    const src = new Uint8Array([1, 2, 3]);
    const enc = bytesKey.encode(src);
    enc[0] = 9;
    expect(src[0]).toBe(1);
    class Sub extends Uint8Array {}
    expect(Array.from(bytesKey.encode(new Sub([4, 5])))).toEqual([4, 5]);
    for (const k of [new Uint16Array(2), new Int8Array(2), new DataView(new ArrayBuffer(2)), [1, 2], 'ab', new ArrayBuffer(2)]) {
      expect(catchError(() => bytesKey.encode(k as never))).toBeInstanceOf(InvalidKeyError);
    }
    expect(catchError(() => bytesKey.encode(new Uint8Array(1025)))).toBeInstanceOf(KeyTooLargeError);
    expect(bytesKey.encode(new Uint8Array(1024)).length).toBe(1024);
  });
});

describe('number keys', () => {
  const edge = [
    -Infinity, -Number.MAX_VALUE, -1e300, -(2 ** 60), -(2 ** 53) - 2, -(2 ** 53), -Number.MAX_SAFE_INTEGER,
    -Number.MAX_SAFE_INTEGER + 1, -(2 ** 52) - 0.5, -(2 ** 32) - 1, -(2 ** 32), -(2 ** 32) + 0.5, -4294967295,
    -2, -1.5, -1, -1 + Number.EPSILON / 2, -0.5, -Number.MIN_VALUE * 2 ** 60, -2.2250738585072014e-308,
    -Number.MIN_VALUE, 0, Number.MIN_VALUE, 2 * Number.MIN_VALUE, 2.2250738585072014e-308, 1e-300, 0.1, 0.5,
    1 - Number.EPSILON / 2, 1, 1 + Number.EPSILON, 1.5, 2, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 0.5,
    2 ** 52 - 0.5, 2 ** 52, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER, 2 ** 53, 2 ** 53 + 2, 2 ** 64, 1e300,
    Number.MAX_VALUE, Infinity,
  ];
  it('orders every edge case: infinities, huge, safe integers, fractions, subnormals', () => {
    expectStrictlyIncreasing(numberKey, edge);
  });
  it('stores -0 as +0', () => {
    expect(compareBytes(numberKey.encode(-0), numberKey.encode(0))).toBe(0);
    expect(Object.is(numberKey.decode(numberKey.encode(-0)), 0)).toBe(true);
  });
  it('rejects NaN and non-numbers with InvalidKeyError', () => {
    for (const k of [NaN, -NaN, Number('x'), '1', 1n, null, undefined, new Number(1)]) {
      const e = catchError(() => numberKey.encode(k as never));
      expect(e).toBeInstanceOf(InvalidKeyError);
      expect(e).toBeInstanceOf(TypeError);
    }
  });
  it('encodes safe integers in 9 bytes that differ only in the low bytes (dense-leaf friendly)', () => {
    for (const i of [0, 1, 255, 256, 65535, 2 ** 32 - 2, -1, -256, Number.MAX_SAFE_INTEGER - 1, -Number.MAX_SAFE_INTEGER]) {
      const a = numberKey.encode(i), b = numberKey.encode(i + 1);
      expect(a.length).toBe(9);
      expect(b.length).toBe(9);
      if (Math.floor(i / 2 ** 32) === Math.floor((i + 1) / 2 ** 32)) expect(Array.from(a.subarray(0, 5))).toEqual(Array.from(b.subarray(0, 5)));
    }
    expect(numberKey.encode(1.5).length).toBe(17);
    expect(numberKey.encode(2 ** 60).length).toBe(9);
    expect(numberKey.encode(Infinity).length).toBe(1);
  });
  it('round-trips every double bit pattern it is given', () => {
    fc.assert(fc.property(fc.double({ noNaN: true }), (x) => Object.is(numberKey.decode(numberKey.encode(x)), x === 0 ? 0 : x)), { numRuns: 20000 });
  });
});

describe('bigint keys', () => {
  const big = (e: bigint) => 2n ** e;
  it('orders the fixed 64-bit range and arbitrary sizes around it', () => {
    expectStrictlyIncreasing(bigintKey, [
      -big(8000n), -big(200n) - 1n, -big(200n), -big(64n) - 1n, -big(64n), -big(63n) - 1n, -big(63n), -big(63n) + 1n,
      -big(32n), -1n, 0n, 1n, big(32n), big(63n) - 1n, big(63n), big(63n) + 1n, big(64n) - 1n, big(64n), big(200n), big(8000n),
    ]);
  });
  it('encodes the 64-bit range in 9 bytes', () => {
    for (const x of [0n, -1n, big(63n) - 1n, -big(63n)]) expect(bigintKey.encode(x).length).toBe(9);
    expect(bigintKey.encode(big(63n)).length).toBe(11);
  });
  it('accepts the largest bigint that fits 1024 bytes and rejects larger ones', () => {
    const max = big(8n * 1021n) - 1n;
    expect(bigintKey.decode(bigintKey.encode(max))).toBe(max);
    expect(bigintKey.decode(bigintKey.encode(-max))).toBe(-max);
    expect(catchError(() => bigintKey.encode(max + 1n))).toBeInstanceOf(KeyTooLargeError);
    expect(catchError(() => bigintKey.encode(-max - 1n))).toBeInstanceOf(KeyTooLargeError);
  });
  it('rejects non-bigints', () => {
    for (const k of [1, '1', null, undefined, {}]) expect(catchError(() => bigintKey.encode(k as never))).toBeInstanceOf(InvalidKeyError);
  });
});

describe('tuple keys', () => {
  const b = (...x: number[]) => new Uint8Array(x);
  it('orders prefixes first and element-wise, types number < bigint < string < bytes < tuple', () => {
    expectStrictlyIncreasing<Tuple>(tupleKey, [
      [], [-Infinity], [-1], [-0.5], [0], [0, 'a'], [0.5], [1], [2 ** 60], [Infinity], [-(2n ** 100n)], [-1n], [0n], [1n], [2n ** 64n],
      [''], ['', ''], ['', 'a'], ['\0'], ['\0', 1], ['\0\0'], ['\0\x01'], ['\x01'], ['a'], ['a', 1], ['a', 'b'], ['a\0'], ['a\0b'], ['ab'], ['b'],
      [b()], [b(0)], [b(0), 0], [b(0, 0)], [b(0, 255)], [b(1)], [b(255)],
      [[]], [[], []], [[0]], [[0], 1], [[0, 1]], [[1]], [[1], []], [['a']], [['a'], 'b'], [['a', 'b']], [['ab']], [[[]]], [[[0]]],
    ]);
  });
  it('a string element that starts with U+FEFF keeps it (it came back without: another key)', () => {
    for (const t of [['\ufeffx', 1], ['\ufeff'], [1, '\ufeff\ufeffy'], [['\ufeffz']]] as Tuple[]) {
      expect(tupleKey.decode(tupleKey.encode(t)), JSON.stringify(t)).toEqual(t);
    }
  });
  it('["a"] < ["a", 1] < ["ab"], as the issue asks', () => {
    expectStrictlyIncreasing<Tuple>(tupleKey, [['a'], ['a', 1], ['ab']]);
  });
  it('normalizes -0 inside tuples and rejects NaN, lone surrogates and other element types', () => {
    expect(Object.is(tupleKey.decode(tupleKey.encode([-0]))[0], 0)).toBe(true);
    for (const t of [[NaN], ['\ud800'], [null], [undefined], [{}], [true], [new Uint16Array(1)], [[1, [NaN]]], 'a', 1, null]) {
      const e = catchError(() => tupleKey.encode(t as never));
      expect(e, JSON.stringify(t, rep)).toBeInstanceOf(InvalidKeyError);
    }
  });
  it('rejects tuples whose encoding passes 1024 bytes', () => {
    expect(catchError(() => tupleKey.encode(['x'.repeat(1023)]))).toBeInstanceOf(KeyTooLargeError);
    expect(tupleKey.encode(['x'.repeat(1022)]).length).toBe(1024);
    expect(catchError(() => tupleKey.encode(['\0'.repeat(600)]))).toBeInstanceOf(KeyTooLargeError);
    expect(catchError(() => tupleKey.encode(new Array(200).fill(1)))).toBeInstanceOf(KeyTooLargeError);
    expect(catchError(() => tupleKey.encode([b(...new Array(1023).fill(7))]))).toBeInstanceOf(KeyTooLargeError);
    let deep: TupleElement[] = [];
    for (let i = 0; i < 600; i++) deep = [deep];
    expect(catchError(() => tupleKey.encode(deep))).toSatisfy((e) => e instanceof KeyTooLargeError || e instanceof InvalidKeyError);
  });
  it('decodes bytes elements as fresh Uint8Arrays and nested arrays as arrays', () => {
    const t = tupleKey.decode(tupleKey.encode([b(0, 1, 0), ['x', [2n]], 'y']));
    expect(t[0]).toBeInstanceOf(Uint8Array);
    expect(Array.from(t[0] as Uint8Array)).toEqual([0, 1, 0]);
    expect(t[1]).toEqual(['x', [2n]]);
  });
});

describe('value codecs', () => {
  it('json round-trips JSON values, stores undefined as the empty value', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => {
      expect(jsonValue.decode(jsonValue.encode(v))).toEqual(JSON.parse(JSON.stringify(v)));
    }), { numRuns: 500 });
    expect(jsonValue.encode(undefined).length).toBe(0);
    expect(jsonValue.decode(new Uint8Array(0))).toBeUndefined();
    expect(jsonValue.decode(jsonValue.encode(7))).toBe(7);
    expect(jsonValue.decode(jsonValue.encode('\ud800'))).toBe('\ud800');
  });
  it('json decodes numbers exactly (integer fast path and JSON.parse agree)', () => {
    const nums = [0, -0, 1, -1, 9, 10, 123456789012345, -123456789012345, 1234567890123456, 9007199254740993, 2 ** 53, -(2 ** 60), 1e21, 1.5, -0.25, 1e-7];
    for (const x of nums) expect(Object.is(jsonValue.decode(jsonValue.encode(x)), JSON.parse(JSON.stringify(x)))).toBe(true);
    fc.assert(fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true })), (x) =>
      Object.is(jsonValue.decode(jsonValue.encode(x)), JSON.parse(JSON.stringify(x)))), { numRuns: 5000 });
    for (const text of ['-', '01', '-01', '1e5', '1.0', '12a']) {
      const bytes = new TextEncoder().encode(text);
      let want: unknown;
      try { want = JSON.parse(text); } catch { want = 'throws'; }
      let got: unknown;
      try { got = jsonValue.decode(bytes); } catch { got = 'throws'; }
      expect(got, text).toEqual(want);
    }
  });
  it('json rejects what JSON cannot hold with InvalidValueError', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const v of [1n, cyclic, () => 1, Symbol('x'), { toJSON: () => { throw new Error('no'); } }]) {
      const e = catchError(() => jsonValue.encode(v));
      expect(e).toBeInstanceOf(InvalidValueError);
      expect(e).toBeInstanceOf(TypeError);
      expect(isAdaptreeError(e)).toBe(true);
    }
  });
  it('utf8 round-trips strings, rejects lone surrogates and non-strings', () => {
    fc.assert(fc.property(stringArb, (s) => utf8Value.decode(utf8Value.encode(s)) === s), { numRuns: 1000 });
    const long = 'é'.repeat(5000) + '😀';
    expect(utf8Value.decode(utf8Value.encode(long))).toBe(long);
    for (const v of ['\ud800', 'a'.repeat(5000) + '\udc00']) expect(catchError(() => utf8Value.encode(v))).toBeInstanceOf(InvalidValueError);
    for (const v of [1, null, undefined, new Uint8Array(1)]) expect(catchError(() => utf8Value.encode(v as never))).toBeInstanceOf(InvalidValueError);
  });
  it('bytes round-trips and copies', () => {
    const v = new Uint8Array([1, 2, 3]);
    const d = bytesValue.decode(bytesValue.encode(v));
    expect(Array.from(d)).toEqual([1, 2, 3]);
    expect(d).not.toBe(v);
    for (const x of ['a', [1], new Uint16Array(1), null]) expect(catchError(() => bytesValue.encode(x as never))).toBeInstanceOf(InvalidValueError);
  });
});

function catchError(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, none was thrown');
}
