/**
 * Key ranges: checking a range object, encoding its bounds once, and testing a key
 * against the stop bound.
 */
import { InvalidArgumentError } from '../errors.js';
import type { Handle } from './handle.js';
import { putKeyA } from './put.js';
import type { Range } from './types.js';

export interface Bounds {
  /** Where iteration starts: key bytes, or null for the edge. */
  start: Uint8Array | null;
  startExclusive: boolean;
  /** Where iteration stops: key bytes, or null for the other edge. */
  stop: Uint8Array | null;
  stopInclusive: boolean;
  /** The stop key itself when it is a number (`number` keys: batches of doubles compare with it). */
  stopNumber: number;
  reverse: boolean;
  limit: number;
}

/** Every option an own property (undefined where not given): nothing is read from a prototype. */
const NO_RANGE: Range<never> = Object.freeze({ gt: undefined, gte: undefined, lt: undefined, lte: undefined, reverse: undefined, limit: undefined });
const RANGE_KEYS = new Set(['gt', 'gte', 'lt', 'lte', 'reverse', 'limit']);

/**
 * The range's options, copied from its own enumerable properties (those `{ ...range }` copies)
 * into an object that has every option as an own property. They were read through the
 * prototype chain: `m.keys([])` scanned in reverse, since `Array.prototype.reverse` is a
 * function and so truthy, and `Object.create({ reverse: true, limit: 1 })` was taken as that
 * range. A range must be a plain object, its prototype `Object.prototype` (of any realm: a vm
 * context's or an iframe's too) or null: an array (a list of keys passed by mistake), a Map or
 * an object whose options may come from its prototype (a class instance, Object.create(o)) is
 * refused rather than read in part. A plain object whose options are all its own (the usual
 * case) is read in place: the copy cost a short scan ~60 ns (a 12-20% of a `limit: 1` scan).
 */
export function checkRange(range: unknown, what: string): Range<unknown> {
  if (range === undefined || range === null) return NO_RANGE;
  if (typeof range !== 'object') throw new InvalidArgumentError(`${what}: the range must be an object like {gte, lt, reverse, limit}`);
  const proto = Object.getPrototypeOf(range) as object | null;
  if (proto !== null && Object.getPrototypeOf(proto) !== null) {
    throw new InvalidArgumentError(
      `${what}: the range must be a plain object like {gte, lt, reverse, limit}, not ${Array.isArray(range) ? 'an array' : 'an object with a prototype of its own (a class instance, Object.create(o)): copy its options into one'}`,
    );
  }
  // for-in lists the inherited enumerable properties too: an option put on Object.prototype
  // (`Object.prototype.reverse = true`) makes the copy below, where only own ones count.
  let own = true;
  for (const k in range) {
    if (!Object.prototype.hasOwnProperty.call(range, k)) {
      own = false;
      continue;
    }
    // A misspelt bound ({ form: 5 }) iterated over everything.
    if (!RANGE_KEYS.has(k)) {
      const known = what.startsWith('deleteRange') ? 'gt, gte, lt, lte' : 'gt, gte, lt, lte, reverse, limit';
      throw new InvalidArgumentError(`${what}: unknown range option '${k}' (${known})`);
    }
  }
  const r: Range<unknown> = own ? (range as Range<unknown>) : { gt: undefined, gte: undefined, lt: undefined, lte: undefined, reverse: undefined, limit: undefined };
  if (!own) for (const k of Object.keys(range)) (r as Record<string, unknown>)[k] = (range as Record<string, unknown>)[k];
  if (r.gt !== undefined && r.gte !== undefined) throw new InvalidArgumentError(`${what}: give gt or gte, not both`);
  if (r.lt !== undefined && r.lte !== undefined) throw new InvalidArgumentError(`${what}: give lt or lte, not both`);
  return r;
}

function encodeBound<K>(h: Handle<K, unknown>, key: K): Uint8Array {
  const rt = h.rt;
  rt.refresh();
  // Key area A: a long utf8 key goes in with TextEncoder.encodeInto there (putKeyA).
  const n = putKeyA(h, key);
  return rt.u8.slice(rt.keyA, rt.keyA + n);
}

export function boundsOf<K>(h: Handle<K, unknown>, range: Range<K> | undefined, what: string): Bounds {
  return boundsWith(range, what, (key) => encodeBound(h, key));
}

/** boundsOf with the bounds encoded by `encode` (the key codec; it throws InvalidKeyError and
 * KeyTooLargeError as putKey does): for a map whose tree is not on this thread (an opfs store
 * opened on a browser's main thread checks and encodes its ranges there, as a BTreeMap does). */
export function boundsWith<K>(range: Range<K> | undefined, what: string, encode: (key: K) => Uint8Array): Bounds {
  const r = checkRange(range, what) as Range<K>;
  let limit = Infinity;
  if (r.limit !== undefined) {
    if (typeof r.limit !== 'number' || !(r.limit >= 0) || (r.limit !== Infinity && !Number.isInteger(r.limit))) {
      throw new InvalidArgumentError(`${what}: limit must be a non-negative integer or Infinity`);
    }
    limit = r.limit;
  }
  const lo = r.gte !== undefined ? r.gte : r.gt;
  const hi = r.lte !== undefined ? r.lte : r.lt;
  // (a tuple bound may be a prefix of a key, Bound<K>: the tuple encoding takes any length)
  const loBytes = lo !== undefined ? encode(lo as K) : null;
  const hiBytes = hi !== undefined ? encode(hi as K) : null;
  const reverse = !!r.reverse;
  const stopKey = reverse ? lo : hi;
  const stopNumber = typeof stopKey === 'number' ? stopKey : NaN;
  return reverse
    ? { start: hiBytes, startExclusive: r.lt !== undefined, stop: loBytes, stopInclusive: r.gte !== undefined, stopNumber, reverse, limit }
    : { start: loBytes, startExclusive: r.gt !== undefined, stop: hiBytes, stopInclusive: r.lte !== undefined, stopNumber, reverse, limit };
}

/** The range of Bounds again, over the encoded keys (reverse a boolean, limit a number): what
 * a map with `bytes` keys over the same encodings iterates as the original range. */
export function rangeOfBounds(b: Bounds): Range<Uint8Array> {
  const r: Range<Uint8Array> = {};
  const lo = b.reverse ? b.stop : b.start, hi = b.reverse ? b.start : b.stop;
  const loExclusive = b.reverse ? !b.stopInclusive : b.startExclusive;
  const hiExclusive = b.reverse ? b.startExclusive : !b.stopInclusive;
  if (lo !== null) r[loExclusive ? 'gt' : 'gte'] = lo;
  if (hi !== null) r[hiExclusive ? 'lt' : 'lte'] = hi;
  if (b.reverse) r.reverse = true;
  if (b.limit !== Infinity) r.limit = b.limit;
  return r;
}

/** checkRange for deleteRange, which takes bounds only. */
export function checkDeleteRange(range: unknown): Range<unknown> {
  // (a JavaScript caller's undefined variable emptied the map: a probe, session 31; `{}` still
  // means every entry, as clear() does)
  if (range === undefined || range === null) {
    throw new InvalidArgumentError(`deleteRange: give a range ({ gte, lt, ... }), not ${String(range)}; deleteRange({}) or clear() removes every entry`);
  }
  const r = checkRange(range, 'deleteRange');
  if (r.limit !== undefined) throw new InvalidArgumentError('deleteRange: limit is not supported');
  // (no order: it removes the whole range; taken silently, it read as if it meant something,
  // while limit was refused: a probe, session 29)
  if (r.reverse !== undefined) throw new InvalidArgumentError('deleteRange: reverse is not supported (it removes the whole range)');
  return r;
}

/** Whether the key at u8[off, off+len) lies beyond the stop bound. */
export function past(u8: Uint8Array, off: number, len: number, b: Bounds): boolean {
  const stop = b.stop!;
  const n = len < stop.length ? len : stop.length;
  let c = 0;
  for (let i = 0; i < n; i++) {
    const d = u8[off + i]! - stop[i]!;
    if (d !== 0) {
      c = d;
      break;
    }
  }
  if (c === 0) c = len - stop.length;
  if (b.reverse) return b.stopInclusive ? c < 0 : c <= 0;
  return b.stopInclusive ? c > 0 : c >= 0;
}
