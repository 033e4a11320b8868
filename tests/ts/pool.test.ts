// WorkerPool (ts/src/pool.ts, docs/THREADS.md "A pool of workers") in Node worker_threads,
// from the built package (the pool starts dist/pool-worker.js): results in input order,
// typed errors from the workers, close() frees the workers' attachments, the inline
// fallback on the st build. Also the stack share() reserves goes back when an attached map
// is freed (share/attach/free 200 times: memory stays the same size), and a worker that ends
// mid-call (terminated while it holds the tree latch, or mid-setMany) leaves the memory
// unusable with a typed error, waking the threads that wait for the latch, instead of a hang.
// A pool over a shared file store: workers load, write and read it under a small pool,
// commits make it durable, a worker killed mid-batch leaves the last commit.
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BTreeMap, BTreeStore, WorkerPool, loadWasm, markWorkerLost, threadsAvailable } from '../../dist/index.js';
import { POOL_PORTS } from '../../dist/pool.js';

const LOST = new URL('./fixtures/lost-worker.mjs', import.meta.url);
const key = (i: number) => `k${String(i).padStart(7, '0')}`;

function start(workerData: Record<string, unknown>): { worker: Worker; messages: unknown[]; next(): Promise<unknown>; exited: Promise<unknown> } {
  const worker = new Worker(LOST, { workerData });
  const exited = new Promise((r) => worker.once('exit', r));
  const messages: unknown[] = [];
  const waiting: ((m: unknown) => void)[] = [];
  worker.on('message', (m) => {
    const w = waiting.shift();
    if (w) w(m);
    else messages.push(m);
  });
  return {
    worker,
    exited,
    messages,
    next: () => (messages.length > 0 ? Promise.resolve(messages.shift()) : new Promise((r) => waiting.push(r))),
  };
}

const codeOf = (f: () => unknown): string => {
  try {
    f();
    return 'none';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
};

describe.runIf(threadsAvailable())('WorkerPool (Node worker_threads)', () => {
  it('load, setMany and getMany over 2 workers: results in input order, content as the map says', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, { n: number }>(null, { wasm });
    const pool = await WorkerPool.create(map, { workers: 2 });
    expect(pool.workers).toBe(2);
    // load(): an empty map, sorted entries, parts applied in input order.
    const sorted = Array.from({ length: 3000 }, (_, i) => [`a${String(i).padStart(5, '0')}`, { n: i }] as [string, { n: number }]);
    await pool.load(sorted);
    expect([...map.entries()]).toEqual(sorted);
    map.checkInvariants();
    await expect(pool.load([[key(0), { n: 1 }]])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const n = 5000;
    // Unsorted input, split over both workers.
    const entries: [string, { n: number }][] = [];
    for (let i = 0; i < n; i++) entries.push([key((i * 7919) % n), { n: (i * 7919) % n }]);
    await pool.setMany(entries);
    expect(map.size).toBe(n + sorted.length);
    // Present and absent keys interleaved, in an order unlike the tree's.
    const keys: string[] = [];
    for (let i = n + 500; i-- > 0; ) keys.push(i % 3 === 0 ? `absent${i}` : key(i % n));
    const got = await pool.getMany(keys);
    expect(got).toEqual(map.getMany(keys));
    expect(got.filter((v) => v === undefined).length).toBe(keys.filter((k) => k.startsWith('absent')).length);
    expect(await pool.getMany([])).toEqual([]);
    // Calls in flight at once share the workers; each answers its own keys.
    const [a, b] = await Promise.all([pool.getMany(keys.slice(0, 700)), pool.getMany(keys.slice(700))]);
    expect([...a, ...b]).toEqual(got);
    await pool.close();
    map.checkInvariants();
    map.free();
  });

  it('errors reach the caller typed; calls after close() throw ClosedError', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, string>(null, { wasm, values: 'utf8' });
    const pool = await WorkerPool.create(map, { workers: 2 });
    await pool.setMany([['ok', 'v']]);
    await expect(pool.setMany([['ok2', 'v'], ['x'.repeat(5000), 'v']])).rejects.toMatchObject({ code: 'KEY_TOO_LARGE', name: 'KeyTooLargeError' });
    await expect(pool.getMany(['ok', 7 as unknown as string])).rejects.toMatchObject({ code: 'INVALID_KEY' });
    await expect(pool.setMany([['f', (() => 1) as unknown as string]])).rejects.toMatchObject({ code: 'INVALID_VALUE' });
    // A key structured clone refuses is a key error, as the map says of it (session 23: INVALID_VALUE).
    await expect(pool.getMany(['ok', Symbol('k') as unknown as string])).rejects.toMatchObject({ code: 'INVALID_KEY' });
    await expect(pool.setMany([['a', 'v'], [Symbol('k') as unknown as string, 'v']])).rejects.toMatchObject({ code: 'INVALID_KEY', message: expect.stringMatching(/entry 1/) });
    expect(await pool.getMany(['ok'])).toEqual(['v']); // the pool goes on after errors
    // A failing setMany settles every part before it rejects (it rejected while the other
    // worker went on writing), and says what is in (it said nothing): the first part whole and
    // the failing part's sub-batch of 4096 before the bad key (a probe, session 29).
    {
      const m2 = new BTreeMap<string, string>(null, { wasm, values: 'utf8' });
      const p2 = await WorkerPool.create(m2, { workers: 2 });
      const batch: [string, string][] = Array.from({ length: 20000 }, (_, i) => [`k${String(i).padStart(6, '0')}`, 'v']);
      batch[15000] = ['x'.repeat(5000), 'v'];
      const e = await p2.setMany(batch).then(() => undefined, (x: unknown) => x as { code?: string; applied?: number });
      expect(e).toMatchObject({ code: 'KEY_TOO_LARGE', applied: 14096 });
      expect(m2.size).toBe(14096);
      await new Promise((r) => setTimeout(r, 200));
      expect(m2.size).toBe(14096); // nothing lands after the rejection
      expect(m2.get(batch[14095]![0])).toBe('v');
      expect(m2.get(batch[14096]![0])).toBeUndefined();
      await p2.close();
      m2.free();
    }
    // load() whose last part cannot be sent: that part's typed error, not the earlier parts'
    // cancellation (session 23: a plain Error "load cancelled" in most runs).
    const fresh = new BTreeMap<string, string>(null, { wasm, values: 'utf8' });
    const loader = await WorkerPool.create(fresh, { workers: 2 });
    for (let round = 0; round < 5; round++) {
      const entries: [string, string][] = Array.from({ length: 2000 }, (_, i) => [`k${String(i).padStart(5, '0')}`, 'v']);
      entries[1999]![1] = (() => 1) as unknown as string;
      const e = await loader.load(entries).then(() => undefined, (x: unknown) => x);
      expect(e).toMatchObject({ code: 'INVALID_VALUE' });
      fresh.clear();
    }
    await loader.close();
    fresh.free();
    // load() whose second part fails: applied counts the first part too (it said "200 of 201
    // entries were applied" with 400 in the map; a probe, session 33). A baseline map refuses
    // a key over 1011 bytes, and its part goes in whole or not at all.
    const base = new BTreeMap<string, string>(null, { wasm, values: 'utf8', layout: 'baseline' });
    const baseLoader = await WorkerPool.create(base, { workers: 2 });
    const longs: [string, string][] = Array.from({ length: 400 }, (_, i) => [`${String(i).padStart(6, '0')}${'p'.repeat(1000)}`, 'v']);
    longs.push([`${'9'.repeat(6)}${'p'.repeat(1009)}`, 'v']);  // 1015 bytes, last in order
    const le = await baseLoader.load(longs).then(() => undefined, (x: unknown) => x as Error & { code?: string; applied?: number });
    expect(le).toMatchObject({ code: 'KEY_TOO_LARGE', applied: 200 });
    expect(le!.message).toContain('200 of 401 entries in input order were applied');
    expect(base.size).toBe(200);
    await baseLoader.close();
    base.free();
    await pool.close();
    expect(pool.closed).toBe(true);
    await expect(pool.getMany(['ok'])).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(pool.setMany([['a', 'b']])).rejects.toMatchObject({ code: 'CLOSED' });
    await pool.close(); // idempotent
    // The owner frees the map while a pool is open: the workers' calls report CLOSED.
    const pool2 = await WorkerPool.create(map, { workers: 1 });
    map.free();
    await expect(pool2.getMany(['ok'])).rejects.toMatchObject({ code: 'CLOSED' });
    await pool2.close();
    // A worker script that does not load: create rejects typed, the memory is not poisoned.
    const live = new BTreeMap<string, string>([['a', 'b']], { wasm, values: 'utf8' });
    await expect(WorkerPool.create(live, { workers: 2, workerUrl: new URL('./fixtures/no-such-worker.mjs', import.meta.url) })).rejects.toMatchObject({
      code: 'INTERNAL',
      message: expect.stringContaining('failed to start'),
    });
    expect(live.get('a')).toBe('b');
    // Failed creates give their workers' stacks back (60 of 4 workers held 226 MiB for good,
    // a new-user probe, session 22).
    const before = wasm.memory.buffer.byteLength;
    for (let i = 0; i < 20; i++) {
      await expect(WorkerPool.create(live, { workers: 4, workerUrl: new URL('./fixtures/no-such-worker.mjs', import.meta.url) })).rejects.toMatchObject({ code: 'INTERNAL' });
    }
    expect(wasm.memory.buffer.byteLength).toBeLessThanOrEqual(before + 8 * (1 << 20));
    // A 'file:' URL given as a string works as the URL does (it was Node's ERR_WORKER_PATH).
    const byString = await WorkerPool.create(live, { workers: 1, workerUrl: new URL('../../dist/pool-worker.js', import.meta.url).href });
    expect(await byString.getMany(['a'])).toEqual(['b']);
    await byString.close();
    live.free();
    // What cannot go to workers fails typed at create.
    const custom = new BTreeMap<string, string>(null, { wasm, values: { encode: (v: string) => new TextEncoder().encode(v), decode: (b: Uint8Array) => new TextDecoder().decode(b) } });
    await expect(WorkerPool.create(custom)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    custom.free();
  });

  it('a Node script that ends awaiting the pool gets its answer, then exits without close()', () => {
    const script = fileURLToPath(new URL('./fixtures/pool-script.mjs', import.meta.url));
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('[2,null,1]');
  });

  it('Deno: the pool starts module workers from the package and answers the same, on a map and on a shared store', () => {
    const repo = fileURLToPath(new URL('../../', import.meta.url));
    const script = fileURLToPath(new URL('./fixtures/pool-deno.mjs', import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), 'adaptree-pool-deno-'));
    try {
      const r = spawnSync(`${repo}node_modules/.bin/deno`, ['run', '--quiet', `--allow-read=${repo},${dir}`, `--allow-write=${dir}`, script, dir], {
        encoding: 'utf8', timeout: 90_000, cwd: repo, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
      });
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout)).toEqual({
        build: 'mt', size: 3000, got: [7, null, 2999], code: 'KEY_TOO_LARGE', after: 'CLOSED',
        store: { got: [7, null, 2999], size: 3000, last: 2999 },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the st build: ThreadsUnsupportedError, or the calling thread with fallback "inline"', async () => {
    const st = await loadWasm();
    const map = new BTreeMap<string, number>(null, { wasm: st });
    await expect(WorkerPool.create(map, { workers: 2 })).rejects.toMatchObject({ code: 'THREADS_UNSUPPORTED' });
    const pool = await WorkerPool.create(map, { workers: 2, fallback: 'inline' });
    expect(pool.workers).toBe(0);
    await pool.setMany([['b', 2], ['a', 1]]);
    expect(await pool.getMany(['a', 'z', 'b'])).toEqual([1, undefined, 2]);
    await pool.close();
    await expect(pool.getMany(['a'])).rejects.toMatchObject({ code: 'CLOSED' });
    map.free();
  });

  it('the stack share() reserves goes back: share/attach/free 200 times, and pools opened and closed, keep memory the same size', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, number>(null, { wasm });
    const cycle = async (i: number) => {
      const a = await BTreeMap.attach<string, number>(map.share());
      a.set(`a${i % 10}`, i);
      a.getMany(['a0', 'a1']);
      a.free();
    };
    for (let i = 0; i < 10; i++) await cycle(i);
    const before = wasm.memory.buffer.byteLength;
    for (let i = 0; i < 200; i++) await cycle(i);
    // Without giving stacks back this grows by 1 MiB per share (200 MiB).
    expect(wasm.memory.buffer.byteLength).toBe(before);
    const available = wasm.exports.at_memory_available();
    for (let i = 0; i < 3; i++) {
      const pool = await WorkerPool.create(map, { workers: 2 });
      await pool.setMany([[`p${i}`, i]]);
      await pool.close();
    }
    // Three pools of two workers would have kept 6 MiB of stacks (the memory's length may not
    // show it: free heap and unclaimed room do).
    expect(available - wasm.exports.at_memory_available()).toBeLessThanOrEqual(1 << 20);
    expect(map.get('p2')).toBe(2);
    map.free();
  });

  it('a Node worker whose script ends without free() gives its stack back at exit', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, number>([['k', 1]], { wasm });
    // Free heap plus unclaimed room: what a kept stack would take away (the memory's length
    // alone may not move: 16 MiB initial hold a few stacks).
    const available = () => wasm.exports.at_memory_available();
    const before = available();
    for (let i = 0; i < 4; i++) {
      const w = start({ mode: 'leave', handle: map.share() });
      expect(await w.next()).toBe(1);
      await w.exited;
    }
    // Four stacks kept would be 4 MiB.
    expect(before - available()).toBeLessThanOrEqual(1 << 20);
    map.free();
  });

  it('a worker terminated while it holds the tree latch: markWorkerLost wakes the waiters, every call throws INSTANCE_POISONED', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, number>([['k', 1]], { wasm });
    const forWaiter = map.share(); // share() takes the latch too: before the holder has it
    const holder = start({ mode: 'hold', handle: map.share() });
    expect(await holder.next()).toBe('holding');
    const waiter = start({ mode: 'waiter', handle: forWaiter });
    expect(await waiter.next()).toBe('ready'); // and then it sleeps on the held latch
    await holder.worker.terminate(); // dies holding the latch
    markWorkerLost(map as BTreeMap<unknown, unknown>);
    expect(await waiter.next()).toEqual({ code: 'INSTANCE_POISONED' });
    expect(codeOf(() => map.get('k'))).toBe('INSTANCE_POISONED');
    expect(codeOf(() => map.set('k', 2))).toBe('INSTANCE_POISONED');
    map.free(); // releases nothing of the abandoned tree; does not hang or throw
    await waiter.worker.terminate();
  });

  it('a worker terminated while it holds a leaf latch: its waiter sleeps on it, markWorkerLost stops the wait (INSTANCE_POISONED)', async () => {
    const wasm = await loadWasm({ threads: true });
    const map = new BTreeMap<string, number>([['k', 1]], { wasm }); // one leaf: every key is in it
    const forWaiter = map.share();
    const holder = start({ mode: 'leafhold', handle: map.share() });
    expect(await holder.next()).toBe('holding');
    const waiter = start({ mode: 'waiter', handle: forWaiter });
    expect(await waiter.next()).toBe('ready'); // then it waits for the leaf latch
    // Having spun as long as a tree-latch waiter does, it sleeps on the latch word in steps
    // (memory.atomic.wait64 with a timeout; frame.h) instead of spinning on (a counter, not a clock).
    let sleeps = 0;
    for (let i = 0; i < 500 && sleeps === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      sleeps = wasm.exports.at_debug_latch(forWaiter.tree, 8);
    }
    expect(sleeps).toBeGreaterThan(0);
    await holder.worker.terminate(); // dies holding the leaf latch
    markWorkerLost(map as BTreeMap<unknown, unknown>);
    expect(await waiter.next()).toEqual({ code: 'INSTANCE_POISONED' });
    expect(codeOf(() => map.get('k'))).toBe('INSTANCE_POISONED');
    map.free();
    await waiter.worker.terminate();
  });

  it('a pool over a shared file store: load, setMany, getMany in workers; commits; reopened intact; what cannot be shared is refused typed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adaptree-pool-store-'));
    try {
      const wasm = await loadWasm({ threads: true });
      const path = join(dir, 'pool.db');
      const store = await BTreeStore.open<string, { n: number; pad: string }>({ path, wasm, poolSize: 1 << 20 });
      const pool = await WorkerPool.create(store, { workers: 2 });
      expect(pool.workers).toBe(2);
      const val = (i: number) => ({ n: i, pad: 'p'.repeat(60) }); // ~2 MB of records in all
      const sorted = Array.from({ length: 3000 }, (_, i) => [`a${String(i).padStart(5, '0')}`, val(i)] as [string, { n: number; pad: string }]);
      await pool.load(sorted);
      await expect(pool.load([[key(0), val(1)]])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await store.commit(); // durable: everything the workers wrote before it
      // More than the 1 MiB pool holds: pages go out and come back in the workers' calls.
      const n = 20000;
      const entries: [string, { n: number; pad: string }][] = [];
      for (let i = 0; i < n; i++) entries.push([key((i * 7919) % n), val((i * 7919) % n)]);
      await pool.setMany(entries);
      const keys = Array.from({ length: n + 10 }, (_, i) => key((i * 104729) % (n + 10)));
      const got = await pool.getMany(keys);
      expect(got).toEqual(keys.map((k) => { const i = Number(k.slice(1)); return i < n ? val(i) : undefined; }));
      expect(store.size).toBe(n + 3000);
      await expect(pool.setMany([[key(1), { n: 1n as unknown as number, pad: '' }]])).rejects.toMatchObject({ code: 'INVALID_VALUE' });
      await pool.close(); // each worker's store commits its writes and detaches
      store.checkInvariants();
      const stats = store.stats();
      expect(stats.evictions as number).toBeGreaterThan(0);
      await store.close();
      const again = await BTreeStore.open<string, { n: number; pad: string }>({ path }); // the st build
      expect(again.size).toBe(n + 3000);
      expect(again.get(key(n - 1))).toEqual(val(n - 1));
      expect(again.get('a02999')).toEqual(val(2999));
      again.checkInvariants();
      await again.close();
      // A pool worker that ends during a call on a store: the memory is unusable (typed), the
      // files keep the last commit.
      {
        const kpath = join(dir, 'killed.db');
        const w2 = await loadWasm({ threads: true });
        const ks = await BTreeStore.open<string, unknown>({ path: kpath, wasm: w2 });
        ks.set('committed', 1);
        await ks.commit();
        const kpool = await WorkerPool.create(ks, { workers: 2 });
        // (Enough that a worker is still writing when it is terminated: 40,000 entries were
        // sometimes done within the polling below once a store's shared writes stopped taking
        // the exclusive latch for structure changes.)
        const many = Array.from({ length: 400000 }, (_, i) => [key(i), { i, pad: 'y'.repeat(40) }] as [string, unknown]);
        const writing = kpool.setMany(many);
        writing.catch(() => {});
        while (ks.size <= 1) await new Promise((r) => setTimeout(r, 2));
        const ports = (kpool as unknown as Record<symbol, { terminate(): Promise<void> }[]>)[POOL_PORTS]!;
        await ports[0]!.terminate();
        await expect(writing).rejects.toMatchObject({ code: 'INSTANCE_POISONED' });
        expect(codeOf(() => ks.get('committed'))).toBe('INSTANCE_POISONED');
        // The owner's commit, with none of its own writes pending: it asks the core whether the
        // workers left any, a call that throws on the unusable memory. It ended the process from
        // the turn that runs the flush, the promise never settled (a probe, session 29).
        await expect(ks.commit()).rejects.toMatchObject({ code: 'INSTANCE_POISONED' });
        await kpool.close();
        await ks.close().catch(() => {}); // (poisoned: its files are released as the process ends)
        // Reopened (the st build): the last commit, nothing of the killed batch.
        const r = await BTreeStore.open<string, unknown>({ path: kpath, create: false });
        expect(r.get('committed')).toBe(1);
        expect(r.size).toBe(1);
        r.checkInvariants();
        await r.close();
      }
      // Not a map or a store: a typed refusal, not a TypeError from a private field.
      for (const bad of [{}, null, 'map', new Map()]) {
        await expect(WorkerPool.create(bad as never, { workers: 1 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      // A store whose pages cannot be reached from workers: refused typed, the store goes on.
      const mem = await BTreeStore.open<string, number>({ path: 'pool-mem', storage: 'memory', wasm });
      mem.set('x', 1);
      await expect(WorkerPool.create(mem, { workers: 1 })).rejects.toMatchObject({ code: 'THREADS_UNSUPPORTED' });
      expect(mem.get('x')).toBe(1);
      await mem.close();
      // On the st build: the calling thread with fallback 'inline'.
      const st = await BTreeStore.open<string, number>({ path: join(dir, 'st.db') });
      await expect(WorkerPool.create(st)).rejects.toMatchObject({ code: 'THREADS_UNSUPPORTED' });
      const inline = await WorkerPool.create(st, { fallback: 'inline' });
      expect(inline.workers).toBe(0);
      await inline.setMany([['a', 1], ['b', 2]]);
      expect(await inline.getMany(['b', 'c', 'a'])).toEqual([2, undefined, 1]);
      await inline.close();
      await st.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a worker terminated mid-setMany (its own, then a pool worker): typed errors, no hang', async () => {
    // Your own worker: you tell adaptree (markWorkerLost) when it ended mid-call.
    {
      const wasm = await loadWasm({ threads: true });
      const map = new BTreeMap<string, unknown>(null, { wasm });
      const forWaiter = map.share();
      const writer = start({ mode: 'setMany', handle: map.share() });
      expect(await writer.next()).toBe('started');
      while (map.size < 5000) await new Promise((r) => setTimeout(r, 2)); // its batches are going in
      const waiter = start({ mode: 'waiter', handle: forWaiter });
      expect(await waiter.next()).toBe('ready');
      await writer.worker.terminate();
      markWorkerLost(map as BTreeMap<unknown, unknown>);
      expect(await waiter.next()).toEqual({ code: 'INSTANCE_POISONED' });
      expect(codeOf(() => map.size)).toBe('INSTANCE_POISONED');
      await waiter.worker.terminate();
      map.free();
    }
    // A pool worker: the pool sees it end with a call in flight and does the same itself.
    {
      const wasm = await loadWasm({ threads: true });
      const map = new BTreeMap<string, unknown>(null, { wasm });
      const pool = await WorkerPool.create(map, { workers: 2 });
      // (As below: enough that the worker is still writing when it is terminated.)
      const entries = Array.from({ length: 400000 }, (_, i) => [key(i), { i, pad: 'y'.repeat(40) }] as [string, unknown]);
      const writing = pool.setMany(entries);
      writing.catch(() => {});
      while (map.size === 0) await new Promise((r) => setTimeout(r, 2));
      const ports = (pool as unknown as Record<symbol, { terminate(): Promise<void> }[]>)[POOL_PORTS]!;
      await ports[0]!.terminate();
      await expect(writing).rejects.toMatchObject({ code: 'INSTANCE_POISONED' });
      await expect(pool.getMany([key(1)])).rejects.toMatchObject({ code: 'INSTANCE_POISONED' });
      expect(codeOf(() => map.get(key(1)))).toBe('INSTANCE_POISONED');
      await pool.close();
      map.free();
    }
  });
});
