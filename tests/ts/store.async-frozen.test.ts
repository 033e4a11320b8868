// The async twins on an asynchronous backend take their keys and values as they are when the
// call is made. Such a call runs later (behind earlier calls) and again after each page fault;
// it used to read the caller's objects then, so a key array reused right after deleteAsync
// deleted another key, and a value changed after setAsync was stored changed (a probe, session
// 32: async-memory, and IndexedDB and Durable Objects' KV storage by the same path). Each case
// below queues the call behind a pending one or makes it fault on a cold pool, then changes the
// objects it was given before it runs.
import { describe, expect, it } from 'vitest';
import { BTreeStore } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { uniqueName } from './store-helpers.js';

describe.each(REAL_BUILDS)('async calls take their arguments when made (%s)', (build) => {
  // A store of 5000 tuple keys with 200-byte values, reopened on a 1 MiB pool: most leaves
  // are not in memory, so a call on one of them faults first.
  async function coldStore(): Promise<{ open: () => Promise<BTreeStore<[string, number], unknown>> }> {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('frozen');
    const open = () => BTreeStore.open<[string, number], unknown>({ path, storage, keys: 'tuple', values: 'json', wasm, poolSize: 1 << 20 });
    const s = await open();
    for (let i = 0; i < 5000; i++) s.set(['k', i], { i, pad: 'v'.repeat(200) });
    await s.commit();
    await s.close();
    return { open };
  }

  it('deleteAsync, setAsync, getAsync, hasAsync, nextHigherAsync: the key and value as given', async () => {
    const { open } = await coldStore();
    const s = await open();
    // deleteAsync, the key array reused at once
    const key: [string, number] = ['k', 10];
    const d = s.deleteAsync(key);
    key[1] = 4000;
    expect(await d).toBe(true);
    expect(await s.hasAsync(['k', 10])).toBe(false);
    expect(await s.hasAsync(['k', 4000])).toBe(true);
    // setAsync, key and value changed after the call, queued behind a pending read
    const value = { n: 1 };
    const k2: [string, number] = ['k', 20];
    const pending = s.getAsync(['k', 3000]);
    const w = s.setAsync(k2, value);
    value.n = 2;
    k2[1] = 4001;
    await pending;
    await w;
    expect(await s.getAsync(['k', 20])).toEqual({ n: 1 });
    expect(((await s.getAsync(['k', 4001])) as { i: number }).i).toBe(4001);
    // reads: the key they were given, not the one it became
    const k3: [string, number] = ['k', 30];
    const g = s.getAsync(k3), h = s.hasAsync(k3), nh = s.nextHigherAsync(k3), nl = s.nextLowerAsync(k3);
    k3[1] = 4500;
    expect(((await g) as { i: number }).i).toBe(30);
    expect(await h).toBe(true);
    expect((await nh)?.[0]).toEqual(['k', 31]);
    expect((await nl)?.[0]).toEqual(['k', 29]);
    await s.checkInvariantsAsync();
    await s.close();
  });

  it('setManyAsync, getManyAsync and deleteRangeAsync: the list and its entries as given', async () => {
    const { open } = await coldStore();
    const s = await open();
    const entries: [[string, number], unknown][] = [[['k', 100], { n: 1 }], [['k', 2500], { n: 1 }]];
    const w = s.setManyAsync(entries);
    (entries[1]![1] as { n: number }).n = 99;
    entries[1]![0][1] = 4999;
    entries.push([['k', 7777], { n: 7 }]);
    await w;
    expect(await s.getAsync(['k', 2500])).toEqual({ n: 1 });
    expect(((await s.getAsync(['k', 4999])) as { i: number }).i).toBe(4999);
    expect(await s.hasAsync(['k', 7777])).toBe(false);
    // Entries of other shapes setMany takes (a triple, { 0, 1 }) are copied too: only pairs
    // were (the browser probe, session 32).
    const tv = { n: 1 }, ov = { n: 1 };
    const cold = s.getAsync(['k', 4321]);  // (pending: the write below waits for it)
    const odd = s.setManyAsync([[['k', 101], tv, 'extra'] as never, { 0: ['k', 102], 1: ov } as never]);
    tv.n = 2;
    ov.n = 2;
    await cold;
    await odd;
    expect([await s.getAsync(['k', 101]), await s.getAsync(['k', 102])]).toEqual([{ n: 1 }, { n: 1 }]);
    const keys: [string, number][] = [['k', 1], ['k', 2]];
    const many = s.getManyAsync(keys);
    keys[0]![1] = 3;
    keys.push(['k', 4]);
    expect(((await many) as { i: number }[]).map((v) => v.i)).toEqual([1, 2]);
    const range = { gte: ['k', 200] as [string, number], lt: ['k', 210] as [string, number] };
    const del = s.deleteRangeAsync(range);
    range.lt[1] = 4000;
    expect(await del).toBe(10);
    expect(s.size).toBe(5000 - 10);
    // A range that is not a plain object is refused, as by deleteRange (a copy of it was {}:
    // every entry; a probe, session 32).
    for (const bad of [[], new Map(), new Date(), Object.create({ gte: ['k', 5] })]) {
      await expect(s.deleteRangeAsync(bad as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(s.size).toBe(5000 - 10);
    // A bad entry still rejects with nothing applied.
    await expect(s.setManyAsync([[['k', 1], 1], [['x'.repeat(2000), 1], 2]])).rejects.toMatchObject({ code: 'KEY_TOO_LARGE', applied: 0 });
    await expect(s.getAsync(['x'.repeat(2000), 1])).rejects.toMatchObject({ code: 'KEY_TOO_LARGE' });
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    await expect(s.setAsync(['k', 1], cyclic)).rejects.toMatchObject({ code: 'INVALID_VALUE' });
    expect(((await s.getAsync(['k', 1])) as { i: number }).i).toBe(1);
    await s.checkInvariantsAsync();
    await s.close();
  });

  it('bytes values: the bytes as given', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('frozen-bytes');
    const open = () => BTreeStore.open<string, Uint8Array>({ path, storage, values: 'bytes', wasm, poolSize: 1 << 20 });
    let s = await open();
    for (let i = 0; i < 5000; i++) s.set(`k${String(i).padStart(5, '0')}`, new Uint8Array(200).fill(i & 255));
    await s.commit();
    await s.close();
    s = await open();
    const v = new Uint8Array([1, 2, 3]);
    const w = s.setAsync('k02500', v);  // (a leaf not in memory: the call faults first)
    v[0] = 9;
    await w;
    expect([...(await s.getAsync('k02500'))!]).toEqual([1, 2, 3]);
    await s.close();
  });

  // A custom codec's encode runs on a decoded copy when the call runs: one that refuses its own
  // decode's output failed then, blaming the caller's value (the verify probe). Now at the call.
  it("a custom codec whose encode refuses its decode's output: INVALID_VALUE at the call, saying why", async () => {
    const wasm = await wasmFor(build);
    class Foo {
      constructor(readonly n: number) {}
    }
    const strict = {
      encode: (v: Foo) => {
        if (!(v instanceof Foo)) throw new TypeError('not a Foo');
        return new Uint8Array([v.n]);
      },
      decode: (b: Uint8Array) => ({ n: b[0]! }) as Foo,
    };
    const s = await BTreeStore.open<string, Foo>({ path: uniqueName('strict'), storage: createAsyncMemoryStorage(), values: strict, wasm });
    const p = s.setAsync('a', new Foo(5));
    await expect(p).rejects.toMatchObject({ code: 'INVALID_VALUE' });
    await expect(p).rejects.toThrow(/decode/);
    expect(await s.hasAsync('a')).toBe(false);
    await s.close();
    // The same for a key codec (its message blamed the caller's key).
    const keyed = await BTreeStore.open<{ id: number }, number>({
      path: uniqueName('strict-key'),
      storage: createAsyncMemoryStorage(),
      keys: {
        encode: (k: { id: number }) => {
          if (typeof k !== 'object' || k === null || typeof k.id !== 'number') throw new TypeError('key must be {id}');
          return new Uint8Array([k.id]);
        },
        decode: (b: Uint8Array) => String(b[0]) as unknown as { id: number },
      },
      wasm,
    });
    const q = keyed.setAsync({ id: 1 }, 1);
    await expect(q).rejects.toMatchObject({ code: 'INVALID_KEY' });
    await expect(q).rejects.toThrow(/decode/);
    await keyed.close();
  });
});
