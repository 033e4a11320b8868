// Readers: BTreeStore.open({ readOnly: true }).
// - On files (node): a reader opens the newest commit of a crashed store (log with a torn
//   tail) without writing a byte, even when a scan fills its pool with sorted fingerprint
//   leaves (dropped, not spilled); writes throw ReadOnlyError; a missing store is refused.
// - On an asynchronous backend whose readers run beside the writer (async-memory, as
//   IndexedDB): every read sees exactly one commit while the writer keeps committing; the
//   reader follows newer commits (on a page fault or refresh()).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BTreeStore, InvalidArgumentError, ReadOnlyError, init } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { pageCountOf } from '../../ts/src/storage/superblock.js';
import { REAL_BUILDS, wasmFor, type Build } from './builds.js';
import { sortedEntries, tempDir, uniqueName } from './store-helpers.js';
import { SplitMix } from './store-rng.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const tmp = tempDir('readers');
afterAll(() => tmp.cleanup());
beforeAll(async () => {
  await init();
});

const files = (p: string) => [readFileSync(p), readFileSync(p + '-log')];

describe.each(REAL_BUILDS)('readers on files (%s)', (build) => {
  it('opens a crashed store at its last commit, writes nothing, refuses writes', async () => {
    const wasm = await wasmFor(build);
    const src = join(tmp.dir, `src-${build}`);
    const w = await BTreeStore.open<number, string>({ path: src, keys: 'number', wasm, layout: 'fingerprint', poolSize: 1 << 20 });
    const model = new Map<number, string>();
    // Random keys into fingerprint leaves, never scanned: the leaves stay unsorted, so a
    // reader's scan must sort them (dirty pages in a reader: dropped on eviction).
    const rng = new SplitMix(12345);
    for (let c = 0; c < 4; c++) {
      for (let i = 0; i < 8000; i++) {
        const k = rng.int(200000), v = `v${c}-${i}-${'p'.repeat(40 + rng.int(80))}`;
        w.set(k, v);
        model.set(k, v);
      }
      await w.commit();
    }
    w.set(999999, 'uncommitted');
    // The crash image: the files as they are now (no close, no checkpoint), plus a torn tail.
    const img = join(tmp.dir, `img-${build}`);
    copyFileSync(src, img);
    copyFileSync(src + '-log', img + '-log');
    appendFileSync(img + '-log', new Uint8Array(3000).fill(0xab));
    await w.close({ commit: false });
    const before = files(img);

    const r = await BTreeStore.open<number, string>({ path: img, keys: 'number', wasm, readOnly: true, poolSize: 1 << 20 });
    expect(r.readOnly).toBe(true);
    expect(r.size).toBe(model.size);
    expect([...r.entries()]).toEqual(sortedEntries(model));
    expect(r.get(999999)).toBeUndefined();
    expect(() => r.set(1, 'x')).toThrow(ReadOnlyError);
    expect(() => r.delete(1)).toThrow(ReadOnlyError);
    expect(() => r.clear()).toThrow(ReadOnlyError);
    await expect(r.setAsync(1, 'x')).rejects.toMatchObject({ code: 'READ_ONLY' });
    await r.commit(); // nothing to commit
    r.checkInvariants();
    // A second full scan after the pool turned over: same entries.
    expect([...r.entries()]).toEqual(sortedEntries(model));
    const st = r.stats();
    expect(st.evictions).toBeGreaterThan(0); // the pool turned over (sorted leaves dropped, not written)
    expect(st.writes).toBe(0);
    expect(st.syncs).toBe(0);
    await r.close();
    // Not a byte written: the torn tail is still there for the writer to cut.
    const after = files(img);
    expect(Buffer.compare(after[0]!, before[0]!)).toBe(0);
    expect(Buffer.compare(after[1]!, before[1]!)).toBe(0);

    // The writer recovers the same state.
    const again = await BTreeStore.open<number, string>({ path: img, keys: 'number', wasm });
    expect([...again.entries()]).toEqual(sortedEntries(model));
    await again.close();
  });

  it('a missing store is INVALID_ARGUMENT and nothing is created', async () => {
    const wasm = await wasmFor(build);
    const p = join(tmp.dir, `missing-${build}`);
    await expect(BTreeStore.open({ path: p, wasm, readOnly: true })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(existsSync(p)).toBe(false);
    // An empty data file without a log: no store either, left as it was.
    writeFileSync(p, new Uint8Array(0));
    await expect(BTreeStore.open({ path: p, wasm, readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(readFileSync(p).length).toBe(0);
    await expect(BTreeStore.open({ path: p, wasm, readOnly: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

// A new-user probe (session 25): a store closed cleanly whose data file alone was copied (its
// log is only a header then: a typical backup) opened for the writer but was INVALID_ARGUMENT
// "no store at ... (create: false)" to a reader, which also said that of a foreign file (the
// writer: CORRUPT "not an adaptree store").
describe('a reader of a data file without its log', () => {
  it('reads the store; a foreign file is CORRUPT; a missing one is no store, without a word of create: false', async () => {
    const src = join(tmp.dir, 'backup-src.db');
    const w = await BTreeStore.open<string, number>({ path: src });
    for (let i = 0; i < 1000; i++) w.set(`k${i}`, i);
    await w.close();
    const copy = join(tmp.dir, 'backup-copy.db');
    copyFileSync(src, copy);
    const before = readFileSync(copy);
    const r = await BTreeStore.open<string, number>({ path: copy, readOnly: true });
    expect(r.size).toBe(1000);
    expect(r.get('k999')).toBe(999);
    await r.close();
    expect(readFileSync(copy).equals(before)).toBe(true);
    expect(existsSync(copy + '-log')).toBe(false); // nothing created
    expect(existsSync(copy + '-lock')).toBe(false);
    // A writer opens it with create: false as well (it creates the log; it said "no store").
    const w2 = await BTreeStore.open<string, number>({ path: copy, create: false });
    expect(w2.size).toBe(1000);
    await w2.close();

    const foreign = join(tmp.dir, 'foreign-for-reader');
    writeFileSync(foreign, 'not a store at all\n'.repeat(500));
    for (const readOnly of [true, false]) {
      await expect(BTreeStore.open({ path: foreign, readOnly }), `readOnly ${readOnly}`).rejects.toMatchObject({ code: 'CORRUPT' });
      expect(existsSync(foreign + '-log')).toBe(false);
    }
    const e = await BTreeStore.open({ path: join(tmp.dir, 'nothing-here'), readOnly: true }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect((e as Error).message).toMatch(/^no store at .*nothing-here/);
    expect((e as Error).message).not.toContain('create: false');
  });

  // A new-user probe (session 25): a reader opened the store's files for writing (O_RDWR), so
  // files it may only read (chmod 0444) were IO_ERROR EACCES, though docs/STORE.md says a node
  // reader needs write permission only for the lock file. Run in a child process as a user other
  // than root when the test runs as root (root ignores file modes).
  it('opens store files that are read-only (0444)', async () => {
    const dir = join(tmp.dir, 'read-only-files');
    mkdirSync(dir);
    const path = join(dir, 'db');
    const w = await BTreeStore.open<string, number>({ path });
    w.set('a', 1);
    w.set('b', 2);
    await w.commit(); // (no close: the log holds the commit, the data file is empty)
    copyFileSync(path, path + '.copy');
    copyFileSync(path + '-log', path + '.copy-log');
    await w.close({ commit: false });
    // (the copies by their own names: the temporary directory's random name may hold 'db')
    for (const [p, copy] of [[path, path + '.copy'], [path + '-log', path + '.copy-log']] as const) {
      copyFileSync(copy, p); // (back to the crashed state: the log holds the commit)
      chmodSync(p, 0o444);
    }
    const asRoot = process.getuid?.() === 0;
    let dist = join(repo, 'dist');
    if (asRoot) {
      chmodSync(tmp.dir, 0o755);
      chownSync(dir, 65534, 65534); // the lock file is created here
      // A copy of the build the other user can read: a checkout may be private to root (a
      // clone in a `mktemp -d` directory is 0700, and CI failed there on reading dist).
      dist = join(tmp.dir, 'dist');
      cpSync(join(repo, 'dist'), dist, { recursive: true });
    }
    const script = `import { BTreeStore } from ${JSON.stringify(join(dist, 'index.js'))};
      try {
        const r = await BTreeStore.open({ path: ${JSON.stringify(path)}, readOnly: true });
        console.log(JSON.stringify({ a: r.get('a'), b: r.get('b'), size: r.size }));
        await r.close();
      } catch (e) { console.log(JSON.stringify({ error: e.code, message: e.message })); }`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
    expect(JSON.parse(out)).toEqual({ a: 1, b: 2, size: 2 });
    expect(readdirSync(dir).sort()).toEqual(['db', 'db-log', 'db.copy', 'db.copy-log']);
  });
});

/** A writer on async-memory holding keys 0..M-1, committed as commit 0, whose values name the
 * commit that wrote them (`v(c, k)`, padded to `pad` + k % `spread` characters); `writes[k]`:
 * the commits that wrote key k, ascending (the tests push theirs). */
async function writerWithHistory(build: Build, name: string, M: number, pad: number, spread: number, poolSize: number) {
  const wasm = await wasmFor(build);
  const storage = createAsyncMemoryStorage();
  const path = uniqueName(name);
  const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize });
  const v = (c: number, k: number) => `c${c}:${k}:${'y'.repeat(pad + (k % spread))}`;
  await w.setManyAsync(Array.from({ length: M }, (_, k) => [k, v(0, k)] as [number, string]));
  await w.commit();
  const writes: number[][] = Array.from({ length: M }, () => [0]);
  return { wasm, storage, path, w, v, writes };
}

describe.each(REAL_BUILDS)('readers beside a writer on an async backend (%s)', (build) => {
  const N = 12000;
  /** Commit c sets every key to a value naming c: a read mixing two commits shows two names. */
  const value = (c: number, k: number) => `c${c}:${k}:${'x'.repeat(k % 50)}`;
  const commitOf = (v: string | undefined) => (v === undefined ? -1 : Number(v.slice(1, v.indexOf(':'))));

  it('every read sees exactly one commit; the reader follows newer ones', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd');
    const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize: 1 << 20 });
    const keys = Array.from({ length: N }, (_, i) => i * 7);
    await w.setManyAsync(keys.map((k) => [k, value(0, k)]));
    await w.commit();

    const r = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true, poolSize: 1 << 20 });
    expect(r.readOnly).toBe(true);
    await expect(r.setAsync(1, 'x')).rejects.toBeInstanceOf(ReadOnlyError);
    let seenMax = 0;
    for (let c = 1; c <= 6; c++) {
      // The writer commits c while the reader reads (the reads interleave with the commit).
      const writing = (async () => {
        await w.setManyAsync(keys.map((k) => [k, value(c, k)]));
        await w.commit();
      })();
      for (let round = 0; round < 3; round++) {
        const got = await r.getManyAsync(keys);
        const commits = new Set(got.map(commitOf));
        expect(commits.size).toBe(1); // one commit, never a mix
        const seen = [...commits][0]!;
        expect(seen).toBeGreaterThanOrEqual(seenMax); // never back in time
        expect(got.every((v, i) => v === value(seen, keys[i]!))).toBe(true);
        seenMax = seen;
      }
      await writing;
      // All of the reader's pages may be resident: refresh() moves it to commit c.
      await r.refresh();
      const v = await r.getAsync(keys[17]!);
      expect(commitOf(v)).toBe(c);
      seenMax = c;
      expect(await r.refresh()).toBe(false); // nothing newer
    }
    // A scan while the writer commits: keys in order, no duplicates, each value of a commit.
    const scan: number[] = [];
    const writing = (async () => {
      await w.setManyAsync(keys.map((k) => [k, value(7, k)]));
      await w.commit();
    })();
    for await (const [k, v] of r.entriesAsync()) {
      scan.push(k);
      expect(v).toMatch(/^c[67]:/);
    }
    await writing;
    expect(scan).toEqual(keys);
    await r.checkInvariantsAsync();
    await r.close();
    await w.close();
    // A reader never blocks the writer, and a writer that closed leaves a reader-openable store.
    const r2 = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true });
    expect(commitOf(await r2.getAsync(0))).toBe(7);
    expect(r2.size).toBe(N);
    await r2.close();
  });

  it('a reader that follows a newer commit keeps the pages it did not write, and reads what it wrote', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-keep');
    const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, poolSize: 4 << 20 });
    const keys = Array.from({ length: N }, (_, i) => i * 7);
    const model = new Map(keys.map((k) => [k, value(0, k)]));
    await w.setManyAsync([...model]);
    await w.commit();
    // The same reader over a backend that cannot say what changed: it drops every page.
    const blind = { kind: 'async' as const, name: 'blind', open: async (p: string, o: Parameters<typeof storage.open>[1]) => ({ ...(await storage.open(p, o)), changedSince: undefined }) };
    const r = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true, poolSize: 4 << 20 });
    const b = await BTreeStore.open<number, string>({ path, storage: blind, keys: 'number', wasm, readOnly: true, poolSize: 4 << 20 });
    const all = [...model.keys()];
    for (const x of [r, b]) await x.getManyAsync(all);
    const rng = new SplitMix(99);
    let readsKept = 0, readsBlind = 0;
    for (let c = 1; c <= 20; c++) {
      // 1..3 commits of a few writes each (a long value now and then: overflow pages freed
      // and used again), then both readers move to the newest.
      for (let n = 1 + rng.int(3); n > 0; n--) {
        for (let i = rng.int(6); i >= 0; i--) {
          const k = keys[rng.int(N)]!;
          if (rng.int(5) === 0) {
            await w.deleteAsync(k);
            model.delete(k);
          } else {
            const v = rng.int(4) === 0 ? `c${c}:${k}:${'L'.repeat(3000 + rng.int(9000))}` : value(c, k);
            await w.setAsync(k, v);
            model.set(k, v);
          }
        }
        await w.commit();
      }
      for (const x of [r, b]) expect(await x.refresh()).toBe(true);
      const r0 = r.stats().reads, b0 = b.stats().reads;
      const [got, gotBlind] = [await r.getManyAsync(all), await b.getManyAsync(all)];
      expect(got).toEqual(all.map((k) => model.get(k)));
      expect(gotBlind).toEqual(got);
      readsKept += r.stats().reads - r0;
      readsBlind += b.stats().reads - b0;
      expect(r.size).toBe(model.size);
    }
    // The blind reader read its whole store again after every follow; this one, the pages
    // the commits wrote.
    expect(readsBlind).toBeGreaterThan(20 * 100);
    expect(readsKept).toBeLessThan(readsBlind / 10);
    await r.checkInvariantsAsync();
    for (const x of [r, b, w]) await x.close();
  });

  it('an iteration beside a writer committing a few keys at a time sees each key as of a commit never older than one it saw before', async () => {
    // Pages read ahead at an earlier commit are kept when no commit since wrote them: a wrong
    // one shows as a key older than the commit an earlier key was already of.
    const M = 6000;
    const { wasm, storage, path, w, v, writes } = await writerWithHistory(build, 'rd-ahead', M, 300, 200, 1 << 20);
    const rng = new SplitMix(4242);
    let c = 0, done = false;
    const writing = (async () => {
      while (!done) {
        c++;
        for (let i = 1 + rng.int(20); i > 0; i--) {
          // mostly one region at a time (so that most pages stay as they were)
          const k = (c * 97 + rng.int(300)) % M;
          await w.setAsync(k, v(c, k));
          if (writes[k]![writes[k]!.length - 1] !== c) writes[k]!.push(c);
        }
        await w.commit();
      }
    })();
    for (let pass = 0; pass < 3; pass++) {
      const r = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true, poolSize: 1 << 20 });
      let at = 0, n = 0;
      for await (const [k, x] of r.entriesAsync()) {
        expect(k).toBe(n++);
        const ck = Number(x.slice(1, x.indexOf(':')));
        expect(x).toBe(v(ck, k));
        // the reader's commit for this entry: at least `at` and ck, before k's next write
        at = Math.max(at, ck);
        const next = writes[k]!.find((x) => x > ck);
        if (next !== undefined && next <= at) expect.fail(`key ${k} of commit ${ck} after a key of commit ${at} (written again at ${next})`);
      }
      expect(n).toBe(M);
      await r.close();
    }
    done = true;
    await writing;
    expect(c).toBeGreaterThan(3);
    await w.close();
  });

  // A probe (session 29): an iterator that had read a batch went on serving it after the reader
  // moved to a newer commit (refresh(), or the catch-up at its next call after the writer's
  // announcement): keys the reader had just seen deleted, values older than it had just read.
  it('an iterator spanning the reader\'s move to a newer commit goes on after its last key in that commit', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-iter');
    const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', values: 'utf8', wasm });
    for (let i = 0; i < 100; i++) await w.setAsync(i, 'old');
    await w.commit();
    for (const how of ['refresh', 'announced'] as const) {
      const rd = await BTreeStore.open<number, string>({ path, storage, keys: 'number', values: 'utf8', wasm, readOnly: true });
      const it = rd.entriesAsync();
      expect((await it.next()).value).toEqual([0, 'old']);
      await w.deleteAsync(1);
      await w.setAsync(2, how);
      await w.commit();
      if (how === 'refresh') {
        expect(await rd.refresh()).toBe(true);
        expect(await rd.getAsync(1)).toBeUndefined();
      }
      expect((await it.next()).value, how).toEqual([2, how]);
      expect((await it.next()).value, how).toEqual([3, 'old']);
      await it.return?.();
      await rd.close();
      await w.setAsync(1, 'old');
      await w.setAsync(2, 'old');
      await w.commit();
    }
    await w.close();
  });

  it('a batch beside a writer committing each write shows one commit, and keeps to it while the pages it reads did not change', async () => {
    // A pool a third of the batch's pages: the batch faults all along, and pages that the
    // commits since the reader's did not write are supplied without following (a wrong one
    // shows as a key older than the commit another key is of).
    const M = 4000;
    const { wasm, storage, path, w, v, writes } = await writerWithHistory(build, 'rd-pin', M, 600, 100, 8 << 20);
    let c = 0;
    /** 40 commits of one write each (the batch livelocks while a writer commits faster than
     * it reads the pages the commits wrote: STORE.md; this writer stops) */
    const writer = async () => {
      for (let i = 0; i < 40; i++) {
        c++;
        const k = (c * 7919) % M;
        await w.setAsync(k, v(c, k));
        writes[k]!.push(c);
        await w.commit();
      }
    };
    const r = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true, poolSize: 1 << 20 });
    const keys = Array.from({ length: M }, (_, k) => k);
    let last = 0;
    for (let round = 0; round < 8; round++) {
      const [got] = await Promise.all([r.getManyAsync(keys), writer()]);
      const of = got.map((x, k) => {
        const ck = Number(x!.slice(1, x!.indexOf(':')));
        expect(x).toBe(v(ck, k));
        return ck;
      });
      // One commit R: every key's value is its newest write up to R.
      const R = Math.max(...of);
      const mixed = keys.filter((k) => writes[k]!.some((x) => x > of[k]! && x <= R));
      expect(mixed, `round ${round}`).toEqual([]);
      expect(R).toBeGreaterThanOrEqual(last);
      last = R;
    }
    expect(last).toBeGreaterThan(40);
    for (const x of [r, w]) await x.close();
  });

  // A new-user probe (session 28): a fault answered by a newer commit in which the store had
  // shrunk (the writer cleared it) threw INVALID_ARGUMENT "reading page 255" (the page is past
  // the newer commit's end), or CORRUPT "missing" where the backend had dropped its record
  // (an IndexedDB checkpoint deletes the records past the end).
  it.each([false, true])('a fault answered by a newer commit in which the store shrank reads the newer commit (records past the end dropped: %s)', async (dropped) => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-shrink');
    // (as indexeddb after a checkpoint: no record past the end the page 0 read with it gives)
    const backend = !dropped ? storage : {
      kind: 'async' as const, name: 'dropping',
      open: async (p: string, o: Parameters<typeof storage.open>[1]) => {
        const inner = await storage.open(p, o);
        return {
          ...inner,
          readPages: async (ids: readonly number[]) => {
            const got = await inner.readPages!([0, ...ids]);
            const end = pageCountOf(got[0]!)!;
            return ids.map((id, i) => (id === 0 ? got[0] : id >= end ? undefined : got[i + 1]));
          },
        };
      },
    };
    const open = (o: { readOnly?: boolean } = {}) => BTreeStore.open<number, string>({ path, storage: backend, keys: 'number', wasm, ...o });
    const w = await open();
    await w.setManyAsync(Array.from({ length: 5000 }, (_, k) => [k, 'v'.repeat(200)] as [number, string]));
    await w.commit();
    const r = await open({ readOnly: true });
    // Two readers' calls at once, from the inner nodes of the first commit: each faults on a
    // leaf of its own; the first read to come back follows the newer commit, and the second
    // then holds a page past that commit's end too (the fuzz of the probe above).
    const r2 = await open({ readOnly: true });
    expect(await r2.getAsync(0)).toBe('v'.repeat(200));
    await w.clearAsync();
    await w.setAsync(1, 'after');
    await w.commit();
    expect(w.stats().pages).toBeLessThan(10);
    expect(await r.getAsync(1)).toBe('after');
    expect(await r.getAsync(2)).toBeUndefined();
    expect(await Promise.all([r2.getAsync(4000), r2.getAsync(4999), r2.getAsync(2500)])).toEqual([undefined, undefined, undefined]);
    expect(await r2.getAsync(1)).toBe('after');
    await r2.close();
    expect(r.size).toBe(1);
    await r.checkInvariantsAsync();
    for (const x of [r, w]) await x.close();
  });

  it('a reader whose pages are all in its pool moves to the writer\'s newer commit at its next call (the writer announces it)', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-heard');
    const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm });
    await w.setManyAsync(Array.from({ length: 3000 }, (_, k) => [k, `c0:${k}`] as [number, string]));
    await w.commit();
    const r = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm, readOnly: true });
    const all = Array.from({ length: 3000 }, (_, k) => k);
    await r.getManyAsync(all); // every page in its pool: no call of it faults from here on
    for (let c = 1; c <= 5; c++) {
      await w.setAsync(c * 100, `c${c}:${c * 100}`);
      await w.deleteAsync(c * 100 + 1);
      await w.commit();
      // no refresh(): the next call follows
      expect(await r.getAsync(c * 100)).toBe(`c${c}:${c * 100}`);
      expect(await r.hasAsync(c * 100 + 1)).toBe(false);
      expect(r.size).toBe(3000 - c);
      expect(await r.refresh()).toBe(false);
    }
    // A sync call cannot read: it stays on the reader's commit until an async call or refresh().
    await w.setAsync(7, 'later');
    await w.commit();
    expect(r.get(7)).toBe('c0:7');
    expect(await r.getAsync(7)).toBe('later');
    for (const x of [r, w]) await x.close();
  });

  it('a catch-up read that fails fails the call with IO_ERROR; the next call catches up, and close() does not wait for the failed one', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-heard-fail');
    let failReads = false;
    const failing = {
      kind: 'async' as const, name: 'failing',
      open: async (p: string, o: Parameters<typeof storage.open>[1]) => {
        const inner = await storage.open(p, o);
        return { ...inner, readPages: async (ids: readonly number[]) => {
          if (failReads) throw new Error('disk on fire');
          return inner.readPages!(ids);
        } };
      },
    };
    const w = await BTreeStore.open<number, string>({ path, storage, keys: 'number', wasm });
    await w.setAsync(1, 'a');
    await w.commit();
    const r = await BTreeStore.open<number, string>({ path, storage: failing, keys: 'number', wasm, readOnly: true });
    expect(await r.getAsync(1)).toBe('a');
    await w.setAsync(1, 'b');
    await w.commit();
    failReads = true;
    await expect(r.getAsync(1)).rejects.toMatchObject({ code: 'IO_ERROR' });
    failReads = false;
    expect(await r.getAsync(1)).toBe('b');
    // The failed call ended: close() has no call to wait for (it would wait CLOSE_WAIT_MS, 5 s).
    const closing = r.close().then(() => 'closed');
    expect(await Promise.race([closing, new Promise((res) => setTimeout(() => res('still waiting'), 2000))])).toBe('closed');
    await w.close();
  });

  it('a store that was never committed is INVALID_ARGUMENT for a reader', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('rd-new');
    await expect(BTreeStore.open({ path, storage, wasm, readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const w = await BTreeStore.open({ path, storage, wasm });
    await expect(BTreeStore.open({ path, storage, wasm, readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await w.close();
  });
});

// A new-user probe (session 22): a reader that was share()d (or given to a WorkerPool) asked
// for a commit at close() and rejected with ReadOnlyError "after a failed commit".
describe.runIf(REAL_BUILDS.includes('mt'))('a shared reader', () => {
  it('closes cleanly after share(); its commit() resolves; a write says it is read-only', async () => {
    const wasm = await wasmFor('mt');
    const path = join(tmp.dir, 'shared-reader.db');
    const w = await BTreeStore.open<string, number>({ path, wasm });
    w.set('a', 1);
    await w.close();
    const r = await BTreeStore.open<string, number>({ path, wasm, readOnly: true });
    r.share();
    await expect(r.commit()).resolves.toBeUndefined();
    const e = await Promise.resolve().then(() => r.set('b', 2)).then(() => 'written', (x: unknown) => x);
    expect(e).toBeInstanceOf(ReadOnlyError);
    await expect(r.close()).resolves.toBeUndefined();
    const again = await BTreeStore.open<string, number>({ path, wasm });
    expect([again.get('a'), again.get('b')]).toEqual([1, undefined]);
    await again.close();
  });
});
