// The 'opfs' backend in real headless Chromium: a store in a dedicated worker
// (tests/ts/runtimes/opfs/worker.js, driven through window.call from the test) persists
// across page reloads, is locked across tabs (Web Locks), loses only uncommitted writes when
// the page goes away without close, turns a quota DOMException into QuotaExceededError, and
// survives a SIGKILL of the whole browser with exactly a committed state.
// Needs the built package (dist/ with its wasm): scripts/build.sh wasm && scripts/build.sh ts.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { applyModel, browserOnFixture, killMidWorkload, launchKillable, randomOps, servedFixture, sorted, type Op } from './browser-harness.js';


const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../../..');
interface CallError { name: string; code?: string; message: string; causeName?: string; causeCode?: string | number; domCause?: boolean }
declare const call: (cmd: Record<string, unknown>) => Promise<unknown>;
declare const tryCall: (cmd: Record<string, unknown>) => Promise<{ result?: unknown; error?: CallError }>;
declare const ready: Promise<void>;
declare const mainThread: (path: string, ops: Op[]) => Promise<unknown>;
declare const mainBurst: (path: string, ops: Op[]) => Promise<unknown>;
declare const mainAgrees: (path: string) => Promise<unknown>;
declare const mainCause: (path: string) => Promise<unknown>;
declare const mainCommitAfterClose: (path: string) => Promise<unknown>;
declare const mainNoWorker: (path: string) => Promise<unknown>;

describe('opfs backend in headless Chromium', () => {
  const browser = browserOnFixture(repo, '/tests/ts/runtimes/opfs/', 'opfs');
  const errors: string[] = [];

  async function tab(): Promise<Page> {
    const page = await browser.context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${String(e)}`));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    await page.goto(browser.url);
    await page.evaluate(() => ready);
    return page;
  }
  const run = <T>(page: Page, cmd: Record<string, unknown>) => page.evaluate((c) => call(c), cmd) as Promise<T>;
  const attempt = (page: Page, cmd: Record<string, unknown>) => page.evaluate((c) => tryCall(c), cmd);
  const reload = async (page: Page) => {
    await page.reload();
    await page.evaluate(() => ready);
  };

  it('writes random ops, commits, closes; after a reload the reopened store equals the model (st and mt builds)', async () => {
    const page = await tab();
    for (const threads of [false, true]) {
      const path = `model-${threads ? 'mt' : 'st'}/nested/dir/store`;
      await run(page, { op: 'remove', names: [path.split('/')[0]] });
      expect(await run<{ build: string }>(page, { op: 'init', threads })).toEqual({ build: threads ? 'mt' : 'st' });
      const model = new Map<string, unknown>();
      const { id, storage } = await run<{ id: number; storage: string }>(page, { op: 'open', path, poolSize: 1 << 20 });
      expect(storage).toBe('opfs');
      // 6000 ops in three commits; the 1 MiB pool makes the core evict and re-read pages.
      const ops = randomOps(6000, threads ? 7 : 3);
      for (let i = 0; i < 3; i++) {
        const part = ops.slice(i * 2000, (i + 1) * 2000);
        await run(page, { op: 'apply', id, ops: part });
        applyModel(model, part);
        await run(page, { op: 'commit', id });
      }
      expect(await run(page, { op: 'dump', id })).toEqual(sorted(model));
      await run(page, { op: 'close', id });
      // Two files per store, in the nested directory.
      const files = await run<Record<string, number>>(page, { op: 'files', dir: path.split('/').slice(0, -1).join('/') });
      expect(Object.keys(files).sort()).toEqual(['store', 'store-log']);
      expect(files.store).toBeGreaterThan(60 * 4096); // about 85 pages with node fill, 100+ without

      await reload(page);
      if (threads) await run(page, { op: 'init', threads });
      const again = await run<{ id: number; size: number }>(page, { op: 'open', path, create: false });
      expect(again.size).toBe(model.size);
      expect(await run(page, { op: 'dump', id: again.id })).toEqual(sorted(model));
      await run(page, { op: 'close', id: again.id });
    }
    // create: false on a missing store; a bad path.
    const missing = await attempt(page, { op: 'open', path: 'no/such/store', create: false });
    expect(missing.error).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
    const bad = await attempt(page, { op: 'open', path: 'a/../b' });
    expect(bad.error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    // In a worker, opfs is the default storage.
    const dflt = await run<{ id: number; storage: string }>(page, { op: 'open', path: 'default-store', defaultStorage: true });
    expect(dflt.storage).toBe('opfs');
    await run(page, { op: 'close', id: dflt.id });
    await page.close();
    expect(errors).toEqual([]);
  });

  it('locks across tabs: a second open gets LOCKED at once and touches nothing; wait: true waits', async () => {
    const a = await tab(), b = await tab();
    const path = 'locked/store';
    await run(a, { op: 'remove', names: ['locked'] });
    const { id } = await run<{ id: number }>(a, { op: 'open', path });
    const model = new Map<string, unknown>();
    const ops = randomOps(1500, 11);
    await run(a, { op: 'apply', id, ops });
    applyModel(model, ops);
    await run(a, { op: 'commit', id });

    // Another tab, and a second open in the same worker: LockedError, quickly.
    const t0 = Date.now();
    const other = await attempt(b, { op: 'open', path });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(other.error).toMatchObject({ name: 'LockedError', code: 'LOCKED' });
    expect((await attempt(a, { op: 'open', path })).error).toMatchObject({ name: 'LockedError', code: 'LOCKED' });
    // The first store still works and its committed data is intact.
    await run(a, { op: 'apply', id, ops: [['after', { n: 1, s: '' }]] });
    model.set('after', { n: 1, s: '' });
    await run(a, { op: 'commit', id });
    expect(await run(a, { op: 'dump', id })).toEqual(sorted(model));

    // wait: true in tab b queues until tab a closes, then sees a's last commit.
    const waiting = b.evaluate((p) => call({ op: 'open', path: p, wait: true }), path) as Promise<{ id: number; size: number }>;
    let settled = false;
    void waiting.then(() => (settled = true), () => (settled = true));
    await new Promise((r) => setTimeout(r, 500));
    expect(settled).toBe(false);
    await run(a, { op: 'close', id });
    const got = await waiting;
    expect(got.size).toBe(model.size);
    expect(await run(b, { op: 'dump', id: got.id })).toEqual(sorted(model));
    // Closing tab b (no close()) frees the lock for tab a: the browser drops a gone tab's locks.
    await b.close();
    const back = await run<{ id: number }>(a, { op: 'open', path, wait: true });
    expect(await run(a, { op: 'dump', id: back.id })).toEqual(sorted(model));
    // Close then reopen in the same worker right away: the released lock is not mistaken for a held one.
    await run(a, { op: 'close', id: back.id });
    const re = await run<{ id: number }>(a, { op: 'open', path });
    await run(a, { op: 'close', id: re.id });
    // A sync access handle held without the lock (its log file here): createSyncAccessHandle's
    // NoModificationAllowedError is a LockedError too (after a short retry), and nothing stays held.
    const c = await tab();
    await run(c, { op: 'hold', path: path + '-log' });
    const t1 = Date.now();
    const foreign = await attempt(a, { op: 'open', path });
    expect(Date.now() - t1).toBeLessThan(10_000);
    expect(foreign.error).toMatchObject({ name: 'LockedError', code: 'LOCKED', causeName: 'NoModificationAllowedError' });
    await run(c, { op: 'unhold', path: path + '-log' });
    await c.close();
    const after = await run<{ id: number }>(a, { op: 'open', path });
    expect(await run(a, { op: 'dump', id: after.id })).toEqual(sorted(model));
    await run(a, { op: 'close', id: after.id });
    await a.close();
    expect(errors).toEqual([]);
  });

  // A new-user probe (session 23): a store 'd/a' opened beside a store 'd/a-log' wrote its log
  // over a-log's data file; paths with a lone surrogate or NUL named the same files under two
  // Web Locks; a failed open left empty files.
  it("names: a store beside one whose file it would use, NUL and lone surrogates are refused; a failed open leaves no files", async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['names'] });
    const { id } = await run<{ id: number }>(page, { op: 'open', path: 'names/a-log' });
    const ops = randomOps(2000, 5);
    await run(page, { op: 'apply', id, ops });
    await run(page, { op: 'commit', id });
    await run(page, { op: 'close', id });
    const before = await run<Record<string, string>>(page, { op: 'digest', path: 'names/a-log' });
    const refused = await attempt(page, { op: 'open', path: 'names/a' });
    expect(refused.error).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
    expect(refused.error!.message).toMatch(/is the data file of another store/);
    expect(await run(page, { op: 'digest', path: 'names/a-log' })).toEqual(before);
    expect(Object.keys(await run<Record<string, unknown>>(page, { op: 'files', dir: 'names' })).sort()).toEqual(['a-log', 'a-log-log']);
    for (const path of ['names/sur\ud800', 'names/sur\udc00', 'names/nul\u0000x', 'names/\ud800/x']) {
      const e = await attempt(page, { op: 'open', path });
      expect(e.error, JSON.stringify(path)).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
    }
    // A failed open (a full origin: the log's header cannot be written) removes what it created.
    await run(page, { op: 'budget', handles: true, bytes: 0 });
    const full = await attempt(page, { op: 'open', path: 'names/full' });
    await run(page, { op: 'budget', handles: true });
    expect(full.error).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    let names: string[] = [];
    for (let i = 0; i < 40; i++) {
      names = Object.keys(await run<Record<string, unknown>>(page, { op: 'files', dir: 'names' })).sort();
      if (names.length === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(names).toEqual(['a-log', 'a-log-log']);
    await page.close();
    expect(errors).toEqual([]);
  });

  it('uncommitted writes are gone after a reload without close: reopen equals the last commit', async () => {
    const page = await tab();
    const path = 'crashy/store';
    await run(page, { op: 'remove', names: ['crashy'] });
    const { id } = await run<{ id: number }>(page, { op: 'open', path, poolSize: 1 << 20 });
    const model = new Map<string, unknown>();
    const committed = randomOps(3000, 21);
    await run(page, { op: 'apply', id, ops: committed });
    applyModel(model, committed);
    await run(page, { op: 'commit', id });
    // Many uncommitted writes: with a 1 MiB pool some dirty pages spill to the log before any commit.
    const lost = randomOps(6000, 22).map(([k, v]): Op => [k, v && { ...v, s: 'lost'.repeat(400) }]);
    await run(page, { op: 'apply', id, ops: lost });
    const st = await run<{ spills: number }>(page, { op: 'stats', id });
    expect(st.spills).toBeGreaterThan(0);
    await reload(page); // the worker dies holding the lock and the handles
    const again = await run<{ id: number }>(page, { op: 'open', path, wait: true });
    expect(await run(page, { op: 'dump', id: again.id })).toEqual(sorted(model));
    await run(page, { op: 'close', id: again.id });
    await page.close();
    expect(errors).toEqual([]);
  });

  // docs/STORE.md, "A damaged log": a log damaged part way (intact commits after the damage) is
  // CORRUPT naming the salvage; `readOnly: true, salvage: true` opens the commit before the
  // damage (one key a commit here: a prefix of the keys) and writes nothing.
  it('a log damaged part way is CORRUPT; a salvage opens the commit before the damage and changes no file', async () => {
    const page = await tab();
    const path = 'salv/store';
    await run(page, { op: 'remove', names: ['salv'] });
    const { id } = await run<{ id: number }>(page, { op: 'open', path });
    for (let i = 0; i < 60; i++) {
      await run(page, { op: 'set', id, key: `k${String(i).padStart(3, '0')}`, value: 'v'.repeat(200) + i });
      await run(page, { op: 'commit', id });
    }
    await reload(page); // the worker dies without close(): every commit is in the log
    const before = await run<Record<string, number>>(page, { op: 'files', dir: 'salv' });
    expect(before['store-log']).toBeGreaterThan(60 * 64);
    // a byte in the middle third of the log (one nobody checks, frame padding, is harmless:
    // undone, and the next one tried)
    let failed: CallError | undefined;
    for (let f = 1 / 3; f < 2 / 3 && failed === undefined; f += 0.013) {
      const { at } = await run<{ at: number }>(page, { op: 'flip', file: 'salv/store-log', at: f });
      const r = await attempt(page, { op: 'open', path, readOnly: true, wait: true });
      if (r.error !== undefined) failed = r.error;
      else {
        await run(page, { op: 'close', id: (r.result as { id: number }).id });
        await run(page, { op: 'flip', file: 'salv/store-log', at });
      }
    }
    expect(failed).toMatchObject({ name: 'CorruptionError', code: 'CORRUPT' });
    expect(failed!.message).toMatch(/its log is damaged part way .*salvage: true/);
    const digest = await run(page, { op: 'digest', path });
    const { id: sid } = await run<{ id: number }>(page, { op: 'open', path, readOnly: true, salvage: true, wait: true });
    const got = await run<[string, string][]>(page, { op: 'dump', id: sid });
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(60);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => [`k${String(i).padStart(3, '0')}`, 'v'.repeat(200) + i]));
    await run(page, { op: 'close', id: sid });
    expect(await run(page, { op: 'digest', path })).toEqual(digest);
    expect(await run(page, { op: 'files', dir: 'salv' })).toEqual(before);
    // The same through a store opened on the main thread (it lives in a worker the package
    // starts): the open's CORRUPT crosses typed, with its message; the salvage gives the same
    // commit through the async twins and writes nothing either.
    const main = await page.evaluate(async (p) => {
      const A = api as unknown as { BTreeStore: { open(o: unknown): Promise<{ entriesAsync(): AsyncIterable<[string, string]>; close(): Promise<void> }> } };
      let plain: { name: string; code?: string; message: string } | undefined;
      try {
        await (await A.BTreeStore.open({ path: p, storage: 'opfs', readOnly: true, wait: true })).close();
      } catch (e) {
        plain = { name: (e as Error).name, code: (e as { code?: string }).code, message: (e as Error).message };
      }
      const s = await A.BTreeStore.open({ path: p, storage: 'opfs', readOnly: true, salvage: true, wait: true });
      const entries: [string, string][] = [];
      for await (const e of s.entriesAsync()) entries.push(e);
      await s.close();
      return { plain, entries };
    }, path);
    expect(main.plain).toMatchObject({ name: 'CorruptionError', code: 'CORRUPT' });
    expect(main.plain!.message).toMatch(/its log is damaged part way .*salvage: true/);
    expect(main.entries).toEqual(got);
    expect(await run(page, { op: 'digest', path })).toEqual(digest);
    expect(await run(page, { op: 'files', dir: 'salv' })).toEqual(before);
    await page.close();
    expect(errors).toEqual([]);
  });

  it.each([
    ['a test backend wrapper', false],
    ['the access handles themselves (the backend maps it)', true],
  ] as const)('a write refused for quota by %s fails the commit with QUOTA_EXCEEDED, the store turns read-only, reopen shows the last commit', async (_, handles) => {
    const page = await tab();
    const path = 'quota/store';
    await run(page, { op: 'remove', names: ['quota'] });
    const { id } = await run<{ id: number }>(page, { op: 'open', path, quota: !handles });
    const model = new Map<string, unknown>();
    const ops = randomOps(2000, 31);
    await run(page, { op: 'apply', id, ops });
    applyModel(model, ops);
    await run(page, { op: 'commit', id });
    // 64 KiB of budget; the next commit needs far more.
    await run(page, { op: 'budget', id, bytes: 64 << 10, handles });
    await run(page, { op: 'apply', id, ops: randomOps(4000, 32) });
    const failed = await attempt(page, { op: 'commit', id });
    expect(failed.error).toMatchObject({ name: 'QuotaExceededError', code: 'QUOTA_EXCEEDED', causeName: 'QuotaExceededError', domCause: true });
    // The cause: the backend's own error (our QuotaExceededError, with the DOMException as its
    // cause), or the wrapper's DOMException itself (whose legacy numeric code is 22).
    expect(failed.error!.causeCode).toBe(handles ? 'QUOTA_EXCEEDED' : 22);
    const ro = await attempt(page, { op: 'set', id, key: 'x', value: 1 });
    expect(ro.error).toMatchObject({ name: 'ReadOnlyError', code: 'READ_ONLY' });
    await attempt(page, { op: 'close', id });
    if (handles) await run(page, { op: 'budget', bytes: undefined, handles }); // the wrapper went with its store
    const again = await run<{ id: number }>(page, { op: 'open', path });
    expect(await run(page, { op: 'dump', id: again.id })).toEqual(sorted(model));
    await run(page, { op: 'close', id: again.id });
    await page.close();
    expect(errors).toEqual([]);
  });

  it('on the main thread, opfs stores live in a worker the package starts: the async twins work, sync methods say NEED_PAGE', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['main'] });
    const ops = randomOps(1200, 41);
    const model = new Map<string, unknown>();
    applyModel(model, ops);
    const r = (await page.evaluate(([p, o]) => mainThread(p, o), ['main/store', ops] as const)) as Record<string, unknown>;
    const want = sorted(model);
    expect(r).toMatchObject({ isStore: true, isAsync: true, storage: 'opfs', size: model.size, stats: 'opfs', hasMissing: false, reopenedSize: model.size, cycles: 5 });
    expect(r.syncGet).toMatchObject({ name: 'PageFaultError', code: 'NEED_PAGE' });
    expect(r.first).toEqual(want[0]);
    expect(r.getFirst).toEqual(want[0]![1]);
    expect(r.many).toEqual(ops.slice(0, 3).map(([k]) => model.get(k)));
    expect(r.range).toEqual(want.map(([k]) => k).filter((k) => k >= 'key:00010').slice(0, 5));
    expect(r.badRange).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY' });
    const keys = want.map(([k]) => k);
    expect(r.twoScans).toEqual([keys[0], keys.find((k) => k >= 'key:00005'), keys[1]]);
    expect(r.allKeys).toBe(model.size);
    expect((r.workerOpen as { error: CallError }).error).toMatchObject({ name: 'LockedError', code: 'LOCKED' });
    expect(r.badKey).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY' });
    expect(r.badClone).toMatchObject({ code: 'INVALID_VALUE' });
    expect(r.afterClose).toMatchObject({ name: 'ClosedError', code: 'CLOSED' });
    expect(r.syncAfterClose).toEqual([0, 1, 2].map(() => expect.objectContaining({ name: 'ClosedError', code: 'CLOSED' })));
    expect(r.commitAfterClose).toMatchObject({ name: 'ClosedError', code: 'CLOSED' });
    const iw = r.iterAfterWrites as { first: string; deletedSeen: boolean; changed: unknown; count: number; keys: number };
    expect(iw).toEqual({ first: keys[0], deletedSeen: false, changed: 'changed', count: keys.length - 2, keys: keys.length });
    expect(r.refresh).toBe(false);
    expect(r.getManyFive).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(r.setManyNull).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(r.entries).toEqual(want.map(([k, v]) => [k, k === keys[5] ? 'changed' : k === keys[3] ? 'back' : v]));
    await page.close();
    expect(errors).toEqual([]);
  });

  // A bundlers probe (session 30): the store's worker looked for the wasm beside its own script,
  // also where the app had passed init({ wasm }) a URL of its own (a 404 there), and a bundle
  // without import.meta.url threw an untyped TypeError ("Invalid URL"). Now the worker gets the
  // module this thread has (no fetch of its own), and `workerUrl` names the worker's script.
  it('on the main thread, the worker instantiates the module the page has; workerUrl names its script', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['main-wasm'] });
    const fetched: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('.wasm')) fetched.push(r.url());
    });
    const r = await page.evaluate(async () => {
      const err = (e: unknown) => ({ name: (e as Error).name, code: (e as { code?: string }).code, message: (e as Error).message });
      await api.init(); // this thread's module: the one fetch
      const s = await api.BTreeStore.open<string, number>({ path: 'main-wasm/a', storage: 'opfs' });
      await s.setAsync('x', 1);
      await s.close();
      const script = new URL('/dist/storage/opfs-worker.js', location.href).href;
      const t = await api.BTreeStore.open<string, number>({ path: 'main-wasm/a', storage: 'opfs', workerUrl: script });
      const got = await t.getAsync('x');
      await t.close();
      const bad = await api.BTreeStore.open({ path: 'main-wasm/b', storage: 'opfs', workerUrl: 5 as never }).then(() => 'opened', err);
      const missing = await api.BTreeStore.open({ path: 'main-wasm/c', storage: 'opfs', workerUrl: '/no-such-worker.js' }).then(() => 'opened', err);
      return { got, bad, missing };
    });
    expect(r.got).toBe(1);
    expect(r.bad).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(r.missing).toMatchObject({ code: 'IO_ERROR', message: expect.stringMatching(/could not start/) });
    expect(fetched).toHaveLength(1); // init()'s; the stores' workers fetched none
    await page.close();
    expect(errors).toEqual([]);
  });

  it('on the main thread, calls made in one turn go to the worker in batches, in order; a call that fails fails alone', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['burst'] });
    // 6000 writes (deletes among them, keys repeated) then 6000 gets: more than one batch (4096)
    const ops = randomOps(6000, 43);
    const r = (await page.evaluate(([p, o]) => mainBurst(p, o), ['burst/store', ops] as const)) as Record<string, unknown>;
    // each get sees the writes issued before it: all the writes, as the gets come after them
    const model = new Map<string, unknown>();
    applyModel(model, ops);
    const want = ops.map(([k]) => model.get(k));
    expect(r.reads).toEqual(want);
    expect(r.reopened).toEqual(want);
    expect(r.entries).toEqual(sorted(model));
    expect(r.size).toBe(model.size);
    expect(r.badKey).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY' });
    // 12002 calls in three messages of at most 4096 calls; before batching, one per call
    expect(r.calls).toBe(12002);
    expect(r.postsForBurst).toBe(3);
    expect(r.postsForReads).toBe(2);
    expect(r.postsForScanStart).toBe(1);
    expect(r.firstKey).toBe(sorted(model)[0]![0]);
    const mixed = r.mixed as unknown[];
    expect(mixed[1]).toMatchObject({ name: 'InvalidValueError', code: 'INVALID_VALUE' });
    expect([mixed[0], mixed[2], mixed[3], mixed[4], mixed[5]]).toEqual(['store', 'store', 1, 2, false]);
    // the value its encoding refuses fails on this side, before anything is sent (it was sent,
    // and the batch that could not be cloned went in halves until the bad call was alone)
    expect(r.postsForMixed).toBe(1);
    await page.close();
    expect(errors).toEqual([]);
  });

  // A new-user probe (session 24) of the main-thread store against a BTreeMap: ranges with a
  // truthy non-boolean `reverse` read on forward after the first batch (511 keys, 256
  // distinct of 600), bad limits were ignored, values crossed by structured clone (toJSON
  // skipped: a password field stored; a Proxy or an object with a method refused), keys too
  // (a Symbol key: INVALID_VALUE), codec objects were refused.
  it('on the main thread, ranges, values, keys and codecs give what a BTreeMap gives; the worker reads the store it wrote', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['agree'] });
    const r = (await page.evaluate((p) => mainAgrees(p), 'agree/store')) as Record<string, any>;
    for (const x of r.ranges as { range: string; kind: string; map: unknown; store: unknown }[]) {
      expect(x.store, `${x.kind}(${x.range})`).toEqual(x.map);
    }
    const byRange = (range: string, kind = 'keys') => (r.ranges as { range: string; kind: string; map: { value?: unknown[]; error?: CallError } }[]).find((x) => x.range === range && x.kind === kind)!.map;
    expect(byRange('{"reverse":1}').value).toHaveLength(600);
    expect(new Set(byRange('{"reverse":"yes"}').value).size).toBe(600);
    expect(byRange('{"limit":"3"}').error).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
    expect(byRange('{"limit":null}').error).toMatchObject({ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' });
    expect(byRange('{"gte":42}').error).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY' });
    for (const [k, x] of Object.entries(r.values as Record<string, { map: unknown; store: unknown }>)) expect(x.store, k).toEqual(x.map);
    expect(r.values.user.store).toEqual({ value: { name: 'ada' } });
    expect(r.values.proxy.store).toEqual({ value: { a: 1, b: [1, 2] } });
    expect(r.values.big.store.error).toMatchObject({ name: 'InvalidValueError', code: 'INVALID_VALUE', cause: { name: 'TypeError' } });
    expect(r.changing).toEqual({ n: 1 });
    for (const [k, x] of Object.entries(r.keys as Record<string, { map: unknown; store: unknown }>)) expect(x.store, k).toEqual(x.map);
    expect(r.keys.symbol.store[0].error).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY' });
    expect(r.size[1]).toBe(r.size[0]);
    expect(r.more.store).toEqual(r.more.map);
    expect(r.more.map[0][0]).toMatchObject({ n: 4 });
    expect(r.reentrant).toMatchObject({ set: { value: expect.anything() }, inner: { error: { name: 'ReentrancyError', code: 'REENTRANT' } }, back: 'outer' });
    expect(r.codecs.value).toMatchObject({ store: r.codecs.value.map, encodings: ['custom', 'custom'] });
    expect(r.codecs.value.map).toEqual([[2, 'n2'], [1, 'n1']]);
    expect(r.codecs.value.first).toEqual([[3, 'n3'], [3, 'n3']]);
    expect(r.codecs.value.badKey[1]).toEqual(r.codecs.value.badKey[0]);
    expect(r.codecs.value.badKey[1]).toMatchObject({ name: 'InvalidKeyError', code: 'INVALID_KEY', cause: { name: 'TypeError', message: 'not a number' } });
    expect(r.bytes).toEqual({ value: [1, 2, 3] });
    // The files are those of any opfs store with these encodings: a worker opens them.
    const { id } = await run<{ id: number }>(page, { op: 'open', path: 'agree/store' });
    expect(await run(page, { op: 'dump', id })).toEqual(r.mapEntries);
    await run(page, { op: 'close', id });
    await page.close();
    expect(errors).toEqual([]);
  });

  // A LockedError from the worker lost the NoModificationAllowedError that said why (a
  // new-user probe, session 24): errors crossed without their cause.
  it('on the main thread, a bad fill or wasm option is INVALID_ARGUMENT, as on every backend', async () => {
    // (fill reached postMessage: INVALID_VALUE "cannot send to the store's worker", session 24;
    // `wasm: 5` opened, the option unused there, session 27)
    const page = await tab();
    const r = await page.evaluate(async () => {
      const open = async (o: object) => {
        try {
          await (api as { BTreeStore: { open(o: unknown): Promise<unknown> } }).BTreeStore.open({ storage: 'opfs', ...o });
          return { opened: true };
        } catch (e) {
          return { name: (e as Error).name, code: (e as { code?: string }).code };
        }
      };
      return [await open({ path: 'fill-bad/store', fill: { redistribute: () => true } }), await open({ path: 'wasm-bad/store', wasm: 5 })];
    });
    expect(r).toEqual([{ name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' }, { name: 'InvalidArgumentError', code: 'INVALID_ARGUMENT' }]);
    await page.close();
    expect(errors).toEqual([]);
  });

  // The main-thread store sent close()'s options to its worker unchecked: close({ commit: 'yes' })
  // rejected there after the worker was told to end, and the uncommitted writes went with it;
  // close(5) committed; setManyAsync read no options at all (the browser probe, session 32).
  it('on the main thread, bad close() and setManyAsync options are INVALID_ARGUMENT and change nothing', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['opts'] });
    const r = await page.evaluate(async () => {
      type S = { setAsync(k: string, v: unknown): Promise<unknown>; setManyAsync(e: unknown, o?: unknown): Promise<unknown>; getAsync(k: string): Promise<unknown>; commit(): Promise<void>; close(o?: unknown): Promise<void> };
      const B = (api as { BTreeStore: { open(o: unknown): Promise<S> } }).BTreeStore;
      const code = async (p: Promise<unknown>) => p.then(() => 'ok', (e: { code?: string }) => e.code);
      let s = await B.open({ storage: 'opfs', path: 'opts/store' });
      await s.setAsync('committed', 1);
      await s.commit();
      await s.setAsync('pending', 2);
      const out = [
        await code(s.close({ commit: 'yes' })),
        await code(s.close(5)),
        await code(s.setManyAsync([['m', 3]], { onProgress: 5 })),
        await code(s.setManyAsync([['m', 3]], { bogus: 1 })),
        await code(s.close()),
      ];
      s = await B.open({ storage: 'opfs', path: 'opts/store' });
      out.push(JSON.stringify([await s.getAsync('committed'), await s.getAsync('pending'), await s.getAsync('m') ?? null]));
      await s.close();
      return out;
    });
    expect(r).toEqual(['INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'ok', '[1,2,null]']);
    await page.close();
    expect(errors).toEqual([]);
  });

  it('on the main thread, an error of the store\'s worker keeps its cause', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['cause'] });
    const r = (await page.evaluate((p) => mainCause(p), 'cause/store')) as { error?: CallError & { cause?: { name: string; message: string } } };
    expect(r.error).toMatchObject({ name: 'LockedError', code: 'LOCKED', cause: { name: 'NoModificationAllowedError' } });
    expect(r.error!.cause!.message.length).toBeGreaterThan(0);
    await page.close();
    expect(errors).toEqual([]);
  });

  // STORE.md: commit() after close() began shares close's commit and resolves with it; the
  // main-thread store rejected it with CLOSED (a new-user probe, session 24).
  it('on the main thread, commit() made while close() commits resolves with that commit, as on the other backends', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['cac'] });
    const r = (await page.evaluate((p) => mainCommitAfterClose(p), 'cac/store')) as Record<string, unknown>;
    expect(r.true).toEqual({ during: { value: undefined }, after: 'CLOSED', a: 1 });
    expect(r.false).toMatchObject({ during: { error: { name: 'ClosedError', code: 'CLOSED' } }, after: 'CLOSED', a: 1 });
    await page.close();
    expect(errors).toEqual([]);
  });

  // The package's worker script missing from a deployment (404), or a page served in its place
  // (an SPA fallback): the error said "failed: error", without the script or what went wrong.
  it.each([
    ['404', { status: 404, body: 'not found' }],
    ['an HTML page', { status: 200, contentType: 'text/html', body: '<!doctype html><p>app</p>' }],
  ] as const)('on the main thread, a worker script that cannot load (%s): open() says so, with its URL', async (_, answer) => {
    const page = await tab();
    await page.route('**/opfs-worker.js', (route) => route.fulfill(answer));
    const r = (await page.evaluate((p) => mainNoWorker(p), 'noworker/store')) as { error?: CallError };
    await page.unroute('**/opfs-worker.js');
    expect(r.error).toMatchObject({ name: 'IoError', code: 'IO_ERROR' });
    expect(r.error!.message).toContain(new URL('/dist/storage/opfs-worker.js', browser.url).href);
    expect(r.error!.message).toMatch(/could not be loaded/);
    await page.close();
    expect(errors.filter((e) => !/opfs-worker\.js|Failed to load resource/.test(e))).toEqual([]);
    errors.length = 0;
  });

  it('on the main thread, values far larger than the pool (20 MB bytes) go through the worker, commit and read back after a reload', async () => {
    const page = await tab();
    await run(page, { op: 'remove', names: ['large'] });
    const sum = `(b) => { let s = 0; for (let i = 0; i < b.length; i++) s = (s + b[i] * (i % 251)) % 1000000007; return s; }`;
    const wrote = await page.evaluate(async (sumSrc) => {
      const sumOf = (0, eval)(sumSrc) as (b: Uint8Array) => number;
      const a = (window as unknown as { api: typeof import('../../../ts/src/index.js') }).api;
      const s = await a.BTreeStore.open<string, Uint8Array>({ path: 'large/store', storage: 'opfs', values: 'bytes', poolSize: 1 << 20 });
      const big = new Uint8Array(20e6);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i >>> 12) & 0xff;
      big[big.length - 1] = 9;
      await s.setAsync('big', big);
      await s.commit();
      const back = (await s.getAsync('big'))!;
      await s.close();
      return { sum: sumOf(big), back: back.length, same: sumOf(back) === sumOf(big) };
    }, sum);
    expect(wrote.back).toBe(20e6);
    expect(wrote.same).toBe(true);
    await reload(page);
    const got = await page.evaluate(async (sumSrc) => {
      const sumOf = (0, eval)(sumSrc) as (b: Uint8Array) => number;
      const a = (window as unknown as { api: typeof import('../../../ts/src/index.js') }).api;
      const s = await a.BTreeStore.open<string, Uint8Array>({ path: 'large/store', storage: 'opfs', values: 'bytes', poolSize: 1 << 20, create: false });
      const v = (await s.getAsync('big'))!;
      await s.checkInvariantsAsync();
      await s.close();
      return { len: v.length, sum: sumOf(v) };
    }, sum);
    expect(got).toEqual({ len: 20e6, sum: wrote.sum });
    await page.close();
    expect(errors).toEqual([]);
  });
});

describe('opfs: SIGKILL of the browser mid-workload', () => {
  const fx = servedFixture(repo, '/tests/ts/runtimes/opfs/', 'opfs-kill');

  const launch = () => launchKillable(fx.profile, fx.url);

  it('reopens to exactly a committed state that includes every commit the page saw resolve (3 kills)', async () => {
    const seed = 5, batchSize = 400;
    let prefix = -1; // the store holds batches 0..prefix
    let b = await launch();
    await b.page.evaluate(() => call({ op: 'remove', names: ['killed'] }));
    try {
      for (const [round, delay] of [0, 37, 113].entries()) {
        let lastResolved = -1;
        b.page.on('console', (m) => {
          const t = m.text();
          if (!t.startsWith('adaptree-event ')) return;
          const ev = JSON.parse(t.slice('adaptree-event '.length)) as { committed?: number };
          if (ev.committed !== undefined) lastResolved = Math.max(lastResolved, ev.committed);
        });
        // The workload goes on from the state recovered: batches prefix+1, prefix+2, ...
        const from = prefix + 1;
        void b.page.evaluate((c) => call(c), { op: 'workload', path: 'killed/store', seed, batchSize, from, batches: from + 100_000 }).catch(() => undefined);
        // Mid-workload: a commit is being built or flushed. Kill the browser process.
        const seen = await killMidWorkload(b.proc, () => lastResolved, from + 20, delay);
        b = await launch();
        const v = (await b.page.evaluate((c) => call(c), { op: 'verify', path: 'killed/store', seed, batchSize })) as { prefix: number; size: number };
        console.log(`kill ${round + 1}: batches ${from}..${seen} seen committed, reopened at the state after batch ${v.prefix} (${v.size} keys)`);
        expect(v.prefix).not.toBe(-2); // exactly the state after some commit, no mix
        expect(v.prefix).toBeGreaterThanOrEqual(seen); // never less than a resolved commit
        prefix = v.prefix;
      }
    } finally {
      await b.close();
    }
  });
});
