// Workers sharing one BTreeMap in headless Chromium, cross-origin isolated (docs/THREADS.md):
// two module workers and the main thread run the stress of fixtures/threads-stress.mjs on
// one map (content equals the model afterwards), and the main thread's call waits for a
// latch a worker holds by spinning (waiting would trap on the main thread). And an opfs store
// shared by two module workers (docs/THREADS.md, "Stores"): the owner opens it with
// 'readwrite-unsafe' access handles and shares it, the peer attaches with handles of its own;
// both run the stress with commits and a pool far smaller than the data; content equals both
// models, also reopened on the st build.
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from 'node:http';
import { ARGS, CHROMIUM, isolatedServer, listen } from './browser-harness.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe.runIf(existsSync(CHROMIUM))('BTreeMap shared with browser workers (Chromium)', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    if (!existsSync(join(repo, 'dist/index.js'))) throw new Error('dist/ is not built: scripts/build.sh wasm && scripts/build.sh ts');
    server = isolatedServer(repo, ['/dist/', '/tests/ts/runtimes/threads/', '/tests/ts/runtimes/store-threads/', '/tests/ts/fixtures/']);
    port = await listen(server);
  });
  afterAll(() => server?.close());

  /** Runs a page to its window.__result; with the page errors seen meanwhile. */
  async function pageResult(url: string): Promise<{ r: unknown; errors: string[] }> {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${port}${url}`);
      await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, null, { timeout: 240_000 });
      return { r: await page.evaluate(() => (window as unknown as { __result: unknown }).__result), errors };
    } finally {
      await browser.close();
    }
  }

  it('stress from two workers and the main thread; the main thread spins on a held latch', async () => {
    const { r: res, errors } = await pageResult('/tests/ts/runtimes/threads/index.html?ops=6000');
    const r = res as {
      error?: string;
      crossOriginIsolated: boolean;
      stress: { problems: string[]; size: number; build: string };
      spin: { value: unknown; seenAfter: number };
    };
    expect(r.error).toBeUndefined();
    expect(errors).toEqual([]);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.stress.build).toBe('mt');
    expect(r.stress.problems).toEqual([]);
    expect(r.stress.size).toBeGreaterThan(1000);
    expect(r.spin).toEqual({ value: 'v', seenAfter: 4 });
  }, 300_000);

  // Session 35 (threads probe): a worker that attached a shared map and ended with self.close()
  // without free() kept its 1 MiB stack of the shared memory for good (40 workers: 16 -> 48 MiB).
  it('workers that end with self.close() without freeing their attached map give its stack back', async () => {
    const { r, errors } = await pageResult('/tests/ts/runtimes/threads/selfclose.html');
    expect(errors).toEqual([]);
    // and a call after close() in the same task is ClosedError: it ran on the memory the close
    // had given back (the verify35 probe: another worker attached on that stack, and the page
    // died)
    expect(r).toEqual({ build: 'mt', freed: 'same', closed: 'same', after: 'CLOSED', afterKey: false, size: 61, keys: [0, 60] });
  }, 120_000);

  it('an opfs store shared by an owner and a peer worker: stress with commits, evictions; content equals the models, also after reopen', async () => {
    const { r: res, errors } = await pageResult('/tests/ts/runtimes/store-threads/index.html?ops=4000');
    const r = res as Record<string, unknown>;
    expect(r.error).toBeUndefined();
    expect(errors).toEqual([]);
    expect(r.crossOriginIsolated).toBe(true);
    expect(r.build).toBe('mt');
    expect(r.peer).toEqual({ failure: '', commits: 4 });
    expect([r.ownerFailure, r.ownerCommits]).toEqual(['', 4]);
    expect(r.problems).toEqual([]);
    expect(r.reopened).toEqual([]);
    expect(r.size as number).toBeGreaterThan(1000);
    expect(r.evictions as number).toBeGreaterThan(0);
  }, 300_000);
});
