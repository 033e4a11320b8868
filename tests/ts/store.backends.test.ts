// The storage backends on their own (no wasm): file semantics, the host import dispatch,
// error statuses, and locking (in-process, another live process, a stale lock).
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { existsSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Status } from '../../ts/src/abi.js';
import { InvalidArgumentError, LockedError, isAdaptreeError } from '../../ts/src/errors.js';
import { MemoryFile, memoryStorage } from '../../ts/src/storage/memory.js';
import { nodeStorage } from '../../ts/src/storage/node.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { BTreeStore } from '../../ts/src/store.js';
import { wasmFor } from './builds.js';
import { hostImports, registerHost, statusOfError, unregisterHost } from '../../ts/src/storage/host.js';
import type { SyncFile } from '../../ts/src/storage/types.js';
import { tempDir, uniqueName } from './store-helpers.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const tmp = tempDir('backends');
afterAll(() => tmp.cleanup());

function exercise(f: SyncFile): void {
  expect(f.size()).toBe(0);
  const a = new Uint8Array(4096).map((_, i) => i & 255);
  f.write(a, 8192);
  expect(f.size()).toBe(12288);
  const back = new Uint8Array(4096);
  expect(f.read(back, 8192)).toBe(4096);
  expect(back).toEqual(a);
  // the hole before reads as zeros; a read past the end is short
  const hole = new Uint8Array(16).fill(7);
  expect(f.read(hole, 100)).toBe(16);
  expect([...hole]).toEqual(new Array(16).fill(0));
  expect(f.read(new Uint8Array(100), 12288 - 10)).toBe(10);
  expect(f.read(new Uint8Array(100), 20000)).toBe(0);
  f.sync();
  f.truncate(4096);
  expect(f.size()).toBe(4096);
  f.truncate(5000);
  const z = new Uint8Array(4);
  f.read(z, 4096);
  expect([...z]).toEqual([0, 0, 0, 0]);
}

describe('memory backend', () => {
  it('files behave as files and survive close/reopen in the process', () => {
    const name = uniqueName('mem');
    const files = memoryStorage.open(name, { create: true });
    exercise(files.data);
    files.log.write(new Uint8Array([1, 2, 3]), 0);
    files.close();
    const again = memoryStorage.open(name, { create: false });
    expect(again.data.size()).toBe(5000);
    const b = new Uint8Array(3);
    expect(again.log.read(b, 0)).toBe(3);
    expect([...b]).toEqual([1, 2, 3]);
    again.close();
    memoryStorage.remove(name);
  });

  it('a write past the end after a shrinking truncate leaves a zeroed gap, as a file does', () => {
    const f = new MemoryFile();
    f.write(new Uint8Array(100).fill(7), 0);
    f.truncate(10);
    f.write(new Uint8Array([1]), 50);
    const got = new Uint8Array(51);
    expect(f.read(got, 0)).toBe(51);
    expect([...got.subarray(0, 10)]).toEqual(new Array(10).fill(7));
    expect([...got.subarray(10, 50)]).toEqual(new Array(40).fill(0));
    expect(got[50]).toBe(1);
  });

  // A session-28 probe: a store of 214 MB cleared and closed kept its 384 MB of arrays until
  // the process ended (memoryStorage says a cut gives the room back, as on every backend).
  it('a file cut well below its room gives the room back, and keeps its bytes and the zeroed gap', () => {
    const f = new MemoryFile();
    f.write(new Uint8Array(3 << 20).fill(9), 0);
    expect(f.bytes.length).toBeGreaterThanOrEqual(3 << 20);
    f.truncate(5000);
    expect(f.size()).toBe(5000);
    expect(f.bytes.length).toBeLessThanOrEqual(16384);
    f.write(new Uint8Array([1]), 9000);
    const got = new Uint8Array(9001);
    expect(f.read(got, 0)).toBe(9001);
    expect(got.subarray(0, 5000).every((b) => b === 9)).toBe(true);
    expect(got.subarray(5000, 9000).every((b) => b === 0)).toBe(true);
    expect(got[9000]).toBe(1);
    f.truncate(0);
    expect(f.size()).toBe(0);
  });

  it('refuses a second open (LockedError) and a missing store without create', () => {
    const name = uniqueName('mem');
    const files = memoryStorage.open(name, { create: true });
    expect(() => memoryStorage.open(name, { create: true })).toThrow(LockedError);
    files.close();
    expect(() => memoryStorage.open(uniqueName('none'), { create: false })).toThrow(InvalidArgumentError);
  });
});

describe('host imports', () => {
  it('dispatch on io and file, return statuses, keep the error', () => {
    const memory = new WebAssembly.Memory({ initial: 1 });
    const env = hostImports(() => memory);
    const data = new MemoryFile(), log = new MemoryFile();
    let fail: unknown;
    const failing: SyncFile = {
      read: (d, o) => data.read(d, o),
      write: (s, o) => {
        if (fail !== undefined) throw fail;
        data.write(s, o);
      },
      sync: () => {
        if (fail !== undefined) throw fail;
      },
      size: () => data.size(),
      truncate: (n) => data.truncate(n),
    };
    const io = 64;
    const entry = registerHost(memory, io, { data: failing, log, close() {} });
    // Entries are per memory: another memory's functions do not see it, and it may use io too.
    const other = new WebAssembly.Memory({ initial: 1 });
    expect(hostImports(() => other).at_host_size!(io, 1)).toBe(Status.IO_ERROR);
    const otherLog = new MemoryFile();
    otherLog.write(new Uint8Array(7), 0);
    registerHost(other, io, { data: new MemoryFile(), log: otherLog, close() {} });
    expect(hostImports(() => other).at_host_size!(io, 1)).toBe(7);
    // Registered again in this thread (a store attached where its owner is): the same entry, counted.
    expect(registerHost(other, io, { data: new MemoryFile(), log: new MemoryFile(), close() {} }).files.log).toBe(otherLog);
    unregisterHost(other, io);
    const u8 = new Uint8Array(memory.buffer);
    u8.set([9, 8, 7, 6], 100);
    expect(env.at_host_write!(io, 1, 4096, 100, 4)).toBe(Status.OK);
    expect(env.at_host_size!(io, 1)).toBe(4100);
    expect(env.at_host_size!(io, 0)).toBe(0);
    expect(env.at_host_read!(io, 1, 4094, 200, 8)).toBe(6);
    expect([...u8.subarray(200, 206)]).toEqual([0, 0, 9, 8, 7, 6]);
    expect(env.at_host_truncate!(io, 1, 4097)).toBe(Status.OK);
    expect(log.size()).toBe(4097);
    expect(env.at_host_sync!(io, 1)).toBe(Status.OK);
    fail = Object.assign(new Error('no space'), { code: 'ENOSPC' });
    expect(env.at_host_write!(io, 0, 0, 100, 4)).toBe(Status.QUOTA_EXCEEDED);
    expect(entry.lastError).toBe(fail);
    fail = Object.assign(new Error('EIO'), { code: 'EIO' });
    expect(env.at_host_sync!(io, 0)).toBe(Status.IO_ERROR);
    expect(entry.lastError).toBe(fail);
    expect(env.at_host_read!(io, 2, 0, 100, 4)).toBe(Status.IO_ERROR); // no file 2
    unregisterHost(memory, io);
    expect(env.at_host_read!(io, 0, 0, 100, 4)).toBe(Status.IO_ERROR); // unknown io
    expect(hostImports(() => other).at_host_size!(io, 1)).toBe(7);
    unregisterHost(other, io);
  });

  it('maps errors to statuses', () => {
    expect(statusOfError(Object.assign(new Error(), { code: 'ENOSPC' }))).toBe(Status.QUOTA_EXCEEDED);
    expect(statusOfError(Object.assign(new Error(), { code: 'EDQUOT' }))).toBe(Status.QUOTA_EXCEEDED);
    expect(statusOfError(new DOMException('full', 'QuotaExceededError'))).toBe(Status.QUOTA_EXCEEDED);
    expect(statusOfError(Object.assign(new Error(), { code: 'EIO' }))).toBe(Status.IO_ERROR);
    expect(statusOfError('weird')).toBe(Status.IO_ERROR);
  });
});

describe('node backend', () => {
  it('reads and writes real files at any offset (past 4 GiB too)', async () => {
    const path = join(tmp.dir, 'files.db');
    const files = await nodeStorage.open(path, { create: true });
    try {
      exercise(files.data);
      const big = 5 * 2 ** 30 + 4096; // sparse
      files.log.write(new Uint8Array([42]), big);
      expect(files.log.size()).toBe(big + 1);
      const b = new Uint8Array(1);
      expect(files.log.read(b, big)).toBe(1);
      expect(b[0]).toBe(42);
      expect(existsSync(path + '-log')).toBe(true);
      expect(readFileSync(path + '-lock', 'utf8')).toMatch(new RegExp(`^${process.pid}( start \\d+)?$`));
    } finally {
      files.close();
    }
    expect(existsSync(path + '-lock')).toBe(false);
  });

  it('refuses a second open in this process, then allows it after close', async () => {
    const path = join(tmp.dir, 'twice.db');
    const files = await nodeStorage.open(path, { create: true });
    await expect(nodeStorage.open(path, { create: true })).rejects.toThrow(LockedError);
    await expect(nodeStorage.open(join(tmp.dir, '.', 'twice.db'), { create: true })).rejects.toThrow(LockedError);
    files.close();
    (await nodeStorage.open(path, { create: true })).close();
  });

  it('a missing store without create is an InvalidArgumentError, and leaves no lock', async () => {
    const path = join(tmp.dir, 'missing.db');
    await expect(nodeStorage.open(path, { create: false })).rejects.toThrow(InvalidArgumentError);
    expect(existsSync(path + '-lock')).toBe(false);
  });

  it('a live lock of another process gives LockedError; a dead one is taken over', async () => {
    const path = join(tmp.dir, 'other.db');
    // A live process: hold its pid in the lock file.
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      writeFileSync(path + '-lock', String(child.pid));
      const e = await nodeStorage.open(path, { create: true }).then(() => undefined, (x: unknown) => x);
      expect(e).toBeInstanceOf(LockedError);
      expect(isAdaptreeError(e) && e.code).toBe('LOCKED');
      expect((e as Error).message).toContain(String(child.pid));
      expect(existsSync(path)).toBe(false); // nothing created or damaged
    } finally {
      child.kill('SIGKILL');
    }
    // A dead process's pid: stale, taken over.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(path + '-lock', dead);
    const files = await nodeStorage.open(path, { create: true });
    expect(readFileSync(path + '-lock', 'utf8')).toMatch(new RegExp(`^${process.pid}( start \\d+)?$`));
    files.close();
  });

  it('an empty lock file: held while fresh (its owner is writing it), stale once old; a new lock is never empty', async () => {
    // A process killed between creating the lock and writing its pid left it empty, and the
    // store refused every later open for good (a kill test hit it). Locks are now linked into
    // place with the pid already written; an old empty one (an older version's) is stale.
    const path = join(tmp.dir, 'empty-lock.db');
    writeFileSync(path + '-lock', '');
    const e = await nodeStorage.open(path, { create: true }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(LockedError);
    expect((e as Error).message).toContain('(starting)');
    const old = new Date(Date.now() - 60_000);
    utimesSync(path + '-lock', old, old);
    const files = await nodeStorage.open(path, { create: true });
    expect(readFileSync(path + '-lock', 'utf8')).toMatch(new RegExp(`^${process.pid}( start \\d+)?$`));
    // The file the lock was linked from is gone.
    expect(readdirSync(tmp.dir).filter((f) => f.startsWith('empty-lock.db-lock.'))).toEqual([]);
    files.close();
    expect(existsSync(path + '-lock')).toBe(false);
  });

  // A new-user probe (session 23): six processes opening at once over a killed writer's lock
  // both held the store in 3 of 26 rounds (the second removed the lock the first had just
  // taken). And a process killed while opening left its `-lock.<pid>` file for good.
  it('six processes taking over one stale lock at once: one holds the store at a time; dead openers leave no files', async () => {
    const dist = join(repo, 'dist/storage/node.js');
    const path = join(tmp.dir, 'race.db');
    const child = `import { nodeStorage } from ${JSON.stringify(dist)};
      const at = Number(process.argv[1]);
      while (Date.now() < at) {}
      try { const f = await nodeStorage.open(${JSON.stringify(path)}, { create: true });
        const t0 = Date.now(); await new Promise((r) => setTimeout(r, 400)); const t1 = Date.now(); f.close();
        console.log('OPENED ' + t0 + ' ' + t1);
      } catch (e) { console.log(e.code); }`;
    for (let round = 0; round < 4; round++) {
      writeFileSync(path + '-lock', '999999'); // a pid that does not run
      writeFileSync(`${path}-lock.999998`, '999998'); // a file a killed opener left
      const at = Date.now() + 700;
      const outs = await Promise.all(Array.from({ length: 6 }, () => new Promise<string>((res) => {
        const c = spawn(process.execPath, ['--input-type=module', '-e', child, String(at)], { stdio: ['ignore', 'pipe', 'inherit'] });
        let o = '';
        c.stdout!.on('data', (d: Buffer) => (o += d.toString()));
        c.on('exit', () => res(o.trim()));
      })));
      const held = outs.filter((o) => o.startsWith('OPENED')).map((o) => o.split(' ').slice(1).map(Number) as [number, number]).sort((a, b) => a[0] - b[0]);
      expect(held.length, outs.join(',')).toBeGreaterThanOrEqual(1);
      for (let i = 1; i < held.length; i++) expect(held[i]![0], `round ${round}: two holders at once`).toBeGreaterThanOrEqual(held[i - 1]![1]);
      for (const o of outs) expect(['LOCKED', 'OPENED']).toContain(o.split(' ')[0]);
      expect(readdirSync(tmp.dir).filter((f) => f.startsWith('race.db-lock'))).toEqual([]);
    }
  });

  it('another process holding the store open gives LockedError (dist build)', async () => {
    const dist = join(repo, 'dist/storage/node.js');
    expect(existsSync(dist), 'run `bash scripts/build.sh ts` first').toBe(true);
    const path = join(tmp.dir, 'held.db');
    const script = `import { nodeStorage } from ${JSON.stringify(dist)};
      const f = await nodeStorage.open(${JSON.stringify(path)}, { create: true });
      f.data.write(new Uint8Array([1,2,3]), 0); f.data.sync();
      console.log('held'); setTimeout(() => { f.close(); }, 60000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((res, rej) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && res());
        child.on('exit', (c) => rej(new Error(`child exited ${c}`)));
      });
      await expect(nodeStorage.open(path, { create: true })).rejects.toThrow(LockedError);
      expect([...readFileSync(path)]).toEqual([1, 2, 3]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  // A new-user probe (session 22): two worker threads of one process both opened a store (each
  // thread has its own copy of the module's open-path set, and a lock of this pid counted as
  // stale): both committed, and one's commits were lost. Also the two threads' lock files of
  // the same name raced (an IoError instead of LockedError).
  it('another worker thread of this process holding the store gives LockedError; after it closes the store opens', async () => {
    const dist = join(repo, 'dist/storage/node.js');
    const path = join(tmp.dir, 'threads.db');
    const script = `const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(dist)}).then(async ({ nodeStorage }) => {
        const f = await nodeStorage.open(${JSON.stringify(path)}, { create: true });
        f.data.write(new Uint8Array([4, 5, 6]), 0); f.data.sync();
        parentPort.postMessage('held');
        parentPort.once('message', () => { f.close(); parentPort.postMessage('closed'); });
      });`;
    const worker = new Worker(script, { eval: true });
    try {
      const next = () => new Promise((res, rej) => { worker.once('message', res); worker.once('error', rej); });
      expect(await next()).toBe('held');
      const e = await nodeStorage.open(path, { create: true }).then(() => 'opened', (x: unknown) => x);
      expect(e).toBeInstanceOf(LockedError);
      expect((e as Error).message).toMatch(/worker thread \d+ of this process/);
      // and two threads at once: one holds it, the other gets LockedError, never an IoError
      const results = await Promise.all([1, 2].map(() => new Promise((res) => {
        const w = new Worker(`const { parentPort } = require('node:worker_threads');
          import(${JSON.stringify(dist)}).then(({ nodeStorage }) => nodeStorage.open(${JSON.stringify(path + '2')}, { create: true }))
            .then((f) => { setTimeout(() => { f.close(); parentPort.postMessage('opened'); }, 2000); }, (x) => parentPort.postMessage(x.code));`, { eval: true });
        w.once('message', (m) => { res(m); void w.terminate(); });
      })));
      expect(results.sort()).toEqual(['LOCKED', 'opened']);
      worker.postMessage('close');
      expect(await next()).toBe('closed');
      const f = await nodeStorage.open(path, { create: true });
      const back = new Uint8Array(3);
      f.data.read(back, 0);
      expect([...back]).toEqual([4, 5, 6]);
      f.close();
    } finally {
      await worker.terminate();
    }
  });

  // Session 23: a worker thread that ended without closing its store kept it locked until the
  // process exited. A thread that returns, calls process.exit() or throws now closes its
  // unshared stores as it ends; a shared one stays locked (its files may still be in use).
  it.each([
    ['returns', ''],
    ['calls process.exit()', 'process.exit(0);'],
    ['throws', "setTimeout(() => { throw new Error('boom'); }, 0);"],
    ['shared its store, then returns', 'f.share();'],
  ])('a worker thread that %s without closing its store', async (how, end) => {
    const dist = join(repo, 'dist/storage/node.js');
    const path = join(tmp.dir, `thread-end-${how.replace(/\W/g, '')}.db`);
    const worker = new Worker(`const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(dist)}).then(async ({ nodeStorage }) => {
        const f = await nodeStorage.open(${JSON.stringify(path)}, { create: true });
        f.data.write(new Uint8Array([7, 8]), 0); f.data.sync();
        parentPort.postMessage('held');
        ${end}
      });`, { eval: true });
    worker.on('error', () => {});
    const ended = new Promise((res) => worker.once('exit', res));
    expect(await new Promise((res) => worker.once('message', res))).toBe('held');
    await ended;
    const shared = how.startsWith('shared');
    const again = await nodeStorage.open(path, { create: false }).then((f) => f, (x: unknown) => x);
    if (shared) {
      expect(again).toBeInstanceOf(LockedError);
      return;
    }
    expect(again).not.toBeInstanceOf(Error);
    const f = again as Awaited<ReturnType<typeof nodeStorage.open>>;
    const back = new Uint8Array(2);
    f.data.read(back, 0);
    expect([...back]).toEqual([7, 8]);
    f.close();
  });
});

describe('async-memory backend', () => {
  it('answers after a timer, writes all or nothing, survives reopen, locks', async () => {
    const s = createAsyncMemoryStorage({ delayMs: 1 });
    const pages = await s.open('a', { create: true });
    await expect(s.open('a', { create: true })).rejects.toThrow(LockedError);
    let settled = false;
    const r = pages.readPage(0).then((p) => ((settled = true), p));
    await Promise.resolve();
    expect(settled).toBe(false); // not answered synchronously
    expect(await r).toBeUndefined();
    const img = new Uint8Array(4096).fill(5);
    await pages.writePages([[0, img], [3, img]]);
    img.fill(6); // the backend kept a copy
    expect((await pages.readPage(3))![0]).toBe(5);
    const before = s.pages('a');
    await pages.writePages([[1, img]]);
    expect(before!.has(1)).toBe(false); // swapped, not mutated
    await pages.close();
    const again = await s.open('a', { create: false });
    expect((await again.readPage(1))![0]).toBe(6);
    expect(s.counters.commits).toBe(2);
    await again.close();
    await expect(s.open('b', { create: false })).rejects.toThrow(InvalidArgumentError);
  });

  it('an open with wait: true waits for the writer to close, in turn (it threw LockedError at once: a probe, session 33)', async () => {
    const s = createAsyncMemoryStorage();
    const first = await s.open('w', { create: true });
    const order: string[] = [];
    const second = s.open('w', { create: true, wait: true }).then((p) => (order.push('second'), p));
    const third = s.open('w', { create: true, wait: true }).then((p) => (order.push('third'), p));
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([]);
    await expect(s.open('w', { create: true })).rejects.toThrow(LockedError);  // without wait: at once
    first.close();
    const b = await second;
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual(['second']);  // the third waits for the second
    b.close();
    (await third).close();
    expect(order).toEqual(['second', 'third']);
    // through BTreeStore: the option reaches the backend
    const wasm = await wasmFor('st');
    const st = await BTreeStore.open<string, number>({ path: 'w2', storage: s, wasm });
    st.set('k', 1);
    const waiting = BTreeStore.open<string, number>({ path: 'w2', storage: s, wasm, wait: true });
    await new Promise((r) => setTimeout(r, 20));
    await st.close();
    const st2 = await waiting;
    expect(await st2.getAsync('k')).toBe(1);
    await st2.close();
  });
});
