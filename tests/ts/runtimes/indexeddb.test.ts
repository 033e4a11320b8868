// The 'indexeddb' backend in real headless Chromium, on the page's main thread: a store
// written through the async twins and committed survives a page reload and equals a model
// (st and mt builds, a pool small enough that reads fault and evict); a reload in the middle
// of a workload reopens to exactly a committed state holding every commit the page saw
// resolve; a second tab gets LockedError (or waits with `wait: true`); a transaction the
// browser refuses for quota is a QuotaExceededError with the last commit intact; relaxed
// durability works; create: false on a missing store is an InvalidArgumentError; a SIGKILL of
// the whole browser mid-workload (3 times) reopens to exactly a committed state that holds
// every commit the page saw resolve.
// Needs the built package (dist/ with its wasm): scripts/build.sh wasm && scripts/build.sh ts.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { applyModel, browserOnFixture, fixtureTab, killMidWorkload, launchKillable, randomOps, servedFixture, sorted, type Op } from './browser-harness.js';


const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../../..');

// What page.evaluate callbacks see (window.api = the package).
declare const api: typeof import('../../../ts/src/index.js');
declare const ready: Promise<void>;
declare const idbReq: <T>(r: IDBRequest<T>) => Promise<T>; // the fixture page's (idb/index.html)

describe('indexeddb backend in headless Chromium', () => {
  const browser = browserOnFixture(repo, '/tests/ts/runtimes/idb/', 'idb');
  const errors: string[] = [];

  const tab = (): Promise<Page> => fixtureTab(browser, errors);

  /** Opens `path` (storage 'indexeddb', small pool), applies ops with the async twins, commits
   * after every `commitEvery` ops; returns nothing. The store stays open unless `close`. */
  const write = (page: Page, a: { path: string; ops: Op[]; commitEvery: number; threads: boolean; close: boolean }) =>
    page.evaluate(async ({ path, ops, commitEvery, threads, close }) => {
      const wasm = await api.loadWasm({ threads });
      const s = await api.BTreeStore.open<string, unknown>({ path, storage: 'indexeddb', poolSize: 1 << 20, wasm });
      (window as unknown as { store: unknown }).store = s;
      for (let i = 0; i < ops.length; i++) {
        const [k, v] = ops[i]!;
        if (v === null) await s.deleteAsync(k);
        else await s.setAsync(k, v);
        if ((i + 1) % commitEvery === 0) {
          await s.commit();
          console.log(`committed ${i + 1}`);
        }
      }
      await s.commit();
      if (close) await s.close();
    }, a);

  /** Reopens `path` and returns every entry (async iteration) and the store's invariant check. */
  const readAll = (page: Page, path: string, threads = false) =>
    page.evaluate(async ({ path, threads }) => {
      const wasm = await api.loadWasm({ threads });
      const s = await api.BTreeStore.open<string, unknown>({ path, storage: 'indexeddb', create: false, poolSize: 1 << 20, wasm });
      const out: [string, unknown][] = [];
      for await (const e of s.entriesAsync()) out.push(e);
      const stats = await s.statsAsync();
      await s.close();
      return { entries: out, misses: stats.misses ?? 0 };
    }, { path, threads });

  it('commits survive a reload and equal the model (st and mt, 1 MiB pool)', async () => {
    const page = await tab();
    for (const threads of [false, true]) {
      const path = `model-${threads ? 'mt' : 'st'}`;
      const ops = randomOps(6000, threads ? 2 : 1);
      await write(page, { path, ops, commitEvery: 2000, threads, close: true });
      await page.reload();
      await page.evaluate(() => ready);
      const model = new Map<string, unknown>();
      applyModel(model, ops);
      const got = await readAll(page, path, threads);
      expect(got.entries).toEqual(sorted(model));
      expect(got.misses).toBeGreaterThan(0); // pages were faulted in through the async path
    }
    await page.close();
    expect(errors).toEqual([]);
  }, 120_000);

  it('values far larger than the pool (8 MB bytes, 4 MB json string) commit, survive a reload and read back equal', async () => {
    const page = await tab();
    const sums = await page.evaluate(async () => {
      const s = await api.BTreeStore.open<string, Uint8Array>({ path: 'large', storage: 'indexeddb', values: 'bytes', poolSize: 1 << 20 });
      const big = new Uint8Array(8e6);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i >>> 12) & 0xff;
      big[big.length - 1] = 7;
      await s.setAsync('big', big);
      await s.setAsync('small', new Uint8Array([1, 2, 3]));
      await s.commit();
      // replaced by a smaller one in the next commit: the old chain's pages go back to the free list
      await s.setAsync('big2', big.subarray(0, 3e6));
      await s.commit();
      await s.close();
      const j = await api.BTreeStore.open<string, unknown>({ path: 'large-json', storage: 'indexeddb', poolSize: 1 << 20 });
      await j.setAsync('text', 'x'.repeat(4e6));
      await j.commit();
      await j.close();
      let sum = 0;
      for (let i = 0; i < big.length; i++) sum = (sum + big[i]! * (i % 251)) % 1000000007;
      return sum;
    });
    await page.reload();
    await page.evaluate(() => ready);
    const got = await page.evaluate(async () => {
      const s = await api.BTreeStore.open<string, Uint8Array>({ path: 'large', storage: 'indexeddb', values: 'bytes', poolSize: 1 << 20, create: false });
      const big = (await s.getAsync('big'))!;
      let sum = 0;
      for (let i = 0; i < big.length; i++) sum = (sum + big[i]! * (i % 251)) % 1000000007;
      const big2 = (await s.getAsync('big2'))!;
      const small = Array.from((await s.getAsync('small'))!);
      const check = await s.checkInvariantsAsync?.();
      await s.close();
      const j = await api.BTreeStore.open<string, string>({ path: 'large-json', storage: 'indexeddb', poolSize: 1 << 20, create: false });
      const text = (await j.getAsync('text'))!;
      await j.close();
      return { len: big.length, sum, len2: big2.length, prefix: big2[4096], small, check: check ?? null, text: text.length, textOk: /^x+$/.test(text) };
    });
    expect(got).toMatchObject({ len: 8e6, sum: sums, len2: 3e6, prefix: 1, small: [1, 2, 3], text: 4e6, textOk: true });
    await page.close();
    expect(errors).toEqual([]);
  }, 120_000);

  it('a reload mid-workload reopens to a committed state with every commit the page saw', async () => {
    const page = await tab();
    const path = 'midway';
    const ops = randomOps(6000, 3);
    const seen: number[] = [];
    page.on('console', (m) => {
      const r = /^committed (\d+)$/.exec(m.text());
      if (r) seen.push(Number(r[1]));
    });
    const running = write(page, { path, ops, commitEvery: 500, threads: false, close: false }).catch(() => undefined);
    // Let a few commits happen, then pull the page away under the workload.
    for (let i = 0; i < 200 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    await page.reload();
    await running;
    await page.evaluate(() => ready);
    const got = (await readAll(page, path)).entries;
    const last = seen.length ? seen[seen.length - 1]! : 0;
    // The reopened store is the state after some commit point k >= the last one seen.
    const points = [...new Set([...seen, ...Array.from({ length: 12 }, (_, i) => (i + 1) * 500)])].filter((k) => k >= last).sort((a, b) => a - b);
    let match = -1;
    for (const k of points) {
      const model = new Map<string, unknown>();
      applyModel(model, ops.slice(0, k));
      if (JSON.stringify(sorted(model)) === JSON.stringify(got)) {
        match = k;
        break;
      }
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(match).toBeGreaterThanOrEqual(last);
    await page.close();
  }, 120_000);

  it('a second tab gets LockedError; with wait: true it opens once the first closes', async () => {
    const a = await tab();
    const b = await tab();
    await write(a, { path: 'locked', ops: randomOps(300, 4), commitEvery: 1000, threads: false, close: false });
    const second = await b.evaluate(async () => {
      try {
        await api.BTreeStore.open({ path: 'locked', storage: 'indexeddb' });
        return 'opened';
      } catch (e) {
        return (e as { code?: string }).code;
      }
    });
    expect(second).toBe('LOCKED');
    // The first store is intact and still works.
    expect(await a.evaluate(async () => (window as unknown as { store: { sizeAsync?: () => Promise<number>; size: number } }).store.size)).toBeGreaterThan(0);
    const waiting = b.evaluate(async () => {
      const s = await api.BTreeStore.open<string, unknown>({ path: 'locked', storage: 'indexeddb', wait: true });
      const n = s.size;
      await s.close();
      return n;
    });
    await new Promise((r) => setTimeout(r, 300));
    const size = await a.evaluate(async () => {
      const s = (window as unknown as { store: { size: number; close(): Promise<void> } }).store;
      const n = s.size;
      await s.close();
      return n;
    });
    expect(await waiting).toBe(size);
    await a.close();
    await b.close();
  }, 60_000);

  it('a transaction refused for quota is QuotaExceededError; the store turns read-only; reopen shows the last commit', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const s = await api.BTreeStore.open<string, unknown>({ path: 'quota', storage: 'indexeddb' });
      await s.setAsync('a', 1);
      await s.commit();
      // The browser refuses the next transaction's writes for quota.
      const proto = IDBObjectStore.prototype;
      const put = proto.put;
      proto.put = function () {
        throw new DOMException('quota reached (test)', 'QuotaExceededError');
      };
      await s.setAsync('b', 2);
      let commit: unknown;
      try {
        await s.commit();
      } catch (e) {
        commit = { code: (e as { code?: string }).code, cause: ((e as { cause?: { name?: string } }).cause ?? {}).name };
      }
      proto.put = put;
      let write: unknown;
      try {
        await s.setAsync('c', 3);
      } catch (e) {
        write = (e as { code?: string }).code;
      }
      await s.close().catch(() => undefined);
      const t = await api.BTreeStore.open<string, unknown>({ path: 'quota', storage: 'indexeddb' });
      const entries: [string, unknown][] = [];
      for await (const e of t.entriesAsync()) entries.push(e);
      await t.close();
      return { commit, write, entries };
    });
    expect(r.commit).toEqual({ code: 'QUOTA_EXCEEDED', cause: 'QuotaExceededError' });
    expect(r.write).toBe('READ_ONLY');
    expect(r.entries).toEqual([['a', 1]]);
    await page.close();
  }, 60_000);

  it('a commit appends one log record; a checkpoint (by size, and at close) moves the pages into records of their own; a version 1 database (a record per page) opens and is upgraded', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const openDb = (name: string, version?: number, upgrade?: (db: IDBDatabase) => void) => {
        const o = indexedDB.open(name, version);
        if (upgrade) o.onupgradeneeded = () => upgrade(o.result);
        return idbReq(o);
      };
      /** Record counts of `pages` and `log` of the store's database. */
      const counts = async (path: string) => {
        const db = await openDb('adaptree:' + path);
        const tx = db.transaction(['pages', 'log'], 'readonly');
        const out = { pages: await idbReq(tx.objectStore('pages').count()), log: await idbReq(tx.objectStore('log').count()), version: db.version };
        db.close();
        return out;
      };
      const entries = async (s: { entriesAsync(): AsyncIterable<[string, unknown]> }) => {
        const out: [string, unknown][] = [];
        for await (const e of s.entriesAsync()) out.push(e);
        return out;
      };
      const want = (n: number, tag: string) => Array.from({ length: n }, (_, i) => [`k${String(i).padStart(4, '0')}`, `${tag}${i}`] as [string, unknown]);

      // Default log (64 MiB): 5 commits are 5 log records and no page records; close folds them.
      const s = await api.BTreeStore.open<string, unknown>({ path: 'log-records', storage: 'indexeddb' });
      for (let c = 0; c < 5; c++) {
        await s.setManyAsync(want(400, `c${c}:`));
        await s.commit();
      }
      const beforeClose = await counts('log-records');
      await s.close();
      const afterClose = await counts('log-records');
      const t = await api.BTreeStore.open<string, unknown>({ path: 'log-records', storage: 'indexeddb', create: false });
      const reopened = JSON.stringify(await entries(t)) === JSON.stringify(want(400, 'c4:'));
      await t.close();

      // A 96 KiB log: commits of ~30 KB of new records (new leaves: images) fill it in a few
      // commits, then one checkpoints.
      const small = await api.BTreeStore.open<string, unknown>({ path: 'log-small', storage: 'indexeddb', checkpointBytes: 96 << 10 });
      const logSizes: number[] = [];
      for (let c = 0; c < 12; c++) {
        await small.setManyAsync(Array.from({ length: 100 }, (_, i) => [`k${c}-${i}`, 'v'.repeat(300)] as [string, unknown]));
        await small.commit();
        logSizes.push((await counts('log-small')).log);
      }
      await small.close({ commit: false });

      // checkpointBytes 0: a record per page, as version 1 wrote; copied into a version 1
      // database (pages only), which the store then opens, upgrades and writes.
      const v0 = await api.BTreeStore.open<string, unknown>({ path: 'no-log', storage: 'indexeddb', checkpointBytes: 0 });
      await v0.setManyAsync(want(2000, 'v1:'));
      await v0.commit();
      const noLog = await counts('no-log');
      await v0.close();
      const src = await openDb('adaptree:no-log');
      const recs = await idbReq(src.transaction('pages').objectStore('pages').getAll());
      const ids = await idbReq(src.transaction('pages').objectStore('pages').getAllKeys());
      src.close();
      const v1 = await openDb('adaptree:from-v1', 1, (db) => db.createObjectStore('pages'));
      const tx = v1.transaction('pages', 'readwrite');
      recs.forEach((rec, i) => tx.objectStore('pages').put(rec, ids[i]!));
      await new Promise((res) => (tx.oncomplete = res));
      v1.close();
      const u = await api.BTreeStore.open<string, unknown>({ path: 'from-v1', storage: 'indexeddb', create: false });
      const v1Read = JSON.stringify(await entries(u)) === JSON.stringify(want(2000, 'v1:'));
      await u.setAsync('k0001', 'after');
      await u.commit();
      const upgraded = await counts('from-v1');
      await u.close();
      const w = await api.BTreeStore.open<string, unknown>({ path: 'from-v1', storage: 'indexeddb', create: false });
      const v1After = (await w.getAsync('k0001')) === 'after' && w.size === 2000;
      await w.close();
      // A second commit that changes one record of each of 2000: deltas (logDeltas default)
      // or whole images (logDeltas: false); frame sizes straight from the log.
      const frameSizes = async (logDeltas: boolean) => {
        const path = `deltas-${logDeltas}`;
        const d = await api.BTreeStore.open<string, unknown>({ path, storage: 'indexeddb', logDeltas });
        await d.setManyAsync(want(2000, 'a'));
        await d.commit();
        await d.setManyAsync(want(2000, 'b'));
        await d.commit();
        const db = await openDb('adaptree:' + path);
        const frames = (await idbReq(db.transaction('log').objectStore('log').getAll())) as Uint8Array[];
        db.close();
        await d.close({ commit: false });
        return frames.map((f) => f.length);
      };
      const deltaFrames = await frameSizes(true), imageFrames = await frameSizes(false);
      return { beforeClose, afterClose, reopened, logSizes, noLog, v1Read, upgraded, v1After, deltaFrames, imageFrames };
    });
    // Both frames of whole images are 8 + n x (8 + 4096) bytes; the second with deltas is far
    // smaller than the first.
    for (const n of r.imageFrames) expect((n - 8) % 4104).toBe(0);
    expect(r.imageFrames[1]! - 8).toBeGreaterThan(4104 * 8);
    expect(r.deltaFrames[0]).toBe(r.imageFrames[0]);
    expect(r.deltaFrames[1]!).toBeLessThan(r.imageFrames[1]! / 2);
    expect(r.beforeClose).toEqual({ pages: 0, log: 5, version: 2 });
    expect(r.afterClose.log).toBe(0);
    expect(r.afterClose.pages).toBeGreaterThan(5);
    expect(r.reopened).toBe(true);
    expect(Math.max(...r.logSizes)).toBeGreaterThan(1); // frames accumulate ...
    expect(r.logSizes).toContain(0); // ... and a checkpoint clears them
    expect(r.noLog.log).toBe(0);
    expect(r.noLog.pages).toBeGreaterThan(10);
    expect(r.v1Read).toBe(true);
    expect(r.upgraded).toMatchObject({ version: 2, log: 1 });
    expect(r.v1After).toBe(true);
    await page.close();
    expect(errors).toEqual([]);
  }, 60_000);

  // Session 34 (the idbclose probe): the fold at close waited for as long as another
  // connection's readwrite transaction held the database, and held the Web Lock all that time.
  it("close() lets go after 5 s when another connection holds the database: the fold is aborted, the log stays, the lock is released, onError says why; the next open reads the log", async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
      const errs: unknown[] = [];
      const s = await api.BTreeStore.open<string, unknown>({ path: 'held', storage: 'indexeddb', onError: (e) => errs.push(e) });
      await s.setManyAsync(Array.from({ length: 500 }, (_, i) => [`k${i}`, `v${i}`] as [string, unknown]));
      await s.commit(); // a frame in the log: close() folds it
      // Another connection keeps a readwrite transaction on pages and log busy.
      const db = await idbReq(indexedDB.open('adaptree:held'));
      const tx = db.transaction(['pages', 'log'], 'readwrite');
      let stop = false;
      const spin = () => {
        if (!stop) tx.objectStore('pages').get(0).onsuccess = spin;
      };
      spin();
      const t0 = performance.now();
      const closed = await Promise.race([s.close().then(() => 'resolved', (e) => `rejected: ${String(e)}`), sleep(20_000).then(() => 'pending after 20 s')]);
      const took = performance.now() - t0;
      const held = ((await navigator.locks.query()).held ?? []).map((l) => l.name);
      stop = true;
      await new Promise((res) => (tx.oncomplete = res));
      const log = await idbReq(db.transaction('log').objectStore('log').count());
      db.close();
      const e = errs[0] as { code?: string; message?: string } | undefined;
      // The next open reads the log back: every record is there; its close folds it.
      const t = await api.BTreeStore.open<string, unknown>({ path: 'held', storage: 'indexeddb', create: false });
      const back = t.size === 500 && (await t.getAsync('k499')) === 'v499';
      await t.close();
      const db2 = await idbReq(indexedDB.open('adaptree:held'));
      const logAfter = await idbReq(db2.transaction('log').objectStore('log').count());
      db2.close();
      return { closed, took, held, log, code: e?.code, message: e?.message, errors: errs.length, back, logAfter };
    });
    expect(r.closed).toBe('resolved');
    expect(r.took).toBeGreaterThan(4000);
    expect(r.took).toBeLessThan(15_000);
    expect(r.held).not.toContain('adaptree:idb:held');
    expect(r.log).toBe(1); // the aborted fold wrote nothing
    expect(r.errors).toBe(1);
    expect(r.code).toBe('IO_ERROR');
    expect(r.message).toMatch(/another connection held the database for 5 s.*nothing is lost/);
    expect(r.back).toBe(true);
    expect(r.logAfter).toBe(0);
    await page.close();
    expect(errors).toEqual([]);
  }, 60_000);

  // Session 34 (the tabs probe): an open that another connection blocked rejected, but its
  // request went on once that connection closed, and the connection it opened then was never
  // closed: a later deleteDatabase of the store waited for it for good. (Here that connection
  // was garbage-collected before the delete, and the old code passed too: the leak itself is
  // tested in tests/ts/indexeddb-open.test.ts, against a stub factory.)
  it('an open blocked by another tab\'s connection is IoError and leaves no connection behind: the store opens afterwards and can be deleted', async () => {
    const a = await tab(), b = await tab();
    // Tab B holds a version 1 connection (code inspecting the database) and ignores versionchange.
    await b.evaluate(async () => {
      (window as unknown as { other: IDBDatabase }).other = await idbReq(indexedDB.open('adaptree:blocked'));
    });
    const first = await a.evaluate(() =>
      api.BTreeStore.open({ path: 'blocked', storage: 'indexeddb' }).then(
        async (s) => {
          await s.close();
          return 'opened';
        },
        (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
      ),
    );
    await b.evaluate(() => (window as unknown as { other: IDBDatabase }).other.close());
    const a1 = await a.evaluate(async () => {
      await new Promise((res) => setTimeout(res, 300)); // (the blocked request, if still pending, goes on now)
      const s = await api.BTreeStore.open<string, number>({ path: 'blocked', storage: 'indexeddb' });
      await s.setAsync('a', 1);
      await s.close();
      const t = await api.BTreeStore.open<string, number>({ path: 'blocked', storage: 'indexeddb', create: false });
      const v = await t.getAsync('a');
      await t.close();
      return v;
    });
    const deleted = await b.evaluate(() =>
      Promise.race([idbReq(indexedDB.deleteDatabase('adaptree:blocked')).then(() => 'deleted'), new Promise((res) => setTimeout(() => res('pending after 5 s'), 5000))]),
    );
    expect(first).toMatch(/^IO_ERROR: .*blocks the upgrade/);
    expect(a1).toBe(1);
    expect(deleted).toBe('deleted');
    await a.close();
    await b.close();
    expect(errors).toEqual([]);
  }, 60_000);

  /** A writer in tab `a` loads `n` keys (k + index, zero-padded to `pad`) of `valueBytes` bytes
   * and 'cnt' = 0, then commits back to back, at most `cap` times: commit c sets 'cnt' to c and
   * `per` keys, (c * 29 + j * 150) % n, to `c${c}`. Once it runs, a reader in tab `b` reads
   * 'cnt' and the keys `read` in one getManyAsync. Checks that the batch ended before the writer
   * reached its cap and that its values are those of one commit. */
  async function readBesideWriter(o: { path: string; checkpointBytes?: number; n: number; pad: number; valueBytes: number; per: number; cap: number; read: number[] }): Promise<void> {
    const a = await tab(), b = await tab();
    await a.evaluate(async (o) => {
      const name = (j: number) => `k${String(j).padStart(o.pad, '0')}`;
      const s = await api.BTreeStore.open<string, string | number>({ path: o.path, storage: 'indexeddb', ...(o.checkpointBytes !== undefined ? { checkpointBytes: o.checkpointBytes } : {}) });
      await s.setManyAsync(Array.from({ length: o.n }, (_, j) => [name(j), 'p'.repeat(o.valueBytes)] as [string, string]));
      await s.setAsync('cnt', 0);
      await s.commit();
      const w = window as unknown as { stop: boolean; loop: Promise<number> };
      w.stop = false;
      w.loop = (async () => {
        let i = 1;
        for (; i <= o.cap && !w.stop; i++) {
          const e: [string, string | number][] = [['cnt', i]];
          for (let j = 0; j < o.per; j++) e.push([name((i * 29 + j * 150) % o.n), `c${i}`]);
          await s.setManyAsync(e);
          await s.commit();
        }
        await s.close();
        return i - 1;
      })();
    }, o);
    const r = await b.evaluate(async (o) => {
      const rd = await api.BTreeStore.open<string, string | number>({ path: o.path, storage: 'indexeddb', readOnly: true, poolSize: 16 << 20 });
      await new Promise((res) => setTimeout(res, 300)); // (the writer is committing)
      const v = await rd.getManyAsync(['cnt', ...o.read.map((j) => `k${String(j).padStart(o.pad, '0')}`)]);
      await rd.close();
      return v;
    }, o);
    const commits = await a.evaluate(async () => {
      const w = window as unknown as { stop: boolean; loop: Promise<number> };
      w.stop = true;
      return w.loop;
    });
    // It ended while the writer went on (it stops at its cap, or when told to here).
    expect(commits).toBeLessThan(o.cap);
    // One commit's state: each key holds the value of the last commit <= cnt that wrote it.
    const cnt = r[0] as number;
    expect(cnt).toBeGreaterThan(0);
    const want = new Map(o.read.map((j) => [j, 'p'.repeat(o.valueBytes)]));
    for (let c = 1; c <= cnt; c++) for (let j = 0; j < o.per; j++) if (want.has((c * 29 + j * 150) % o.n)) want.set((c * 29 + j * 150) % o.n, `c${c}`);
    expect(r.slice(1)).toEqual(o.read.map((j) => want.get(j)));
    await a.close();
    await b.close();
    expect(errors).toEqual([]);
  }

  // Session 34 (the tabs probe): beside a writer whose every commit is a checkpoint
  // (checkpointBytes: 0) a reader could not tell what a newer commit changed (the checkpoint had
  // cleared the log), dropped its whole pool at each, and a getManyAsync that starts over at each
  // newer commit did not end while the writer committed (7.8 s: as long as it went on). The
  // change record (the pages of the last checkpoints) tells it now.
  it('a reader\'s getManyAsync ends while a writer that checkpoints at every commit goes on committing, and shows one commit', async () => {
    await readBesideWriter({ path: 'starve', checkpointBytes: 0, n: 3000, pad: 0, valueBytes: 800, per: 1, cap: 4000, read: Array.from({ length: 100 }, (_, i) => (i * 29) % 3000) });
  }, 120_000);

  // Session 35 (verify34 probe): a reader's batch over most of a store's pages, beside a writer
  // committing back to back, each commit changing about 20 of those pages. At each newer commit
  // the batch started over and read the pages it had lost one by one, a transaction each, and
  // by then the writer had committed again: it ran into the writer's cap (2 of 2 runs). Now a
  // restart reads the pages the batch faulted on in one transaction.
  it('a reader\'s getManyAsync over every key ends while a writer commits back to back, and shows one commit', async () => {
    await readBesideWriter({ path: 'starve-all', n: 3000, pad: 4, valueBytes: 100, per: 20, cap: 3000, read: Array.from({ length: 3000 }, (_, i) => i) });
  }, 180_000);

  // compactAsync() on IndexedDB (session 30): with the pool able to hold the store it reads every
  // page in, moves the pages at the end into the room a deleted large value left, and the
  // checkpoint at close deletes the page records past the new end.
  it('compactAsync gives the room of a deleted large value back: the page records past the end go', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const records = async () => {
        const db = await idbReq(indexedDB.open('adaptree:relocate'));
        const n = (await idbReq(db.transaction('pages').objectStore('pages').count())) as number;
        db.close();
        return n;
      };
      const opts = { path: 'relocate', storage: 'indexeddb', values: 'bytes', poolSize: 16 << 20 } as const;
      let s = await api.BTreeStore.open<string, Uint8Array>(opts);
      await s.setAsync('big', new Uint8Array(4 << 20).fill(7));
      await s.commit();
      await s.setManyAsync(Array.from({ length: 20000 }, (_, i) => ['k' + String(i).padStart(6, '0'), new Uint8Array(40).fill(i & 255)] as [string, Uint8Array]));
      await s.commit();
      await s.deleteAsync('big');
      await s.close();
      const held = await records();
      s = await api.BTreeStore.open<string, Uint8Array>(opts);
      await s.compactAsync();
      const moved = s.stats().relocated_pages;
      await s.close();
      const after = await records();
      s = await api.BTreeStore.open<string, Uint8Array>(opts);
      let n = 0, bad = 0;
      for await (const [k, v] of s.entriesAsync()) {
        n++;
        if (v.length !== 40 || v[0] !== (Number(k.slice(1)) & 255)) bad++;
      }
      await s.close();
      return { held, moved, after, n, bad };
    });
    expect(r.held).toBeGreaterThan(1000);
    expect(r.moved).toBeGreaterThan(200);
    expect(r.after).toBeLessThan(r.held / 3);
    expect({ n: r.n, bad: r.bad }).toEqual({ n: 20000, bad: 0 });
    await page.close();
    expect(errors).toEqual([]);
  }, 120_000);

  // A probe (session 30): a page record that is not bytes at all (a string) was IO_ERROR; a
  // damaged page is CORRUPT (docs/STORE.md), as a record of the wrong length already was.
  it('a page record that is not bytes is CORRUPT on the read that meets it', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const s = await api.BTreeStore.open<string, string>({ path: 'bad-page', storage: 'indexeddb', values: 'utf8' });
      for (let i = 0; i < 2000; i++) await s.setAsync(`k${String(i).padStart(4, '0')}`, 'v'.repeat(100));
      await s.close(); // checkpointed: the pages are records of 'pages'
      const db = await idbReq(indexedDB.open('adaptree:bad-page'));
      const keys = (await idbReq(db.transaction('pages').objectStore('pages').getAllKeys())) as number[];
      const tx = db.transaction('pages', 'readwrite');
      for (const k of keys) if (k !== 0) tx.objectStore('pages').put('garbage', k);
      await new Promise((res) => (tx.oncomplete = res));
      db.close();
      const t = await api.BTreeStore.open<string, string>({ path: 'bad-page', storage: 'indexeddb', values: 'utf8' });
      const code = await t.getAsync('k0001').then(() => 'read', (e: { code?: string }) => e.code);
      await t.close().catch(() => undefined);
      return { pages: keys.length, code };
    });
    expect(r.pages).toBeGreaterThan(2);
    expect(r.code).toBe('CORRUPT');
    await page.close();
  }, 60_000);

  it('a log record that is not a frame, or holds another commit than its key, is CORRUPT at open; the store opens again once it is gone', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const s = await api.BTreeStore.open<string, unknown>({ path: 'bad-log', storage: 'indexeddb' });
      await s.setAsync('a', 1);
      await s.commit(); // checkpointed at close: in pages
      await s.close();
      const s2 = await api.BTreeStore.open<string, unknown>({ path: 'bad-log', storage: 'indexeddb' });
      await s2.setAsync('b', 2);
      await s2.commit(); // a frame in the log; the page reloads below, so it stays there
      const db = await idbReq(indexedDB.open('adaptree:bad-log'));
      const log = db.transaction('log').objectStore('log');
      const [key] = (await idbReq(log.getAllKeys())) as number[];
      const [frame] = (await idbReq(db.transaction('log').objectStore('log').getAll())) as Uint8Array[];
      db.close();
      return { key: key!, frame: Array.from(frame!.subarray(0, 64)), length: frame!.length };
    });
    expect(r.frame.slice(0, 4)).toEqual([0x41, 0x54, 0x4c, 0x31]); // 'ATL1'
    await page.reload();
    await page.evaluate(() => ready);
    const codes = await page.evaluate(async ({ key }) => {
      const put = async (value: unknown, k: number) => {
        const db = await idbReq(indexedDB.open('adaptree:bad-log'));
        const tx = db.transaction('log', 'readwrite');
        tx.objectStore('log').put(value, k);
        await new Promise((res) => (tx.oncomplete = res));
        db.close();
      };
      const openCode = () => api.BTreeStore.open({ path: 'bad-log', storage: 'indexeddb', wait: true }).then(async (s) => {
        const v = [await s.getAsync('a'), await s.getAsync('b')];
        await s.close();
        return JSON.stringify(v);
      }, (e: { code?: string }) => e.code);
      const db = await idbReq(indexedDB.open('adaptree:bad-log'));
      const [frame] = (await idbReq(db.transaction('log').objectStore('log').getAll())) as Uint8Array[];
      db.close();
      const intact = await openCode().then((v) => v); // the frame replayed: both keys (and folded at close)
      await put(frame, key); // back in the log, as it was before the close folded it
      await put(frame, key + 5); // a frame under another commit's key
      const wrongKey = await openCode();
      await put(new Uint8Array(100), key + 5); // not a frame
      const notFrame = await openCode();
      const db2 = await idbReq(indexedDB.open('adaptree:bad-log'));
      const tx = db2.transaction('log', 'readwrite');
      tx.objectStore('log').delete(key + 5);
      await new Promise((res) => (tx.oncomplete = res));
      db2.close();
      const again = await openCode();
      return { intact, wrongKey, notFrame, again };
    }, { key: r.key });
    expect(codes).toEqual({ intact: '[1,2]', wrongKey: 'CORRUPT', notFrame: 'CORRUPT', again: '[1,2]' });
    await page.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it("after a checkpoint a commit logs deltas against the pages' records ('ATL2' frames): a reader and a reopen read them back", async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const frames = async (path: string) => {
        const db = await idbReq(indexedDB.open('adaptree:' + path));
        const all = (await idbReq(db.transaction('log').objectStore('log').getAll())) as Uint8Array[];
        db.close();
        return all.map((f) => ({ magic: new DataView(f.buffer, f.byteOffset).getUint32(0, true), bytes: f.byteLength }));
      };
      const key = (i: number) => `k${String(i).padStart(5, '0')}`;
      // 3000 records are ~100 leaves of images: past the 64 KiB log, so that commit is a checkpoint.
      const w = await api.BTreeStore.open<string, string>({ path: 'stored-deltas', storage: 'indexeddb', checkpointBytes: 64 << 10 });
      await w.setManyAsync(Array.from({ length: 3000 }, (_, i) => [key(i), 'v'.repeat(60) + i] as [string, string]));
      await w.commit();
      const afterCheckpoint = (await frames('stored-deltas')).length;
      // 40 records changed across the leaves: one frame of deltas against `pages`.
      for (let i = 0; i < 40; i++) await w.setAsync(key(i * 73), 'changed' + i);
      await w.commit();
      const log = await frames('stored-deltas');
      const reader = await api.BTreeStore.open<string, string>({ path: 'stored-deltas', storage: 'indexeddb', readOnly: true });
      let readerOk = true;
      for (let i = 0; i < 3000; i++) if ((await reader.getAsync(key(i))) !== (i % 73 === 0 && i / 73 < 40 ? 'changed' + i / 73 : 'v'.repeat(60) + i)) readerOk = false;
      await reader.close();
      return { afterCheckpoint, log, readerOk }; // the writer stays open: the tab closes under it
    });
    await page.close();
    // A new tab recovers from the log as the closed one left it (close() would have folded it).
    const page2 = await tab();
    const reopenOk = await page2.evaluate(async () => {
      const key = (i: number) => `k${String(i).padStart(5, '0')}`;
      const again = await api.BTreeStore.open<string, string>({ path: 'stored-deltas', storage: 'indexeddb', create: false, wait: true });
      let ok = (await again.stats()).storage === 'indexeddb';
      for (let i = 0; i < 3000; i++) if ((await again.getAsync(key(i))) !== (i % 73 === 0 && i / 73 < 40 ? 'changed' + i / 73 : 'v'.repeat(60) + i)) ok = false;
      await again.close();
      return ok;
    });
    expect(r.afterCheckpoint).toBe(0);
    expect(r.log.length).toBe(1);
    expect(r.log[0]!.magic).toBe(0x324c5441); // 'ATL2'
    expect(r.log[0]!.bytes).toBeLessThan(40 * 4096 / 4); // 40 changed pages would be 160 KiB as images
    expect(r.readerOk).toBe(true);
    expect(reopenOk).toBe(true);
    await page2.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it("a reader's concurrent page reads each see one commit, across new frames and a checkpoint", async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const w = await api.BTreeStore.open<string, unknown>({ path: 'reader-race', storage: 'indexeddb', checkpointBytes: 6 << 10 });
      const logSizes: number[] = [];
      const logCount = async () => {
        const db = await idbReq(indexedDB.open('adaptree:reader-race'));
        const n = await idbReq(db.transaction('log').objectStore('log').count());
        db.close();
        return n;
      };
      const commit = async (c: number) => {
        await w.setManyAsync(Array.from({ length: 300 }, (_, i) => [`k${String(i).padStart(4, '0')}`, `c${c}`] as [string, unknown]));
        await w.commit();
      };
      await commit(1);
      // The backend's own reader (what BTreeStore.open({ readOnly: true }) reads through).
      const pages = await api.indexedDBStorage().open('reader-race', { create: false, readOnly: true });
      const seq = (p0: Uint8Array | undefined) => Number(new DataView(p0!.buffer, p0!.byteOffset).getBigUint64(16, true));
      const rounds: number[][] = [];
      let error = '';
      for (let c = 2; c <= 9 && !error; c++) {
        await commit(c); // a new frame; some commits are checkpoints (a 6 KiB log: deltas against `pages` keep frames small)
        logSizes.push(await logCount());
        try {
          // Issued in one turn: their transactions read the log side by side.
          const got = await Promise.all([1, 2, 3, 4].map((id) => pages.readPages!([0, id])));
          rounds.push(got.map((g) => seq(g[0])));
        } catch (e) {
          error = String(e);
        }
      }
      await pages.close();
      await w.close();
      return { rounds, error, logSizes };
    });
    expect(r.error).toBe('');
    // Frames were added, and a checkpoint cleared them, between the reads.
    expect(r.logSizes.some((n, i) => i > 0 && n < r.logSizes[i - 1]!), JSON.stringify(r.logSizes)).toBe(true);
    expect(Math.max(...r.logSizes)).toBeGreaterThan(1);
    // Every read saw the commit made just before it (page 0 of that commit).
    expect(r.rounds.every((seqs) => new Set(seqs).size === 1)).toBe(true);
    expect(r.rounds.map((seqs) => seqs[0]! - r.rounds[0]![0]!)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await page.close();
    expect(errors).toEqual([]);
  }, 60_000);

  it('deleting the value written last gives its records back at the next checkpoint (pages past the store\'s end go)', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const pages = async (path: string) => {
        const o = indexedDB.open('adaptree:' + path);
        const db = await idbReq(o);
        const n = await idbReq(db.transaction('pages', 'readonly').objectStore('pages').count());
        db.close();
        return n;
      };
      const small = (i: number) => new Uint8Array(40).fill(i & 255);
      let s = await api.BTreeStore.open<string, Uint8Array>({ path: 'shrink', storage: 'indexeddb', values: 'bytes' });
      for (let i = 0; i < 200; i++) await s.setAsync(`k${i}`, small(i));
      await s.close();
      const before = await pages('shrink');
      s = await api.BTreeStore.open<string, Uint8Array>({ path: 'shrink', storage: 'indexeddb', values: 'bytes' });
      const big = new Uint8Array(3 << 20);
      for (let i = 0; i < big.length; i += 4096) big[i] = (i >>> 12) & 255;
      await s.setAsync('big', big);
      await s.close();
      const grown = await pages('shrink');
      s = await api.BTreeStore.open<string, Uint8Array>({ path: 'shrink', storage: 'indexeddb', values: 'bytes' });
      await s.deleteAsync('big');
      await s.commit();
      const trimmed = (s.stats() as unknown as { trimmed_pages: number }).trimmed_pages;
      await s.close(); // the checkpoint at close drops the records past the end
      const after = await pages('shrink');
      s = await api.BTreeStore.open<string, Uint8Array>({ path: 'shrink', storage: 'indexeddb', values: 'bytes' });
      let same = s.size === 200 && !(await s.hasAsync('big'));
      for (let i = 0; i < 200; i++) {
        const v = await s.getAsync(`k${i}`);
        if (!v || v.length !== 40 || v[0] !== (i & 255)) same = false;
      }
      await s.checkInvariantsAsync();
      // and grows again over the ids it gave back
      await s.setAsync('again', big.subarray(0, 1 << 20));
      await s.close();
      s = await api.BTreeStore.open<string, Uint8Array>({ path: 'shrink', storage: 'indexeddb', values: 'bytes' });
      const again = await s.getAsync('again');
      const againOk = again?.length === 1 << 20 && again[4096 * 5] === 5;
      await s.close();
      return { before, grown, trimmed, after, same, againOk };
    });
    expect(r.grown).toBeGreaterThan(r.before + 700); // 3 MiB: ~770 overflow pages
    expect(r.trimmed).toBeGreaterThan(700);
    expect(r.after).toBeLessThanOrEqual(r.before + 2);
    expect(r.same).toBe(true);
    expect(r.againOk).toBe(true);
    await page.close();
  }, 60_000);

  it('relaxed durability, create: false, and a bad durability option', async () => {
    const page = await tab();
    const r = await page.evaluate(async () => {
      const relaxed = api.indexedDBStorage({ durability: 'relaxed' });
      const s = await api.BTreeStore.open<string, unknown>({ path: 'relaxed', storage: relaxed });
      for (let i = 0; i < 500; i++) await s.setAsync(`k${i}`, i);
      await s.close();
      const t = await api.BTreeStore.open<string, unknown>({ path: 'relaxed', storage: relaxed, create: false });
      const size = t.size;
      const v = await t.getAsync('k123');
      await t.close();
      let missing: unknown;
      try {
        await api.BTreeStore.open({ path: 'never-made', storage: 'indexeddb', create: false });
      } catch (e) {
        missing = (e as { code?: string }).code;
      }
      const dbs = (await indexedDB.databases()).map((d) => d.name);
      let bad: unknown;
      try {
        api.indexedDBStorage({ durability: 'sometimes' as never });
      } catch (e) {
        bad = (e as { code?: string }).code;
      }
      return { size, v, missing, madeMissing: dbs.includes('adaptree:never-made'), bad };
    });
    expect(r).toEqual({ size: 500, v: 123, missing: 'INVALID_ARGUMENT', madeMissing: false, bad: 'INVALID_ARGUMENT' });
    await page.close();
  }, 60_000);
});

// The kill workload: batch i sets keys k(i*37+t mod 3000), t < 10, to i, deletes k(i*101 mod
// 3000) and sets '~batch' to i, then commits. The state after batch p is a pure function of p.
function batchModel(p: number): [string, unknown][] {
  const m = new Map<string, unknown>();
  for (let i = 0; i <= p; i++) {
    for (let t = 0; t < 10; t++) m.set(`k${String((i * 37 + t) % 3000).padStart(4, '0')}`, i);
    m.delete(`k${String((i * 101) % 3000).padStart(4, '0')}`);
    m.set('~batch', i);
  }
  return sorted(m);
}

describe('indexeddb: SIGKILL of the browser mid-workload', () => {
  const fx = servedFixture(repo, '/tests/ts/runtimes/idb/', 'idb-kill');

  it('reopens to exactly a committed state that includes every commit the page saw resolve (3 kills)', async () => {
    let b = await launchKillable(fx.profile, fx.url);
    let prefix = -1; // the store holds batches 0..prefix
    let lost = 0; // restarts after which Chromium had no database at all
    try {
      for (const [round, delay] of [0, 29, 97].entries()) {
        let lastResolved = -1;
        b.page.on('console', (m) => {
          const r = /^batch (\d+) committed$/.exec(m.text());
          if (r) lastResolved = Math.max(lastResolved, Number(r[1]));
        });
        const from = prefix + 1;
        void b.page
          .evaluate(async (from) => {
            // A 16 KiB log (a batch's frame is ~3 KB of deltas): every few commits checkpoint,
            // so kills land in both.
            const s = await api.BTreeStore.open<string, unknown>({ path: 'killed', storage: 'indexeddb', poolSize: 1 << 20, checkpointBytes: 16 << 10 });
            for (let i = from; ; i++) {
              for (let t = 0; t < 10; t++) await s.setAsync(`k${String((i * 37 + t) % 3000).padStart(4, '0')}`, i);
              await s.deleteAsync(`k${String((i * 101) % 3000).padStart(4, '0')}`);
              await s.setAsync('~batch', i);
              await s.commit();
              console.log(`batch ${i} committed`);
            }
          }, from)
          .catch(() => undefined);
        const seen = await killMidWorkload(b.proc, () => lastResolved, from + 20, delay);
        b = await launchKillable(fx.profile, fx.url);
        const got = await b.page.evaluate(async () => {
          let s: Awaited<ReturnType<typeof api.BTreeStore.open<string, unknown>>>;
          try {
            s = await api.BTreeStore.open<string, unknown>({ path: 'killed', storage: 'indexeddb', create: false });
          } catch (e) {
            if (/no store at/.test(String((e as Error)?.message))) return null;
            throw e;
          }
          const out: [string, unknown][] = [];
          for await (const e of s.entriesAsync()) out.push(e);
          await s.close();
          return out;
        });
        if (got === null) {
          // No database at all: Chromium reopened its IndexedDB without it (once in about six CI
          // runs, after kill 2; adaptree never deletes a database). Not a state of ours to check:
          // counted, logged, and the next round starts on a new store; twice fails the test.
          lost++;
          console.log(`kill ${round + 1}: batches ${from}..${seen} seen committed, Chromium reopened without the database`);
          expect(lost, 'Chromium lost the IndexedDB database after SIGKILL more than once').toBeLessThanOrEqual(1);
          prefix = -1;
          continue;
        }
        const at = Number(got.find(([k]) => k === '~batch')?.[1] ?? -1);
        console.log(`kill ${round + 1}: batches ${from}..${seen} seen committed, reopened at the state after batch ${at}`);
        expect(at).toBeGreaterThanOrEqual(seen); // every commit the page saw resolve is there
        expect(got).toEqual(batchModel(at)); // exactly the state after that commit, no mix
        prefix = at;
      }
    } finally {
      await b.close();
    }
  }, 240_000);
});
