// adaptree/level over the browser backends, checked with abstract-level's own compliance suite
// (abstract-level/test with tape, including its re-run on a sublevel) in headless Chromium:
// 'indexeddb' on the page's main thread, 'opfs' in a dedicated worker (sync access handles).
// vite bundles the suite, tape and the adapter from ts/src (level-browser/); the page returns
// tape's TAP output, which is checked here: no failed assertion, and at least the counts below
// (a suite that stops early must not pass). Needs the wasm built (ts/src/wasm).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { ARGS, CHROMIUM, isolatedServer, listen } from './browser-harness.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const fixture = join(here, 'level-browser');

/** Assertions each backend must reach (abstract-level 3.1.1): opfs is synchronous in a worker
 * and runs what the persistent store runs in Node (5,132); indexeddb is asynchronous, so no
 * getSync tests (as the async store in Node, 4,660, plus permanence, createIfMissing and
 * errorIfExists). */
const MIN_ASSERTIONS = { indexeddb: 4672, opfs: 5132 };

interface SuiteResult { tap?: string; supports?: Record<string, unknown>; databases?: number; error?: string }

/** Counts TAP lines: `ok N`, `not ok N` (with the failed lines and their diagnostics), and
 * the tests (the `# name` lines before tape's summary). */
function tapCounts(tap: string): { pass: number; fail: number; tests: number; failed: string[] } {
  const lines = tap.split('\n');
  let pass = 0, fail = 0, tests = 0;
  const failed: string[] = [];
  lines.forEach((line, i) => {
    if (/^ok \d+/.test(line)) pass++;
    else if (/^not ok \d+/.test(line)) {
      fail++;
      failed.push([line, ...lines.slice(i + 1, i + 12).filter((l) => l.startsWith('  '))].join('\n'));
    } else if (/^# (?!tests |pass |fail |ok$)/.test(line)) tests++;
  });
  return { pass, fail, tests, failed };
}

describe('adaptree/level: abstract-level suite in headless Chromium', () => {
  let outDir = '';
  let profile = '';
  let server: Server | undefined;
  let context: BrowserContext | undefined;
  let page: Page;
  const errors: string[] = [];
  const runs: Record<string, Promise<SuiteResult>> = {};

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'adaptree-level-browser-'));
    const { build } = await import('vite');
    await build({
      root: fixture,
      logLevel: 'warn',
      configFile: false,
      resolve: { alias: [{ find: /^path$/, replacement: join(fixture, 'path.js') }, { find: /^stream$/, replacement: join(fixture, 'stream.js') }] },
      build: { outDir, emptyOutDir: true, target: 'es2022', minify: false },
      worker: { format: 'es' },
    });
    server = isolatedServer(outDir, ['/']);
    const port = await listen(server);
    profile = mkdtempSync(join(tmpdir(), 'adaptree-level-browser-profile-'));
    const { chromium } = await import('playwright-core');
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(`pageerror: ${String(e)}`));
    await page.goto(`http://127.0.0.1:${port}/index.html`);
    await page.waitForFunction(() => document.getElementById('out')?.textContent === 'ready');
    // Both backends at once (the page's main thread and a worker): most of the time is spent
    // waiting for flushes, so together they take little longer than the slower alone.
    for (const storage of ['indexeddb', 'opfs'] as const) {
      runs[storage] = page.evaluate((s) => (window as unknown as { runSuite(s: string): Promise<SuiteResult> }).runSuite(s), storage);
      runs[storage].catch(() => undefined); // awaited by its test
    }
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    server?.close();
    for (const d of [outDir, profile]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it.each(['indexeddb', 'opfs'] as const)('passes in full on %s', async (storage) => {
    const r = await runs[storage]!;
    expect(r.error).toBeUndefined();
    const c = tapCounts(r.tap ?? '');
    console.log(`adaptree/level on ${storage} in Chromium: ${c.tests} tests, ${c.pass} assertions passed, ${c.fail} failed, ` +
      `${r.databases} databases; supports ${JSON.stringify(r.supports)}`);
    expect(c.failed).toEqual([]);
    expect(c.pass).toBeGreaterThanOrEqual(MIN_ASSERTIONS[storage]);
    expect(r.supports).toMatchObject({ permanence: true, explicitSnapshots: true, implicitSnapshots: true, seek: true, has: true, createIfMissing: true, errorIfExists: true, getSync: storage === 'opfs' });
    expect(errors).toEqual([]);
  }, 600_000);
});
