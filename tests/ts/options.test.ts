// Option objects and argument checks a docs probe (session 31) found taken silently: a misspelt
// option is InvalidArgumentError everywhere (it had been the defaults: close({ comit: false })
// committed), deleteRange() with no range is refused (an undefined variable emptied the map),
// messages name the call the user made, and autoCommit.writes / uncommittedWrites count entries.
import { beforeAll, describe, expect, it } from 'vitest';
import { BTreeMap, BTreeStore, InvalidArgumentError, WorkerPool } from '../../ts/src/index.js';
import { indexedDBStorage } from '../../ts/src/storage/indexeddb.js';
import { durableObjectStorage, type DurableObjectStorageLike } from '../../ts/src/storage/durable-object.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';
import { wasmFor } from './builds.js';
import { uniqueName } from './store-helpers.js';

let wasm: AdaptreeWasm;
beforeAll(async () => {
  wasm = await wasmFor('st');
});

const open = (more: Record<string, unknown> = {}) =>
  BTreeStore.open<string, number>({ path: uniqueName('opt'), storage: 'memory', wasm, ...more });

describe('option objects', () => {
  it('close() refuses unknown options and non-objects, and the store stays open with its writes', async () => {
    const s = await open();
    s.set('a', 1);
    for (const bad of [{ comit: false }, false, 'no', { commit: 'no' }, null]) {
      await expect(s.close(bad as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      expect(s.closed).toBe(false);
    }
    expect(s.get('a')).toBe(1);
    await s.close({ commit: false });
    expect(s.closed).toBe(true);
  });

  it('setMany and setManyAsync refuse unknown options (a misspelt onProgress had no progress and no error)', async () => {
    const m = new BTreeMap<string, number>(null, { wasm });
    expect(() => m.setMany([['a', 1]], { onprogress: () => {} } as never)).toThrow(InvalidArgumentError);
    expect(() => m.setMany([['a', 1]], 5 as never)).toThrow(/options must be an object/);
    expect(m.size).toBe(0);
    m.setMany([['a', 1]], { onProgress: undefined });
    expect(m.size).toBe(1);
    m.free();
    const s = await open();
    expect(() => s.setMany([['b', 2]], { onProgres: () => {} } as never)).toThrow(InvalidArgumentError);
    await expect(s.setManyAsync([['b', 2]], { progress: 1 } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(s.size).toBe(0);
    expect(s.stats().uncommittedWrites).toBe(0);
    await s.close();
  });

  it('backends and pools refuse unknown options', async () => {
    expect(() => indexedDBStorage({ durabilty: 'relaxed' } as never)).toThrow(/unknown option 'durabilty'/);
    expect(() => durableObjectStorage({ sql: {} } as unknown as DurableObjectStorageLike, { chunksize: 4096 } as never)).toThrow(/unknown option 'chunksize'/);
    const m = new BTreeMap<string, number>(null, { wasm });
    await expect(WorkerPool.create(m, { worker: 1 } as never)).rejects.toThrow(/unknown option 'worker'/);
    m.free();
  });

  it('deleteRange() without a range is refused, {} still removes every entry; messages name the call made', () => {
    const m = new BTreeMap<string, number>([['a', 1], ['b', 2]], { wasm });
    for (const bad of [undefined, null]) expect(() => m.deleteRange(bad as never)).toThrow(/deleteRange: give a range/);
    expect(m.size).toBe(2);
    expect(() => m.deleteRange({ start: 'a' } as never)).toThrow("deleteRange: unknown range option 'start' (gt, gte, lt, lte)");
    expect(() => [...m.keys({ start: 'a' } as never)]).toThrow('(gt, gte, lt, lte, reverse, limit)');
    expect(m.deleteRange({})).toBe(2);
    m.free();
    expect(() => new BTreeMap(['ab'] as never, { wasm })).toThrow(/^new BTreeMap\(entries\): entry 0 is not an entry object/);
    expect(() => new BTreeMap(5 as never, { wasm })).toThrow(/^new BTreeMap\(entries\): entries must be iterable/);
  });
});

describe('fill', () => {
  it('is a plain object of own boolean fields for maps and stores alike', async () => {
    expect(() => new BTreeMap(null, { wasm, fill: [] as never })).toThrow(/fill must be an object/);
    await expect(open({ fill: [] })).rejects.toThrow(/fill must be an object/);
    expect(() => new BTreeMap(null, { wasm, fill: { xmerge: true } as never })).toThrow("fill: unknown field 'xmerge' (redistribute, edges) (xmerge is a store's)");
    await expect(open({ fill: { edge: false } })).rejects.toThrow("fill: unknown field 'edge' (redistribute, xmerge, edges)");
    // Inherited fields are not read, by either.
    const inherited = Object.create({ edges: 1 }) as never;
    const m = new BTreeMap(null, { wasm, fill: inherited });
    m.free();
    const s = await open({ fill: inherited });
    await s.close();
  });
});

describe('autoCommit.writes and uncommittedWrites count entries', () => {
  it('a setMany of 5000 and a deleteRange of 3000 each reach { writes: 1000 } by themselves', async () => {
    const s = await open({ autoCommit: { writes: 1000 } });
    const settled = async () => {
      for (let i = 0; i < 200 && s.stats().uncommittedWrites !== 0; i++) await new Promise((r) => setTimeout(r, 5));
      return s.stats().uncommittedWrites;
    };
    const before = s.stats().commits;
    s.setMany(Array.from({ length: 5000 }, (_, i) => [`k${String(i).padStart(5, '0')}`, i] as const));
    expect(await settled()).toBe(0); // the automatic commit (one call counted one write before)
    expect(s.stats().commits).toBe(before + 1);
    s.set('one', 1);
    expect(s.stats().uncommittedWrites).toBe(1);
    expect(s.deleteRange({ lt: 'k03000' })).toBe(3000);
    expect(await settled()).toBe(0);
    expect(s.stats().commits).toBe(before + 2);
    s.set('two', 2);
    expect(s.stats().uncommittedWrites).toBe(1);
    await s.close();
  });
});
