// setManyAsync on an asynchronous backend with data larger than the pool: each page fault
// ends the core's call after the entries before it; the retry resumes there. Before, every
// fault re-applied the whole batch, so the page reads grew with faults x batch (8k entries on a
// 1 MiB pool took over a minute). The test counts the backend's page reads, not time.
import { describe, expect, it } from 'vitest';
import { BTreeStore, PageFaultError } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { onReads, uniqueName, wrapPages } from './store-helpers.js';
import { SplitMix } from './store-rng.js';

describe.each(REAL_BUILDS)('setManyAsync larger than the pool (%s)', (build) => {
  it('applies every entry with page reads bounded by the entries (not faults x batch), commits', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('batch');
    const value = (k: number, round: number) => `${round}:${k}:`.padEnd(120, 'v');
    const open = () => BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize: 1 << 20 });
    let s = await open();
    const r = new SplitMix(7);
    const next = () => r.next() / 2 ** 32;
    const keys = Array.from({ length: 8000 }, () => Math.floor(next() * 1e9));
    await s.setManyAsync(keys.map((k) => [k, value(k, 0)]));
    await s.commit();
    await s.close();
    // Reopened with a cold pool (the data is ~2 MiB, the pool 1 MiB): a second batch over the
    // same keys in random order faults on most leaves, several times over as the pool cycles.
    s = await open();
    const reads0 = storage.counters.reads;
    const shuffled = keys.slice().sort(() => next() - 0.5);
    await s.setManyAsync(shuffled.map((k) => [k, value(k, 1)]));
    const reads = storage.counters.reads - reads0;
    // Without resuming, this was tens of thousands of reads; resuming, it is bounded by
    // a page read per entry at worst (each entry faults at most once on its own leaf path).
    expect(reads).toBeGreaterThan(0);
    console.log(`setManyAsync of ${keys.length} entries on a cold 1 MiB pool: ${reads} page reads`);
    expect(reads).toBeLessThanOrEqual(2 * keys.length);
    await s.commit();
    await s.close();
    s = await open();
    expect(await s.getManyAsync(keys)).toEqual(keys.map((k) => value(k, 1)));
    await s.close();
  }, 120_000);

  it('a large value on a cold pool comes in a few reads, not a read per page (overflow chains read ahead)', async () => {
    const wasm = await wasmFor(build);
    const base = createAsyncMemoryStorage();
    // Counts the backend's read requests (round trips), not pages.
    let requests = 0;
    const storage = onReads(base, () => requests++);
    const path = uniqueName('large');
    const open = () => BTreeStore.open<string, Uint8Array>({ path, storage, values: 'bytes', wasm, poolSize: 1 << 20 });
    const big = new Uint8Array(6e6);
    for (let i = 0; i < big.length; i += 997) big[i] = i % 251;
    let s = await open();
    for (let i = 0; i < 300; i++) await s.setAsync(`k${i}`, new Uint8Array([i]));
    await s.setAsync('big', big);
    await s.commit();
    await s.close();
    s = await open();
    const r0 = requests;
    const got = (await s.getAsync('big'))!;
    const reads = requests - r0;
    expect(got.length).toBe(big.length);
    expect(Buffer.compare(Buffer.from(got), Buffer.from(big))).toBe(0);
    // ~1470 overflow pages: one request per page before; in runs that double up to 256 now.
    console.log(`getAsync of a ${big.length} B value on a cold 1 MiB pool: ${reads} read requests`);
    expect(reads).toBeLessThan(40);
    // The rest of the store is intact and reads as before.
    expect(await s.getAsync('k7')).toEqual(new Uint8Array([7]));
    await s.setAsync('big2', big.subarray(1e6));
    await s.commit();
    await s.close();
    // getManyAsync of two values each larger than the pool: a fault in the second one's chain
    // answered none of the keys, so the batch began again with the first, whose pages the second
    // had evicted, for ever (two 20 MB values on a 1 MiB pool never finished).
    s = await open();
    const r1 = requests;
    const both = await s.getManyAsync(['big', 'k3', 'big2']);
    expect(both.map((v) => v!.length)).toEqual([big.length, 1, big.length - 1e6]);
    expect(Buffer.compare(Buffer.from(both[2]!), Buffer.from(big.subarray(1e6)))).toBe(0);
    expect(requests - r1).toBeLessThan(80);
    await s.close();
    // Iterating over them: the retry of an iterator is two calls (seek, then a batch), and
    // supplying pages for the batch evicted the pages the seek had fixed, then those evicted
    // the value's: thousands of faults for two 20 MB values; now a run's worth.
    s = await open();
    const r2 = requests;
    let seen = 0, bytes = 0;
    for await (const [, v] of s.entriesAsync()) {
      seen++;
      bytes += v.length;
    }
    expect([seen, bytes]).toEqual([302, 300 + 2 * big.length - 1e6]);
    expect(requests - r2).toBeLessThan(80);
    await s.checkInvariantsAsync();
    // Replacing it (its old chain is freed, page by page) and reading the new value back.
    await s.setAsync('big', big.subarray(0, 1e6));
    await s.commit();
    await s.close();
    s = await open();
    expect((await s.getAsync('big'))!.length).toBe(1e6);
    await s.close();
  }, 120_000);

  it('a sync call on the async store still reports the fault with the entries applied', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('batch-sync');
    let s = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize: 1 << 20 });
    await s.setManyAsync(Array.from({ length: 6000 }, (_, i) => [i * 3, 'x'.repeat(200)] as const));
    await s.commit();
    await s.close();
    s = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize: 1 << 20 });
    let err: unknown;
    try {
      s.setMany(Array.from({ length: 6000 }, (_, i) => [i * 3 + 1, 'y'] as const));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PageFaultError);
    const f = err as PageFaultError;
    expect(f.code).toBe('NEED_PAGE');
    expect(typeof f.applied).toBe('number');
    // The entries reported applied are there (and the next one is not yet).
    for (let i = 0; i < f.applied!; i++) expect(await s.getAsync(i * 3 + 1)).toBe('y');
    expect(await s.getAsync(f.applied! * 3 + 1)).toBeUndefined();
    await s.close();
  }, 120_000);
});

describe.each(REAL_BUILDS)("a commit's page images on an async backend (%s)", (build) => {
  it('come as arrays of their own, or as views of one copy to a backend that asks (viewsOfOneCopy), and either way commit the same pages', async () => {
    const wasm = await wasmFor(build);
    for (const views of [false, true]) {
      const mem = createAsyncMemoryStorage();
      const seen: { owns: boolean; buffer: ArrayBufferLike; length: number }[][] = [];
      // the async-memory backend copies what it keeps, so it may take views
      const storage = wrapPages(
        mem,
        'recording',
        (images, write) => {
          seen.push(images.map(([, a]) => ({ owns: a.byteOffset === 0 && a.buffer.byteLength === a.length, buffer: a.buffer, length: a.length })));
          return write(images);
        },
        views ? { viewsOfOneCopy: true } : {},
      );
      const path = uniqueName('views');
      let s = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm });
      for (let round = 0; round < 3; round++) {
        await s.setManyAsync(Array.from({ length: 3000 }, (_, i) => [i * 7 + round, `${round}:${i}`.padEnd(60, '.')]));
        await s.commit();
      }
      await s.close();
      expect(seen.length).toBe(3);
      for (const images of seen) {
        expect(images.length).toBeGreaterThan(10);
        for (const im of images) expect(im.length).toBe(4096);
        if (views) {
          expect(images.every((im) => !im.owns)).toBe(true);
          expect(new Set(images.map((im) => im.buffer)).size).toBe(1);
        } else {
          expect(images.every((im) => im.owns)).toBe(true);
        }
      }
      s = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, create: false });
      expect(s.size).toBe(9000);
      for (let round = 0; round < 3; round++) for (const i of [0, 1234, 2999]) expect(await s.getAsync(i * 7 + round)).toBe(`${round}:${i}`.padEnd(60, '.'));
      await s.close();
    }
  });
});

// A new-user probe (session 22): keys written one at a time, the store reopened cold, then
// deleteAsync key by key (or deleteRangeAsync) never settled: a delete faulted in the middle of
// its change, and each retry was told NEED_PAGE for a page already supplied.
describe.each(REAL_BUILDS)('deletes on a cold async store (%s)', (build) => {
  it('deleteAsync in key order and deleteRangeAsync complete', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('deletes');
    const key = (i: number) => 'k' + String(i).padStart(5, '0');
    const fill = async () => {
      const s = await BTreeStore.open({ path, storage, wasm, poolSize: 64 << 20 });
      for (let i = 0; i < 3000; i++) await s.setAsync(key(i), 'v'.repeat(500));
      await s.close();
      return BTreeStore.open({ path, storage, wasm, poolSize: 64 << 20 });
    };
    let s = await fill();
    for (let i = 0; i < 3000; i++) expect(await s.deleteAsync(key(i))).toBe(true);
    expect(s.size).toBe(0);
    await s.close();
    s = await fill();
    expect(await s.deleteRangeAsync({ gte: key(10), lt: key(2990) })).toBe(2980);
    expect(s.size).toBe(20);
    const left: string[] = [];
    for await (const k of s.keysAsync()) left.push(k as string);
    expect(left).toEqual([...Array.from({ length: 10 }, (_, i) => key(i)), ...Array.from({ length: 10 }, (_, i) => key(2990 + i))]);
    await s.close();
  }, 60_000);
});

// Iterators resume after the last key returned: after a change to the map mid-batch and a page
// fault on the retry, keys that are objects (here bytes) must still resume there, not after
// the end of the batch they were in (an iterator that seeks for every batch, session 22).
describe.each(REAL_BUILDS)('async iteration with changes and faults (%s)', (build) => {
  it('every key once, in order, while the loop rewrites keys and the pool is tiny', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('iter-faults');
    const key = (i: number) => new Uint8Array([i >> 8, i & 255, 1, 2, 3, 4, 5, 6]);
    let s = await BTreeStore.open<Uint8Array, string>({ path, storage, wasm, keys: 'bytes', values: 'utf8', poolSize: 1 << 20 });
    await s.setManyAsync(Array.from({ length: 4000 }, (_, i) => [key(i), 'v'.repeat(300)] as [Uint8Array, string]));
    await s.close();
    s = await BTreeStore.open<Uint8Array, string>({ path, storage, wasm, keys: 'bytes', values: 'utf8', poolSize: 1 << 20 });
    const seen: number[] = [];
    for await (const [k] of s.entriesAsync()) {
      const i = (k[0]! << 8) | k[1]!;
      seen.push(i);
      k.fill(9); // the caller's own array
      if (i % 5 === 3) await s.setAsync(key((i * 7919) % 4000), 'w'.repeat(300)); // a change mid-batch
    }
    expect(seen).toEqual(Array.from({ length: 4000 }, (_, i) => i));
    expect(s.stats().reads).toBeGreaterThan(100);
    await s.close({ commit: false });
  }, 60_000);
});
