// Junk through the map's API: every error a caller can provoke with a wrong argument carries
// a `code` (InvalidArgumentError and friends are TypeErrors/RangeErrors too, as Map's own
// errors are), and the map stays sound and usable. Found by a probe: getMany/setMany of a
// non-iterable, setMany of non-entries and forEach without a callback threw plain TypeErrors.
import { beforeAll, describe, expect, it } from 'vitest';
import { BTreeMap } from '../../ts/src/index.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';
import { BUILDS, wasmFor } from './builds.js';

const JUNK: unknown[] = [undefined, null, NaN, Infinity, 1.5, 2 ** 60, -1, 'x', '', '\ud800', 'b'.repeat(5000), 10n, {}, [], [1, 'a'],
  new Uint8Array(0), new Uint8Array(5000), Symbol('s'), () => 1, true, new Date(0), new Map(), { toJSON() { throw new Error('boom'); } }];

describe.each(BUILDS)('%s build: bad input', (build) => {
  let wasm: AdaptreeWasm;
  beforeAll(async () => {
    wasm = await wasmFor(build);
  });

  it.each([['utf8', 'json'], ['number', 'bytes'], ['bytes', 'bytes'], ['bigint', 'json'], ['tuple', 'json']])('%s keys, %s values: every error has a code', (keys, values) => {
    const m = new BTreeMap<unknown, unknown>(null, { wasm, keys: keys as never, values: values as never });
    const good = keys === 'utf8' ? 'k' : keys === 'number' ? 1 : keys === 'bytes' ? new Uint8Array([1]) : keys === 'bigint' ? 1n : [1];
    const val = values === 'bytes' ? new Uint8Array([7]) : { v: 1 };
    m.set(good, val);
    const untyped: string[] = [];
    const probe = (label: string, f: () => unknown) => {
      try {
        const r = f() as { next?: () => unknown } | undefined;
        if (r && typeof r.next === 'function') for (const _ of r as Iterable<unknown>);
      } catch (e) {
        if (typeof (e as { code?: unknown } | null)?.code !== 'string') untyped.push(`${label}: ${String(e)}`);
      }
    };
    JUNK.forEach((k, i) => {
      for (const v of [undefined, null, NaN, 'x', new Uint8Array(70000), JUNK[22]]) probe(`set #${i}`, () => m.set(k, v));
      probe(`get #${i}`, () => m.get(k));
      probe(`delete #${i}`, () => m.delete(k));
      probe(`range #${i}`, () => m.entries({ gte: k, limit: k as number }));
      probe(`deleteRange #${i}`, () => m.deleteRange({ gte: k, lt: k }));
      probe(`getMany [#${i}]`, () => m.getMany([k]));
      probe(`getMany #${i}`, () => m.getMany(k as never));
      probe(`setMany #${i}`, () => m.setMany(k as never));
      probe(`setMany [#${i}]`, () => m.setMany([k as never]));
      probe(`forEach #${i}`, () => m.forEach(k as never));
    });
    probe('constructor', () => new BTreeMap([1, 2] as never, { wasm, keys: keys as never }));
    expect(untyped).toEqual([]);
    m.checkInvariants(); // (an undefined bound is no bound: deleteRange({}) may have emptied it)
    m.set(good, val);
    expect(m.get(good)).toEqual(val);
    m.free();
  });
});
