// Shared by the encoding and map tests: the natural order of each key type, fast-check
// arbitraries that produce many equal keys and shared prefixes, and a plain sorted-array
// model of an ordered map to compare BTreeMap against.
import fc from 'fast-check';
import type { Tuple, TupleElement } from '../../ts/src/encoding/tuple.js';

export function compareCodePoints(a: string, b: string): number {
  // UTF-16 order equals code point order except for surrogates vs U+E000..U+FFFF.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x !== y) {
      const xs = x >= 0xd800 && x <= 0xdfff, ys = y >= 0xd800 && y <= 0xdfff;
      if (xs !== ys) return xs ? 1 : -1;
      return x < y ? -1 : 1;
    }
  }
  return a.length - b.length;
}

export function compareBytesNatural(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return a.length - b.length;
}

function typeRank(e: TupleElement): number {
  if (typeof e === 'number') return 0;
  if (typeof e === 'bigint') return 1;
  if (typeof e === 'string') return 2;
  if (e instanceof Uint8Array) return 3;
  return 4;
}

function compareElements(a: TupleElement, b: TupleElement): number {
  const ra = typeRank(a), rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0: return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1: return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0;
    case 2: return compareCodePoints(a as string, b as string);
    case 3: return compareBytesNatural(a as Uint8Array, b as Uint8Array);
    default: return compareTuples(a as Tuple, b as Tuple);
  }
}

export function compareTuples(a: Tuple, b: Tuple): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareElements(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length - b.length;
}

// Small alphabets make equal keys and shared prefixes likely; `binary` covers all of Unicode.
// (U+FEFF: a TextDecoder drops it at the start of its input unless told not to; tuple keys'
// string elements lost it, session 27)
const chars = fc.constantFrom('\0', '\x01', 'a', 'b', 'z', '\x7f', '\x80', 'é', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\ufeff', '\uffff', '😀', '\u{10ffff}');
export const stringArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: chars, maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 30 }),
);

export const bytesArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 8, min: 0, max: 3 }),
  fc.uint8Array({ maxLength: 8, min: 250, max: 255 }),
  fc.uint8Array({ maxLength: 40 }),
);

const specialNumbers = [
  -Infinity, Infinity, 0, -0, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE,
  Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53, -(2 ** 53), 2 ** 32, 2 ** 32 - 1, -(2 ** 32), 0.5, -0.5,
  Number.EPSILON, 1 - Number.EPSILON / 2, -1 + Number.EPSILON / 2,
];
export const numberArb: fc.Arbitrary<number> = fc.oneof(
  fc.double({ noNaN: true }),
  fc.integer({ min: -50, max: 50 }),
  fc.integer({ min: -50, max: 50 }).map((i) => i / 4),
  fc.maxSafeInteger(),
  fc.constantFrom(...specialNumbers),
);

const B = (e: bigint) => 2n ** e;
export const bigintArb: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: -50n, max: 50n }),
  fc.bigInt({ min: -B(64n), max: B(64n) }),
  fc.bigInt({ min: -B(200n), max: B(200n) }),
  fc.bigInt({ min: -B(8000n), max: B(8000n) }),
  fc.constantFrom(B(63n), B(63n) - 1n, -B(63n), -B(63n) - 1n, B(64n), -B(64n), 0n),
);

export const tupleArb: fc.Arbitrary<Tuple> = fc.letrec<{ tuple: Tuple; element: TupleElement }>((tie) => ({
  tuple: fc.array(tie('element'), { maxLength: 4 }),
  element: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom(-0.5, 0.5, 2 ** 60, -Infinity, Infinity), fc.double({ noNaN: true })),
    fc.bigInt({ min: -3n, max: 3n }),
    fc.string({ unit: chars, maxLength: 4 }),
    fc.uint8Array({ maxLength: 4, min: 0, max: 2 }),
    tie('tuple'),
  ),
})).tuple;

/** A plain ordered map: a sorted array of [key, value] with a comparator. */
export class SortedModel<K, V> {
  keys: K[] = [];
  vals: V[] = [];
  constructor(readonly cmp: (a: K, b: K) => number) {}

  /** Index of the first key >= k. */
  lowerBound(k: K): number {
    let lo = 0, hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cmp(this.keys[mid]!, k) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  /** Index of the first key > k. */
  upperBound(k: K): number {
    let lo = 0, hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cmp(this.keys[mid]!, k) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  get size(): number { return this.keys.length; }
  get(k: K): V | undefined {
    const i = this.lowerBound(k);
    return i < this.keys.length && this.cmp(this.keys[i]!, k) === 0 ? this.vals[i] : undefined;
  }
  has(k: K): boolean {
    const i = this.lowerBound(k);
    return i < this.keys.length && this.cmp(this.keys[i]!, k) === 0;
  }
  set(k: K, v: V): void {
    const i = this.lowerBound(k);
    if (i < this.keys.length && this.cmp(this.keys[i]!, k) === 0) this.vals[i] = v;
    else { this.keys.splice(i, 0, k); this.vals.splice(i, 0, v); }
  }
  delete(k: K): boolean {
    const i = this.lowerBound(k);
    if (i < this.keys.length && this.cmp(this.keys[i]!, k) === 0) { this.keys.splice(i, 1); this.vals.splice(i, 1); return true; }
    return false;
  }
  clear(): void { this.keys = []; this.vals = []; }
  /** Indexes [from, to) of the keys within the bounds. */
  span(r: { gt?: K; gte?: K; lt?: K; lte?: K }): [number, number] {
    const from = r.gte !== undefined ? this.lowerBound(r.gte) : r.gt !== undefined ? this.upperBound(r.gt) : 0;
    const to = r.lte !== undefined ? this.upperBound(r.lte) : r.lt !== undefined ? this.lowerBound(r.lt) : this.keys.length;
    return [from, Math.max(from, to)];
  }
  range(r: { gt?: K; gte?: K; lt?: K; lte?: K; reverse?: boolean; limit?: number }): [K, V][] {
    const [from, to] = this.span(r);
    const out: [K, V][] = [];
    for (let i = from; i < to; i++) out.push([this.keys[i]!, this.vals[i]!]);
    if (r.reverse) out.reverse();
    return r.limit !== undefined ? out.slice(0, r.limit) : out;
  }
  deleteRange(r: { gt?: K; gte?: K; lt?: K; lte?: K }): number {
    const [from, to] = this.span(r);
    this.keys.splice(from, to - from);
    this.vals.splice(from, to - from);
    return to - from;
  }
  /** The smallest key > k (or >= when inclusive), for iterator resumption. */
  after(k: K): number { return this.upperBound(k); }
  before(k: K): number { return this.lowerBound(k) - 1; }
}
