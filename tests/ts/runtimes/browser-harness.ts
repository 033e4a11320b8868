// Shared by the Chromium tests (runtimes, opfs, indexeddb): the browser binary and flags, a
// static server that makes pages cross-origin isolated, and the random workload with its model.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import { extname, join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

const MIME: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
};

/** Serves files below `root` (only under the given URL prefixes; a directory means its
 * index.html) with COOP + COEP, so pages are cross-origin isolated (SharedArrayBuffer, mt). */
export function isolatedServer(root: string, prefixes: string[]): Server {
  return createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').split('?')[0]!).replace(/\/$/, '/index.html');
    const path = join(root, url);
    if (!path.startsWith(root) || !prefixes.some((p) => url.startsWith(p)) || !existsSync(path)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': MIME[extname(path)] ?? 'application/octet-stream',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
    });
    res.end(readFileSync(path));
  });
}

/** Starts `server` on a free local port; resolves with the port. */
export function listen(server: Server): Promise<number> {
  return new Promise<number>((res) => server.listen(0, '127.0.0.1', () => res((server.address() as { port: number }).port)));
}

export type Op = [key: string, value: { n: number; s: string } | null];

/** n random sets (80%) and deletes over ~n/3 keys, values of random length. */
export function randomOps(n: number, seed: number): Op[] {
  let x = seed >>> 0 || 1;
  const rnd = () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
  const ops: Op[] = [];
  for (let i = 0; i < n; i++) {
    const k = `key:${Math.floor(rnd() * (n / 3)).toString(36).padStart(5, '0')}`;
    ops.push(rnd() < 0.2 ? [k, null] : [k, { n: i, s: 'v'.repeat(Math.floor(rnd() * 300)) }]);
  }
  return ops;
}

export function applyModel(model: Map<string, unknown>, ops: Op[]): void {
  for (const [k, v] of ops) {
    if (v === null) model.delete(k);
    else model.set(k, v);
  }
}

/** The model's entries in key order (the store's order for ASCII utf8 keys). */
export const sorted = (model: Map<string, unknown>) => [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** Starts Chromium itself (so that the test owns its pid and can SIGKILL it) on the profile
 * `profile`, connects over CDP and opens `url`, then waits for the page's `ready` promise. */
export async function launchKillable(profile: string, url: string): Promise<{ proc: ChildProcess; page: Page; close(): Promise<void> }> {
  // Its own process group (detached), so a kill takes the whole browser: the storage service
  // and renderers too, not only the browser process (they could outlive it for a moment and
  // still hold the profile's IndexedDB files when the next browser opens them).
  const proc = spawn(CHROMIUM, [...ARGS, '--headless=new', `--user-data-dir=${profile}`, '--remote-debugging-port=0', 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const ws = await new Promise<string>((res, rej) => {
    let err = '';
    const timer = setTimeout(() => rej(new Error(`chromium did not start: ${err}`)), 30_000);
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        res(m[1]!);
      }
    });
    proc.on('exit', (c) => rej(new Error(`chromium exited (${c}): ${err}`)));
  });
  const { chromium } = await import('playwright-core');
  const browser = await chromium.connectOverCDP(ws);
  const ctx = browser.contexts()[0]!;
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  await page.goto(url);
  await page.evaluate(() => (globalThis as unknown as { ready: Promise<void> }).ready);
  return {
    proc,
    page,
    async close() {
      await browser.close().catch(() => undefined);
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGTERM');
        await exited;
      }
      // The rest of its process group (storage service, renderers) can outlive the browser
      // process for a moment and still write into the profile: wait until all of it is gone.
      await waitGroupGone(proc);
    },
  };
}

/** For a describe block: serves `root`'s dist/, the fixture folder `fixture` (e.g.
 * '/tests/ts/runtimes/idb/') and the fixtures' shared modules (tests/ts/runtimes/shared/) cross-origin isolated and makes a fresh browser profile dir
 * before its tests, removes both after. `url` is the fixture's index.html. */
export function servedFixture(root: string, fixture: string, tag: string): { readonly url: string; readonly profile: string } {
  const state = { url: '', profile: '' };
  let srv: Server | undefined;
  beforeAll(async () => {
    srv = isolatedServer(root, ['/dist/', fixture, '/tests/ts/runtimes/shared/']);
    const port = await listen(srv);
    state.url = `http://127.0.0.1:${port}${fixture}index.html`;
    state.profile = mkdtempSync(join(tmpdir(), `adaptree-${tag}-`));
  });
  afterAll(() => {
    srv?.close();
    // Retries: a browser process that has just exited can leave a file being flushed for a moment.
    if (state.profile) rmSync(state.profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });
  return state;
}

/** Waits (up to 60 s) until `resolved()` reaches `atLeast` commits, waits `delayMs` more so that
 * a commit is being built or flushed, then SIGKILLs the browser and waits for it to exit.
 * Returns the last commit seen resolved before the kill. */
function killGroup(proc: ChildProcess): void {
  try {
    process.kill(-proc.pid!, 'SIGKILL');
  } catch {
    proc.kill('SIGKILL'); // no group (already gone)
  }
}

function groupAlive(proc: ChildProcess): boolean {
  try {
    process.kill(-proc.pid!, 0);
    return true;
  } catch {
    return false;
  }
}

export async function killMidWorkload(proc: ChildProcess, resolved: () => number, atLeast: number, delayMs: number): Promise<number> {
  const t0 = Date.now();
  while (resolved() < atLeast && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 20));
  if (resolved() < atLeast) throw new Error(`only ${resolved()} commits resolved in 60 s (wanted ${atLeast})`);
  await new Promise((r) => setTimeout(r, delayMs));
  const seen = resolved();
  const exited = new Promise((r) => proc.once('exit', r));
  killGroup(proc);
  await exited;
  await waitGroupGone(proc);
  return seen;
}

/** Every process of the browser's group gone (children die on their own once the browser is
 * gone, but not at once; the group kill reaches them too). */
async function waitGroupGone(proc: ChildProcess): Promise<void> {
  for (const t0 = Date.now(); groupAlive(proc) && Date.now() - t0 < 10_000; ) {
    killGroup(proc);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** For a describe block: servedFixture plus a headless Chromium on its profile (a persistent
 * context, so storage survives page reloads); `context` is set before the tests run. */
export function browserOnFixture(root: string, fixture: string, tag: string): { readonly url: string; readonly context: BrowserContext } {
  const fx = servedFixture(root, fixture, tag);
  const state = {
    get url() {
      return fx.url;
    },
    context: undefined as unknown as BrowserContext,
  };
  beforeAll(async () => {
    if (!existsSync(join(root, 'dist/index.js')) || !existsSync(join(root, 'dist/wasm/adaptree-st.wasm'))) {
      throw new Error('dist/ is not built: scripts/build.sh wasm && scripts/build.sh ts');
    }
    const { chromium } = await import('playwright-core');
    state.context = await chromium.launchPersistentContext(fx.profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  }, 60_000);
  afterAll(async () => {
    await state.context?.close();
  });
  return state;
}

/** A new page of the fixture, its page errors collected into `errors`, once the page's
 * `ready` promise has settled. */
export async function fixtureTab(browser: { readonly url: string; readonly context: BrowserContext }, errors: string[]): Promise<Page> {
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${String(e)}`));
  await page.goto(browser.url);
  await page.evaluate(() => (globalThis as unknown as { ready: Promise<void> }).ready);
  return page;
}

/** An error as the opfs fixture's page reports it (opfs/page.js, tryCall). */
export interface CallError {
  name: string;
  code?: string;
  message: string;
}

/** Runs a command in the opfs fixture's worker (window.call of opfs/page.js). */
export const pageCall = <T>(page: Page, cmd: Record<string, unknown>): Promise<T> =>
  page.evaluate((c) => (globalThis as unknown as { call(c: unknown): Promise<unknown> }).call(c), cmd) as Promise<T>;

/** The same, resolving with `{ result }` or `{ error }` (window.tryCall). */
export const pageTry = (page: Page, cmd: Record<string, unknown>): Promise<{ result?: unknown; error?: CallError }> =>
  page.evaluate((c) => (globalThis as unknown as { tryCall(c: unknown): Promise<unknown> }).tryCall(c), cmd) as Promise<{ result?: unknown; error?: CallError }>;
