// BTreeMap unit tests: every method and every error, against each wasm build (builds.ts).
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptreeError,
  BTreeMap,
  ClosedError,
  CorruptionError,
  InvalidArgumentError,
  InvalidKeyError,
  InvalidValueError,
  KeyTooLargeError,
  IoError,
  LockedError,
  NotInitializedError,
  QuotaExceededError,
  ReentrancyError,
  ValueTooLargeError,
  compareBytes,
  isAdaptreeError,
  utf8Key,
  type BTreeMapOptions,
  type KeyCodec,
  type Range,
  type Tuple,
} from '../../ts/src/index.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';
import { OutOfMemoryError, PageFaultError, errorFromStatus, errorFromWire, errorToWire, type AdaptreeErrorCode } from '../../ts/src/errors.js';
import { BUILDS, wasmFor } from './builds.js';
import { SortedModel, compareTuples } from './model.js';

function catchError(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, none was thrown');
}

/** Asserts that `f` throws an error of class `cls` with `code`, and that it is a branded adaptree error. */
function expectError(f: () => unknown, cls: abstract new (...a: never[]) => Error, code: string): Error {
  const e = catchError(f) as Error & { code?: string };
  expect(e, `${e?.name}: ${e?.message}`).toBeInstanceOf(cls);
  expect(e.code).toBe(code);
  expect(isAdaptreeError(e)).toBe(true);
  expect(e).toBeInstanceOf(AdaptreeError);
  return e;
}

const pad = (i: number) => `k${String(i).padStart(5, '0')}`;

describe('before init()', () => {
  it('new BTreeMap() without a wasm instance throws NotInitializedError', () => {
    expectError(() => new BTreeMap(), NotInitializedError, 'NOT_INITIALIZED');
  });
});

describe('error classes', () => {
  it('extend the built-in they stand for and carry a stable code', () => {
    const cases: [Error & { code: string }, ErrorConstructor | undefined, string][] = [
      [new InvalidKeyError('x'), TypeError, 'INVALID_KEY'],
      [new InvalidValueError('x'), TypeError, 'INVALID_VALUE'],
      [new InvalidArgumentError('x'), TypeError, 'INVALID_ARGUMENT'],
      [new KeyTooLargeError(), RangeError, 'KEY_TOO_LARGE'],
      [new ValueTooLargeError(), RangeError, 'VALUE_TOO_LARGE'],
      [new ClosedError(), undefined, 'CLOSED'],
      [new CorruptionError(), undefined, 'CORRUPT'],
      [new QuotaExceededError(), undefined, 'QUOTA_EXCEEDED'],
      [new LockedError(), undefined, 'LOCKED'],
      [new NotInitializedError(), undefined, 'NOT_INITIALIZED'],
      [new ReentrancyError(), undefined, 'REENTRANT'],
    ];
    for (const [e, builtin, code] of cases) {
      expect(e.code).toBe(code);
      expect(e).toBeInstanceOf(Error);
      expect(e).toBeInstanceOf(AdaptreeError);
      expect(isAdaptreeError(e)).toBe(true);
      if (builtin) expect(e).toBeInstanceOf(builtin);
      expect(e.name).toBe(e.constructor.name);
      expect(String(e)).toContain(e.constructor.name);
    }
    // Subclass checks stay exact: the AdaptreeError brand check does not leak into them.
    expect(new KeyTooLargeError()).not.toBeInstanceOf(ClosedError);
    expect(new ClosedError()).not.toBeInstanceOf(CorruptionError);
    expect(new ClosedError()).not.toBeInstanceOf(TypeError);
    expect(new RangeError('plain')).not.toBeInstanceOf(AdaptreeError);
    expect(isAdaptreeError(new RangeError('plain'))).toBe(false);
    expect(isAdaptreeError(null)).toBe(false);
    expect(isAdaptreeError({ code: 'CLOSED' })).toBe(false);
  });

  it('map every core error status (core/status.h) to its class', () => {
    const cases: [number, abstract new (...a: never[]) => Error, string][] = [
      [-1, KeyTooLargeError, 'KEY_TOO_LARGE'],
      [-2, ValueTooLargeError, 'VALUE_TOO_LARGE'],
      [-3, OutOfMemoryError, 'OUT_OF_MEMORY'],
      [-4, CorruptionError, 'CORRUPT'],
      [-5, InvalidArgumentError, 'INVALID_ARGUMENT'],
      [-6, ClosedError, 'CLOSED'],
      [-99, AdaptreeError, 'INTERNAL'],
      [2, AdaptreeError, 'INTERNAL'],
    ];
    for (const [status, cls, code] of cases) {
      const e = errorFromStatus(status, 'op') as Error & { code: string };
      expect(e).toBeInstanceOf(cls);
      expect(e.code).toBe(code);
      expect(isAdaptreeError(e)).toBe(true);
    }
  });

  it('an error posted across a thread boundary (errorToWire, structured clone, errorFromWire) keeps its class and code', () => {
    const codes: AdaptreeErrorCode[] = ['INVALID_KEY', 'INVALID_VALUE', 'INVALID_ARGUMENT', 'KEY_TOO_LARGE', 'VALUE_TOO_LARGE', 'CLOSED',
      'CORRUPT', 'OUT_OF_MEMORY', 'INSTANCE_POISONED', 'QUOTA_EXCEEDED', 'LOCKED', 'IO_ERROR', 'READ_ONLY', 'NEED_PAGE',
      'NOT_INITIALIZED', 'REENTRANT', 'ABORTED', 'THREADS_UNSUPPORTED', 'INTERNAL'];
    for (const code of codes) {
      const sent = code === 'NEED_PAGE' ? new PageFaultError(7, 'gone') : errorFromWire({ name: 'x', code, message: `m ${code}` });
      const back = errorFromWire(structuredClone(errorToWire(sent))) as Error & { code: string; pageId?: number };
      expect(back.constructor, code).toBe(sent.constructor);
      expect(back.code).toBe(code);
      expect(back.name).toBe(sent.name);
      expect(back.message).toBe(sent.message);
      expect(isAdaptreeError(back)).toBe(true);
      if (code === 'NEED_PAGE') expect(back.pageId).toBe(7);
      // a setMany error's applied crosses too (it was dropped: a pool's or an OPFS main-thread
      // store's setMany said nothing of what was in; session 29)
      if (code !== 'NEED_PAGE') {
        const withCount = errorFromWire({ name: 'x', code, message: 'm', applied: 3 });
        expect((errorFromWire(structuredClone(errorToWire(withCount))) as { applied?: number }).applied, code).toBe(3);
      }
    }
    // Every class's name is its own, also where a minifier renamed the classes (a new-user
    // probe, session 23: a bundle said `N: the map has been freed`). The second check loads
    // dist/errors.js minified by rolldown (vite's bundler).
    for (const code of codes) {
      const e = code === 'NEED_PAGE' ? new PageFaultError(7) : errorFromWire({ name: 'x', code, message: 'm' });
      expect(e.name, code).toBe(code === 'INTERNAL' ? 'AdaptreeError' : e.constructor.name);
    }
  });

  it('error names survive minification (dist/errors.js through rolldown --minify)', async () => {
    const { build } = await import('rolldown');
    const { join } = await import('node:path');
    const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { pathToFileURL } = await import('node:url');
    const dir = mkdtempSync(join(tmpdir(), 'adaptree-minify-'));
    try {
      await build({ input: join(process.cwd(), 'dist/errors.js'), output: { dir, minify: true, format: 'esm', entryFileNames: 'errors.min.mjs' }, logLevel: 'silent' });
      expect(readFileSync(join(dir, 'errors.min.mjs'), 'utf8')).not.toContain('class ClosedError'); // renamed, so the check means something
      const min = (await import(pathToFileURL(join(dir, 'errors.min.mjs')).href)) as Record<string, new (m: string) => Error>;
      for (const name of ['ClosedError', 'CorruptionError', 'LockedError', 'IoError', 'QuotaExceededError', 'ReadOnlyError', 'NotInitializedError', 'ThreadsUnsupportedError', 'InvalidKeyError', 'KeyTooLargeError']) {
        const E = min[name]!;
        expect(E, name).toBeTypeOf('function');
        const e = new E('m');
        expect(e.name).toBe(name);
        expect(String(e)).toBe(`${name}: m`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('errors from the wire: plain errors and thrown values', () => {
    // Plain errors keep their built-in class and name; thrown non-errors become Error.
    const t = errorFromWire(structuredClone(errorToWire(new TypeError('t'))));
    expect(t).toBeInstanceOf(TypeError);
    expect(isAdaptreeError(t)).toBe(false);
    const odd = new Error('o');
    odd.name = 'AbortError';
    expect(errorFromWire(errorToWire(odd)).name).toBe('AbortError');
    expect(errorFromWire(errorToWire('thrown string')).message).toBe('thrown string');
  });

  it('errors from the wire keep their cause (a DOMException as one), a few levels deep', () => {
    // (The cause was dropped: a LockedError from a main-thread opfs store's worker lost the
    // NoModificationAllowedError that said why, a new-user probe, session 24.)
    const dom = new DOMException('the file is open elsewhere', 'NoModificationAllowedError');
    const sent = new LockedError('locked', { cause: new IoError('io', { cause: dom }) });
    const back = errorFromWire(structuredClone(errorToWire(sent))) as Error & { cause: Error & { cause: DOMException } };
    expect(back).toBeInstanceOf(LockedError);
    expect(back.cause).toBeInstanceOf(IoError);
    expect(back.cause.message).toBe('io');
    expect(back.cause.cause).toBeInstanceOf(DOMException);
    expect(back.cause.cause).toMatchObject({ name: 'NoModificationAllowedError', message: 'the file is open elsewhere', code: dom.code });
    const plain = errorFromWire(errorToWire(new TypeError('t', { cause: 'a string' }))) as Error & { cause: Error };
    expect(plain.cause.message).toBe('a string');
    expect(errorFromWire(errorToWire(new Error('none'))).cause).toBeUndefined();
    // A cycle of causes ends.
    const a = new Error('a'), b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    let depth = 0;
    for (let e: unknown = errorFromWire(errorToWire(a)); e instanceof Error; e = e.cause) depth++;
    expect(depth).toBe(5);
  });
});

describe.each(BUILDS)('BTreeMap on the %s build', (build) => {
  let wasm: AdaptreeWasm;
  const live: BTreeMap<any, any>[] = [];
  beforeAll(async () => {
    wasm = await wasmFor(build);
  });
  afterEach(() => {
    for (const m of live.splice(0)) m.free();
  });
  function make<K = string, V = unknown>(entries?: Iterable<readonly [K, V]> | null, options?: BTreeMapOptions<K, V>): BTreeMap<K, V> {
    const m = new BTreeMap<K, V>(entries, { ...options, wasm });
    live.push(m);
    return m;
  }
  function filled(n: number, step = 1): BTreeMap<string, number> {
    const m = make<string, number>();
    for (let i = 0; i < n; i += step) m.set(pad(i), i);
    return m;
  }

  // Found by a new-user probe (session 22): an iterator kept its core cursor (~2 KiB of wasm
  // memory) between calls until it was collected, so a synchronous loop of abandoned peeks grew
  // memory by 1.9 GB (finalizers run only after the loop) and ended in OutOfMemoryError.
  describe('iterators hold no wasm memory between calls', () => {
    it('100k abandoned peeks in one synchronous loop leave memory as it was', () => {
      const m = filled(5000);
      for (let i = 0; i < 1000; i++) m.keys({ gte: pad(i) }).next(); // warm up the areas
      const before = wasm.memory.buffer.byteLength;
      for (let i = 0; i < 100_000; i++) {
        const it = i % 2 ? m.entries({ gte: pad(i % 5000) }) : m.keys();
        it.next();
        it.next();
      }
      expect(wasm.memory.buffer.byteLength).toBe(before);
    });

    it('a bytes key the caller changes does not move where the iteration goes on', () => {
      const m = make<Uint8Array, number>(null, { keys: 'bytes', values: 'json' });
      for (let i = 0; i < 3000; i++) m.set(new Uint8Array([i >> 8, i & 255, 7]), i);
      const seen: number[] = [];
      for (const [k, v] of m) {
        seen.push(v);
        k.fill(0); // the caller's array: theirs to change
        if (seen.length > 3000) break; // (it looped: the same few keys for ever)
      }
      expect(seen).toEqual(Array.from({ length: 3000 }, (_, i) => i));
      // and with changes to the map as it goes (each re-seeks after the last key returned)
      const again: number[] = [];
      for (const [k, v] of m) {
        again.push(v);
        k.fill(0);
        if (v % 5 === 3) m.set(new Uint8Array([(v * 7) % 3000 >> 8, (v * 7) % 3000 & 255, 7]), (v * 7) % 3000);
        if (again.length > 3000) break;
      }
      expect(again).toEqual(Array.from({ length: 3000 }, (_, i) => i));
      const back: number[] = [];
      for (const k of m.keys({ reverse: true })) {
        back.push((k[0]! << 8) | k[1]!);
        k.fill(255);
      }
      expect(back).toEqual(Array.from({ length: 3000 }, (_, i) => 2999 - i));
    });
  });

  describe('the Map interface', () => {
    it('starts empty', () => {
      const m = make();
      expect(m.size).toBe(0);
      expect(m.get('a')).toBeUndefined();
      expect(m.has('a')).toBe(false);
      expect(m.delete('a')).toBe(false);
      expect([...m]).toEqual([]);
      expect([...m.keys()]).toEqual([]);
      expect(m.first()).toBeUndefined();
      expect(m.last()).toBeUndefined();
    });

    it('set returns the map, get/has find, overwrite keeps the size', () => {
      const m = make<string, unknown>();
      expect(m.set('b', 2)).toBe(m);
      m.set('a', { x: [1, 'y'] }).set('c', null);
      expect(m.size).toBe(3);
      expect(m.get('a')).toEqual({ x: [1, 'y'] });
      expect(m.get('b')).toBe(2);
      expect(m.get('c')).toBeNull();
      expect(m.has('c')).toBe(true);
      m.set('b', 'two');
      expect(m.size).toBe(3);
      expect(m.get('b')).toBe('two');
      expect(m.get('d')).toBeUndefined();
    });

    it('stores undefined as a value (has is true, get is undefined), like Map', () => {
      const m = make<string, unknown>();
      m.set('u', undefined);
      expect(m.has('u')).toBe(true);
      expect(m.get('u')).toBeUndefined();
      expect(m.size).toBe(1);
      expect([...m]).toEqual([['u', undefined]]);
    });

    it('delete removes and reports whether the key was there', () => {
      const m = filled(100);
      expect(m.delete(pad(50))).toBe(true);
      expect(m.delete(pad(50))).toBe(false);
      expect(m.has(pad(50))).toBe(false);
      expect(m.size).toBe(99);
    });

    it('clear empties the map, which stays usable', () => {
      const m = filled(1000);
      m.clear();
      expect(m.size).toBe(0);
      expect([...m]).toEqual([]);
      m.set('x', 1);
      expect([...m]).toEqual([['x', 1]]);
    });

    it('iterates in key order whatever the insertion order', () => {
      const m = make<string, number>();
      const keys = Array.from({ length: 3000 }, (_, i) => pad((i * 7919) % 3000));
      for (const k of keys) m.set(k, Number(k.slice(1)));
      const sorted = [...keys].sort();
      expect([...m.keys()]).toEqual(sorted);
      expect([...m.values()]).toEqual(sorted.map((k) => Number(k.slice(1))));
      expect([...m.entries()]).toEqual(sorted.map((k) => [k, Number(k.slice(1))]));
      expect([...m]).toEqual(sorted.map((k) => [k, Number(k.slice(1))]));
      expect(Array.from(m)).toEqual([...m.entries()]);
      expect(new Map(m).get(pad(17))).toBe(17);
    });

    it('constructs from entries like Map (arrays, Maps, generators, null); later duplicates win', () => {
      expect([...make([['b', 1], ['a', 2], ['b', 3]])]).toEqual([['a', 2], ['b', 3]]);
      expect([...make(new Map([['z', 1], ['y', 2]]))]).toEqual([['y', 2], ['z', 1]]);
      function* gen(): Generator<[string, number]> {
        yield ['q', 1];
        yield ['p', 2];
      }
      expect([...make(gen())]).toEqual([['p', 2], ['q', 1]]);
      expect(make(null).size).toBe(0);
      expect(catchError(() => make([1 as never]))).toBeInstanceOf(TypeError);
    });

    it('entries/keys/values return iterable iterators that stay done', () => {
      const m = filled(3);
      const it = m.entries();
      expect(it[Symbol.iterator]()).toBe(it);
      expect(it.next()).toEqual({ done: false, value: [pad(0), 0] });
      expect(it.next().value).toEqual([pad(1), 1]);
      expect(it.next().value).toEqual([pad(2), 2]);
      expect(it.next()).toEqual({ done: true, value: undefined });
      m.set(pad(9), 9);
      expect(it.next().done).toBe(true);
      expect(Object.prototype.toString.call(m.keys())).toBe('[object BTreeMap Iterator]');
    });

    it('return() ends an iteration early (for-of break) and releases its cursor', () => {
      const m = filled(1000);
      let n = 0;
      for (const [k] of m) {
        if (++n === 10) break;
        expect(k).toBe(pad(n - 1));
      }
      const it = m.keys();
      it.next();
      expect(it.return!()).toEqual({ done: true, value: undefined });
      expect(it.next().done).toBe(true);
      const it2 = m.keys();
      it2.next();
      (it2 as unknown as Disposable)[Symbol.dispose]();
      expect(it2.next().done).toBe(true);
    });

    it('many live iterators over one map are independent', () => {
      const m = filled(500);
      const its = Array.from({ length: 50 }, (_, i) => m.keys({ gte: pad(i * 10) }));
      for (let step = 0; step < 3; step++) {
        its.forEach((it, i) => expect(it.next().value).toBe(pad(i * 10 + step)));
      }
    });

    it('forEach passes (value, key, map) in key order with thisArg', () => {
      const m = make([['b', 2], ['a', 1]]);
      const seen: unknown[] = [];
      const self = { tag: 't' };
      m.forEach(function (this: typeof self, v, k, map) {
        seen.push([v, k, map === m, this.tag]);
      }, self);
      expect(seen).toEqual([[1, 'a', true, 't'], [2, 'b', true, 't']]);
      expect(catchError(() => m.forEach(1 as never))).toBeInstanceOf(TypeError);
    });

    it('has Symbol.toStringTag BTreeMap and is usable where a Map is expected', () => {
      const m = make([['a', 1]]);
      expect(Object.prototype.toString.call(m)).toBe('[object BTreeMap]');
      const asMap: Map<string, unknown> = m;
      expect(asMap.get('a')).toBe(1);
    });
  });

  describe('ranges', () => {
    // Keys 0, 2, ..., 38; bounds on present (even) and absent (odd) keys and past both ends.
    const model = new SortedModel<number, number>((a, b) => a - b);
    for (let i = 0; i < 40; i += 2) model.set(i, i * 10);
    const boundValues = [-1, 0, 1, 10, 11, 38, 39, 50];
    const lows: Range<number>[] = [{}, ...boundValues.flatMap((v) => [{ gt: v }, { gte: v }])];
    const highs: Range<number>[] = [{}, ...boundValues.flatMap((v) => [{ lt: v }, { lte: v }])];

    it('entries/keys/values honour every combination of gt/gte/lt/lte, reverse and limit', () => {
      const m = make<number, number>(undefined, { keys: 'number' });
      for (const k of model.keys) m.set(k, k * 10);
      let checked = 0;
      for (const lo of lows) for (const hi of highs) for (const reverse of [false, true]) for (const limit of [undefined, 0, 1, 3, 100]) {
        const r: Range<number> = { ...lo, ...hi, reverse, ...(limit === undefined ? {} : { limit }) };
        const want = model.range(r);
        expect([...m.entries(r)], JSON.stringify(r)).toEqual(want);
        expect([...m.keys(r)]).toEqual(want.map((e) => e[0]));
        expect([...m.values(r)]).toEqual(want.map((e) => e[1]));
        checked++;
      }
      expect(checked).toBe(17 * 17 * 2 * 5);
    });

    it('deleteRange removes exactly the bounded keys, for every bound combination', () => {
      for (const lo of lows) for (const hi of highs) {
        const m = make<number, number>(model.keys.map((k) => [k, k * 10] as [number, number]), { keys: 'number' });
        const mm = new SortedModel<number, number>((a, b) => a - b);
        model.keys.forEach((k) => mm.set(k, k * 10));
        const r = { ...lo, ...hi };
        expect(m.deleteRange(r), JSON.stringify(r)).toBe(mm.deleteRange(r));
        expect([...m.keys()]).toEqual(mm.keys);
        expect(m.size).toBe(mm.size);
        m.free();
      }
    });

    it('deleteRange with no bounds deletes everything; across many leaves', () => {
      const m = filled(5000);
      expect(m.deleteRange({ gte: pad(1000), lt: pad(4000) })).toBe(3000);
      expect(m.size).toBe(2000);
      expect(m.get(pad(999))).toBe(999);
      expect(m.get(pad(1000))).toBeUndefined();
      expect(m.get(pad(4000))).toBe(4000);
      expect([...m.keys()].length).toBe(2000);
      expect(m.deleteRange({})).toBe(2000);
      expect(m.size).toBe(0);
      m.checkInvariants();
    });

    it('rejects malformed ranges with InvalidArgumentError', () => {
      const m = filled(10);
      for (const r of [{ gt: 'a', gte: 'a' }, { lt: 'a', lte: 'a' }, { limit: -1 }, { limit: 1.5 }, { limit: NaN }, { limit: '3' }, 5, 'a'] as unknown[]) {
        expectError(() => m.entries(r as Range<string>), InvalidArgumentError, 'INVALID_ARGUMENT');
      }
      expectError(() => m.deleteRange({ gt: 'a', gte: 'b' }), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => m.deleteRange({ limit: 3 } as never), InvalidArgumentError, 'INVALID_ARGUMENT');
      expect(m.size).toBe(10);
      expect([...m.keys({ limit: Infinity })].length).toBe(10);
    });

    it('first, last, nextHigher, nextLower', () => {
      const m = make<number, string>(undefined, { keys: 'number', values: 'utf8' });
      expect(m.nextHigher(1)).toBeUndefined();
      for (const k of [10, 20, 30]) m.set(k, `v${k}`);
      expect(m.first()).toEqual([10, 'v10']);
      expect(m.last()).toEqual([30, 'v30']);
      expect(m.nextHigher(10)).toEqual([20, 'v20']);
      expect(m.nextHigher(15)).toEqual([20, 'v20']);
      expect(m.nextHigher(-Infinity)).toEqual([10, 'v10']);
      expect(m.nextHigher(30)).toBeUndefined();
      expect(m.nextLower(30)).toEqual([20, 'v20']);
      expect(m.nextLower(25)).toEqual([20, 'v20']);
      expect(m.nextLower(10)).toBeUndefined();
      expect(m.nextLower(Infinity)).toEqual([30, 'v30']);
    });

    it('walks a large map with nextHigher and nextLower', () => {
      const m = filled(3000, 3);
      let e = m.first();
      let n = 0;
      while (e) {
        expect(e[0]).toBe(pad(n));
        n += 3;
        e = m.nextHigher(e[0]);
      }
      expect(n).toBe(3000);
      e = m.last();
      while (e) {
        n -= 3;
        expect(e[0]).toBe(pad(n));
        e = m.nextLower(e[0]);
      }
      expect(n).toBe(0);
    });
  });

  describe('batches', () => {
    it('getMany returns values in order, undefined where absent, duplicates included', () => {
      const m = filled(100);
      expect(m.getMany([pad(5), 'nope', pad(5), pad(99)])).toEqual([5, undefined, 5, 99]);
      expect(m.getMany([])).toEqual([]);
      expect(m.getMany(new Set([pad(1), pad(2)]))).toEqual([1, 2]);
    });

    it('getMany of 20k keys (the batch area grows)', () => {
      const m = filled(20000, 2);
      const keys = Array.from({ length: 20000 }, (_, i) => pad(i));
      const got = m.getMany(keys);
      got.forEach((v, i) => expect(v).toBe(i % 2 === 0 ? i : undefined));
    });

    it('setMany sets in one batch, later duplicates win, returns the map', () => {
      const m = make<string, number>();
      expect(m.setMany([['b', 1], ['a', 2], ['b', 3]])).toBe(m);
      expect([...m]).toEqual([['a', 2], ['b', 3]]);
      const big = Array.from({ length: 30000 }, (_, i) => [pad(29999 - i), i] as [string, number]);
      m.setMany(big);
      expect(m.size).toBe(30002);
      expect(m.get(pad(0))).toBe(29999);
      m.setMany(new Map([['a', 7]]));
      expect(m.get('a')).toBe(7);
      m.checkInvariants();
    });

    it('sorted entries into an empty map (the core bulk-loads them) stay a correct, modifiable tree', () => {
      for (const keys of ['utf8', 'number'] as const) {
        const n = build === 'reference' ? 6000 : 60000;
        const entries = Array.from({ length: n }, (_, i) => [keys === 'utf8' ? pad(i) : i, i] as [never, number]);
        const m = make<string | number, number>(entries, { keys });
        expect(m.size).toBe(n);
        m.checkInvariants();
        expect(m.get(entries[1234]![0])).toBe(1234);
        for (let i = 0; i < n; i += 3) m.delete(entries[i]![0]);
        for (let i = 0; i < n; i += 7) m.set(entries[i]![0], -i);
        m.checkInvariants();
        let count = 0;
        for (const [, v] of m) {
          count++;
          void v;
        }
        expect(count).toBe(m.size);
        expect(m.size).toBe(n - Math.ceil(n / 3) + Math.ceil(n / 21));
      }
    });

    it('setMany checks every entry first: one bad key or value leaves the map unchanged', () => {
      const m = filled(10);
      const before = [...m];
      expectError(() => m.setMany([['x', 1], [5 as never, 2]]), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.setMany([['x', 1], ['y'.repeat(2000), 2]]), KeyTooLargeError, 'KEY_TOO_LARGE');
      expectError(() => m.setMany([['x', 1], ['y', 2n as never]]), InvalidValueError, 'INVALID_VALUE');
      expect(catchError(() => m.setMany([['x', 1], null as never]))).toBeInstanceOf(TypeError);
      expect([...m]).toEqual(before);
    });
  });

  describe('key encodings', () => {
    it('number: numeric order, -0 stored as +0, fractions and infinities', () => {
      const m = make<number, number>(undefined, { keys: 'number' });
      const keys = [3, -1, 0.5, -Infinity, Infinity, 2 ** 60, -(2 ** 60), 1e-300, -0, Number.MAX_SAFE_INTEGER, -Number.MAX_VALUE];
      keys.forEach((k, i) => m.set(k, i));
      const sorted = [...new Set(keys.map((k) => (k === 0 ? 0 : k)))].sort((a, b) => a - b);
      expect([...m.keys()]).toEqual(sorted);
      expect(Object.is(m.first()?.[0], -Infinity)).toBe(true);
      expect(Object.is([...m.keys()].find((k) => k === 0), 0)).toBe(true);
      expect(m.get(0)).toBe(8);
      expect(m.get(-0)).toBe(8);
      expectError(() => m.set(NaN, 1), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.get(NaN), InvalidKeyError, 'INVALID_KEY');
    });

    it('number: point calls encode a key inside wasm exactly as setMany and ranges do in TypeScript', () => {
      // get/has/set/delete pass a number key as a double (at_*_num); setMany, ranges and
      // iteration use the TypeScript encoder. One byte of difference would make set() add a
      // second entry beside the setMany one, and get() miss it.
      const keys = [
        0, 1, -1, 0.5, -0.5, 1.5, -1.5, 2 ** 32, 2 ** 32 - 1, -(2 ** 32), -(2 ** 32) - 1, 2 ** 21, -(2 ** 21) - 0.25,
        Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 0.5, 2 ** 53, -(2 ** 53), 2 ** 60 + 2 ** 10,
        -(2 ** 60), Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Number.MIN_VALUE, 1e-300, -1e-300, 123456.789,
        -987654321.125, Infinity, -Infinity, 4503599627370495.5, -4503599627370495.5,
      ];
      const m = make<number, string>(keys.map((k) => [k, 'batch'] as const), { keys: 'number', values: 'utf8' });
      expect(m.size).toBe(keys.length);
      for (const k of keys) {
        expect(m.has(k)).toBe(true);
        expect(m.get(k)).toBe('batch');
        m.set(k, 'point');
      }
      expect(m.size).toBe(keys.length);
      expect(m.getMany(keys)).toEqual(keys.map(() => 'point'));
      expect([...m.keys()]).toEqual([...keys].sort((a, b) => a - b));
      m.set(-0, 'minus zero');
      expect(m.size).toBe(keys.length);
      expect(m.get(0)).toBe('minus zero');
      for (const k of keys) expect(m.delete(k)).toBe(true);
      expect(m.size).toBe(0);
      expect(m.delete(1)).toBe(false);
      expect(m.has(1)).toBe(false);
      expect(m.get(1)).toBeUndefined();
      expectError(() => m.has(NaN), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.delete(NaN), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.get('1' as never), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.set(1n as never, 'x'), InvalidKeyError, 'INVALID_KEY');
      expect(m.size).toBe(0);
    });

    it('number: iteration gets keys as doubles from wasm; stop bounds compare as numbers; batches cut by bytes go on', () => {
      const keys = [-Infinity, -(2 ** 60), -3.5, -3, -1, -0.25, 0, 0.25, 1, 2, 2.5, 2 ** 40, 2 ** 60, Infinity];
      const m = make<number, number>(keys.map((k, i) => [k, i] as const), { keys: 'number' });
      expect([...m.entries()]).toEqual(keys.map((k, i) => [k, i]));
      expect([...m.keys({ gt: -3, lt: 2 })]).toEqual([-1, -0.25, 0, 0.25, 1]);
      expect([...m.keys({ gte: -3, lte: 2 })]).toEqual([-3, -1, -0.25, 0, 0.25, 1, 2]);
      expect([...m.keys({ gte: -3.5, lte: 2.5, reverse: true })]).toEqual([2.5, 2, 1, 0.25, 0, -0.25, -1, -3, -3.5]);
      expect([...m.keys({ gt: -3.5, lt: 2.5, reverse: true })]).toEqual([2, 1, 0.25, 0, -0.25, -1, -3]);
      expect([...m.keys({ lte: -Infinity })]).toEqual([-Infinity]);
      expect([...m.keys({ gt: 2 ** 60 })]).toEqual([Infinity]);
      expect([...m.values({ gte: 0, lt: Infinity })]).toEqual([6, 7, 8, 9, 10, 11, 12]);
      // Values of 2 KiB: batches end at the byte limit, not at the end of the map.
      const big = make<number, Uint8Array>(undefined, { keys: 'number', values: 'bytes' });
      for (let i = 0; i < 600; i++) big.set(i * 1.5, new Uint8Array(2048).fill(i & 255));
      let n = 0;
      for (const [k, v] of big) {
        expect(k).toBe(n * 1.5);
        expect(v[2047]).toBe(n & 255);
        n++;
      }
      expect(n).toBe(600);
    });

    it('number: dense integer keys (dense leaves) in both directions', () => {
      const m = make<number, number>(undefined, { keys: 'number' });
      for (let i = 0; i < 20000; i++) m.set(i, i);
      expect(m.size).toBe(20000);
      expect(m.get(12345)).toBe(12345);
      expect([...m.keys({ gte: 9998, limit: 3 })]).toEqual([9998, 9999, 10000]);
      expect([...m.keys({ lt: 5, reverse: true })]).toEqual([4, 3, 2, 1, 0]);
      for (let i = 0; i < 20000; i += 2) m.delete(i);
      expect([...m.keys({ limit: 3 })]).toEqual([1, 3, 5]);
      m.checkInvariants();
    });

    it('bigint keys', () => {
      const m = make<bigint, string>(undefined, { keys: 'bigint', values: 'utf8' });
      const keys = [0n, -1n, 2n ** 64n, -(2n ** 64n), 2n ** 63n - 1n, -(2n ** 63n), 2n ** 1000n];
      for (const k of keys) m.set(k, String(k));
      expect([...m.keys()]).toEqual([...keys].sort((a, b) => (a < b ? -1 : 1)));
      expect(m.get(2n ** 1000n)).toBe(String(2n ** 1000n));
      expectError(() => m.set(1 as never, 'x'), InvalidKeyError, 'INVALID_KEY');
    });

    it('bytes keys compare by content; iteration returns copies', () => {
      const m = make<Uint8Array, number>(undefined, { keys: 'bytes' });
      const k = new Uint8Array([1, 2]);
      m.set(k, 1);
      expect(m.get(new Uint8Array([1, 2]))).toBe(1);
      m.set(new Uint8Array([1, 2]), 2);
      expect(m.size).toBe(1);
      m.set(new Uint8Array([]), 0).set(new Uint8Array([0]), 3).set(new Uint8Array([255]), 4);
      const keys = [...m.keys()];
      expect(keys.map((x) => Array.from(x))).toEqual([[], [0], [1, 2], [255]]);
      keys[2]![0] = 9;
      expect(m.get(new Uint8Array([1, 2]))).toBe(2);
      expectError(() => m.set('ab' as never, 1), InvalidKeyError, 'INVALID_KEY');
    });

    it('tuple keys order element-wise, prefixes first', () => {
      const m = make<Tuple, number>(undefined, { keys: 'tuple' });
      const keys: Tuple[] = [['ab'], ['a', 1], ['a'], [], ['a', 'b'], [1, 'x'], [1n], [new Uint8Array([0])], [['n']], ['a', -0.5]];
      keys.forEach((k, i) => m.set(k, i));
      expect([...m.keys()]).toEqual([...keys].sort(compareTuples));
      expect(m.get(['a', 1])).toBe(1);
      expect([...m.keys({ gte: ['a'], lt: ['a', '\uffff'] })]).toEqual([['a'], ['a', -0.5], ['a', 1], ['a', 'b']]);
      expectError(() => m.set([NaN], 1), InvalidKeyError, 'INVALID_KEY');
      expectError(() => m.set([{}] as never, 1), InvalidKeyError, 'INVALID_KEY');
    });

    it('utf8 keys: empty string, all of Unicode, code point order', () => {
      const m = make<string, number>();
      const keys = ['', '\0', 'a', '\uffff', '\u{10000}', 'é', '😀', '\ud7ff', '\ue000'];
      keys.forEach((k, i) => m.set(k, i));
      expect([...m.keys()]).toEqual(['', '\0', 'a', 'é', '\ud7ff', '\ue000', '\uffff', '\u{10000}', '😀']);
      for (const [i, k] of keys.entries()) expect(m.get(k)).toBe(i);
    });

    it('a custom key codec (must be order-preserving)', () => {
      // Dates by time: 8-byte big-endian of the (non-negative) millisecond count.
      const dateKey: KeyCodec<Date> = {
        encode(d) {
          if (!(d instanceof Date)) throw new TypeError('not a Date');
          const b = new Uint8Array(8);
          new DataView(b.buffer).setBigUint64(0, BigInt(d.getTime()));
          return b;
        },
        decode(b) {
          return new Date(Number(new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0)));
        },
      };
      const m = make<Date, string>(undefined, { keys: dateKey, values: 'utf8' });
      m.set(new Date(2000, 1, 1), 'y2k').set(new Date(1990, 1, 1), 'old');
      expect([...m.values()]).toEqual(['old', 'y2k']);
      expect(m.get(new Date(2000, 1, 1))).toBe('y2k');
      expect(m.keyEncoding).toBe('custom');
      expectError(() => m.set('x' as never, 'x'), InvalidKeyError, 'INVALID_KEY');
      expect(m.size).toBe(2);
    });
  });

  describe('fast paths at their length thresholds', () => {
    // Strings are encoded and decoded by hand when short and by TextEncoder/TextDecoder when
    // longer; small bytes values are copied by hand. Every length around the thresholds, ASCII
    // and not, through get, has, iteration, ranges, getMany, first/last and nextHigher.
    const keysOf = (): string[] => {
      const out: string[] = [];
      for (let n = 0; n <= 80; n++) {
        out.push('k'.repeat(n));
        if (n >= 1) out.push('é'.repeat(n), 'a'.repeat(n - 1) + 'ü', '😀' + 'x'.repeat(n), 'q'.repeat(n) + 'ключ');
      }
      return [...new Set(out)];
    };
    it('utf8 keys of every length round-trip (bytes values of every length)', () => {
      const keys = keysOf();
      const val = (i: number) => Uint8Array.from({ length: i % 70 }, (_, j) => (i * 31 + j) & 255);
      const m = make<string, Uint8Array>(undefined, { values: 'bytes' });
      keys.forEach((k, i) => m.set(k, val(i)));
      const sorted = [...keys].sort((a, b) => compareBytes(utf8Key.encode(a), utf8Key.encode(b)));
      expect([...m.keys()]).toEqual(sorted);
      const idx = new Map(keys.map((k, i) => [k, i]));
      for (const [k, v] of m.entries()) expect(Array.from(v)).toEqual(Array.from(val(idx.get(k)!)));
      keys.forEach((k, i) => {
        expect(m.has(k)).toBe(true);
        expect(Array.from(m.get(k)!)).toEqual(Array.from(val(i)));
        expect(m.has(k + '\u0001')).toBe(false);
      });
      expect(m.getMany(keys).map((v) => Array.from(v!))).toEqual(keys.map((_, i) => Array.from(val(i))));
      for (let i = 0; i < sorted.length; i += 7) {
        expect([...m.keys({ gte: sorted[i], limit: 5 })]).toEqual(sorted.slice(i, i + 5));
        expect([...m.keys({ gt: sorted[i], limit: 3 })]).toEqual(sorted.slice(i + 1, i + 4));
        expect([...m.keys({ lte: sorted[i], reverse: true, limit: 4 })]).toEqual(sorted.slice(Math.max(0, i - 3), i + 1).reverse());
        expect(m.nextHigher(sorted[i]!)?.[0]).toBe(sorted[i + 1]);
      }
      expect(m.first()?.[0]).toBe(sorted[0]);
      expect(m.last()?.[0]).toBe(sorted[sorted.length - 1]);
      // Returned values are copies, not views of wasm memory (those over 64 B may share a slab).
      const a = m.get(sorted[3]!)!, b = m.get(sorted[3]!)!;
      expect(a).not.toBe(b);
      expect(a.buffer).not.toBe(wasm.memory.buffer);
      a.fill(7);
      expect(Array.from(m.get(sorted[3]!)!)).toEqual(Array.from(b));
    });
    it('bytes values of every length 0..300 come back from get byte for byte, at every alignment, and stay as they were', () => {
      // get copies values into its slab (encoding/bytes.ts Slab.put): every length, each at a
      // few offsets, across the copy's paths (by hand to 16 bytes, set() beyond).
      const m = make<string, Uint8Array>(undefined, { values: 'bytes' });
      const val = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + seed * 17 + (i >> 3)) & 255);
      const keys: string[] = [];
      for (let n = 0; n <= 300; n++) for (let pad = 0; pad < 4; pad++) {
        const k = `v${String(n).padStart(3, '0')}-${pad}` + 'p'.repeat(pad);
        keys.push(k);
        m.set(k, val(n, pad));
      }
      const got = keys.map((k) => m.get(k)!);
      keys.forEach((k, j) => {
        const n = Math.floor(j / 4), pad = j % 4;
        expect(got[j]!.length).toBe(n);
        expect(Array.from(got[j]!)).toEqual(Array.from(val(n, pad)));
      });
      // Later gets (the same slab) leave earlier values alone; writing one changes no other.
      got[100]!.fill(0xee);
      for (const k of keys) m.get(k);
      keys.forEach((k, j) => {
        if (j !== 100) expect(Array.from(got[j]!)).toEqual(Array.from(val(Math.floor(j / 4), j % 4)));
      });
    });
    it('utf8 and json values of every length round-trip through set and setMany; lone surrogates are rejected', () => {
      const strs: string[] = [];
      for (const n of [0, 1, 12, 23, 24, 25, 26, 40, 63, 64, 65, 100, 255, 256, 257, 300, 1000, 5000]) {
        strs.push('v'.repeat(n), 'é'.repeat(n), '😀'.repeat(n >> 1) + 'z', 'x'.repeat(n) + 'ключ');
      }
      const u = make<string, string>(undefined, { values: 'utf8' });
      const j = make<string, unknown>();
      strs.forEach((v, i) => {
        u.set(pad(i), v);
        j.set(pad(i), { v, i });
      });
      u.setMany(strs.map((v, i) => [pad(i + strs.length), v] as const));
      j.setMany(strs.map((v, i) => [pad(i + strs.length), [v, i]] as const));
      strs.forEach((v, i) => {
        expect(u.get(pad(i))).toBe(v);
        expect(u.get(pad(i + strs.length))).toBe(v);
        expect(j.get(pad(i))).toEqual({ v, i });
        expect(j.get(pad(i + strs.length))).toEqual([v, i]);
      });
      expect([...u.values()]).toEqual([...strs, ...strs]);
      for (const n of [0, 20, 24, 25, 30, 64, 65, 200, 256, 257, 1000]) {
        for (const bad of ['\ud800' + 'a'.repeat(n), 'a'.repeat(n) + '\udc00', 'é'.repeat(n) + '\ud83d']) {
          expectError(() => u.set('k', bad), InvalidValueError, 'INVALID_VALUE');
          expectError(() => u.setMany([['k', 'ok'], ['l', bad]]), InvalidValueError, 'INVALID_VALUE');
          // JSON.stringify escapes lone surrogates: they round-trip in json values.
          j.set('bad', bad);
          expect(j.get('bad')).toBe(bad);
        }
      }
      expect(u.has('k')).toBe(false);
      expect(u.size).toBe(2 * strs.length);
    });
    it('ranges with limits around the batch sizes (one batch up to 64), also when the map changes meanwhile', () => {
      const m = make<number, number>(undefined, { keys: 'number' });
      for (let i = 0; i < 600; i += 2) m.set(i, i);
      const all = [...m.keys()];
      for (const limit of [1, 15, 16, 17, 40, 63, 64, 65, 100, 300, 400]) {
        for (const from of [0, 101, 500]) {
          const want = all.filter((k) => k >= from).slice(0, limit);
          expect([...m.keys({ gte: from, limit })]).toEqual(want);
          expect([...m.entries({ gte: from, limit })].map(([k, v]) => k - v)).toEqual(want.map(() => 0));
          const rev = all.filter((k) => k <= from).reverse().slice(0, limit);
          expect([...m.keys({ lte: from, reverse: true, limit })]).toEqual(rev);
        }
        // Changes while iterating: keys inserted ahead are seen, deleted ones are not, the limit holds.
        const c = make<number, number>(undefined, { keys: 'number' });
        for (let i = 0; i < 600; i += 2) c.set(i, i);
        const seen: number[] = [];
        for (const k of c.keys({ gte: 10, limit })) {
          seen.push(k);
          if (seen.length === 3) {
            c.set(k + 1, 0);
            c.delete(k + 4);
          }
        }
        const model = [...c.keys()].filter((k) => k >= 10).slice(0, limit);
        expect(seen.slice(3)).toEqual(model.slice(3));
        expect(seen.length).toBe(Math.min(limit, model.length));
      }
    });
    it('rejects lone surrogates and too-long keys at every length', () => {
      const m = make<string, number>([['a', 1]]);
      for (let n = 0; n <= 80; n++) {
        for (const k of ['\ud800' + 'x'.repeat(n), 'x'.repeat(n) + '\udc00', 'é'.repeat(n) + '\ud83d']) {
          expectError(() => m.set(k, 1), InvalidKeyError, 'INVALID_KEY');
          expectError(() => m.get(k), InvalidKeyError, 'INVALID_KEY');
          expectError(() => m.has(k), InvalidKeyError, 'INVALID_KEY');
        }
      }
      for (const k of ['x'.repeat(1024), 'é'.repeat(512), '😀'.repeat(256)]) {
        m.set(k, 2);
        expect(m.get(k)).toBe(2);
      }
      for (const k of ['x'.repeat(1025), 'é'.repeat(512) + 'x', '😀'.repeat(256) + 'x', 'x'.repeat(1023) + 'é']) {
        expectError(() => m.set(k, 1), KeyTooLargeError, 'KEY_TOO_LARGE');
        expectError(() => m.get(k), KeyTooLargeError, 'KEY_TOO_LARGE');
      }
      expect(m.size).toBe(4);
    });
  });

  describe('value encodings', () => {
    it('json (default) round-trips JSON values', () => {
      const m = make<string, unknown>();
      const vals: unknown[] = [0, 7, -1.5, 1e300, 'ü😀', '', true, false, null, [], {}, { a: [1, { b: 'c' }] }, '\ud800'];
      vals.forEach((v, i) => m.set(pad(i), v));
      vals.forEach((v, i) => expect(m.get(pad(i))).toEqual(v));
      expect([...m.values()]).toEqual(vals);
      expect(m.valueEncoding).toBe('json');
    });

    it('json rejects what JSON cannot hold; map unchanged', () => {
      const m = make<string, unknown>([['a', 1]]);
      const cyclic: { self?: unknown } = {};
      cyclic.self = cyclic;
      for (const v of [1n, cyclic, () => 0, Symbol('s')]) {
        expectError(() => m.set('a', v), InvalidValueError, 'INVALID_VALUE');
        expectError(() => m.set('b', v), InvalidValueError, 'INVALID_VALUE');
      }
      expect([...m]).toEqual([['a', 1]]);
    });

    it('utf8 values: strings only, no lone surrogates', () => {
      const m = make<string, string>(undefined, { values: 'utf8' });
      m.set('a', '').set('b', 'x'.repeat(100000)).set('c', 'é😀'.repeat(300));
      expect(m.get('a')).toBe('');
      expect(m.get('b')).toBe('x'.repeat(100000));
      expect(m.get('c')).toBe('é😀'.repeat(300));
      expectError(() => m.set('d', 'bad\ud800'), InvalidValueError, 'INVALID_VALUE');
      expectError(() => m.set('d', 'x'.repeat(1000) + '\udc00'), InvalidValueError, 'INVALID_VALUE');
      expectError(() => m.set('d', 5 as never), InvalidValueError, 'INVALID_VALUE');
      expect(m.size).toBe(3);
    });

    it('bytes values: get returns a copy, not a view of wasm memory', () => {
      const m = make<string, Uint8Array>(undefined, { values: 'bytes' });
      m.set('a', new Uint8Array([1, 2, 3])).set('e', new Uint8Array(0));
      const v = m.get('a')!;
      expect(Array.from(v)).toEqual([1, 2, 3]);
      expect(v.buffer === wasm.memory.buffer).toBe(false);
      expect(v.buffer instanceof ArrayBuffer).toBe(true);
      v[0] = 9;
      expect(Array.from(m.get('a')!)).toEqual([1, 2, 3]);
      expect(m.get('e')!.length).toBe(0);
      expectError(() => m.set('x', [1] as never), InvalidValueError, 'INVALID_VALUE');
      // 65 B .. 2 KiB: views of a shared ArrayBuffer (never wasm memory), each its own bytes;
      // a transferred (detached) one is replaced, and values handed out before keep theirs
      // unless they were in it.
      const lens = [65, 100, 2048, 2049, 5000, 64];
      for (const n of lens) m.set(`v${n}`, new Uint8Array(n).map((_, i) => (i * 7 + n) & 255));
      const got = lens.map((n) => m.get(`v${n}`)!);
      for (const [i, n] of lens.entries()) {
        expect(got[i]!.length).toBe(n);
        expect(got[i]!.buffer === wasm.memory.buffer).toBe(false);
        expect(got[i]!.every((x, j) => x === ((j * 7 + n) & 255))).toBe(true);
      }
      expect(got[0]!.buffer).toBe(got[1]!.buffer); // pooled
      expect(got[3]!.byteLength).toBe(got[3]!.buffer.byteLength); // over 2 KiB: its own
      got[0]!.fill(0);
      expect(got[1]!.every((x, j) => x === ((j * 7 + 100) & 255))).toBe(true);
      expect(m.get('v65')!.every((x, j) => x === ((j * 7 + 65) & 255))).toBe(true);
      expect(got[5]!.byteLength).toBe(got[5]!.buffer.byteLength); // up to 64 B: its own (on the JS heap)
      const pooled = m.get('v100')!;
      structuredClone(pooled.buffer, { transfer: [pooled.buffer] }); // detaches the slab
      expect(pooled.length).toBe(0);
      for (let i = 0; i < 3; i++) {
        const again = m.get('v100')!;
        expect(again.length).toBe(100);
        expect(again.every((x, j) => x === ((j * 7 + 100) & 255))).toBe(true);
      }
    });

    it('large values (1 MiB bytes, 3 MB strings) set, get and iterate', () => {
      const m = make<string, Uint8Array>(undefined, { values: 'bytes' });
      const big = new Uint8Array(1 << 20).map((_, i) => i * 31);
      m.set('big', big).set('small', new Uint8Array([1]));
      // Buffer.equals, not toEqual: vitest's deep equality walks a MiB element by element (~15 s).
      expect(Buffer.from(m.get('big')!).equals(Buffer.from(big))).toBe(true);
      expect([...m.entries()].map(([k, v]) => [k, v.length])).toEqual([['big', 1 << 20], ['small', 1]]);
      const s = make<string, string>(undefined, { values: 'utf8' });
      const str = 'é'.repeat(1_500_000);
      s.set('s', str);
      expect(s.get('s')).toBe(str);
      expect([...s.values()][0]).toBe(str);
    });

    it('a custom value codec gets a copy it may keep', () => {
      const kept: Uint8Array[] = [];
      const m = make<string, number>(undefined, {
        values: {
          encode: (n: number) => new Uint8Array([n]),
          decode: (b: Uint8Array) => {
            kept.push(b);
            return b[0]!;
          },
        },
      });
      m.set('a', 1).set('b', 2);
      expect(m.get('a')).toBe(1);
      expect([...m.values()]).toEqual([1, 2]);
      m.set('a', 3);
      expect(kept[0]![0]).toBe(1);
      expect(m.getMany(['a', 'b', 'c'])).toEqual([3, 2, undefined]);
      expect(m.valueEncoding).toBe('custom');
    });

    // A probe (session 30): a decode that threw half way through a batch left the iterator's
    // old counters in place, and the next next() paired new keys with old values and skipped
    // keys (['g', 'value-d'] after the error at 'g'). Now the iterator re-reads after its last
    // key: the same error again, and once the entry decodes, every entry with its own value.
    it('an iterator whose batch met a decode error serves no entry of a half-decoded batch', () => {
      let armed = false;
      const m = make<string, string>(undefined, {
        values: {
          encode: (v: string) => new TextEncoder().encode(v),
          decode: (b: Uint8Array) => {
            const v = new TextDecoder().decode(b);
            if (armed && v === 'value-g') throw new Error('cannot decode g');
            return v;
          },
        },
      });
      for (const k of 'abcdefghijklmnopqrstuvwxyz') m.set(k, 'value-' + k);
      const it = m.entries();
      const got: unknown[] = [it.next().value, it.next().value, it.next().value];
      armed = true;
      m.set('zz', 'value-zz'); // the next next() re-reads after 'c'
      for (let i = 0; i < 3; i++) {
        let e: unknown;
        try {
          it.next();
        } catch (x) {
          e = x;
        }
        expect(isAdaptreeError(e) && e.code).toBe('CORRUPT');
      }
      armed = false;
      for (let r = it.next(); !r.done; r = it.next()) got.push(r.value);
      expect(got).toEqual([...'abcdefghijklmnopqrstuvwxyz', 'zz'].map((k) => [k, 'value-' + k]));
    });

    // A throwing decode surfaced raw (no code) where a throwing encode was InvalidValueError.
    it("a custom codec's decode that throws is CorruptionError with it as cause, on every read path", () => {
      const boom = new Error('cannot read this');
      let fail = false;
      const m = make<string, number>(undefined, {
        values: { encode: (n: number) => new Uint8Array([n]), decode: (b: Uint8Array) => { if (fail) throw boom; return b[0]!; } },
      });
      m.set('a', 1).set('b', 2);
      fail = true;
      for (const read of [() => m.get('a'), () => m.getMany(['a', 'b']), () => [...m.values()], () => [...m.entries({ gte: 'b' })], () => m.forEach(() => {})]) {
        let e: unknown;
        try {
          read();
        } catch (x) {
          e = x;
        }
        expect(isAdaptreeError(e) && e.code).toBe('CORRUPT');
        expect((e as Error).cause).toBe(boom);
      }
      const k = make<string, number>(undefined, {
        keys: { encode: (s: string) => new TextEncoder().encode(s), decode: () => { throw boom; } },
      });
      k.set('x', 1);
      let ke: unknown;
      try {
        [...k.keys()];
      } catch (x) {
        ke = x;
      }
      expect(isAdaptreeError(ke) && ke.code).toBe('CORRUPT');
      expect(m.has('a')).toBe(true); // the map goes on
      fail = false;
      expect(m.get('a')).toBe(1);
    });
  });

  describe('errors leave the map unchanged', () => {
    it('wrong key type: InvalidKeyError (TypeError) from every method taking a key', () => {
      const m = filled(20);
      const before = [...m];
      for (const bad of [1, null, undefined, {}, ['a'], 1n, new Uint8Array(1)]) {
        const k = bad as never;
        expectError(() => m.set(k, 1), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.get(k), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.has(k), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.delete(k), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.nextHigher(k), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.nextLower(k), InvalidKeyError, 'INVALID_KEY');
        if (bad !== undefined) {
          // An undefined bound means "no bound", as with optional properties.
          expectError(() => m.entries({ gte: k }), InvalidKeyError, 'INVALID_KEY');
          expectError(() => m.keys({ lt: k }), InvalidKeyError, 'INVALID_KEY');
          expectError(() => m.deleteRange({ gte: pad(0), lt: k }), InvalidKeyError, 'INVALID_KEY');
        }
        expectError(() => m.getMany([pad(1), k]), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.setMany([[pad(1), 1], [k, 1]]), InvalidKeyError, 'INVALID_KEY');
        expect(catchError(() => m.set(k, 1))).toBeInstanceOf(TypeError);
      }
      expect([...m]).toEqual(before);
    });

    it('oversized key: KeyTooLargeError (RangeError), checked before the core is called', () => {
      const m = filled(20);
      const before = [...m];
      const max = 'x'.repeat(1024);
      m.set(max, 'max' as never);
      expect(m.get(max)).toBe('max');
      for (const big of ['x'.repeat(1025), 'é'.repeat(513), 'y'.repeat(100000)]) {
        expectError(() => m.set(big, 1), KeyTooLargeError, 'KEY_TOO_LARGE');
        expect(catchError(() => m.set(big, 1))).toBeInstanceOf(RangeError);
        expectError(() => m.get(big), KeyTooLargeError, 'KEY_TOO_LARGE');
        expectError(() => m.has(big), KeyTooLargeError, 'KEY_TOO_LARGE');
        expectError(() => m.delete(big), KeyTooLargeError, 'KEY_TOO_LARGE');
        expectError(() => m.keys({ gt: big }), KeyTooLargeError, 'KEY_TOO_LARGE');
        expectError(() => m.deleteRange({ lt: big }), KeyTooLargeError, 'KEY_TOO_LARGE');
      }
      m.delete(max);
      expect([...m]).toEqual(before);
    });

    it("'baseline' refuses keys over 1011 bytes with a KeyTooLargeError that says why, and changes nothing", () => {
      // Its nodes keep keys whole: longer keys left one separator per inner node, and five
      // runs of appends grew chains of one-child nodes until set failed at the height limit
      // with OutOfMemoryError, 872 keys in (a probe, session 32).
      const m = make<string, number>(undefined, { layout: 'baseline' });
      const tenant = (len: number, i: number) => 'p'.repeat(len - 14) + 't' + (i % 5) + String(i).padStart(12, '0');
      for (let i = 0; i < 1500; i++) m.set(tenant(1011, i), i);
      expect(m.size).toBe(1500);
      // (the reference ABI models the limit, not pages)
      const real = build !== 'reference';
      if (real) expect(m.stats().height).toBeLessThanOrEqual(14);
      const before = m.stats().pages;
      for (const len of [1012, 1020, 1024]) {
        const e = expectError(() => m.set(tenant(len, 1), 1), KeyTooLargeError, 'KEY_TOO_LARGE');
        expect(e.message).toContain("'baseline' layout takes keys up to 1011 bytes");
        expect(catchError(() => m.set(tenant(len, 1), 1))).toBeInstanceOf(RangeError);
        // reads take any key up to 1024 bytes
        expect(m.get(tenant(len, 1))).toBeUndefined();
        expect(m.has(tenant(len, 1))).toBe(false);
        expect(m.delete(tenant(len, 1))).toBe(false);
      }
      // A batch stops at the key it cannot take (as at an oversized value).
      const batch = expectError(() => m.setMany([[tenant(1011, 5000), 1], [tenant(1012, 5001), 2]]), KeyTooLargeError, 'KEY_TOO_LARGE');
      expect(batch.message).toContain("'baseline' layout takes keys up to 1011 bytes");
      // (what comes before the refused key is in, as `applied` says)
      const applied = (batch as Error & { applied?: number }).applied;
      expect(batch.message).toContain(`${applied} of 2 entries were applied`);
      expect(m.has(tenant(1011, 5000))).toBe(applied === 1);
      expect(m.size).toBe(1500 + applied!);
      expect(m.has(tenant(1012, 5001))).toBe(false);
      if (real) expect(m.stats().pages).toBeLessThanOrEqual(before + 4);
      m.checkInvariants();
      for (let i = 0; i < 1500; i += 37) expect(m.get(tenant(1011, i))).toBe(i);
      // Every other layout takes 1024-byte keys in the same pattern.
      const p = make<string, number>(undefined, { layout: 'prefix' });
      for (let i = 0; i < 1500; i++) p.set(tenant(1024, i), i);
      if (real) expect(p.stats().height).toBeLessThanOrEqual(6);
      p.checkInvariants();
    });

    it('oversized keys of every encoding', () => {
      const n = make<Uint8Array, number>(undefined, { keys: 'bytes' });
      expectError(() => n.set(new Uint8Array(1025), 1), KeyTooLargeError, 'KEY_TOO_LARGE');
      n.set(new Uint8Array(1024), 1);
      const t = make<Tuple, number>(undefined, { keys: 'tuple' });
      expectError(() => t.set(new Array(103).fill(1), 1), KeyTooLargeError, 'KEY_TOO_LARGE');
      const b = make<bigint, number>(undefined, { keys: 'bigint' });
      expectError(() => b.set(2n ** 9000n, 1), KeyTooLargeError, 'KEY_TOO_LARGE');
      expect(n.size + t.size + b.size).toBe(1);
    });

    it('lone surrogates in utf8 keys: InvalidKeyError', () => {
      const m = filled(5);
      for (const k of ['\ud800', 'a\udfff', '\udc00\ud800']) {
        expectError(() => m.set(k, 1), InvalidKeyError, 'INVALID_KEY');
        expectError(() => m.get(k), InvalidKeyError, 'INVALID_KEY');
      }
      expect(m.size).toBe(5);
    });

    it('bad options: InvalidArgumentError', () => {
      expectError(() => make(undefined, { keys: 'float' as never }), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => make(undefined, { values: 'xml' as never }), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => make(undefined, { layout: 'btree' as never }), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => make(undefined, { keys: { encode: 1 } as never }), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => new BTreeMap(undefined, 5 as never), InvalidArgumentError, 'INVALID_ARGUMENT');
      // A misspelt option must not silently fall back to the defaults.
      expectError(() => make(undefined, { keyEncoding: 'bytes' } as never), InvalidArgumentError, 'INVALID_ARGUMENT');
      expectError(() => make(undefined, { valueEncoding: 'utf8' } as never), InvalidArgumentError, 'INVALID_ARGUMENT');
      // Options given where the entries go: said so (not "setMany: entries must be iterable").
      const e = expectError(() => make({ keys: 'number' } as never), InvalidArgumentError, 'INVALID_ARGUMENT');
      expect(e.message).toMatch(/options go second/);
      // Any other non-iterable object is still an entries error.
      expect(expectError(() => make({ a: 1 } as never), InvalidArgumentError, 'INVALID_ARGUMENT').message).toMatch(/iterable/);
    });

    it('a codec or toJSON that calls back into adaptree: ReentrancyError, map unchanged', () => {
      const m = filled(3);
      const other = make<string, number>();
      const sneaky = { toJSON: () => other.get('x') ?? 0 };
      // A single set runs toJSON before touching wasm memory: allowed.
      m.set('ok', sneaky as never);
      // setMany builds its batch in wasm memory while toJSON runs: refused.
      expectError(() => m.setMany([['a', 1], ['b', sneaky as never]]), ReentrancyError, 'REENTRANT');
      const freeing = { toJSON: () => m.free() };
      expectError(() => m.setMany([['c', freeing as never]]), ReentrancyError, 'REENTRANT');
      const c = make<string, number>(undefined, {
        values: { encode: (n: number) => new Uint8Array([n]), decode: (b) => (other.has('z'), b[0]!) },
      });
      c.set('a', 1);
      expectError(() => c.get('a'), ReentrancyError, 'REENTRANT');
      expect(m.size).toBe(4);
      expect(m.has('a')).toBe(false);
      expect(other.size).toBe(0);
    });
  });

  describe('free() and Symbol.dispose', () => {
    it('later calls throw ClosedError; free is idempotent', () => {
      const m = make([['a', 1]]);
      m.free();
      m.free();
      expect(m.closed).toBe(true);
      const calls: (() => unknown)[] = [
        () => m.get('a'), () => m.set('a', 1), () => m.has('a'), () => m.delete('a'), () => m.clear(), () => m.size,
        () => m.keys(), () => m.values(), () => m.entries(), () => m[Symbol.iterator](), () => m.forEach(() => {}),
        () => m.first(), () => m.last(), () => m.nextHigher('a'), () => m.nextLower('a'), () => m.deleteRange({}),
        () => m.getMany(['a']), () => m.setMany([['a', 1]]), () => m.stats(), () => m.checkInvariants(),
      ];
      for (const c of calls) expectError(c, ClosedError, 'CLOSED');
    });

    it('a live iterator throws ClosedError after free, and its cursor is not freed twice', () => {
      const m = filled(1000);
      const it = m.keys();
      const it2 = m.keys();
      it.next();
      m.free();
      expectError(() => it.next(), ClosedError, 'CLOSED');
      expect(it.next().done).toBe(true);
      expectError(() => it2.next(), ClosedError, 'CLOSED');
      it2.return!();
    });

    it('[Symbol.dispose] frees the map', () => {
      const m = make([['a', 1]]);
      m[Symbol.dispose]();
      expect(m.closed).toBe(true);
      expectError(() => m.get('a'), ClosedError, 'CLOSED');
    });

    it('many maps created and freed do not leak wasm memory', () => {
      for (let i = 0; i < 50; i++) {
        const m = new BTreeMap<string, number>(undefined, { wasm });
        for (let j = 0; j < 2000; j++) m.set(pad(j), j);
        const it = m.keys();
        it.next();
        m.free();
      }
      const grownBefore = wasm.memory.buffer.byteLength;
      for (let i = 0; i < 50; i++) {
        const m = new BTreeMap<string, number>(undefined, { wasm });
        for (let j = 0; j < 2000; j++) m.set(pad(j), j);
        m.free();
      }
      if (build !== 'reference') expect(wasm.memory.buffer.byteLength).toBe(grownBefore);
    });
  });

  describe('modification during iteration (resume by key)', () => {
    it('deleting the current key and keys ahead: survivors once each, deleted never', () => {
      const m = filled(3000);
      const seen: string[] = [];
      for (const [k] of m) {
        seen.push(k);
        const i = Number(k.slice(1));
        m.delete(k);
        if (i % 3 === 0) m.delete(pad(i + 1));
      }
      const want = Array.from({ length: 3000 }, (_, i) => i).filter((i) => !(i % 3 === 1)).map(pad);
      expect(seen).toEqual(want);
      expect(m.size).toBe(0);
    });

    it('keys inserted ahead are visited, behind are not; overwritten values are fresh', () => {
      const m = filled(1000, 2);
      const seen: [string, number][] = [];
      for (const [k, v] of m.entries()) {
        seen.push([k, v]);
        const i = Number(k.slice(1, 6));
        if (i < 500 && i % 2 === 0 && k.length === 6) {
          m.set(pad(i + 1), -1); // new, ahead
          m.set(pad(i + 4), 4000 + i); // overwrite, ahead
          if (i > 0) m.set(pad(i - 1) + 'b', -2); // new, behind
        }
      }
      const keys = seen.map((e) => e[0]);
      expect(new Set(keys).size).toBe(keys.length);
      expect([...keys].sort()).toEqual(keys);
      for (let i = 0; i < 500; i++) expect(keys).toContain(pad(i));
      expect(keys.filter((k) => k.endsWith('b'))).toEqual([]);
      expect(seen.find((e) => e[0] === pad(10))![1]).toBe(4006);
      expect(seen.find((e) => e[0] === pad(11))![1]).toBe(-1);
      expect(seen.find((e) => e[0] === pad(600))![1]).toBe(600);
      expect(keys.length).toBe(500 + 250);
    });

    it('reverse iteration with deletes and inserts around the cursor', () => {
      const m = filled(2000);
      const seen: string[] = [];
      for (const k of m.keys({ reverse: true })) {
        seen.push(k);
        const i = Number(k.slice(1));
        m.delete(pad(i - 1)); // the next one in reverse order
        m.set(pad(i) + 'x', 0); // just above the current key: already passed in reverse
      }
      expect(seen).toEqual(Array.from({ length: 1000 }, (_, j) => pad(1999 - 2 * j)));
    });

    it('clear during iteration ends it; inserts after clear ahead are seen', () => {
      const m = filled(500);
      const it = m.keys();
      expect(it.next().value).toBe(pad(0));
      m.clear();
      m.set(pad(300), 1);
      m.set('a', 1); // behind the last key returned ('k00000' > 'a')
      expect(it.next().value).toBe(pad(300));
      expect(it.next().done).toBe(true);
    });

    it('an iterator created before modifications but not started sees the new state', () => {
      const m = filled(10);
      const it = m.keys({ gte: pad(5) });
      m.delete(pad(5));
      m.set(pad(5) + 'a', 1);
      expect([...it]).toEqual([pad(5) + 'a', pad(6), pad(7), pad(8), pad(9)]);
    });

    it('limit counts returned entries across modifications', () => {
      const m = filled(100);
      const out: string[] = [];
      for (const k of m.keys({ gte: pad(10), limit: 5 })) {
        out.push(k);
        m.delete(pad(Number(k.slice(1)) + 1));
      }
      expect(out).toEqual([pad(10), pad(12), pad(14), pad(16), pad(18)]);
    });

    it('forEach visits entries added ahead during the walk, like Map', () => {
      const m = make<string, number>([['a', 1], ['c', 3]]);
      const seen: string[] = [];
      m.forEach((_v, k) => {
        seen.push(k);
        if (k === 'a') m.set('b', 2);
      });
      expect(seen).toEqual(['a', 'b', 'c']);
    });

    it('forEach walks the batches directly: every entry in order across batches, changes ahead seen, a throw ends it', () => {
      const m = filled(5000);
      const seen: string[] = [];
      m.forEach((v, k) => {
        seen.push(k);
        expect(v).toBe(m.get(k));
        if (k === pad(1000)) m.deleteRange({ gt: pad(1000), lt: pad(3000) });
        if (k === pad(4000)) m.set(pad(4000) + 'x', -1);
      });
      expect(seen.length).toBe(1001 + 2000 + 1);
      expect(seen).toEqual([...seen].sort());
      expect(seen).toContain(pad(4000) + 'x');
      const boom = new Error('boom');
      let calls = 0;
      expect(catchError(() => m.forEach(() => {
        if (++calls === 1500) throw boom;
      }))).toBe(boom);
      expect(calls).toBe(1500);
      // The map goes on as before (the walk's cursor went back).
      m.set(pad(2), 7);
      expect(m.get(pad(2))).toBe(7);
      expect([...m.keys()].length).toBe(m.size);
    });

    it('deleteRange and setMany during iteration', () => {
      const m = filled(3000);
      const seen: string[] = [];
      for (const k of m.keys()) {
        seen.push(k);
        if (k === pad(100)) m.deleteRange({ gt: pad(100), lt: pad(2000) });
        if (k === pad(2500)) m.setMany([[pad(2500) + 'a', 1], [pad(10), 1]]);
      }
      expect(seen.length).toBe(101 + 1000 + 1);
      expect(seen).toContain(pad(2500) + 'a');
      expect(seen.filter((k) => k === pad(10)).length).toBe(1);
    });
  });

  describe('layouts, stats and invariants', () => {
    it.each(['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense', 'adaptive'] as const)(
      'layout %s stores, finds, iterates and deletes',
      (layout) => {
        const m = make<number, number>(undefined, { keys: 'number', layout });
        const s = make<string, number>(undefined, { layout });
        for (let i = 0; i < 5000; i++) {
          m.set((i * 7919) % 5000, i);
          s.set(`user:${(i * 7919) % 5000}`, i);
        }
        expect(m.size).toBe(5000);
        expect([...m.keys()]).toEqual(Array.from({ length: 5000 }, (_, i) => i));
        for (let i = 0; i < 5000; i += 2) {
          expect(m.delete(i)).toBe(true);
          expect(s.delete(`user:${i}`)).toBe(true);
        }
        expect(m.get(1)).toBe(new Array(5000).fill(0).findIndex((_, i) => (i * 7919) % 5000 === 1));
        expect([...s.keys()].length).toBe(2500);
        m.checkInvariants();
        s.checkInvariants();
      },
    );

    it('stats() reports layout counts, height, bytes and fill', () => {
      const m = filled(5000);
      const st = m.stats();
      expect(st.count).toBe(5000);
      expect(st.height).toBeGreaterThanOrEqual(1);
      if (build === 'reference') return;
      expect(st.config).toBe('adaptive');
      // the name the layout option takes (it said 'semi_dense', which the option refuses)
      for (const layout of ['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense', 'adaptive'] as const) {
        expect(make(null, { layout }).stats().config).toBe(layout);
      }
      expect(st.height).toBeGreaterThanOrEqual(2);
      expect(st.bytes).toBe(st.pages * st.page_size);
      expect(st.fill).toBeGreaterThan(0);
      expect(st.fill).toBeLessThanOrEqual(1);
      const l = st.layouts;
      expect(l.inner + l.basic_leaf + l.fingerprint_leaf + l.semi_dense_leaf + l.fully_dense_leaf + l.overflow).toBe(st.pages);
      expect(st.levels.length).toBe(st.height);
      expect(st.levels[0]!.entries).toBe(5000);
      const dense = make<number, number>(undefined, { keys: 'number' });
      for (let i = 0; i < 20000; i++) dense.set(i, i);
      // Dense integer keys (the number encoding keeps them equal-length) end up in dense leaves.
      expect(dense.stats().layouts.fully_dense_leaf + dense.stats().layouts.semi_dense_leaf).toBeGreaterThan(0);
    });
  });

  describe('shared memory (mt) as browsers treat it', () => {
    it.runIf(build === 'mt')('never hands a view of shared memory to TextEncoder.encodeInto or TextDecoder.decode', () => {
      // Chromium throws "The provided ... value must not be shared" for both; Node does not,
      // so refuse here the way a browser would.
      const encodeInto = TextEncoder.prototype.encodeInto;
      const decode = TextDecoder.prototype.decode;
      const isShared = (v: unknown) => ArrayBuffer.isView(v) && v.buffer instanceof SharedArrayBuffer;
      TextEncoder.prototype.encodeInto = function (this: TextEncoder, src: string, dst: Uint8Array) {
        if (isShared(dst)) throw new TypeError('The provided Uint8Array value must not be shared.');
        return encodeInto.call(this, src, dst);
      };
      TextDecoder.prototype.decode = function (this: TextDecoder, input?: AllowSharedBufferSource, opts?: TextDecodeOptions) {
        if (isShared(input)) throw new TypeError('The provided ArrayBufferView value must not be shared.');
        return decode.call(this, input, opts);
      };
      try {
        const m = make<string, string>(undefined, { values: 'utf8' });
        const long = 'é'.repeat(3000) + '😀';
        const longKey = 'ключ'.repeat(100);
        m.set('a', long).set(longKey, 'x'.repeat(500)).setMany([['b', long]]);
        expect(m.get('a')).toBe(long);
        expect([...m.values()]).toEqual([long, long, 'x'.repeat(500)]);
        expect([...m.keys()]).toEqual(['a', 'b', longKey]);
        expect(m.getMany(['a', 'b'])).toEqual([long, long]);
        expect(m.last()).toEqual([longKey, 'x'.repeat(500)]);
        const j = make<string, unknown>();
        const obj = { s: 'ü'.repeat(5000), n: [1, 2, 3] };
        j.set('x', obj);
        expect(j.get('x')).toEqual(obj);
        expect([...j.values()]).toEqual([obj]);
        expect(j.stats().count).toBe(1);
        const t = make<Tuple, number>(undefined, { keys: 'tuple' });
        t.set(['ab\0c'.repeat(50), 5n], 1);
        expect([...t.keys()]).toEqual([['ab\0c'.repeat(50), 5n]]);
      } finally {
        TextEncoder.prototype.encodeInto = encodeInto;
        TextDecoder.prototype.decode = decode;
      }
    });
  });

  describe('wasm memory growth', () => {
    it.skipIf(build === 'reference')('views are refreshed when memory grows under live iterators and between calls', () => {
      const m = make<string, Uint8Array>(undefined, { values: 'bytes' });
      const it = m.entries();
      m.set('a', new Uint8Array([7]));
      expect(it.next().value?.[0]).toBe('a');
      const start = wasm.memory.buffer.byteLength;
      const v = new Uint8Array(16 * 1024).fill(3);
      for (let i = 0; i < 3000 && wasm.memory.buffer.byteLength === start; i++) m.set(pad(i), v);
      expect(wasm.memory.buffer.byteLength).toBeGreaterThan(start);
      expect(m.get(pad(0))).toEqual(v);
      const n = it.next();
      expect(n.value?.[0]).toBe(pad(0));
      expect(n.value?.[1]).toEqual(v);
    });
  });
});
