// A persistent store shared with worker_threads (docs/THREADS.md, "Stores"): workers attach
// to a store on node files that the test thread opened on the mt build, and run the mixed
// operations of the map stress (fixtures/threads-stress.mjs) on overlapping keys with a pool
// much smaller than the data (eviction and page faults in every worker) and commits from
// every worker; afterwards the invariant checker passes and the content equals the workers'
// models, and so does the store reopened on the st build. Also: the owner closing first, and
// what cannot be shared fails typed.
import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readlinkSync, renameSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BTreeStore, loadWasm, markWorkerLost, memoryStorage, threadsAvailable, type SharedStoreHandle } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { checkStress, runStress } from './fixtures/threads-stress.mjs';
import { budgetBackend } from './fixtures/store-fault-worker.mjs';
import { tempDir } from './store-helpers.js';

const WORKER = new URL('./fixtures/store-threads-worker.mjs', import.meta.url);
const FAULT_WORKER = new URL('./fixtures/store-fault-worker.mjs', import.meta.url);
const ATTACHED_WORKER = new URL('./fixtures/store-attached-worker.mjs', import.meta.url);

/** How many descriptors this process has open on the store `path` (its data file and log). */
function descriptorsOn(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
    } catch {
      return false;
    }
  }).length;
}
const tmp = tempDir('store-threads');
afterAll(() => tmp.cleanup());

type StressResult = { own: [string, string][]; last: [string, string | null][]; failure: string; commits?: number };

function start(workerData: Record<string, unknown>, url = WORKER): Promise<StressResult> {
  const worker = new Worker(url, { workerData });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: StressResult) => {
      void worker.terminate();
      resolve(m);
    });
    worker.once('error', reject);
  });
}

describe.runIf(threadsAvailable())('BTreeStore shared with worker_threads', () => {
  // A new-user probe (session 23): Node closes the descriptors a worker thread opened when
  // the thread ends, and an attached store used the owner's descriptor numbers: a store shared
  // by a worker that then ended wrote its commit into six unrelated files opened after it.
  // Attaching now opens the files again. (A child process, so that the lock the ended thread
  // left is stale for the reopen here.)
  it.each(['exit', 'return', 'terminate'])('a store shared by a worker thread that ends (%s) stays the store', (how) => {
    const path = join(tmp.dir, `owner-ends-${how}.db`);
    const out = execFileSync(process.execPath, [fileURLToPath(new URL('./fixtures/store-owner-ends.mjs', import.meta.url)), path, how], { encoding: 'utf8' });
    const r = JSON.parse(out) as { commit: string; sizes: number[] };
    expect(r.sizes).toEqual([6, 6, 6, 6, 6, 6]);
    expect(r.commit).toBe('resolved');
    return (async () => {
      const s = await BTreeStore.open({ path });
      expect(s.size).toBe(2001);
      expect(s.get('own')).toBe(1);
      expect(s.get('k1999')).toBe('x'.repeat(100));
      await s.close();
    })();
  });

  // A new-user probe (session 26): the owner's commit() counted only its own writes, so after
  // `await pool.setMany(...)` (the workers' writes) `await store.commit()` resolved without
  // committing anything, as THREADS.md shows it used, and a crash then lost all 1000 keys.
  it("the owner's commit() makes the workers' writes durable: a crash after it keeps them", async () => {
    const path = join(tmp.dir, 'pool-crash.db');
    const out = execFileSync(process.execPath, [fileURLToPath(new URL('./fixtures/store-pool-crash.mjs', import.meta.url)), path], { encoding: 'utf8' });
    const r = JSON.parse(out) as { before: number; after: number; uncommitted: number };
    expect(r.after).toBeGreaterThan(r.before);
    const s = await BTreeStore.open({ path, keys: 'utf8', values: 'utf8' });
    expect(s.size).toBe(1000);
    expect(s.get('k0999')).toBe('v999');
    await s.close();
  });

  // The counts of uncommitted writes were each object's own, and stayed after another thread's
  // commit covered them (the owner reported 5 after an attached store committed everything).
  it("uncommittedWrites: 0 once a commit from any thread covered this object's writes", async () => {
    const wasm = await loadWasm({ threads: true });
    const owner = await BTreeStore.open<string, number>({ path: join(tmp.dir, 'counts.db'), wasm });
    for (let i = 0; i < 5; i++) owner.set(`o${i}`, i);
    const a = await BTreeStore.attach<string, number>(owner.share());
    a.set('a', 1);
    expect(owner.stats().uncommittedWrites).toBe(5);
    expect(a.stats().uncommittedWrites).toBe(1);
    await a.commit();
    expect(owner.stats().uncommittedWrites).toBe(0);
    expect(a.stats().uncommittedWrites).toBe(0);
    a.set('b', 2);
    expect(owner.stats().uncommittedWrites).toBe(0); // its own: none (the attached store's write is pending)
    expect(a.stats().uncommittedWrites).toBe(1);
    const seq = owner.stats().commit_sequence as number;
    await owner.commit(); // covers the attached store's write
    expect(owner.stats().commit_sequence).toBe(seq + 1);
    expect(a.stats().uncommittedWrites).toBe(0);
    await owner.commit(); // nothing pending anywhere: no commit
    expect(owner.stats().commit_sequence).toBe(seq + 1);
    await a.close();
    await owner.close();
  });

  // Session 35 (threads probe): a codec given to attach() for an encoding the store was shared
  // with by name was ignored without a word. Now refused; the handle still attaches after.
  it('an attach given a codec for a named encoding is InvalidArgumentError; the handle attaches afterwards', async () => {
    const wasm = await loadWasm({ threads: true });
    const owner = await BTreeStore.open<number, string>({ path: join(tmp.dir, 'named.db'), wasm, keys: 'number', values: 'utf8' });
    owner.set(1, 'one');
    const handle = owner.share();
    const codec = { encode: (v: string) => new TextEncoder().encode(v), decode: (b: Uint8Array) => new TextDecoder().decode(b) };
    await expect(BTreeStore.attach(handle, { values: codec } as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: "BTreeStore.attach(): the store was shared with the 'utf8' value encoding: options.values is only for one shared with a custom codec (leave it out)",
    });
    await expect(BTreeStore.attach(handle, { keys: 'utf8' } as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const a = await BTreeStore.attach<number, string>(handle, { keys: 'number' } as never);
    expect(a.get(1)).toBe('one');
    await a.close();
    await owner.close();
  });

  it('an attach refuses files that replaced the shared ones', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'replaced.db');
    const owner = await BTreeStore.open({ path, wasm });
    owner.set('a', 1);
    await owner.commit();
    const handle = owner.share();
    copyFileSync(path, path + '.copy');
    renameSync(path + '.copy', path);
    await expect(BTreeStore.attach(handle)).rejects.toMatchObject({ code: 'IO_ERROR', message: expect.stringMatching(/not the file the store was opened on/) });
    // The owner's own data file has no name now (another file took it): its close, which
    // commits for the workers, says so rather than writing into a file nobody can open
    // (session 27; it resolved before).
    await expect(owner.close()).rejects.toMatchObject({ code: 'IO_ERROR', message: expect.stringMatching(/was deleted while the store was open/) });
    expect(owner.closed).toBe(true);
  });

  it('3 workers and the owner, a pool far smaller than the data, commits from all: content equals the model, also after reopen', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'shared.db');
    const pad = '.'.repeat(200); // ~1.7 MB of live records against a 1 MiB pool
    const store = await BTreeStore.open<string, string>({ path, wasm, poolSize: 1 << 20 });
    const ops = Number(process.env.ADAPTREE_THREAD_OPS ?? 12000);
    const rounds = 4;
    const workers = [1, 2, 3].map((id) => start({ handle: store.share(), id, ops, seed: 11, rounds, pad }));
    // The owner works at the same time, committing between its rounds too.
    const state = {};
    let mine!: StressResult;
    for (let r = 0; r < rounds; r++) {
      mine = runStress(store, 0, Math.ceil(ops / rounds), 11, state, pad) as StressResult;
      await store.commit();
    }
    const results = [mine, ...(await Promise.all(workers))];
    expect(results.map((r) => r.failure)).toEqual(['', '', '', '']);
    expect(results.slice(1).map((r) => r.commits)).toEqual([rounds, rounds, rounds]);
    expect(checkStress(store, results)).toEqual([]);
    const stats = store.stats();
    expect(stats.evictions as number).toBeGreaterThan(0);
    expect(stats.misses as number).toBeGreaterThan(0);
    // XMerge ran under concurrency: the evictions made writers in any thread pack neighbours.
    expect(stats.xmerges as number).toBeGreaterThan(0);
    // Point writes ran beside other threads where their leaf was resident and dirty.
    expect(stats.shared_writes as number).toBeGreaterThan(0);
    // Some of the writes that filled their leaf moved records to a neighbour under the shared
    // latch (phase 2c, docs/THREADS.md; ~300 of ~4300 redistributions per run).
    expect(stats.redistributions_shared as number).toBeGreaterThan(0);
    console.log(`store stress: 2-to-3 splits under the shared latch: ${stats.splits_2to3_shared} of ${stats.splits_2to3}`);
    await store.close();
    // Every worker closed (committing) before the owner: all of it is durable.
    const again = await BTreeStore.open<string, string>({ path });
    expect(checkStress(again, results)).toEqual([]);
    await again.close();
  });

  it('several writers, storage failing past a byte budget: reopened, exactly a committed state holding every resolved commit', async () => {
    type FaultResult = { id: number; log: [string, string | null][]; resolved: number; commits: number; failed: string; after: string; shared: string[] };
    for (const budget of [120_000, 500_000, 1_500_000]) {
      const wasm = await loadWasm({ threads: true });
      const sab = new SharedArrayBuffer(16);
      const flags = new Int32Array(sab);
      const path = join(tmp.dir, `fault-${budget}.db`);
      const store = await BTreeStore.open<string, string>({ path, wasm, storage: budgetBackend(sab), poolSize: 1 << 20 });
      const running = Promise.all(
        [1, 2, 3].map((id) => start({ fault: true, handle: store.share(), sab, id, rounds: 500, perRound: 150, seed: budget }, FAULT_WORKER)),
      ) as unknown as Promise<FaultResult[]>;
      while (Atomics.load(flags, 2) < 3) await new Promise((r) => setTimeout(r, 5));
      Atomics.store(flags, 1, budget); // counted from here
      Atomics.store(flags, 3, 1); // all at once
      Atomics.notify(flags, 3);
      const results = await running;
      await store.close().catch(() => undefined); // its commit fails: the store refuses writes
      // Every worker stopped on a failure (its own, or the refusal that follows another's);
      // the budget made at least one of them, and commits resolved before it.
      expect(results.map((r) => r.failed.split(' ')[1]).every((c) => c === 'QUOTA_EXCEEDED' || c === 'READ_ONLY')).toBe(true);
      expect(results.some((r) => r.failed.endsWith('QUOTA_EXCEEDED'))).toBe(true);
      expect(results.every((r) => r.after !== 'none')).toBe(true);
      expect(results.reduce((n, r) => n + r.commits, 0)).toBeGreaterThan(0);
      const again = await BTreeStore.open<string, string>({ path });
      again.checkInvariants();
      const content = new Map(again.entries());
      const problems: string[] = [];
      for (const r of results) {
        // Own keys: what this worker's writes made of them after some prefix of its log that
        // holds at least what its last resolved commit covered (later commits by others may
        // have made more of it durable; nothing after the failure is).
        const durable = new Map([...content].filter(([k]) => k.startsWith(`f${r.id}-`)));
        const model = new Map<string, string>();
        const apply = ([k, v]: [string, string | null]) => (v === null ? model.delete(k) : model.set(k, v));
        r.log.slice(0, r.resolved).forEach(apply);
        const same = (k: string) => model.get(k) === durable.get(k);
        let diff = 0;
        for (const k of new Set([...model.keys(), ...durable.keys()])) if (!same(k)) diff++;
        let p = r.resolved;
        while (diff !== 0 && p < r.log.length) {
          const e = r.log[p++]!;
          const before = same(e[0]);
          apply(e);
          diff += (same(e[0]) ? 0 : 1) - (before ? 0 : 1);
        }
        if (diff !== 0) problems.push(`budget ${budget}, worker ${r.id}: no prefix of its ${r.log.length} writes from ${r.resolved} on matches the reopened store`);
      }
      const written = new Set(results.flatMap((r) => r.shared));
      for (const [k, v] of content) if (k.startsWith('fs-') && !written.has(v)) problems.push(`shared key ${k}: ${v} was never written`);
      expect(problems).toEqual([]);
      await again.close();
    }
  });

  // A probe (session 31): the worker's 'exit' handler gave the attached store's stack back as if
  // idle, and the owner's next call waited for ever for the latch the dead call held. Now the
  // memory is marked lost there, as markWorkerLost() would: the owner's call throws.
  it('a worker that ends inside a call (process.exit in a storage read) poisons the memory: the owner gets INSTANCE_POISONED, no hang', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'exit-midcall.db');
    const s = await BTreeStore.open<number, string>({ path, wasm, keys: 'number', values: 'utf8', poolSize: 1 << 20 });
    for (let i = 0; i < 50000; i++) s.set(i, 'v'.repeat(200));
    await s.commit(); // a 1 MiB pool: most pages are not resident
    const worker = new Worker(new URL('./fixtures/store-exit-midcall.mjs', import.meta.url), { workerData: { handle: s.share() } });
    expect(await new Promise((r) => worker.once('exit', r))).toBe(3);
    // (tested first: without the mark the call below never returns, and the run hangs)
    expect(wasm.poisoned).toBe(true);
    expect(() => s.get(1)).toThrow(expect.objectContaining({ code: 'INSTANCE_POISONED' }));
    await s.close().catch(() => undefined);
  }, 60000);

  it('point reads of resident pages run beside a reader; a page fault or an overflow value waits for the exclusive latch', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'reads.db');
    const first = await BTreeStore.open<string, string>({ path, wasm, values: 'utf8' });
    for (let i = 0; i < 2000; i++) first.set(`k${10000 + i}`, `value${i}`);
    const big = 'v'.repeat(20000); // an overflow value
    first.set('big', big);
    await first.close();
    // Reopened: only the pages read since are resident.
    const store = await BTreeStore.open<string, string>({ path, wasm, values: 'utf8' });
    const handle = store.share();
    const worker = new Worker(new URL('./fixtures/store-read-worker.mjs', import.meta.url), { workerData: { handle } });
    const messages: unknown[] = [];
    let wake: (() => void) | null = null;
    worker.on('message', (m) => {
      messages.push(m);
      wake?.();
    });
    const next = async (ms: number): Promise<unknown> => {
      const until = Date.now() + ms;
      while (messages.length === 0 && Date.now() < until) await new Promise<void>((r) => ((wake = r), setTimeout(r, 20)));
      return messages.shift();
    };
    expect(await next(20000)).toBe('ready');
    const latch = wasm.exports as unknown as { at_debug_latch(t: number, how: number): number };
    // While this thread holds the tree latch shared, the worker's call runs or waits.
    const besideReader = async (key: string, times: number, ms: number) => {
      expect(latch.at_debug_latch(handle.tree, 2)).toBe(0);
      worker.postMessage({ key, times });
      const during = await next(ms);
      expect(latch.at_debug_latch(handle.tree, 3)).toBe(0);
      return { during, after: during === undefined ? await next(20000) : during };
    };
    // Not resident yet: the page fault waits for the exclusive latch.
    let r = await besideReader('k10001', 1, 300);
    expect(r.during).toBeUndefined();
    expect(r.after).toEqual({ value: 'value1', has: true, many: [6, 6] });
    // Resident now: get, has and getMany run while the latch is held shared.
    r = await besideReader('k10001', 100, 20000);
    expect(r.during).toEqual({ value: 'value1', has: true, many: [6, 6] });
    // An overflow value is read exclusive.
    r = await besideReader('big', 1, 300);
    expect(r.during).toBeUndefined();
    expect(r.after).toEqual({ value: big, has: true, many: [20000, 20000] });
    worker.postMessage('close');
    expect(await next(20000)).toBe('closed');
    await worker.terminate();
    store.checkInvariants();
    await store.close();
  });

  // A new-user probe (session 23, OPFS shared with workers in Chromium): a worker's writes that
  // landed between the owner's last commit and its free were accepted and lost, and the
  // worker's close() resolved. The owner now refuses other threads' writes (CLOSED) before its
  // last commit: every set that returned is durable.
  it('the owner closes while a worker writes: every write the worker got back is durable', async () => {
    const wasm = await loadWasm({ threads: true });
    for (let round = 0; round < 3; round++) {
      const path = join(tmp.dir, `owner-close-race-${round}.db`);
      const owner = await BTreeStore.open<string, number>({ path, wasm });
      const worker = new Worker(`const { parentPort, workerData } = require('node:worker_threads');
        import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)}).then(async ({ BTreeStore }) => {
          const a = await BTreeStore.attach(workerData.handle);
          let done = 0, err = '';
          try {
            for (;; done++) {
              a.set('k' + String(done).padStart(7, '0'), done);
              if (done === 2000) parentPort.postMessage('going');
              if (done % 50 === 0) await new Promise((r) => setImmediate(r));
            }
          } catch (e) { err = e.code; }
          const closed = await a.close().then(() => 'ok', (e) => e.code);
          parentPort.postMessage({ done, err, closed });
        });`, { eval: true, workerData: { handle: owner.share() } });
      const result = new Promise<{ done: number; err: string; closed: string }>((res, rej) => {
        worker.on('message', (m) => { if (m !== 'going') res(m); });
        worker.once('error', rej);
      });
      await new Promise((res) => worker.once('message', res)); // 'going'
      await new Promise((r) => setTimeout(r, round * 7));
      await owner.close();
      const r = await result;
      await worker.terminate();
      expect(r.err).toBe('CLOSED');
      const again = await BTreeStore.open<string, number>({ path, wasm });
      expect(again.size, `round ${round}: ${JSON.stringify(r)}`).toBe(r.done);
      await again.close();
    }
  });

  it('the owner closes first: attached calls throw ClosedError, close() of the attached store resolves, commits are intact', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'owner-first.db');
    const store = await BTreeStore.open<string, number>({ path, wasm });
    store.set('a', 1);
    const attached = await BTreeStore.attach<string, number>(store.share());
    attached.set('b', 2);
    await attached.commit();
    attached.set('c', 3); // committed by the owner's close
    expect(store.get('b')).toBe(2);
    // (a value of 69 encoded bytes, so that a stale result block reads "69 of 20")
    attached.set('long', 'x'.repeat(67) as unknown as number);
    expect(attached.get('long')).toBe('x'.repeat(67));
    attached.delete('long');
    expect(attached.closed).toBe(false);
    const late = store.share(); // attached after the close, below
    await store.close();
    // Session 23 (a probe): `closed` said false, setMany([]) returned, and setMany's error
    // counted the entries applied from an earlier call's result ("69 of 20 entries").
    expect(attached.closed).toBe(true);
    for (const call of [() => attached.get('a'), () => attached.set('d', 4), () => attached.size, () => attached.setMany([])]) {
      expect(call).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    }
    // (Since session 25 the attached store let go of its instance when the owner closed: the
    // call is refused before any entry is tried, and never counts another call's entries.)
    expect(() => attached.setMany(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]))).toThrow(expect.objectContaining({ code: 'CLOSED', message: expect.not.stringMatching(/[1-9]\d* of 20/) }));
    await expect(attached.commit()).rejects.toMatchObject({ code: 'CLOSED' });
    // The sharedstore probe (session 36): deleteRange and clear (and their async twins) said
    // "the map has been freed", and an attach after the owner's close resolved with a store
    // whose every call was CLOSED (THREADS.md: such an attach is ClosedError).
    const owner = { code: 'CLOSED', message: 'the store was closed by its owner' };
    for (const call of [() => attached.deleteRange({ gte: 'a' }), () => attached.clear(), () => attached.set('d', 4)]) {
      expect(call).toThrow(expect.objectContaining(owner));
    }
    await expect(attached.deleteRangeAsync({ gte: 'a' })).rejects.toMatchObject(owner);
    await expect(attached.clearAsync()).rejects.toMatchObject(owner);
    await expect(BTreeStore.attach<string, number>(late)).rejects.toMatchObject({ code: 'CLOSED', message: expect.stringMatching(/owner-first\.db' was closed by its owner/) });
    await attached.close();
    const again = await BTreeStore.open<string, number>({ path });
    expect([...again.entries()]).toEqual([['a', 1], ['b', 2], ['c', 3]]);
    await again.close();
    // close({ commit: false }) of the owner: what no commit covered is gone for everyone.
    const s2 = await BTreeStore.open<string, number>({ path, wasm });
    const a2 = await BTreeStore.attach<string, number>(s2.share());
    a2.set('d', 4);
    await a2.commit();
    a2.set('e', 5);
    await s2.close({ commit: false });
    await a2.close();
    const third = await BTreeStore.open<string, number>({ path });
    expect([...third.keys()]).toEqual(['a', 'b', 'c', 'd']);
    await third.close();
  });

  // The opfsshared probe (session 37): after markWorkerLost, the owner's close() reached each
  // attached store through its channel, whose handler read the map's `closed`, a wasm call that
  // threw InstanceUnusableError: uncaught in every attached worker, and `closed` threw too.
  it("after markWorkerLost the owner's close reaches an attached store without an uncaught error; closed never throws", async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'poisoned-owner.db');
    const store = await BTreeStore.open<string, number>({ path, wasm });
    store.set('a', 1);
    await store.commit();
    const errors: Error[] = [];
    const attached = await BTreeStore.attach<string, number>(store.share(), { onError: (e) => errors.push(e) });
    const uncaught: unknown[] = [];
    const note = (e: unknown): void => void uncaught.push(e);
    process.on('uncaughtException', note);
    try {
      markWorkerLost(store);
      expect(attached.closed).toBe(false); // not closed: unusable
      expect(() => attached.get('a')).toThrow(expect.objectContaining({ code: 'INSTANCE_POISONED' }));
      await expect(store.close()).rejects.toMatchObject({ code: 'INSTANCE_POISONED' });
      await new Promise((r) => setTimeout(r, 200)); // the channel's message
      expect(uncaught).toEqual([]);
      expect(attached.closed).toBe(true); // the owner closed it
    } finally {
      process.off('uncaughtException', note);
    }
    await attached.close();
    expect(errors.map((e) => (e as { code?: string }).code).filter((c) => c !== 'INSTANCE_POISONED')).toEqual([]);
    const again = await BTreeStore.open<string, number>({ path });
    expect([...again.entries()]).toEqual([['a', 1]]);
    await again.close();
  });

  // A new-user probe (session 25): after the owner's close() an attached store said closed
  // but kept its two descriptors until its own close() (a long-lived worker that attached
  // again and again had 20, 40, 60 open), and on OPFS its handles kept readers out.
  it.runIf(existsSync('/proc/self/fd'))('an attached store lets go of its files once the owner closed, without a call of its own', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'let-go.db');
    const store = await BTreeStore.open({ path, wasm });
    store.set('a', 1);
    const worker = new Worker(ATTACHED_WORKER, { workerData: { handle: store.share() } });
    const next = () => new Promise<unknown>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      expect(await next()).toEqual({ readOnly: false });
      expect(descriptorsOn(path)).toBe(4);
      await store.close();
      for (const t0 = Date.now(); descriptorsOn(path) > 0 && Date.now() - t0 < 5000; ) await new Promise((r) => setTimeout(r, 10));
      expect(descriptorsOn(path)).toBe(0);
      worker.postMessage('state');
      expect(await next()).toEqual({ closed: true, readOnly: false, set: 'CLOSED' });
      worker.postMessage('close');
      expect(await next()).toBe('closed');
    } finally {
      await worker.terminate();
    }
    const again = await BTreeStore.open({ path });
    expect([...again.keys()]).toEqual(['a']);
    await again.close();
  });

  // The same probe: a reader's attached store said readOnly === false (its writes were refused).
  it('the attached store of a reader is a reader', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'reader-shared.db');
    const w = await BTreeStore.open({ path });
    w.set('a', 1);
    await w.close();
    const reader = await BTreeStore.open({ path, wasm, readOnly: true });
    const worker = new Worker(ATTACHED_WORKER, { workerData: { handle: reader.share() } });
    const next = () => new Promise<unknown>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    try {
      expect(await next()).toEqual({ readOnly: true });
      worker.postMessage('state');
      expect(await next()).toEqual({ closed: false, readOnly: true, set: 'READ_ONLY' });
      worker.postMessage('close');
      expect(await next()).toBe('closed');
    } finally {
      await worker.terminate();
    }
    const inThread = await BTreeStore.attach(reader.share());
    expect(inThread.readOnly).toBe(true);
    await inThread.close();
    await reader.close();
  });

  it('an attached store detaches on close: the owner and the files go on', async () => {
    const wasm = await loadWasm({ threads: true });
    const path = join(tmp.dir, 'detach.db');
    const store = await BTreeStore.open<number, string>({ path, wasm, keys: 'number', values: 'utf8' });
    for (let round = 0; round < 20; round++) {
      const handle = store.share();
      const a = await BTreeStore.attach<number, string>(handle);
      // One attach per handle (its stack): a second is refused before it opens any file.
      await expect(BTreeStore.attach(handle)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/already attached/) });
      expect(a.keyEncoding).toBe('number');
      a.set(round, `r${round}`);
      await a.close(); // commits and detaches (its stack and areas go back: 20 rounds)
      expect(a.closed).toBe(true);
      expect(() => a.get(round)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    }
    expect(store.size).toBe(20);
    await store.close();
    const again = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8' });
    expect(again.get(19)).toBe('r19');
    await again.close();
  });

  it('what cannot be shared fails typed and changes nothing', async () => {
    const st = await loadWasm();
    const onSt = await BTreeStore.open({ path: join(tmp.dir, 'st.db'), wasm: st });
    onSt.set('a', 1);
    expect(() => onSt.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    expect(onSt.get('a')).toBe(1);
    await onSt.close();
    const wasm = await loadWasm({ threads: true });
    const mem = await BTreeStore.open({ path: `store-threads-${process.pid}`, storage: memoryStorage, wasm });
    expect(() => mem.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    await mem.close();
    const asyncStore = await BTreeStore.open({ path: `store-threads-async-${process.pid}`, storage: createAsyncMemoryStorage(), wasm });
    expect(() => asyncStore.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    await asyncStore.close();
    await expect(BTreeStore.attach({} as SharedStoreHandle)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const owner = await BTreeStore.open({ path: join(tmp.dir, 'twice.db'), wasm });
    // A handle whose files description is damaged: typed, and the instance it loaded goes back.
    const available = wasm.exports.at_memory_available();
    for (let i = 0; i < 3; i++) {
      await expect(BTreeStore.attach({ ...owner.share(), files: { ids: 'x' } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(available - wasm.exports.at_memory_available()).toBeLessThanOrEqual(1 << 20); // (3 stacks kept would be 3 MiB)
    const a = await BTreeStore.attach(owner.share());
    expect(() => a.share()).toThrow(expect.objectContaining({ code: 'THREADS_UNSUPPORTED' }));
    await a.close();
    await owner.close();
    await expect(BTreeStore.open({ path: 'x', storage: 'memory', wasm, threads: true } as never)).rejects.toMatchObject({ code: 'THREADS_UNSUPPORTED' });
  });
});
