// Keys (and bytes values) whose encoding runs user code: a tuple built with a getter or as a Proxy, a Proxy of a
// Uint8Array. A new-user probe (session 27) had such code call into the same map mid-call:
// a set from a getter stored a malformed key (the map's iterations were CORRUPT from then on),
// a set from a Proxy trap during getMany poisoned the wasm instance. Built-in key encoders were
// thought to run no user code, so they ran outside the re-entrancy guard. Now the call that
// encodes such a key throws ReentrancyError (REENTRANT) and the map is as it was.
import { describe, expect, it } from 'vitest';
import { BTreeMap, ReentrancyError, isAdaptreeError } from '../../ts/src/index.js';
import { BUILDS, wasmFor } from './builds.js';

/** A tuple ['k', n] whose first element's getter calls `inner()` once. */
function tupleWithGetter(n: number, inner: () => void): unknown[] {
  const t: unknown[] = [];
  let ran = false;
  Object.defineProperty(t, 0, { get: () => { if (!ran) { ran = true; inner(); } return 'k'; }, enumerable: true });
  t[1] = n;
  return t;
}

/** A Proxy of `target` whose get trap calls `inner()` once. */
function proxyOf<T extends object>(target: T, inner: () => void): T {
  let ran = false;
  return new Proxy(target, {
    get(o, p) {
      if (!ran) { ran = true; inner(); }
      const v = Reflect.get(o, p, o) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(o) : v;
    },
  });
}

const codeOf = (f: () => unknown): string | undefined => {
  try {
    const r = f() as { next?: () => unknown } | undefined;
    if (r && typeof r.next === 'function') for (const _ of r as Iterable<unknown>);
    return undefined;
  } catch (e) {
    return isAdaptreeError(e) ? e.code : `untyped ${String(e)}`;
  }
};

describe.each(BUILDS)('%s build: keys whose encoding calls back into the map', (build) => {
  it('tuple keys with a getter or as a Proxy: every call that encodes one is REENTRANT, the map intact', async () => {
    const wasm = await wasmFor(build);
    const m = new BTreeMap<unknown[], string>(null, { wasm, keys: 'tuple', values: 'utf8' });
    for (let i = 0; i < 50; i++) m.set(['k', i], 'v' + i);
    const reenter = () => void m.set(['c', 1], 'C'.repeat(5000));
    const calls: [string, (k: unknown[]) => unknown][] = [
      ['get', (k) => m.get(k)],
      ['has', (k) => m.has(k)],
      ['set', (k) => m.set(k, 'x')],
      ['delete', (k) => m.delete(k)],
      ['getMany', (k) => m.getMany([['k', 1], k])],
      ['setMany', (k) => m.setMany([[['k', 1], 'y'], [k, 'x']])],
      ['nextHigher', (k) => m.nextHigher(k)],
      ['entries', (k) => m.entries({ gte: k })],
      ['deleteRange', (k) => m.deleteRange({ gte: ['k', 0], lt: k })],
    ];
    for (const [name, call] of calls) {
      for (const make of [(n: number) => tupleWithGetter(n, reenter), (n: number) => proxyOf(['k', n], reenter)]) {
        expect(codeOf(() => call(make(3))), name).toBe('REENTRANT');
        expect(m.has(['c', 1]), name).toBe(false);
        expect(m.size, name).toBe(50);
      }
    }
    m.checkInvariants();
    expect([...m.keys()]).toEqual(Array.from({ length: 50 }, (_, i) => ['k', i]));
    expect(m.get(['k', 1])).toBe('v1');
    expect(wasm.poisoned).toBe(false);
    // The same keys work once their code leaves the map alone.
    expect(m.get(tupleWithGetter(7, () => {}))).toBe('v7');
    m.free();
  });

  it('a Proxy of a Uint8Array as a bytes key: REENTRANT, the map intact', async () => {
    const wasm = await wasmFor(build);
    const m = new BTreeMap<Uint8Array, string>(null, { wasm, keys: 'bytes', values: 'utf8' });
    for (let i = 0; i < 50; i++) m.set(new Uint8Array([1, i]), 'v' + i);
    const reenter = () => void m.set(new Uint8Array([9]), 'C'.repeat(5000));
    for (const call of [(k: Uint8Array) => m.get(k), (k: Uint8Array) => m.set(k, 'x'), (k: Uint8Array) => m.getMany([new Uint8Array([1, 1]), k])]) {
      const e = (() => { try { call(proxyOf(new Uint8Array([1, 3]), reenter)); return undefined; } catch (x) { return x; } })();
      expect(e).toBeInstanceOf(ReentrancyError);
      expect(m.has(new Uint8Array([9]))).toBe(false);
    }
    m.checkInvariants();
    expect(m.size).toBe(50);
    expect(m.get(new Uint8Array([1, 3]))).toBe('v3');
    expect(wasm.poisoned).toBe(false);
    m.free();
  });

  it('a Proxy of a Uint8Array as a bytes value: set is REENTRANT, the value not stored under another key', async () => {
    const wasm = await wasmFor(build);
    const m = new BTreeMap<string, Uint8Array>(null, { wasm, values: 'bytes' });
    m.set('a', new Uint8Array([1]));
    const reenter = () => void m.set('other', new Uint8Array(5000));
    for (const size of [8, 100]) {
      let ran = false;
      const value = new Proxy(new Uint8Array(size).fill(7), {
        get(o, p) {
          // (not on the type checks: on the copy, after the key went in)
          if (!ran && p === '0') { ran = true; reenter(); }
          const v = Reflect.get(o, p, o) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(o) : v;
        },
      });
      const e = (() => { try { m.set('k', value); return undefined; } catch (x) { return x; } })();
      expect(e, `size ${size}`).toBeInstanceOf(ReentrancyError);
      expect([...m.keys()]).toEqual(['a']);
    }
    m.checkInvariants();
    m.free();
  });
});
