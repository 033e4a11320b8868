// The store on Deno files: open, write, commit, a second open (LockedError through
// FsFile.tryLockSync), reopen without the uncommitted write, close commits. Needs dist/.
import { afterAll, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from './store-helpers.js';
import { BTreeStore, LockedError } from '../../ts/src/index.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../..');
const tmp = tempDir('deno');
afterAll(() => tmp.cleanup());

it('Deno: writes, commits, locks and reopens a store on Deno.FsFile', async () => {
  expect(existsSync(join(repo, 'dist/index.js')), 'run `bash scripts/build.sh ts` first').toBe(true);
  const args = ['run', '--quiet', `--allow-read=${repo},${tmp.dir}`, `--allow-write=${tmp.dir}`, join(here, 'store-deno.mjs'), tmp.dir];
  const { stdout } = await promisify(execFile)(join(repo, 'node_modules/.bin/deno'), args, {
    cwd: repo,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
  });
  const out = JSON.parse(stdout);
  expect(out.missingDir).toMatch(/^IO_ERROR: cannot create .*x\.db: its directory does not exist/);
  delete out.missingDir;
  expect(out).toEqual({
    storage: 'deno',
    secondOpen: 'LOCKED',
    nodeBackendOpen: 'LOCKED',
    size: 5000,
    get4999: { i: 4999 },
    uncommitted: null,
    keys: [10, 11, 12],
    afterClose: 'after reopen',
    fileBytes: true,
    foreign: 'CORRUPT',
    foreignAfter: '{"a":1}',
    foreignSiblings: ['notes.json'],
    deleted: 'IO_ERROR: true',
    logGoneClose: 'IO_ERROR',
    logGoneData: true,
    logGoneReopen: [3000, 'A0'],
  });
  expect(existsSync(join(tmp.dir, 'deno.db-log'))).toBe(true);
});

it('Deno: a store shared with a Deno worker (mt): stress with commits from both, content equals the models, also after reopen', async () => {
  const args = ['run', '--quiet', `--allow-read=${repo},${tmp.dir}`, `--allow-write=${tmp.dir}`, join(here, 'store-deno-threads.mjs'), tmp.dir];
  const { stdout } = await promisify(execFile)(join(repo, 'node_modules/.bin/deno'), args, {
    cwd: repo,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
  });
  expect(JSON.parse(stdout)).toEqual({ build: 'mt', failures: ['', ''], problems: [], evicted: true, reopened: [], size: true });
}, 120_000);

// Session 35 (threads probe): a Deno worker that attached a shared map and ended with
// self.close() without free() kept its 1 MiB stack of the shared memory for good: 40 such
// workers grew it by 40 MiB. self.close() frees the worker's attached maps first now.
it('Deno: workers that end with self.close() without freeing their attached map give its stack back', async () => {
  const args = ['run', '--quiet', `--allow-read=${repo},${tmp.dir}`, `--allow-write=${tmp.dir}`, join(here, 'threads-deno-selfclose.mjs'), tmp.dir];
  const { stdout } = await promisify(execFile)(join(repo, 'node_modules/.bin/deno'), args, {
    cwd: repo,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
  });
  const out = JSON.parse(stdout);
  // (a worker's close() left pending at self.close() runs or not, as Deno schedules it; either
  // way the owner's store stays writable and keeps every write: the verify35 probe saw it
  // turn read-only when the stack was given back under it, which close() no longer does for
  // stores; this run did not reproduce that failure, the probe's script did, 6 of 6)
  expect(['not run', 'resolved']).toContain(out.workerClose);
  delete out.workerClose;
  expect(out).toEqual({ build: 'mt', freed: 'same', closed: 'same', after: 'not run', afterKey: false, size: 81, keys: [0, 80], store: 'ok', storeKeys: ['a', 'owner', 'w'] });
}, 120_000);

// Until session 29 an attached store in Deno let go of its files only at its next call after
// the owner's close (Deno's BroadcastChannel keeps a thread alive and has no unref, so none was
// listened to): an idle worker kept 2 descriptors per attach. Now an unref'd timer looks. The
// fixture counts the process's descriptors of the store (/proc/self/fd: --allow-all), and the
// process must end by itself (the timer is unref'd).
it('Deno: an idle attached store lets go of its files once the owner closes the store', async () => {
  const args = ['run', '--quiet', '--allow-all', join(here, 'store-deno-release.mjs'), tmp.dir];
  const { stdout } = await promisify(execFile)(join(repo, 'node_modules/.bin/deno'), args, {
    cwd: repo,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    timeout: 60_000,
  });
  // owner and worker: 2 files each while attached; none once the owner closed
  expect(JSON.parse(stdout)).toEqual({ attached: 4, after: 0, value: 1 });
}, 90_000);

// Node has no flock, Deno's backend takes one: both take the lock file `path-lock` too
// (Node writes its pid, Deno "<pid> flock"), so neither opens a store the other holds, and a
// holder that was killed leaves a lock the other takes over.
const denoBin = join(repo, 'node_modules/.bin/deno');
const denoEnv = { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };
// proc: Deno reads /proc/<pid> (whether a Node holder still runs) only under --allow-all.
function denoArgs(mode: string, path: string, proc: boolean): string[] {
  const perms = proc ? ['--allow-all'] : [`--allow-read=${repo},${tmp.dir}`, `--allow-write=${tmp.dir}`];
  return ['run', '--quiet', ...perms, join(here, 'store-deno-lock.mjs'), mode, path];
}
async function denoTry(path: string, proc = true): Promise<{ result: string; message?: string; seen?: unknown }> {
  const { stdout } = await promisify(execFile)(denoBin, denoArgs('try', path, proc), { cwd: repo, env: denoEnv });
  return JSON.parse(stdout);
}

it('Node and Deno exclude each other through the lock file, and take over a killed holder\'s', async () => {
  const path = join(tmp.dir, 'shared.db');
  // Node holds it: Deno is refused and changes nothing.
  let s = await BTreeStore.open<string, string>({ path, storage: 'node', keys: 'utf8', values: 'json' });
  s.set('from', 'node');
  await s.commit();
  expect(readFileSync(path + '-lock', 'utf8')).toMatch(new RegExp(`^${process.pid}( start \\d+)?$`));
  expect((await denoTry(path)).result).toBe('LOCKED');
  expect((await denoTry(path, false)).result).toBe('LOCKED'); // cannot read /proc: held all the same
  expect(s.get('from')).toBe('node');
  await s.close();
  expect(existsSync(path + '-lock')).toBe(false);
  expect(await denoTry(path)).toEqual({ result: 'ok', seen: 'node' });

  // Deno holds it: Node gets LockedError; after Deno closes, Node opens.
  const hold = (): Promise<{ child: ReturnType<typeof spawn>; exited: Promise<number | null> }> =>
    new Promise((res, rej) => {
      const child = spawn(denoBin, denoArgs('hold', path, false), { cwd: repo, env: denoEnv, stdio: ['pipe', 'pipe', 'inherit'] });
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('open')) res({ child, exited });
      });
      child.once('exit', (c) => rej(new Error(`deno hold exited ${c}`)));
    });
  let h = await hold();
  expect(readFileSync(path + '-lock', 'utf8')).toBe(`${h.child.pid} flock`);
  await expect(BTreeStore.open({ path, storage: 'node', keys: 'utf8', values: 'json' })).rejects.toBeInstanceOf(LockedError);
  h.child.stdin!.end();
  expect(await h.exited).toBe(0);
  expect(existsSync(path + '-lock')).toBe(false);
  s = await BTreeStore.open<string, string>({ path, storage: 'node', keys: 'utf8', values: 'json' });
  expect(s.get('from')).toBe('deno-hold');
  await s.close();

  // Deno killed while holding: its lock file stays, Node takes it over (the pid is gone).
  h = await hold();
  h.child.kill('SIGKILL');
  await h.exited;
  expect(readFileSync(path + '-lock', 'utf8')).toBe(`${h.child.pid} flock`);
  s = await BTreeStore.open<string, string>({ path, storage: 'node', keys: 'utf8', values: 'json' });
  expect(s.get('from')).toBe('deno-hold');
  await s.close();

  // A Node holder that died: Deno takes its lock over when it can read /proc, and says what to do
  // when it cannot.
  const dead = await new Promise<number>((res) => {
    const c = spawn(process.execPath, ['-e', '0']);
    c.once('exit', () => res(c.pid!));
  });
  writeFileSync(path + '-lock', String(dead));
  const refused = await denoTry(path, false);
  expect(refused.result).toBe('LOCKED');
  expect(refused.message).toContain('/proc');
  expect(readFileSync(path + '-lock', 'utf8')).toBe(String(dead));
  expect(await denoTry(path)).toEqual({ result: 'ok', seen: 'deno-hold' });
  expect(existsSync(path + '-lock')).toBe(false);

  // An empty lock file (a Deno killed between creating and writing it, or a Node opener on a
  // file system without hard links, in that moment): held while fresh, stale once old. Deno
  // used to refuse it for good.
  writeFileSync(path + '-lock', '');
  expect((await denoTry(path, false)).result).toBe('LOCKED');
  const old = new Date(Date.now() - 60_000);
  utimesSync(path + '-lock', old, old);
  expect(await denoTry(path, false)).toEqual({ result: 'ok', seen: 'deno' });
  expect(existsSync(path + '-lock')).toBe(false);
}, 120_000);

// A new-user probe (session 25): a reader opened both files for writing (Deno: `write: true`,
// which needs --allow-write for them, though docs/STORE.md says a reader needs it only for the
// lock file), and a data file copied without its log (a backup of a closed store) was "no store
// at ... (create: false)" to a reader.
it('Deno: a reader needs write permission only for the lock file, and reads a data file copied without its log', async () => {
  const path = join(tmp.dir, 'reader.db');
  const s = await BTreeStore.open<string, string>({ path, storage: 'node', keys: 'utf8', values: 'json' });
  s.set('from', 'node');
  await s.close();
  const read = async (p: string) => {
    const args = ['run', '--quiet', `--allow-read=${repo},${tmp.dir}`, `--allow-write=${p}-lock`, join(here, 'store-deno-lock.mjs'), 'read', p];
    const { stdout } = await promisify(execFile)(denoBin, args, { cwd: repo, env: denoEnv });
    return JSON.parse(stdout);
  };
  expect(await read(path)).toEqual({ result: 'ok', seen: 'node', size: 1 });
  const copy = join(tmp.dir, 'reader-copy.db');
  writeFileSync(copy, readFileSync(path));
  expect(await read(copy)).toEqual({ result: 'ok', seen: 'node', size: 1 });
  expect(existsSync(copy + '-log')).toBe(false);
  expect(existsSync(copy + '-lock')).toBe(false);
}, 60_000);
