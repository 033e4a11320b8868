// The durable-object backend in a real local workerd: a Worker with a SQLite-backed Durable
// Object namespace whose storage is a directory on disk (localDisk). The object holds a
// BTreeStore (durable-object-main.mjs) with a 1 MiB pool, so reads fault pages in through SQL.
// The test keeps the model: committed writes survive stopping and killing workerd (SIGTERM,
// SIGKILL) and restarting it on the same directory; uncommitted writes are visible before a
// kill -9 and gone after it, the last commit intact; a second open in the object is LOCKED.
// Needs the built package (dist/), which `npm test` builds first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bigStringSum as sumOf, opsFrom, sorted, workerdHarness, type Model } from './durable-object-harness.js';

// experimental: only for sql.setMaxPageCountForTest (the quota test).
const h = workerdHarness('durable-object-main.mjs', { className: 'IndexObject', binding: 'INDEX', uniqueKey: 'adaptree-durable-object-test' }, true);
const { call, start, stop, log } = h;
const model: Model = new Map();
const randomOps = opsFrom(20251117);
const expectModel = (what: string, m = model, obj = 'a') => h.expectModel(what, m, `obj=${obj}`);

describe('workerd Durable Object (SQLite storage on local disk)', () => {
  beforeAll(() => h.setUp());

  afterAll(async () => {
    await stop('SIGKILL');
    if (h.dir) rmSync(h.dir, { recursive: true, force: true });
  });

  it('commits random ops and reads them back; a second open in the object is LOCKED', async () => {
    for (let batch = 0; batch < 4; batch++) {
      const r = await call<{ size: number; uncommittedWrites: number }>('/apply', { ops: randomOps(5000, 30000, model), commit: true });
      expect(r).toEqual({ size: model.size, uncommittedWrites: 0 });
    }
    await expectModel('after the commits');
    // Small transactions, one request each: the latency of a request that writes and commits.
    const t0 = performance.now();
    for (let i = 0; i < 30; i++) await call('/apply', { ops: randomOps(1, 30000, model), commit: true });
    console.log(`durable-object: 30 requests of 1 write + commit, ${((performance.now() - t0) / 30).toFixed(1)} ms each`);
    expect(await call('/second-open')).toMatchObject({ name: 'LockedError', code: 'LOCKED' });
    // Another object of the namespace is another database: its store is empty and open.
    expect(await call('/entries?obj=other')).toEqual([]);
    const stats = await call<{ storage: string; commits: number }>('/stats');
    expect(stats.storage).toBe('durable-object');
    expect(stats.commits).toBeGreaterThanOrEqual(4);
    expect(readdirSync(join(h.dir, 'do-storage')).length).toBeGreaterThan(0);
  });

  it('survives stopping workerd (SIGTERM) and a restart on the same directory', async () => {
    await stop('SIGTERM');
    await start();
    await expectModel('after a restart');
    const stats = await call<{ misses: number; reads: number }>('/stats');
    expect(stats.misses).toBeGreaterThan(0); // the reopened store read its pages through SQL
    await call('/apply', { ops: randomOps(3000, 30000, model), commit: true });
    await expectModel('after more commits');
  });

  it('kill -9: the uncommitted writes are gone, the last commit is intact', async () => {
    await call('/apply', { ops: randomOps(2000, 30000, model), commit: true });
    const uncommitted = new Map(model);
    const r = await call<{ size: number; uncommittedWrites: number }>('/apply', { ops: randomOps(4000, 30000, uncommitted), commit: false });
    expect(r.size).toBe(uncommitted.size);
    expect(r.uncommittedWrites).toBeGreaterThan(3000); // (a delete of a missing key is no write)
    const visible = await call<[string, number | string][]>('/entries');
    expect(visible).toEqual(sorted(uncommitted)); // visible before the crash
    await stop('SIGKILL');
    await start();
    await expectModel('after kill -9');
  });

  it('close, reopen in the same process; kill -9 right after a commit keeps it', async () => {
    expect(await call('/close', {})).toEqual({ closed: true });
    await expectModel('after close and reopen');
    await call('/apply', { ops: randomOps(1000, 30000, model), commit: true });
    await stop('SIGKILL');
    await start();
    await expectModel('after kill -9 right after a commit');
  });

  it('a full database (SQLITE_FULL): the commit fails, the last commit stays', async () => {
    const quota: Model = new Map();
    await call('/apply?obj=quota', { ops: randomOps(500, 1000, quota), commit: true });
    const res = await fetch(`http://127.0.0.1:${h.port}/quota?obj=quota`, { method: 'POST', body: '{}' });
    const text = await res.text();
    console.log(`durable-object SQLITE_FULL: HTTP ${res.status}: ${text.slice(0, 300)}`);
    if (res.status === 200) {
      // The object survived the error: our mapping is visible.
      const r = JSON.parse(text) as Record<string, { name?: string; code?: string; message?: string }>;
      expect(r.unsupported).toBeUndefined();
      expect(r.commitError).toMatchObject({ name: 'QuotaExceededError', code: 'QUOTA_EXCEEDED' });
      expect(r.writeError).toMatchObject({ name: 'ReadOnlyError', code: 'READ_ONLY' });
    } else {
      // workerd resets an object whose SQL hit SQLITE_FULL: the request fails, the writes of
      // that event are rolled back, and the next request gets a fresh instance.
      expect(res.status).toBe(500);
      const logged = log();
      expect(logged).toMatch(/SQLITE_FULL/);
      // What the commit threw before the reset (the object logs it): our typed error.
      console.log(`durable-object quota log: ${/adaptree-quota-error .*/.exec(logged)?.[0]}`);
      expect(logged).toMatch(/adaptree-quota-error \{"name":"QuotaExceededError","code":"QUOTA_EXCEEDED"/);
    }
    // Reopened (in the same or a fresh instance, the cap gone): exactly the last commit.
    await expectModel('after SQLITE_FULL', quota, 'quota');
    await call('/apply?obj=quota', { ops: randomOps(500, 1000, quota), commit: true });
    await expectModel('writable again', quota, 'quota');
  });

  it('values far larger than the pool (12 MB, then 3 MB replacing it) commit through SQL and survive kill -9', async () => {
    await call('/big?obj=large', { key: 'big', n: 12e6, commit: true });
    await call('/big?obj=large', { key: 'other', n: 5e6, commit: true });
    await call('/big?obj=large', { key: 'big', n: 3e6, commit: true }); // the 12 MB chain goes back to the free list
    await call('/big?obj=large', { key: 'uncommitted', n: 4e6, commit: false });
    await stop('SIGKILL');
    await start();
    expect(await call('/value?obj=large&key=big')).toEqual({ length: 3e6, sum: sumOf(3e6) });
    expect(await call('/value?obj=large&key=other')).toEqual({ length: 5e6, sum: sumOf(5e6) });
    expect(await call('/value?obj=large&key=uncommitted')).toBeNull();
  });

  it('a store 4x its pool: page faults, spills, commits and checkpoints through SQL; kill -9 during uncommitted spills', async () => {
    const big: Model = new Map();
    const t0 = performance.now();
    for (let batch = 0; batch < 4; batch++) {
      await call('/apply?obj=big', { ops: randomOps(3000, 40000, big, 300), commit: true });
    }
    const tCommits = performance.now() - t0;
    await expectModel('big store', big, 'big');
    const stats = await call<{ misses: number; spills: number; checkpoints: number; data_bytes: number; log_bytes: number; fileBytes: number; databaseSize: number }>('/stats?obj=big');
    expect(stats.data_bytes).toBeGreaterThan(3 << 20); // the pool is 1 MiB
    // The log passed the backend's 8 MiB checkpoint threshold (the core's default is 64 MiB).
    expect(stats.checkpoints).toBeGreaterThan(0);
    expect(stats.log_bytes).toBeLessThan(12 << 20);
    expect(stats.misses).toBeGreaterThan(100);
    // Uncommitted writes large enough to spill dirty pages to the log, then kill -9.
    await call('/apply?obj=big', { ops: randomOps(4000, 40000, undefined, 300), commit: false });
    const after = await call<{ spills: number }>('/stats?obj=big');
    expect(after.spills).toBeGreaterThan(stats.spills);
    await stop('SIGKILL');
    await start();
    const t1 = performance.now();
    await expectModel('big store after kill -9 with spilled uncommitted pages', big, 'big');
    const tReopen = performance.now() - t1;
    await expectModel('the small store beside it', model, 'a');
    console.log(
      `durable-object big store: ${big.size} entries, 4 commits of 3000 ops in ${tCommits.toFixed(0)} ms, ` +
        `reopen + recovery + full read in ${tReopen.toFixed(0)} ms; data ${stats.data_bytes} B + log ${stats.log_bytes} B, ` +
        `SQLite database ${stats.databaseSize} B`,
    );
  });

  // A probe (session 29): ctx.storage.deleteAll() took the store's rows (and tables), another
  // store's open made the tables anew, and the first store's next commit wrote chunks beside no
  // file row and resolved: after a restart the store was empty. Now that commit fails.
  it('ctx.storage.deleteAll() under an open store: its next commit is IO_ERROR, not a silent loss', async () => {
    await call('/apply?obj=wiped', { ops: randomOps(2000, 30000, new Map() as Model), commit: true });
    expect(await call('/delete-all?obj=wiped', {})).toMatchObject({ commit: 'IO_ERROR' });
    await call('/close?obj=wiped', {}).catch(() => undefined);
    await stop('SIGKILL');
    await start();
    await expectModel('the wiped store, opened again', new Map(), 'wiped');
  });
});
