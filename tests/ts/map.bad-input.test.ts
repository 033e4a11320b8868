// Junk through the map's API: every error a caller can provoke with a wrong argument carries
// a `code` (InvalidArgumentError and friends are TypeErrors/RangeErrors too, as Map's own
// errors are), and the map stays sound and usable. Found by a probe: getMany/setMany of a
// non-iterable, setMany of non-entries and forEach without a callback threw plain TypeErrors.
import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { BTreeMap, BTreeStore } from '../../ts/src/index.js';
import { loadWasm, threadsAvailable, type AdaptreeWasm } from '../../ts/src/wasm.js';
import { BUILDS, wasmFor } from './builds.js';

const JUNK: unknown[] = [undefined, null, NaN, Infinity, 1.5, 2 ** 60, -1, 'x', '', '\ud800', 'b'.repeat(5000), 10n, {}, [], [1, 'a'],
  new Uint8Array(0), new Uint8Array(5000), Symbol('s'), () => 1, true, new Date(0), new Map(), { toJSON() { throw new Error('boom'); } }];

// Values whose toJSON or getter throws something that is not an Error (a probe, session 30:
// `throw null` came out as an untyped TypeError from the json codec's `.message`).
const THROWERS: unknown[] = [
  { toJSON() { throw null; } }, // eslint-disable-line no-throw-literal
  { get x() { throw undefined; } }, // eslint-disable-line no-throw-literal
  { toJSON() { throw 'disk quota'; } }, // eslint-disable-line no-throw-literal
];

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
      for (const v of [undefined, null, NaN, 'x', new Uint8Array(70000), JUNK[22], ...THROWERS]) {
        probe(`set #${i}`, () => m.set(k, v));
        probe(`setMany of a value #${i}`, () => m.setMany([[good, v]]));
      }
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

// Found by a new-user probe (session 22): these were a TypeError from deep inside, a bare
// Error or CompileError, or taken silently.
describe('bad options to loadWasm, the wasm option, ranges', () => {
  it('are InvalidArgumentError (or IoError for a module that cannot be fetched)', async () => {
    const codeOf = async (f: () => unknown) => {
      try {
        await f();
        return 'accepted';
      } catch (e) {
        return (e as { code?: string }).code ?? `untyped ${String(e)}`;
      }
    };
    for (const bad of [null, 5, { wasm: 5 }, { wasm: {} }, { bogus: 1 }, { threads: 'yes' }, { wasm: new Uint8Array(8) }]) {
      expect(await codeOf(() => loadWasm(bad as never)), JSON.stringify(bad)).toBe('INVALID_ARGUMENT');
    }
    expect(await codeOf(() => loadWasm({ wasm: '/nonexistent/adaptree.wasm' }))).toBe('IO_ERROR');
    for (const wasm of [5, {}, null, 'st']) {
      expect(await codeOf(() => new BTreeMap(null, { wasm: wasm as never })), String(wasm)).toBe('INVALID_ARGUMENT');
      expect(await codeOf(() => BTreeStore.open({ path: 'x', storage: 'memory', wasm: wasm as never })), String(wasm)).toBe('INVALID_ARGUMENT');
    }
    const w = await wasmFor('st');
    const m = new BTreeMap<number, number>(null, { wasm: w, keys: 'number', values: 'json' });
    m.set(1, 1).set(5, 5);
    for (const r of [{ form: 5 }, { gte: 1, lmit: 1 }, { reversed: true }]) {
      expect(await codeOf(() => [...m.entries(r as never)]), JSON.stringify(r)).toBe('INVALID_ARGUMENT');
      expect(await codeOf(() => m.deleteRange(r as never)), JSON.stringify(r)).toBe('INVALID_ARGUMENT');
    }
    // deleteRange takes bounds only: limit and reverse are refused, the map unchanged
    for (const r of [{ gte: 1, limit: 1 }, { gte: 1, reverse: true }, { reverse: false }]) {
      expect(await codeOf(() => m.deleteRange(r as never)), JSON.stringify(r)).toBe('INVALID_ARGUMENT');
    }
    expect(m.size).toBe(2);
    expect(await codeOf(() => new BTreeMap(null, { wasm: w, fill: { redistrbute: true } as never }))).toBe('INVALID_ARGUMENT');
    m.free();
  });

  // Found by a new-user probe (session 24): the options were read through the prototype chain,
  // so `m.keys([])` scanned in reverse (Array.prototype.reverse is truthy), `deleteRange([])`
  // emptied the map, and Object.create({ reverse: true, limit: 1 }) was taken as that range.
  it('a range is a plain object read by its own properties: an array or an object with a prototype of its own is InvalidArgumentError', async () => {
    const w = await wasmFor('st');
    const m = new BTreeMap<string, number>([['a', 1], ['b', 2], ['c', 3]], { wasm: w });
    class KeyRange {
      gte = 'b';
      get reverse() {
        return true;
      }
    }
    for (const bad of [[], ['a'], Object.create({ reverse: true, limit: 1 }), new Map([['gte', 'b']]), new KeyRange()]) {
      expect(() => [...m.keys(bad)], String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/plain object/) }));
      expect(() => m.deleteRange(bad), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(m.size).toBe(3);
    // Plain objects (also with a null prototype, or from a spread) read as before, getters too.
    let reads = 0;
    expect([...m.keys(Object.assign(Object.create(null), { reverse: true, limit: 2 }))]).toEqual(['c', 'b']);
    expect([...m.keys({ ...new KeyRange() })]).toEqual(['b', 'c']);
    expect([...m.keys({ get gte() { reads++; return 'b'; } })]).toEqual(['b', 'c']);
    expect(reads).toBeGreaterThan(0);
    // Nothing is read from Object.prototype either.
    const proto = Object.prototype as { reverse?: boolean };
    proto.reverse = true;
    try {
      expect([...m.keys({})]).toEqual(['a', 'b', 'c']);
      expect([...m.keys()]).toEqual(['a', 'b', 'c']);
    } finally {
      delete proto.reverse;
    }
    m.free();
    // A store's ranges go through the same check.
    const s = await BTreeStore.open<string, number>({ path: 'range-plain', storage: 'memory', wasm: w });
    s.set('a', 1).set('b', 2);
    expect(() => [...s.keys([] as never)]).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => s.deleteRange([] as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect([...s.keys({ reverse: true })]).toEqual(['b', 'a']);
    await s.close();
  });

  // Found by a new-user probe (session 24): valid wasm that is not the build asked for was a
  // bare Error ("not the st build"), and an empty module a TypeError from inside the loader
  // (`raw._initialize is not a function`: the exports were checked after it ran).
  it('a valid wasm module of the other build, or not of adaptree, is InvalidArgumentError', async () => {
    const st = readFileSync(new URL('../../dist/wasm/adaptree-st.wasm', import.meta.url));
    const mt = readFileSync(new URL('../../dist/wasm/adaptree-mt.wasm', import.meta.url));
    const empty = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]);
    // The st build importing a host function adaptree does not supply (a LinkError).
    const foreignImport = Uint8Array.from(st);
    const at = st.indexOf('at_host_read');
    expect(at).toBeGreaterThan(0);
    foreignImport[at + 11] = 'X'.charCodeAt(0);
    const cases: [object, RegExp][] = [
      [{ wasm: mt }, /is the mt build .*threads: true/],
      [{ wasm: empty }, /not an adaptree module: it has no function export at_abi_version/],
      [{ wasm: await WebAssembly.compile(empty) }, /not an adaptree module/],
      [{ wasm: foreignImport }, /not an adaptree module \(.*at_host_reaX/],
    ];
    if (threadsAvailable()) cases.push([{ wasm: st, threads: true }, /not the mt build/], [{ wasm: empty, threads: true }, /not the mt build/]);
    for (const [options, message] of cases) {
      const e = await loadWasm(options as never).then(() => undefined, (x: unknown) => x);
      expect(e, `${Object.keys(options)} ${message}`).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) });
    }
    // The right pairings load.
    expect((await loadWasm({ wasm: st })).build).toBe('st');
    if (threadsAvailable()) expect((await loadWasm({ wasm: mt, threads: true })).build).toBe('mt');
  });
});
