// onProgress on long work (ts/src/progress.ts): bulk loads (BTreeMap/BTreeStore setMany,
// setManyAsync) and store opens that recover a log. Reports come every PROGRESS_EVERY entries /
// PROGRESS_BYTES bytes and end with done === total; a callback that throws stops the work with
// AbortedError (its error as cause) and changes nothing; a callback that is not a function is
// an InvalidArgumentError.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { copyFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AbortedError, BTreeMap, BTreeStore, InvalidArgumentError, ReentrancyError, init, type Progress } from '../../ts/src/index.js';
import { PROGRESS_BYTES, PROGRESS_EVERY } from '../../ts/src/progress.js';
import { tempDir, uniqueName } from './store-helpers.js';

const tmp = tempDir('progress');
beforeAll(async () => {
  await init();
});
afterAll(() => tmp.cleanup());

const N = 3 * PROGRESS_EVERY + 123;
const sortedBatch = (n: number, tag = 'v'): [string, string][] =>
  Array.from({ length: n }, (_, i) => [`k${String(i).padStart(7, '0')}`, `${tag}${i}`]);

/** A callback that records what it sees and throws at call number `at` (1-based), if given. */
function recorder(at?: number, err: unknown = new Error('stop here')) {
  const seen: Progress[] = [];
  return {
    seen,
    cb: (p: Progress) => {
      seen.push({ ...p });
      if (seen.length === at) throw err;
    },
  };
}

function expectAborted(f: () => unknown, cause: unknown): void {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(AbortedError);
  expect(caught).toMatchObject({ code: 'ABORTED', name: 'AbortedError' });
  expect((caught as Error).cause).toBe(cause);
}

describe('bulk load progress (setMany)', () => {
  it('reports every PROGRESS_EVERY entries, ends with done === total, and loads the same tree', () => {
    const batch = sortedBatch(N);
    const r = recorder();
    const m = new BTreeMap<string, string>();
    m.setMany(batch, { onProgress: r.cb });
    expect(r.seen.map((p) => p.done)).toEqual([0, PROGRESS_EVERY, 2 * PROGRESS_EVERY, 3 * PROGRESS_EVERY, N]);
    expect(r.seen.every((p) => p.phase === 'bulk-load' && p.total === N)).toBe(true);
    const plain = new BTreeMap<string, string>(batch);
    expect(m.size).toBe(N);
    expect([...m.entries()]).toEqual([...plain.entries()]);
    // Sorted into an empty map: bulk loaded either way (same node count as without a callback).
    expect(m.stats().nodes).toBe(plain.stats().nodes);
    m.free();
    plain.free();
  });

  it('a small batch gets two calls (0 and n); an empty one none', () => {
    const r = recorder();
    const m = new BTreeMap<string, string>();
    m.setMany(sortedBatch(10), { onProgress: r.cb });
    expect(r.seen).toEqual([{ phase: 'bulk-load', done: 0, total: 10 }, { phase: 'bulk-load', done: 10, total: 10 }]);
    m.setMany([], { onProgress: r.cb });
    expect(r.seen.length).toBe(2);
    m.free();
  });

  it('a throwing callback aborts with AbortedError and the map is unchanged (first, middle and last call)', () => {
    for (const at of [1, 3, 5]) {
      const m = new BTreeMap<string, string>([['a', 'kept'], ['k0000005', 'old']]);
      const err = new Error(`stop at call ${at}`);
      const r = recorder(at, err);
      expectAborted(() => m.setMany(sortedBatch(N, 'new'), { onProgress: r.cb }), err);
      expect(r.seen.length).toBe(at);
      expect([...m.entries()]).toEqual([['a', 'kept'], ['k0000005', 'old']]);
      // Still usable, with or without a callback.
      m.setMany(sortedBatch(100), { onProgress: () => undefined });
      expect(m.size).toBe(101);
      m.checkInvariants();
      m.free();
    }
    // Into an empty map (the bulk-load path): still empty after the abort.
    const empty = new BTreeMap<string, string>();
    expectAborted(() => empty.setMany(sortedBatch(N), { onProgress: () => { throw 'a string'; } }), 'a string');
    expect(empty.size).toBe(0);
    empty.free();
  });

  it('a callback that calls into adaptree aborts (ReentrancyError as cause), map unchanged', () => {
    const m = new BTreeMap<string, string>([['x', '1']]);
    let caught: unknown;
    try {
      m.setMany(sortedBatch(10), { onProgress: () => void m.get('x') });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(AbortedError);
    expect((caught as Error).cause).toBeInstanceOf(ReentrancyError);
    expect([...m.entries()]).toEqual([['x', '1']]);
    m.free();
  });

  it('onProgress that is not a function: InvalidArgumentError, nothing written', () => {
    const m = new BTreeMap<string, string>();
    expect(() => m.setMany(sortedBatch(5), { onProgress: 42 as never })).toThrow(InvalidArgumentError);
    expect(m.size).toBe(0);
    m.free();
  });

  it('BTreeStore.setMany and setManyAsync report too; an abort leaves the store as committed', async () => {
    for (const storage of ['memory', 'async-memory'] as const) {
      const path = uniqueName(`bulk-${storage}`);
      let s = await BTreeStore.open<string, string>({ path, storage });
      const r = recorder();
      await s.setManyAsync(sortedBatch(N), { onProgress: r.cb });
      expect(r.seen.at(-1)).toEqual({ phase: 'bulk-load', done: N, total: N });
      expect(r.seen.length).toBeGreaterThanOrEqual(5);
      await s.commit();
      const err = new Error('no');
      await expect(s.setManyAsync(sortedBatch(N, 'changed'), { onProgress: recorder(2, err).cb })).rejects.toMatchObject({ code: 'ABORTED', cause: err });
      if (storage === 'memory') expectAborted(() => s.setMany([['zz', 'x']], { onProgress: recorder(1, err).cb }), err);
      expect(await s.getAsync('k0000007')).toBe('v7');
      expect(await s.hasAsync('zz')).toBe(false);
      await s.commit();
      await s.close();
      s = await BTreeStore.open<string, string>({ path, storage, create: false });
      expect(s.size).toBe(N);
      expect(await s.getAsync(`k${String(N - 1).padStart(7, '0')}`)).toBe(`v${N - 1}`);
      await s.close();
    }
  });
});

describe('open progress (recovery)', () => {
  /** A store on node files whose commits are only in its log: a child process (dist/) writes
   * and commits 30,000 entries (~3 MB of log) and exits without close(), as a crash would. */
  function storeWithLog(): string {
    const path = join(tmp.dir, `${uniqueName('open')}.db`);
    const child = `
      const { init, BTreeStore } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});
      await init();
      const s = await BTreeStore.open({ path: ${JSON.stringify(path)}, keys: 'number', values: 'utf8' });
      for (let i = 0; i < 30000; i++) s.set(i, 'v'.repeat(100));
      await s.commit();
      process.exit(0);
    `;
    execFileSync(process.execPath, ['--input-type=module', '-e', child], { stdio: 'pipe' });
    expect(statSync(`${path}-log`).size).toBeGreaterThan(2.5 * PROGRESS_BYTES);
    return path;
  }

  it('reports bytes read while recovering, nondecreasing, ending with done === total', async () => {
    const path = storeWithLog();
    const r = recorder();
    const s = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8', onProgress: r.cb });
    expect(r.seen.length).toBeGreaterThan(2); // a report per MiB of the ~3 MB log, and the last
    expect(r.seen.every((p) => p.phase === 'open')).toBe(true);
    for (let i = 1; i < r.seen.length; i++) expect(r.seen[i]!.done).toBeGreaterThanOrEqual(r.seen[i - 1]!.done);
    expect(r.seen.at(-1)!.done).toBe(r.seen.at(-1)!.total);
    // One total for the whole open, never passed (the last call said 32 bytes more than the
    // others, session 24).
    expect(r.seen.every((p) => p.total === r.seen[0]!.total && p.done <= p.total)).toBe(true);
    expect(s.size).toBe(30000);
    await s.close();
  });

  // A new-user probe (session 24): a new store got one call, { done: 0, total: 0 }, and the
  // README's `bar(p.done / p.total)` drew NaN.
  it('a new store (nothing to read) reports nothing; a reopen reports a fraction from 0 to 1', async () => {
    for (const storage of ['node', 'memory'] as const) {
      const path = storage === 'node' ? join(tmp.dir, `${uniqueName('fresh')}.db`) : uniqueName('fresh');
      const r = recorder();
      let s = await BTreeStore.open<string, string>({ path, storage, onProgress: r.cb });
      expect(r.seen, storage).toEqual([]);
      s.set('a', 'b');
      await s.close();
      s = await BTreeStore.open<string, string>({ path, storage, create: false, onProgress: r.cb });
      expect(r.seen.length, storage).toBeGreaterThan(0);
      expect(r.seen.every((p) => p.total > 0 && p.done >= 0 && p.done <= p.total && p.total === r.seen[0]!.total), JSON.stringify(r.seen)).toBe(true);
      expect(r.seen.at(-1)!.done).toBe(r.seen.at(-1)!.total);
      expect(s.get('a')).toBe('b');
      await s.close();
    }
  });

  it('a throwing callback (mid-recovery or at the last call): AbortedError, the store closed and unlocked, its data intact', async () => {
    for (const at of [2, 'last'] as const) {
      const path = storeWithLog();
      // How many calls a full open makes (on a copy), to throw at the last one.
      let total = 0;
      if (at === 'last') {
        const probe = join(tmp.dir, `${uniqueName('probe')}.db`);
        copyFileSync(path, probe);
        copyFileSync(`${path}-log`, `${probe}-log`);
        const r0 = recorder();
        await (await BTreeStore.open<number, string>({ path: probe, keys: 'number', values: 'utf8', onProgress: r0.cb })).close();
        total = r0.seen.length;
        expect(total).toBeGreaterThan(2);
      }
      const err = new Error(`abort at ${at}`);
      const r = recorder(at === 'last' ? total : at, err);
      await expect(BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8', onProgress: r.cb }))
        .rejects.toMatchObject({ name: 'AbortedError', code: 'ABORTED', cause: err });
      // Not locked, not damaged: an open without a callback recovers everything.
      const s = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8' });
      expect(s.size).toBe(30000);
      expect(s.get(29999)).toBe('v'.repeat(100));
      s.checkInvariants();
      await s.close();
    }
  });

  // A new-user probe (session 23): the callback ran inside the wasm call that opens the store,
  // and calls into the same instance from it ran too (59 nested setMany calls during recovery);
  // and total counted the data file, which recovery does not read.
  it('a call into adaptree from the callback is ReentrancyError (the open stops, ABORTED); total is the log', async () => {
    const path = storeWithLog();
    const other = new BTreeMap<number, number>();
    const r = recorder();
    const e = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8', onProgress: (p) => { r.cb(p); other.set(1, 1); } }).then(() => undefined, (x: unknown) => x);
    expect(e).toMatchObject({ code: 'ABORTED', cause: expect.objectContaining({ code: 'REENTRANT' }) });
    expect(other.size).toBe(0);
    other.free();
    const r2 = recorder();
    const s = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8', onProgress: r2.cb });
    expect(r2.seen[0]!.total).toBeLessThanOrEqual(statSync(`${path}-log`).size + 4096);
    expect(s.size).toBe(30000);
    await s.close();
  });

  it('onProgress that is not a function: InvalidArgumentError, the store not left locked', async () => {
    const path = storeWithLog();
    await expect(BTreeStore.open({ path, onProgress: 'yes' as never })).rejects.toBeInstanceOf(InvalidArgumentError);
    const s = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8' });
    expect(s.size).toBe(30000);
    await s.close();
  });
});
