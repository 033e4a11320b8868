// Workers sharing one BTreeMap on the mt build (docs/THREADS.md, phase 1): Node
// worker_threads each attach to a map the test thread shared and run mixed operations on
// overlapping keys (fixtures/threads-stress.mjs) while the test thread runs them too;
// afterwards the invariant checker passes and the content equals the workers' models.
// Also: who frees the tree, calls after that (ClosedError, not a trap), and what cannot
// be shared (st build, a store in memory) fails typed. Stores on files: store.threads.test.ts.
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { BTreeMap, BTreeStore, init, loadWasm, markWorkerLost, threadsAvailable, type SharedMapHandle } from '../../ts/src/index.js';
import { checkStress, runStress } from './fixtures/threads-stress.mjs';

const WORKER = new URL('./fixtures/threads-worker.mjs', import.meta.url);

function start(workerData: Record<string, unknown>): { worker: Worker; first: Promise<unknown> } {
  const worker = new Worker(WORKER, { workerData });
  const first = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { worker, first };
}

describe.runIf(threadsAvailable())('BTreeMap shared with worker_threads', () => {
  it('3 workers and the owner: mixed operations on overlapping keys, content equals the model', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, string>(null, { wasm });
    const ops = Number(process.env.ADAPTREE_THREAD_OPS ?? 12000);
    const workers = [1, 2, 3].map((id) => start({ handle: map.share(), id, ops, seed: 7 }));
    // The owner works at the same time (synchronously; the workers run in parallel).
    const mine = runStress(map, 0, ops, 7);
    const results = [mine, ...((await Promise.all(workers.map((w) => w.first))) as (typeof mine)[])];
    await Promise.all(workers.map((w) => w.worker.terminate()));
    expect(checkStress(map, results)).toEqual([]);
    const stats = map.stats();
    // Enough keys that leaves split and changed layout on the way.
    expect(stats.height).toBeGreaterThan(1);
    // Leaf splits ran under the shared latch, beside the other threads (phase 2c,
    // docs/THREADS.md; at_debug_latch 9 counts them).
    const share = map.share() as unknown as { tree: number };
    const latch = wasm.exports as unknown as { at_debug_latch(t: number, how: number): number };
    expect(latch.at_debug_latch(share.tree, 9)).toBeGreaterThan(0);
    map.free();
  });

  it('optimistic point reads take no latch: get, has and getMany in a worker pass a writer waiting for it', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, string>(null, { wasm, values: 'utf8' });
    for (let i = 0; i < 20000; i++) map.set(`key/${i}`, `v${i}`);
    const share = map.share();
    const writerShare = map.share(); // (before the latch is held: share() takes it exclusive)
    const latch = wasm.exports as unknown as { at_debug_latch(t: number, how: number): number };
    // This thread holds the tree latch shared; a writer waits for it exclusive (and marks
    // it: new shared holders, such as a latched read, stand back).
    expect(latch.at_debug_latch(share.tree, 2)).toBe(0);
    const writer = new Worker(new URL('./fixtures/latch-writer.mjs', import.meta.url), { workerData: { handle: writerShare } });
    const writerMessages: string[] = [];
    writer.on('message', (m: string) => writerMessages.push(m));
    while (writerMessages.length === 0) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50)); // (it spins on the latch now)
    const keys = ['key/1', 'key/77', 'nope', 'key/19999'];
    const reader = new Worker(new URL('./fixtures/map-read-worker.mjs', import.meta.url), { workerData: { handle: share, keys } });
    const answer = await Promise.race([
      new Promise((resolve, reject) => {
        reader.once('message', resolve);
        reader.once('error', reject);
      }),
      new Promise((resolve) => setTimeout(() => resolve('waited'), 20000)),
    ]);
    expect(writerMessages).toEqual(['waiting']); // the writer is still out
    expect(latch.at_debug_latch(share.tree, 3)).toBe(0);
    expect(answer).toEqual({
      got: ['v1', 'v77', undefined, 'v19999'],
      has: [true, true, false, true],
      many: ['v1', 'v77', undefined, 'v19999'],
    });
    while (writerMessages.length < 2) await new Promise((r) => setTimeout(r, 5));
    await Promise.all([writer.terminate(), reader.terminate()]);
    map.free();
  });

  it('the owner frees the tree: calls from an attached map then throw ClosedError', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, string>([['k', 'v']], { wasm });
    const { worker, first } = start({ handle: map.share(), closed: true });
    await first;
    expect(map.get('from-worker')).toBe('w');
    map.free();
    const answer = new Promise<{ codes: string[] }>((resolve) => worker.once('message', resolve));
    worker.postMessage('go');
    expect((await answer).codes).toEqual(['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED']);
    await worker.terminate();
  });

  it('an attached map detaches on free(): the owner and other attached maps go on', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<number, string>(null, { wasm, keys: 'number', values: 'utf8' });
    const a = await BTreeMap.attach<number, string>(map.share());
    const b = await BTreeMap.attach<number, string>(map.share());
    expect(a.keyEncoding).toBe('number');
    a.set(1, 'one');
    a.free();
    expect(() => a.get(1)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(b.get(1)).toBe('one');
    expect(map.get(1)).toBe('one');
    expect(b.closed).toBe(false);
    map.free();
    expect(() => b.get(1)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    // (session 23: `closed` said false and setMany([]) returned)
    expect(b.closed).toBe(true);
    expect(() => b.setMany([])).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(() => b.setMany([[2, 'two']])).toThrow(expect.objectContaining({ code: 'CLOSED', message: expect.stringMatching(/ 0 of 1 entries/) }));
    b.free();
  });

  // A handle carries one stack: two instances on it overwrote each other's frames (two
  // workers given one handle hung, trapped or wrote garbage into the tree). Found by trying it.
  it('a handle attaches once: a second attach of it is refused, in this thread or in another worker', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, string>(null, { wasm });
    const h = map.share();
    const a = await BTreeMap.attach<string, string>(h);
    await expect(BTreeMap.attach(h)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/already attached/) });
    a.set('a', '1');
    expect(map.get('a')).toBe('1');
    a.free();
    await expect(BTreeMap.attach(h)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' }); // spent, also after free()
    // The same handle posted to two workers: exactly one attaches and runs the stress.
    const ops = 3000;
    const same = map.share();
    const both = [1, 2].map((id) => start({ handle: same, id, ops, seed: 11 }));
    const settled = await Promise.allSettled(both.map((w) => w.first));
    await Promise.all(both.map((w) => w.worker.terminate()));
    const won = settled.filter((r) => r.status === 'fulfilled');
    const lost = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(String(lost[0]!.reason?.message)).toMatch(/already attached/);
    const result = (won[0] as PromiseFulfilledResult<ReturnType<typeof runStress>>).value;
    map.delete('a');
    expect(checkStress(map, [result])).toEqual([]);
    map.free();
  });

  // A new-user probe (session 22): share(NaN | 'abc' | 1 | 2 ** 40) gave a handle whose attach
  // trapped (the owner's map poisoned too), hung the owner, or wrote over the owner's tree.
  it('share(stackSize) with a stack no worker can use is InvalidArgumentError, the map untouched', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<number, string>(null, { wasm, keys: 'number', values: 'utf8' });
    for (let i = 0; i < 2000; i++) map.set(i, `v${i}`);
    for (const bad of [NaN, 'abc', 1, -5, 1000, 2 ** 32 + 16, 2 ** 40, 1.5, Infinity]) {
      expect(() => map.share(bad as never), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    const ok = await BTreeMap.attach<number, string>(map.share(256 << 10));
    ok.set(5, 'five');
    ok.free();
    expect(map.get(5)).toBe('five');
    expect(map.size).toBe(2000);
    map.free();
  });

  it('what cannot be shared fails typed: the st build, stores, foreign handles, custom codecs', async () => {
    const st = await loadWasm();
    const plain = new BTreeMap(null, { wasm: st });
    expect(() => plain.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    expect(plain.size).toBe(0);
    plain.free();
    const wasm = await loadWasm({ threads: true });
    const store = await BTreeStore.open({ path: `threads-${process.pid}`, storage: 'memory', wasm });
    store.set('a', 1);
    expect(() => store.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    await expect(BTreeStore.attach({} as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' }); // (store.threads.test.ts)
    await expect(BTreeStore.open({ path: 'x', storage: 'memory', wasm, threads: true } as never)).rejects.toMatchObject({
      code: 'THREADS_UNSUPPORTED',
    });
    expect(store.get('a')).toBe(1); // nothing lost
    await store.close();
    await expect(BTreeMap.attach({} as SharedMapHandle)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const custom = new BTreeMap<string, string>(null, {
      wasm,
      values: { encode: (v: string) => new TextEncoder().encode(v), decode: (b: Uint8Array) => new TextDecoder().decode(b) },
    });
    const h = custom.share();
    expect(h.values).toBe('custom');
    await expect(BTreeMap.attach(h)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    custom.free();
  });

  // Session 35 (threads probe): a codec given to attach() for an encoding the map was shared
  // with by name was ignored without a word (the map kept its number keys). Now refused, and the
  // handle, not claimed by the refused attach, attaches afterwards.
  it('attach given a codec for a named encoding is InvalidArgumentError; the handle attaches afterwards', async () => {
    const wasm = await loadWasm({ threads: true });
    const m = new BTreeMap<number, number>(null, { wasm, keys: 'number' });
    m.set(1, 2);
    const h = m.share();
    const utf8 = { encode: (k: string) => new TextEncoder().encode(k), decode: (b: Uint8Array) => new TextDecoder().decode(b) };
    await expect(BTreeMap.attach(h, { keys: utf8 } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: "attach(): the map was shared with the 'number' key encoding: options.keys is only for one shared with a custom codec (leave it out)",
    });
    const a = await BTreeMap.attach<number, number>(h);
    expect(a.get(1)).toBe(2);
    a.free();
    m.free();
  });

  // Session 35 (threads probe): markWorkerLost of anything but a map or store was a TypeError
  // from a private field, with no code. Nothing is poisoned by it.
  it('markWorkerLost of something that is not a map or store is InvalidArgumentError and poisons nothing', async () => {
    const wasm = await loadWasm({ threads: true });
    const m = new BTreeMap<string, number>(null, { wasm });
    m.set('a', 1);
    for (const x of [{}, null, undefined, new Map(), 'x', 7, new Proxy(m, {}), Object.create(BTreeMap.prototype)]) {
      expect(() => markWorkerLost(x as never), String(x)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'markWorkerLost(): not a BTreeMap or BTreeStore' }));
    }
    m.set('b', 2);
    expect([...m]).toEqual([['a', 1], ['b', 2]]);
    m.free();
  });
});

// A new-user probe (session 23): once the default instance was poisoned (markWorkerLost), init()
// with the same options handed back that instance, so `new BTreeMap()` threw INSTANCE_POISONED
// for the rest of the process. It now loads a new one.
describe.runIf(threadsAvailable())('init() after the default instance was poisoned', () => {
  it('loads a new instance; maps on the old one stay poisoned', async () => {
    const first = await init({ threads: true });
    expect(await init({ threads: true })).toBe(first); // the same while it is sound
    const m = new BTreeMap<string, string>([['a', 'b']]);
    m.share();
    markWorkerLost(m as BTreeMap<unknown, unknown>);
    expect(first.poisoned).toBe(true);
    expect(() => m.get('a')).toThrow(expect.objectContaining({ code: 'INSTANCE_POISONED' }));
    const second = await init({ threads: true });
    expect(second).not.toBe(first);
    expect(second.poisoned).toBe(false);
    const fresh = new BTreeMap<string, string>([['c', 'd']]);
    expect(fresh.get('c')).toBe('d');
    fresh.free();
    expect(await init({ threads: true })).toBe(second);
  });
});
