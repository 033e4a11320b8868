// Crash safety through the TypeScript API: a backend that stops persisting after its k-th
// write/sync/truncate (a sample of k over a workload of thousands of operations and dozens
// of commits), a backend whose k-th sync fails, and kill -9 of a child process at >= 100
// random moments. Every reopen must equal the model of a completed commit (the last one
// that finished before the crash, or the one in flight), never a mix, and contain every
// commit whose promise resolved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BTreeStore, IoError, ReadOnlyError, init, memoryStorage } from '../../ts/src/index.js';
import { SplitMix } from './store-rng.js';
import { CrashBackend, sortedEntries, tempDir, uniqueName, wrapFiles } from './store-helpers.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const tmp = tempDir('crash');
afterAll(() => tmp.cleanup());
beforeAll(async () => {
  await init();
});

type Model = Map<number, string>;

/** A deterministic workload of mixed operations with commits; returns the model after each commit. */
async function workload(s: BTreeStore<number, string>, seed: number, onCommit: (m: Model) => void, onAttempt?: (m: Model) => void): Promise<void> {
  const rng = new SplitMix(seed);
  const live: Model = new Map();
  for (let c = 0; c < 30; c++) {
    const n = 20 + rng.int(120);
    for (let i = 0; i < n; i++) {
      const r = rng.int(100);
      const k = rng.int(3000);
      if (r < 70) {
        const v = `${k}/${c}/` + 'z'.repeat(rng.int(300));
        s.set(k, v);
        live.set(k, v);
      } else if (r < 95) {
        s.delete(k);
        live.delete(k);
      } else {
        const lim = k + rng.int(40);
        s.deleteRange({ gte: k, lt: lim });
        for (const key of [...live.keys()]) if (key >= k && key < lim) live.delete(key);
      }
    }
    onAttempt?.(new Map(live));
    await s.commit();
    onCommit(new Map(live));
  }
}

async function reopenContents(path: string): Promise<[number, string][]> {
  const r = await BTreeStore.open<number, string>({ storage: memoryStorage, path, keys: 'number', values: 'utf8' });
  try {
    const out: [number, string][] = [];
    for (const e of r.entries()) out.push(e);
    r.checkInvariants();
    return out;
  } finally {
    await r.close({ commit: false });
  }
}

describe('crash at the k-th storage operation (TS API, memory files)', () => {
  it('every sampled k reopens to the last completed commit or the one in flight', async () => {
    // Measure the workload once.
    const probe = new CrashBackend(Infinity);
    const pPath = uniqueName('probe');
    const s0 = await BTreeStore.open<number, string>({ storage: probe, path: pPath, keys: 'number', values: 'utf8', poolSize: 1 << 20 });
    const opened = probe.ops;
    const models: Model[] = [new Map()];
    const doneAt: number[] = [opened];
    await workload(s0, 7, (m) => {
      models.push(m);
      doneAt.push(probe.ops);
    });
    await s0.close({ commit: false });
    const total = probe.ops;
    expect(models.length).toBe(31);
    expect(total).toBeGreaterThan(100);
    // A sample of k: every commit boundary +-1, and random ones.
    const rng = new SplitMix(99);
    const ks = new Set<number>();
    for (const d of doneAt) for (const x of [d - 1, d, d + 1]) if (x >= opened && x <= total) ks.add(x);
    // every k when the workload has few operations (its writes are batched per commit), else a sample
    if (total - opened + 1 <= 400) for (let k = opened; k <= total; k++) ks.add(k);
    else while (ks.size < 300) ks.add(opened + rng.int(total - opened + 1));
    let checked = 0;
    // each k twice: the k-th operation completes, or (a write) reaches the disk only half-way
    for (const [k, tear] of [...ks].flatMap((k) => [[k, false], [k, true]] as const)) {
      const path = uniqueName('crash');
      const b = new CrashBackend(k, tear);
      const s = await BTreeStore.open<number, string>({ storage: b, path, keys: 'number', values: 'utf8', poolSize: 1 << 20 });
      let c = 0;
      await workload(s, 7, () => {
        if (b.ops <= k) c++;
      });
      await s.close({ commit: false });
      const got = await reopenContents(path);
      const ok = [models[c]!, models[c + 1]].filter((m) => m !== undefined).some((m) => JSON.stringify(sortedEntries(m)) === JSON.stringify(got));
      expect(ok, `k=${k}${tear ? ' (torn)' : ''}: reopened state is neither commit ${c} nor ${c + 1}`).toBe(true);
      memoryStorage.remove(path);
      checked++;
    }
    expect(checked).toBe(2 * ks.size);
  });

  it('a failing sync: the commit rejects with IoError, the store turns read-only, the last commit survives', async () => {
    for (const failAt of [1, 2, 3, 5, 8]) {
      let syncs = 0;
      const armed = { on: false };
      const backend = wrapFiles(memoryStorage, 'failsync', (f) => ({
        read: (d, o) => f.read(d, o),
        write: (s, o) => f.write(s, o),
        sync: () => {
          if (armed.on && ++syncs === failAt) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
          f.sync();
        },
        size: () => f.size(),
        truncate: (n) => f.truncate(n),
      }));
      const path = uniqueName('failsync');
      const s = await BTreeStore.open<number, string>({ storage: backend, path, keys: 'number', values: 'utf8' });
      let committed: Model = new Map();
      let attempted: Model = new Map();
      armed.on = true;
      let err: unknown;
      try {
        await workload(s, failAt, (m) => (committed = m), (m) => (attempted = m));
      } catch (e) {
        err = e;
      }
      expect(err, `fail at sync ${failAt}`).toBeInstanceOf(IoError);
      expect((err as Error).cause).toBeDefined();
      expect(() => s.set(1, 'x')).toThrow(ReadOnlyError);
      await s.close({ commit: false });
      // A failed fsync does not say the bytes are not on disk: the reopened store holds the
      // last commit, or the failed one if all of it reached the log; never anything else.
      const got = JSON.stringify(await reopenContents(path));
      expect([JSON.stringify(sortedEntries(committed)), JSON.stringify(sortedEntries(attempted))], `fail at sync ${failAt}`).toContain(got);
    }
  });
});

/** The state after commit n of store-child.mjs's workload. */
function killModel(n: number, cache: Model[]): Model {
  if (cache.length === 0) cache.push(new Map());
  while (cache.length <= n) {
    const j = cache.length;
    const m = new Map(cache[j - 1]!);
    for (let t = 0; t < 5; t++) m.set(((j * 7) % 1000) + t, String(j));
    m.delete((j * 13) % 1000);
    m.set(-1, String(j));
    cache.push(m);
  }
  return cache[n]!;
}

describe('kill -9', () => {
  it('a child killed at >= 100 random moments: each reopen is a committed prefix with every resolved commit', async () => {
    const dist = join(repo, 'dist/index.js');
    expect(existsSync(dist), 'run `bash scripts/build.sh ts` first').toBe(true);
    const path = join(tmp.dir, 'kill.db');
    await (await BTreeStore.open({ path, keys: 'number' })).close(); // created before the first kill
    const rng = new SplitMix(2024);
    const cache: Model[] = [];
    let killedMidWork = 0;
    const rounds = Number(process.env.ADAPTREE_KILL_ROUNDS ?? 110);
    for (let round = 0; round < rounds; round++) {
      const child = spawn(process.execPath, [join(repo, 'tests/ts/store-child.mjs'), 'work', path], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '', errOut = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (errOut += d.toString()));
      const exited = new Promise<void>((r) => child.on('exit', () => r()));
      // Kill at a random moment: while starting and recovering (a quarter of the rounds), or
      // while committing: after its first resolved commit, however slowly the child started.
      const committing = new Promise<void>((r) => child.stdout!.on('data', () => out.includes('C ') && r()));
      if (rng.int(4) === 0) {
        await new Promise((r) => setTimeout(r, rng.int(120)));
      } else {
        await Promise.race([committing, exited]);
        await new Promise((r) => setTimeout(r, rng.int(60)));
      }
      child.kill('SIGKILL');
      await exited;
      expect(errOut, `child stderr in round ${round}`).toBe('');
      const lines = out.split('\n').filter((l) => l.startsWith('C '));
      const lastResolved = lines.length ? Number(lines.at(-1)!.slice(2)) : -1;
      if (lines.length > 0) killedMidWork++;
      const r = await BTreeStore.open<number, number>({ path, keys: 'number', poolSize: 1 << 20 });
      try {
        const n = r.get(-1) ?? 0;
        expect(n, `round ${round}: commit ${lastResolved} resolved but the store is at ${n}`).toBeGreaterThanOrEqual(lastResolved);
        const got = [...r.entries()].map(([k, v]) => [k, String(v)]);
        expect(got, `round ${round}: not the state of commit ${n}`).toEqual(sortedEntries(killModel(n, cache)));
      } finally {
        await r.close({ commit: false });
      }
    }
    expect(killedMidWork).toBeGreaterThan(rounds / 2);
  }, 180_000);
});
