// WorkerPool in headless Chromium, cross-origin isolated, unbundled (docs/THREADS.md "A pool
// of workers"): module workers start from /dist/pool-worker.js next to /dist/pool.js; results
// in input order, load, a typed error, ClosedError after close(), and pools opened and closed
// give their workers' stacks back (pool/main.mjs); a pool over an OPFS store shared from a
// dedicated worker (pool/store-worker.mjs).
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Server } from 'node:http';
import { ARGS, CHROMIUM, isolatedServer, listen } from './browser-harness.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe.runIf(existsSync(CHROMIUM))('WorkerPool with browser module workers (Chromium)', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    if (!existsSync(join(repo, 'dist/pool-worker.js'))) throw new Error('dist/ is not built: scripts/build.sh wasm && scripts/build.sh ts');
    server = isolatedServer(repo, ['/dist/', '/tests/ts/runtimes/pool/']);
    port = await listen(server);
  });
  afterAll(() => server?.close());

  it('getMany/setMany/load over 2 module workers, typed errors, close', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${port}/tests/ts/runtimes/pool/index.html`);
      await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, null, { timeout: 120_000 });
      const r = (await page.evaluate(() => (window as unknown as { __result: unknown }).__result)) as Record<string, unknown>;
      expect(r.error).toBeUndefined();
      expect(errors).toEqual([]);
      expect(r).toMatchObject({ crossOriginIsolated: true, build: 'mt', same: true, size: 4000, tooLarge: 'KEY_TOO_LARGE', loaded: true, afterClose: 'CLOSED' });
      // A pool of two workers would keep 2 MiB of stacks (measured as free heap plus
      // unclaimed room taken).
      expect(r.grownMiB as number).toBeLessThanOrEqual(1);
      // A pool over an OPFS store shared from a dedicated worker (nested module workers).
      expect(r.opfsStore).toEqual({ got: [7, null, 5999], size: 6000, last: 5999, evictions: expect.any(Number) });
      expect((r.opfsStore as { evictions: number }).evictions).toBeGreaterThan(0);
      // An opfs store opened on the main thread: refused typed; inline on request.
      expect(r.remoteRefused).toBe('THREADS_UNSUPPORTED');
      expect(r.remoteInline).toEqual({ workers: 0, got: [2, undefined, 1], afterLost: 1 });
      expect(r.remoteLost).toBe('THREADS_UNSUPPORTED');
    } finally {
      await browser.close();
    }
  }, 180_000);
});
