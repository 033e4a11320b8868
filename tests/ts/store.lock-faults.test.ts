// The Node backend's lock file when the file system fails under it (ts/src/storage/node.ts,
// takeLock): a full disk while the pid is written, a failing flush, a file system without hard
// links. Each open fails with IoError (code IO_ERROR), leaves neither the lock nor its
// `lock.<pid>` file behind (either would keep the store locked or litter its directory), and
// the store opens afterwards with its data intact. The faults are injected by wrapping the
// process's own `fs` functions (the module object node.ts gets from getBuiltinModule) for the
// length of one open.
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import fs, { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { BTreeStore, IoError, QuotaExceededError } from '../../ts/src/index.js';
import { tempDir } from './store-helpers.js';

const tmp = tempDir('lock-faults');
afterAll(() => tmp.cleanup());
afterEach(() => vi.restoreAllMocks());

function errno(code: string): Error {
  return Object.assign(new Error(`${code}: injected`), { code });
}

/** Fails `fn` (writeSync or fdatasyncSync) on the descriptors of files whose path passes `which`. */
function failOn(fn: 'writeSync' | 'fdatasyncSync', which: (path: string) => boolean, code: string): void {
  const fds = new Set<number>();
  const open = fs.openSync.bind(fs);
  vi.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, ...rest: unknown[]) => {
    const fd = (open as (...a: unknown[]) => number)(p, ...rest);
    if (which(String(p))) fds.add(fd);
    return fd;
  }) as typeof fs.openSync);
  const orig = (fs[fn] as (...a: unknown[]) => unknown).bind(fs);
  vi.spyOn(fs, fn).mockImplementation(((fd: number, ...rest: unknown[]) => {
    if (fds.has(fd)) throw errno(code);
    return orig(fd, ...rest);
  }) as never);
}

const noHardLinks = () => vi.spyOn(fs, 'linkSync').mockImplementation(() => { throw errno('EPERM'); });

describe('the node lock file under file-system faults', () => {
  let n = 0;
  let path = '';
  const lockOf = (p: string) => p + '-lock';
  const ownOf = (p: string) => `${p}-lock.${process.pid}`;

  async function fresh(): Promise<string> {
    const p = join(tmp.dir, `s${n++}.db`);
    const s = await BTreeStore.open<number, string>({ path: p, keys: 'number', values: 'utf8' });
    for (let i = 0; i < 500; i++) s.set(i, `v${i}`);
    await s.close();
    return p;
  }

  async function expectIntact(p: string): Promise<void> {
    const s = await BTreeStore.open<number, string>({ path: p, keys: 'number', values: 'utf8' });
    expect(s.size).toBe(500);
    expect(s.get(499)).toBe('v499');
    s.set(500, 'new');
    await s.close();
    expect(fs.existsSync(lockOf(p))).toBe(false);
    expect(fs.existsSync(ownOf(p))).toBe(false);
  }

  async function expectOpenFails(p: string, code: 'IO_ERROR' | 'QUOTA_EXCEEDED' = 'IO_ERROR'): Promise<void> {
    const before = fs.readFileSync(p);
    const e = await BTreeStore.open({ path: p, keys: 'number', values: 'utf8' }).then(
      () => null,
      (x: unknown) => x,
    );
    // (a full disk is QUOTA_EXCEEDED, as everywhere else: it was IO_ERROR until session 23)
    expect(e).toBeInstanceOf(code === 'IO_ERROR' ? IoError : QuotaExceededError);
    expect((e as IoError).code).toBe(code);
    expect(fs.existsSync(lockOf(p))).toBe(false);
    expect(fs.existsSync(ownOf(p))).toBe(false);
    expect(fs.readFileSync(p).equals(before)).toBe(true);
  }

  it.each([
    ['a full disk while the pid is written', 'writeSync', 'ENOSPC', 'QUOTA_EXCEEDED'],
    ['a failing flush', 'fdatasyncSync', 'EIO', 'IO_ERROR'],
  ] as const)('%s to lock.<pid>: a typed error, nothing left behind, the store opens after', async (_what, fn, code, want) => {
    path = await fresh();
    failOn(fn, (p) => p.endsWith(`-lock.${process.pid}`), code);
    await expectOpenFails(path, want);
    vi.restoreAllMocks();
    await expectIntact(path);
  });

  it('no hard links: the lock is created with O_EXCL and works; a full disk while writing it removes it', async () => {
    path = await fresh();
    noHardLinks();
    // Without links the lock itself is created and written: opens, excludes a second open, closes.
    const s = await BTreeStore.open<number, string>({ path, keys: 'number', values: 'utf8' });
    expect(fs.readFileSync(lockOf(path), 'utf8')).toMatch(new RegExp(`^${process.pid}( start \\d+)?$`));
    expect(fs.existsSync(ownOf(path))).toBe(false);
    expect(s.size).toBe(500);
    await s.close();
    expect(fs.existsSync(lockOf(path))).toBe(false);
    // Writing the lock fails: it is removed, not left empty for ten seconds of LOCKED.
    failOn('writeSync', (p) => p === lockOf(path), 'ENOSPC');
    await expectOpenFails(path, 'QUOTA_EXCEEDED');
    vi.restoreAllMocks();
    await expectIntact(path);
  });

  // The store's directory removed and made again while a store is open there: a new store
  // opened in it by another process holds the lock by then. close() of the old one removed the
  // lock by name, and a third opener then wrote beside the second (a probe, session 32:
  // resolved commits lost). Now close() removes only the lock file it made.
  it("close() leaves another opener's lock alone (the directory was removed and made again)", async () => {
    const dir = join(tmp.dir, `gone${n++}`);
    fs.mkdirSync(dir);
    const p = join(dir, 'db');
    const a = await BTreeStore.open<string, number>(p);
    a.set('a', 1);
    await a.commit();
    fs.rmSync(dir, { recursive: true });
    fs.mkdirSync(dir);
    // Another live process's lock (the parent's pid: alive while this runs).
    fs.writeFileSync(lockOf(p), String(process.ppid));
    a.set('a2', 2);
    await expect(a.commit()).rejects.toMatchObject({ code: 'IO_ERROR' });
    await a.close().catch(() => undefined);
    expect(fs.readFileSync(lockOf(p), 'utf8')).toBe(String(process.ppid));
    await expect(BTreeStore.open(p)).rejects.toMatchObject({ code: 'LOCKED' });
    fs.rmSync(dir, { recursive: true });
  });

  // A lock of this process's pid from another start (it records /proc/self/stat's start
  // ticks) is not any of its threads': a container restarted runs as pid 1 again, and the lock
  // a worker thread of the killed one held ("1 thread 1") refused every restart as held by a
  // thread of this process (a probe, session 32). One of this start is another thread's, held,
  // whatever its mtime says (the first fix went by the lock's age, and a lock touched back
  // let two threads write; the verify probe).
  it('a lock of this pid from another start is stale; one of this start or with no start is held', async () => {
    const p0 = await fresh();
    const s0 = await BTreeStore.open({ path: p0, keys: 'number', values: 'utf8' });
    const mine = /start (\d+)/.exec(fs.readFileSync(lockOf(p0), 'utf8'))?.[1];
    await s0.close();
    expect(mine).toMatch(/^\d+$/);  // (Linux: /proc/self/stat)
    const old = (Date.now() - 3_600_000) / 1000;
    for (const text of [`${process.pid} thread 7 start ${mine}`, `${process.pid} thread 7`, `${process.pid} flock`]) {
      const p = await fresh();
      writeFileSync(lockOf(p), text);
      const open = () => BTreeStore.open({ path: p, keys: 'number', values: 'utf8' });
      await expect(open()).rejects.toMatchObject({ code: 'LOCKED' });
      fs.utimesSync(lockOf(p), old, old);  // (an hour old: held all the same)
      await expect(open()).rejects.toMatchObject({ code: 'LOCKED' });
    }
    const p = await fresh();
    writeFileSync(lockOf(p), `${process.pid} thread 7 start ${Number(mine) - 1}`);
    await expectIntact(p);
  });

  // A lock whose pid the system has given to an unrelated process since: the store stayed
  // locked until that process ended, although the lock records another start (the churn
  // probe, session 34). A live process with the start the lock records holds it.
  it("a lock naming a live pid of another start is stale; with that process's own start it is held", async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const pid = other.pid!;
      let start = '';
      for (let i = 0; i < 50 && start === ''; i++) {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
      }
      expect(start).toMatch(/^\d+$/);
      const held = await fresh();
      writeFileSync(lockOf(held), `${pid} start ${start}`);
      await expect(BTreeStore.open({ path: held, keys: 'number', values: 'utf8' })).rejects.toMatchObject({ code: 'LOCKED' });
      writeFileSync(lockOf(held), `${pid}`); // (no start recorded: the pid alone decides)
      await expect(BTreeStore.open({ path: held, keys: 'number', values: 'utf8' })).rejects.toMatchObject({ code: 'LOCKED' });
      const p = await fresh();
      writeFileSync(lockOf(p), `${pid} start ${Number(start) - 1}`);
      await expectIntact(p);
    } finally {
      other.kill();
    }
  });
});
