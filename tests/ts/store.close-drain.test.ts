// close() and the async writes under way on an asynchronous backend. A write call such as
// setManyAsync or deleteRangeAsync waits for pages between the steps that change the tree; one
// that close() stopped between two steps had changed part of what it was asked to, and the
// commit close() made (or one requested before close({ commit: false })) made that part durable
// while the call rejected CLOSED (a probe, session 33: 3 of a rejected batch's 3000 entries,
// 21,345 of 30,000 keys left by a rejected deleteRangeAsync of 24,000). A write whose backend
// never answered held close() and the store's lock for ever.
import { describe, expect, it } from 'vitest';
import { AbortedError, BTreeStore, type AsyncBackend } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { wasmFor } from './builds.js';
import { uniqueName } from './store-helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pad = (i: number) => 'k' + String(i).padStart(6, '0');
const N = 30000;

type Delay = { ms: number; stuck: boolean; stuckMany?: boolean; writeMs?: number };

/** async-memory whose page reads take `delay.ms` each, or never end while `delay.stuck`
 * (`stuckMany`: only batched reads, the read-ahead's); commits take `writeMs`. */
function slowStorage(delay: Delay): AsyncBackend {
  const inner = createAsyncMemoryStorage();
  const wait = async (many = false) => {
    if (delay.stuck || (many && delay.stuckMany === true)) await new Promise(() => {});
    if (delay.ms > 0) await sleep(delay.ms);
  };
  return {
    kind: 'async',
    name: 'slow-memory',
    async open(path, options) {
      const p = await inner.open(path, options);
      return {
        ...p,
        readPage: async (id: number) => (await wait(), p.readPage(id)),
        readPages: async (ids: readonly number[]) => (await wait(true), p.readPages!(ids)),
        writePages: async (...a: Parameters<typeof p.writePages>) => {
          if ((delay.writeMs ?? 0) > 0) await sleep(delay.writeMs!);
          return p.writePages(...a);
        },
        close: (...a: Parameters<typeof p.close>) => p.close(...a),
      };
    },
  } as AsyncBackend;
}

// (the st build: what is tested here is the store's TypeScript, the same on both builds)
describe.each(['st'] as const)('close() and async writes under way (%s)', (build) => {
  /** N committed entries of 100 bytes, then the store reopened on a 1 MiB pool (cold). */
  async function cold(delay: Delay) {
    const wasm = await wasmFor(build);
    const storage = slowStorage(delay);
    const path = uniqueName('drain');
    const open = () => BTreeStore.open<string, string>({ path, storage, keys: 'utf8', values: 'utf8', wasm, poolSize: 1 << 20 });
    const s = await open();
    await s.setManyAsync(Array.from({ length: N }, (_, i) => [pad(i), 'v'.repeat(100)] as const));
    await s.close();
    return { open, s: await open() };
  }
  async function contents(open: () => Promise<BTreeStore<string, string>>) {
    const t = await open();
    await t.checkInvariantsAsync();
    let n = 0, fresh = 0;
    for await (const [, v] of t.entriesAsync()) {
      n++;
      if (v === 'NEW') fresh++;
    }
    const extra = await t.getAsync('extra');
    await t.close();
    return { n, fresh, extra };
  }

  it('close({ commit: false }) after a commit was requested: the calls before it finish, whole, and are in it', async () => {
    const da = { ms: 0, stuck: false }, db = { ms: 0, stuck: false };
    const a = await cold(da);
    da.ms = 2;
    const setMany = a.s.setManyAsync(Array.from({ length: 600 }, (_, i) => [pad((i * 7919) % N), 'NEW'] as const));
    const committedA = a.s.commit();
    const b = await cold(db);
    db.ms = 2;
    const removed = b.s.deleteRangeAsync({ gte: pad(1000), lt: pad(5000) });
    const committedB = b.s.commit();
    await sleep(60);
    await Promise.all([a.s.close({ commit: false }), b.s.close({ commit: false })]);
    await expect(setMany).resolves.toBe(a.s);
    await expect(committedA).resolves.toBeUndefined();
    await expect(removed).resolves.toBe(4000);
    await expect(committedB).resolves.toBeUndefined();
    da.ms = db.ms = 0;
    expect(await contents(a.open)).toEqual({ n: N, fresh: 600, extra: undefined });
    expect(await contents(b.open)).toEqual({ n: N - 4000, fresh: 0, extra: undefined });
  });

  it('close() waits for a write while its slow backend answers (past 5 s), and commits it whole', async () => {
    // 3 keys far apart: 18 page reads on this cold pool (session 33), 350 ms a read
    const delay = { ms: 0, stuck: false };
    const { open, s } = await cold(delay);
    delay.ms = 350;
    const keys = Array.from({ length: 3 }, (_, i) => pad(i * 10000 + 7));
    const setMany = s.setManyAsync(keys.map((k) => [k, 'NEW'] as const));
    await sleep(100);
    const t0 = Date.now();
    await s.close();
    const waited = Date.now() - t0;
    await expect(setMany).resolves.toBe(s);
    delay.ms = 0;
    expect(waited).toBeGreaterThan(5000);  // (the old wait gave up at 5 s and committed a part)
    expect(await contents(open)).toEqual({ n: N, fresh: 3, extra: undefined });
  }, 60_000);

  it('close() gives up on a write whose backend never answers: ABORTED if it changed the tree, nothing of it committed; else the writes before it committed; the lock is released', async () => {
    // torn: the batch applied its resident entries, then waits for ever
    const dt = { ms: 0, stuck: false };
    const t = await cold(dt);
    await t.s.setAsync('extra', 'x');  // a whole write, not committed
    dt.stuck = true;
    const torn = t.s.setManyAsync(Array.from({ length: 3000 }, (_, i) => [pad((i * 7919) % N), 'NEW'] as const));
    void torn.catch(() => {});
    // untouched: a set whose leaf is not in the pool waits for ever before changing anything
    const du = { ms: 0, stuck: false };
    const u = await cold(du);
    await u.s.setAsync('extra', 'x');
    du.stuck = true;
    const untouched = u.s.setAsync(pad(22345), 'NEW');
    void untouched.catch(() => {});
    await sleep(100);
    const [ct, cu] = await Promise.all([
      t.s.close().then(() => 'resolved', (e: unknown) => e),
      u.s.close().then(() => 'resolved', (e: unknown) => e),
    ]);
    expect(ct).toBeInstanceOf(AbortedError);
    expect((ct as AbortedError).code).toBe('ABORTED');
    expect((ct as Error).message).toContain('nothing since the last commit was committed');
    expect(cu).toBe('resolved');
    // the calls close() gave up on reject (they stayed pending for ever): CLOSED, the batch with
    // the entries it had applied
    const tornErr = await torn.then(() => undefined, (e: unknown) => e as Error & { code?: string; applied?: number });
    expect(tornErr?.code).toBe('CLOSED');
    expect(tornErr?.applied).toBeGreaterThan(0);
    await expect(untouched).rejects.toMatchObject({ code: 'CLOSED' });
    dt.stuck = false;
    du.stuck = false;
    // reopened (the lock was released): the torn store at its last commit, the other with `extra`
    expect(await contents(t.open)).toEqual({ n: N, fresh: 0, extra: undefined });
    expect(await contents(u.open)).toEqual({ n: N + 1, fresh: 0, extra: 'x' });
  }, 60_000);

  it('close() waits for a write queued behind a slow read or a slow commit; gives up on one whose read-ahead never comes (a probe, session 33)', async () => {
    // queued behind a getManyAsync whose pages come in 60 ms each (~8 s): it was rejected at 5 s
    const dq: Delay = { ms: 0, stuck: false };
    const q = await cold(dq);
    dq.ms = 60;
    const read = q.s.getManyAsync(Array.from({ length: 200 }, (_, i) => pad((i * 7919) % N)));
    await sleep(20);
    const queued = q.s.setAsync('extra', 'x');
    // behind a commit whose pages take 6 s to write (it waited at the commit's window, no step)
    const dc: Delay = { ms: 0, stuck: false };
    const c = await cold(dc);
    await c.s.setAsync('a', 'NEW');
    dc.writeMs = 6000;
    const committing = c.s.commit();
    await sleep(50);
    const behind = c.s.setAsync('extra', 'x');
    // a deleteRangeAsync whose read-ahead (batched reads) never answers: it, and a call queued
    // behind it, stayed pending after close() gave up (#supplyRun waited outside it)
    const dr: Delay = { ms: 0, stuck: false };
    const r = await cold(dr);
    dr.stuckMany = true;
    const range = r.s.deleteRangeAsync({ gte: pad(1000), lt: pad(25000) });
    void range.catch(() => {});
    await sleep(300);
    const after = r.s.getAsync(pad(5));
    void after.catch(() => {});
    await sleep(20);
    const [cq, cc, cr] = await Promise.all(
      [q, c, r].map((x) => x.s.close().then(() => 'resolved', (e: unknown) => (e as { code?: string }).code)),
    );
    expect([cq, cc]).toEqual(['resolved', 'resolved']);
    expect(await read).toHaveLength(200);
    await expect(queued).resolves.toBe(q.s);
    await expect(committing).resolves.toBeUndefined();
    await expect(behind).resolves.toBe(c.s);
    expect(cr).toBe('ABORTED');  // the range had removed part of its keys
    await expect(range).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(after).rejects.toMatchObject({ code: 'CLOSED' });
    dq.ms = 0;
    dc.writeMs = 0;
    dr.stuckMany = false;
    expect(await contents(q.open)).toEqual({ n: N + 1, fresh: 0, extra: 'x' });
    expect(await contents(c.open)).toEqual({ n: N + 2, fresh: 1, extra: 'x' });
    expect(await contents(r.open)).toEqual({ n: N, fresh: 0, extra: undefined });
  }, 60_000);
});
