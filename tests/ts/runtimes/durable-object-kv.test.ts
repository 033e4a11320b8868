// The asynchronous durableObjectKvStorage backend in a real local workerd: a Worker with a
// key-value-backed Durable Object namespace (no SQLite: enableSql off) stored on disk
// (localDisk). The object holds BTreeStores (durable-object-kv-main.mjs) with a 1 MiB pool, so
// reads fault pages in through the key-value API (await, then retry). The test keeps the model:
// committed writes survive stopping and killing workerd (SIGTERM, SIGKILL) and restarting it on
// the same directory; uncommitted writes are visible before a kill -9 and gone after it; values
// far larger than the pool; a second open is LOCKED; the SQLite backend on this object is an
// INVALID_ARGUMENT naming this one; a reader is LOCKED beside the writer and reads the last
// commit after it closed; list() and remove() of stores.
// Needs the built package (dist/), which `npm test` builds first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { bigStringSum as sumOf, opsFrom, sorted, workerdHarness, type Model } from './durable-object-harness.js';

const h = workerdHarness('durable-object-kv-main.mjs', { className: 'KvIndexObject', binding: 'INDEX', uniqueKey: 'adaptree-durable-object-kv-test', sql: false });
const { call, start, stop } = h;
const model: Model = new Map();
const randomOps = opsFrom(20261126);
const expectModel = (what: string, m = model, q = 'obj=a') => h.expectModel(what, m, q);

describe('workerd Durable Object, key-value storage (durableObjectKvStorage, asynchronous)', () => {
  beforeAll(() => h.setUp());

  afterAll(async () => {
    await stop('SIGKILL');
    if (h.dir) rmSync(h.dir, { recursive: true, force: true });
  });

  it('commits random ops and reads them back; a second open is LOCKED; the SQLite backend names this one', async () => {
    for (let batch = 0; batch < 4; batch++) {
      const r = await call<{ size: number; uncommittedWrites: number }>('/apply', { ops: randomOps(3000, 30000, model, 60), commit: true });
      expect(r).toEqual({ size: model.size, uncommittedWrites: 0 });
    }
    await expectModel('after the commits');
    expect(await call('/second-open')).toMatchObject({ name: 'LockedError', code: 'LOCKED' });
    const sql = await call<{ code: string; message: string }>('/sql-backend');
    expect(sql.code, sql.message).toBe('INVALID_ARGUMENT');
    expect(sql.message).toMatch(/durableObjectKvStorage/);
    const stats = await call<{ storage: string; commits: number; data_bytes: number }>('/stats');
    expect(stats.storage).toBe('durable-object-kv');
    expect(stats.commits).toBeGreaterThanOrEqual(4);
    expect(await call('/entries?obj=other')).toEqual([]); // another object: another storage
  });

  it('a reader (readOnly) while the writer is open is LOCKED; after close it reads the last commit and writes nothing', async () => {
    expect(await call('/read-only')).toEqual({ code: 'LOCKED' });
    expect(await call('/close', {})).toEqual({ closed: true });
    expect(await call('/read-only')).toEqual({ entries: sorted(model), write: 'READ_ONLY' });
  });

  it('survives stopping workerd (SIGTERM) and a restart; pages fault in through the key-value API', async () => {
    await stop('SIGTERM');
    await start();
    await expectModel('after a restart');
    const stats = await call<{ misses: number }>('/stats');
    expect(stats.misses).toBeGreaterThan(50); // 1 MiB pool: the full read faulted pages in
    await call('/apply', { ops: randomOps(2000, 30000, model, 60), commit: true });
    await expectModel('after more commits');
  });

  it('kill -9: the uncommitted writes are gone, the last commit is intact', async () => {
    await call('/apply', { ops: randomOps(1000, 30000, model, 60), commit: true });
    const uncommitted = new Map(model);
    const r = await call<{ size: number; uncommittedWrites: number }>('/apply', { ops: randomOps(3000, 30000, uncommitted, 60), commit: false });
    expect(r.size).toBe(uncommitted.size);
    expect(await call('/entries')).toEqual(sorted(uncommitted)); // visible before the crash
    await stop('SIGKILL');
    await start();
    await expectModel('after kill -9');
  });

  it('values far larger than the pool (8 MB, then 2 MB replacing it) commit and survive kill -9', async () => {
    await call('/big?obj=large', { key: 'big', n: 8e6, commit: true });
    await call('/big?obj=large', { key: 'big', n: 2e6, commit: true });
    await call('/big?obj=large', { key: 'uncommitted', n: 3e6, commit: false });
    await stop('SIGKILL');
    await start();
    expect(await call('/value?obj=large&key=big')).toEqual({ length: 2e6, sum: sumOf(2e6) });
    expect(await call('/value?obj=large&key=uncommitted')).toBeNull();
  });

  it('deleting the value written last deletes the keys of the pages past the store\'s new end, in its commit', async () => {
    await call('/apply?obj=shrink', { ops: [['a', 1], ['b', 2]], commit: true });
    const before = await call<number>('/page-keys?obj=shrink');
    await call('/big?obj=shrink', { key: 'big', n: 6e6, commit: true });
    const grown = await call<number>('/page-keys?obj=shrink');
    await call('/apply?obj=shrink', { ops: [['big', null]], commit: true });
    const after = await call<number>('/page-keys?obj=shrink');
    expect(grown).toBeGreaterThan(before + 1400); // 6 MB of UTF-8: ~1470 overflow pages
    expect(after).toBeLessThanOrEqual(before + 2);
    // After a restart (a new backend object: it reads the old end from the stored page 0).
    await call('/big?obj=shrink', { key: 'big2', n: 2e6, commit: true });
    await stop('SIGTERM');
    await start();
    await call('/apply?obj=shrink', { ops: [['big2', null]], commit: true });
    expect(await call<number>('/page-keys?obj=shrink')).toBeLessThanOrEqual(before + 2);
    await expectModel('the small records beside', new Map([['a', 1], ['b', 2]]) as Model, 'obj=shrink');
  });

  it('several stores in one object: list() names them, remove() deletes one and leaves the others', async () => {
    const other = new Map() as Model;
    await call('/apply?obj=multi&path=first', { ops: randomOps(500, 5000, other), commit: true });
    const second = new Map() as Model;
    await call('/apply?obj=multi&path=second:one', { ops: randomOps(500, 5000, second), commit: true });
    expect(await call('/stores?obj=multi')).toEqual(['first', 'second:one']);
    await call('/remove?obj=multi&path=first', {});
    expect(await call('/stores?obj=multi')).toEqual(['second:one']);
    await expectModel('the store beside the removed one', second, 'obj=multi&path=second:one');
    await expectModel('the removed store, opened again: empty', new Map(), 'obj=multi&path=first');
  });

  // A probe (session 29): ctx.storage.deleteAll() under an open store took its pages, its next
  // commit wrote the few pages it changed and resolved, and after a restart every read of the
  // store was CORRUPT ("page 254 is missing"). Now that commit fails and writes nothing.
  it('ctx.storage.deleteAll() under an open store: its next commit is IO_ERROR, and a reopen is an empty store', async () => {
    await call('/apply?obj=wiped', { ops: randomOps(2000, 30000, new Map() as Model, 60), commit: true });
    expect(await call('/delete-all?obj=wiped', {})).toEqual({ commit: 'IO_ERROR' });
    await call('/close?obj=wiped', {}).catch(() => undefined);
    await stop('SIGKILL');
    await start();
    await expectModel('the wiped store, opened again', new Map(), 'obj=wiped');
  });
});
