// The fault-injection suite of Persistence I (tests/ts/store.crash.test.ts, tests/core
// fault_storage) over the browser backends' real I/O paths in headless Chromium
// (tests/ts/runtimes/faults/): the k-th I/O fails, for many k spread over a whole workload.
// - opfs: the k-th write (torn: its first half lands), flush or truncate of the real
//   FileSystemSyncAccessHandle throws, and so does every one after it (the device is gone).
// - indexeddb: the k-th put throws, or the k-th put's transaction is aborted, or the k-th get
//   (a page read) throws.
// Each time the store reports a typed error (IO_ERROR), and a reopen is exactly the last
// resolved commit, or (opfs, a failure after the commit's log was complete) the commit in
// flight; never anything else. st and mt builds.
// Needs the built package (dist/ with its wasm): scripts/build.sh wasm && scripts/build.sh ts.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { browserOnFixture, fixtureTab } from './browser-harness.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../../..');
declare const idbFaults: { run(cmd: Record<string, unknown>): Promise<unknown> };

interface Outcome {
  error?: { name: string; code?: string; message: string };
  closeError?: { name: string; code?: string; message: string };
  checkpointError?: { name: string; code?: string; message: string };
  commits: number;
  state: 'resolved' | 'attempted' | 'neither';
  size: number;
  ios?: number;
  workIos?: number;
  /** opfs: the index of the run's first truncate among its I/O (0: none). */
  firstTruncate?: number;
  op?: string;
  puts?: number;
  gets?: number;
  /** indexeddb: clear() calls (checkpoints) in the run. */
  clears?: number;
  /** indexeddb: the put counts (1-based) that were a commit's log frame. */
  framePuts?: number[];
  /** indexeddb: the codes the store's onError got. */
  onErrors?: string[];
  /** indexeddb: the puts before close(). */
  putsBeforeClose?: number;
  fired?: boolean;
  deltas?: number;
  checkpoints?: number;
}

const WORKLOAD = { seed: 5, batches: 10, size: 250, keys: 2000, pad: 400 };
/** IndexedDB reads: values large enough that the data outgrows the 1 MiB pool (page faults),
 * inline in leaves and (past 1912 bytes of key and value) in overflow pages; fewer batches, since
 * every run reads all of it back through IndexedDB. (Values of up to 1600 bytes, all inline since
 * session 37, made 1.2 MB, and no get at all.) */
const IDB_READS = { ...WORKLOAD, batches: 6, pad: 3200 };

/** k values spread over 1..n: the first few, then evenly, then the last few. */
function spread(n: number, count: number): number[] {
  const ks = new Set<number>([1, 2, 3, n - 1, n]);
  for (let i = 1; i <= count; i++) ks.add(Math.max(1, Math.round((i * n) / (count + 1))));
  return [...ks].filter((k) => k >= 1 && k <= n).sort((a, b) => a - b);
}

describe('fault injection over the browser backends in headless Chromium', () => {
  const browser = browserOnFixture(repo, '/tests/ts/runtimes/faults/', 'faults');
  const errors: string[] = [];
  let page: Page;

  const tab = (): Promise<Page> => fixtureTab(browser, errors);

  const opfs = (cmd: Record<string, unknown>) =>
    page.evaluate(async (c) => {
      const w = ((window as unknown as { faultWorker?: Worker }).faultWorker ??= new Worker('./opfs-worker.js', { type: 'module' }));
      return new Promise((res, rej) => {
        const seq = Math.random();
        const on = (e: MessageEvent) => {
          if (e.data.seq !== seq) return;
          w.removeEventListener('message', on);
          if (e.data.error) rej(new Error(JSON.stringify(e.data.error)));
          else res(e.data.result);
        };
        w.addEventListener('message', on);
        w.postMessage({ seq, cmd: c });
      });
    }, cmd) as Promise<Outcome>;

  const idb = (cmd: Record<string, unknown>) =>
    page.evaluate((c) => idbFaults.run(c), cmd) as Promise<Outcome>;

  /** The failure was reported as IO_ERROR and the reopened store is a committed state. A
   * failure no operation saw (in the checkpoint of close(), or a read-ahead whose page was then
   * read again) must have lost nothing: every commit resolved and is there. */
  function check(o: Outcome, k: number, allowAttempted: boolean, batches = WORKLOAD.batches): boolean {
    const where = `k=${k}: ${JSON.stringify(o)}`;
    if (o.error === undefined) {
      expect(o.commits, where).toBe(batches);
      expect(o.state, where).toBe('resolved');
      // A checkpoint that failed after the last commit: onError heard of it, the commit stood.
      if (o.checkpointError !== undefined) {
        expect(o.checkpointError.code, where).toBe('IO_ERROR');
        return true;
      }
      return false;
    }
    expect(o.error.code, where).toBe('IO_ERROR');
    expect(allowAttempted ? ['resolved', 'attempted'] : ['resolved'], where).toContain(o.state);
    return true;
  }

  it.each([false, true])('opfs: the k-th write/flush/truncate of the sync access handles fails (threads: %s)', async (threads) => {
    page ??= await tab();
    const clean = await opfs({ ...WORKLOAD, threads, path: `faults-${threads}/count` });
    expect(clean.error).toBeUndefined();
    expect(clean.commits).toBe(WORKLOAD.batches);
    expect(clean.state).toBe('resolved');
    // The faults land among commits that log deltas and checkpoints that restate them.
    expect(clean.deltas).toBeGreaterThan(100);
    expect(clean.checkpoints).toBeGreaterThan(0);
    // k over the workload's I/O (plus a few in the checkpoint of close()).
    // The mt build runs the same storage code (its I/O imports are the st build's), so it gets a
    // smaller sample: the suite's time goes where the paths differ.
    // A commit's checkpoint writes the next log over the old one (no truncate): the first
    // truncate is close()'s, and one k is put there.
    expect(clean.firstTruncate).toBeGreaterThan(clean.workIos!);
    const ks = [...spread(clean.workIos!, threads ? 12 : 30), clean.workIos! + 1, Math.round((clean.workIos! + clean.ios!) / 2), clean.firstTruncate!];
    const seen = { reported: 0, ops: new Set<string>() };
    for (const k of ks) {
      const o = await opfs({ ...WORKLOAD, threads, path: `faults-${threads}/k${k}`, k });
      if (check(o, k, true)) seen.reported++;
      seen.ops.add(o.op!);
    }
    // The sample hit writes, flushes and truncates, and most failures reached an operation.
    expect([...seen.ops]).toEqual(expect.arrayContaining(['write', 'flush', 'truncate']));
    expect(seen.reported).toBeGreaterThan(ks.length * 0.8);
  }, 600_000);

  it.each([
    ['put-throw', false], ['put-abort', false], ['get', false],
    ['put-throw', true], ['put-abort', true], ['get', true],
  ] as const)('indexeddb: %s at the k-th request (threads: %s)', async (mode, threads) => {
    page ??= await tab();
    // A 256 KiB log: commits append frames and every few of them checkpoint instead.
    const workload = { ...(mode === 'get' ? IDB_READS : WORKLOAD), checkpointBytes: 256 << 10, frameAtClose: true };
    const clean = await idb({ ...workload, threads, path: `faults-${threads}-${mode}-count`, mode: 'count' });
    expect(clean.error).toBeUndefined();
    expect(clean.commits).toBe(workload.batches);
    if (mode !== 'get') {
      expect(clean.clears, 'checkpoints in the workload, and one at close').toBeGreaterThan(2);
      expect(clean.framePuts!.length, 'commits that appended a frame').toBeGreaterThan(2);
      expect(clean.puts! - clean.putsBeforeClose!, "close()'s checkpoint").toBeGreaterThanOrEqual(2);
    }
    const n = mode === 'get' ? clean.gets! : clean.puts!;
    expect(n).toBeGreaterThan(10);
    let reported = 0;
    // Spread over all requests (mostly a checkpoint's page puts), and the frames' puts.
    // ... and, for puts, the first and last of close()'s checkpoint.
    const ks = [...new Set([...spread(n, (mode === 'get' ? 10 : 20) / (threads ? 2 : 1)), ...(mode === 'get' ? [] : [...clean.framePuts!.slice(0, threads ? 2 : 4), clean.putsBeforeClose! + 1, clean.puts!])])];
    for (const k of ks) {
      const o = await idb({ ...workload, threads, path: `faults-${threads}-${mode}-${k}`, mode, k });
      expect(o.fired).toBe(true);
      if (check(o, k, false, workload.batches)) reported++;
      // A fault no operation saw fell in close()'s checkpoint: it went to onError.
      else if (mode !== 'get') expect(o.onErrors, `k=${k}`).toEqual(['IO_ERROR']);
      if (mode !== 'get' && k > clean.putsBeforeClose!) expect(o.error, `k=${k}: in close()`).toBeUndefined();
    }
    expect(reported).toBeGreaterThan(ks.length / 2);
    expect(errors).toEqual([]);
  }, 600_000);
});
