// The same public API, unmodified, in every runtime adaptree targets: Node,
// Deno, workerd (Cloudflare Workers) and a vite-built page in headless
// Chromium. Each runs scenario.mjs and must produce EXPECTED.
// Needs the built package (dist/), which `npm test` builds first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, copyFileSync, rmSync } from 'node:fs';
import { type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { scenario, EXPECTED } from './scenario.mjs';
import { isolatedServer, listen } from './browser-harness.js';
import { freePort } from '../../package/common.mjs';
import { startWorkerd, writeWorkerdConfig } from './workerd.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../../..');
const bin = (name: string) => join(repo, 'node_modules/.bin', name);
const run = promisify(execFile);

function expectScenario(result: Record<string, unknown>, build: 'st' | 'mt') {
  expect(result.error).toBeUndefined();
  expect(result.build).toBe(build);
  for (const [k, v] of Object.entries(EXPECTED)) expect(result[k], k).toEqual(v);
}

describe('Node', () => {
  it.each(['st', 'mt'] as const)('runs the scenario from dist/ (%s)', async (build) => {
    const api = await import('../../../dist/index.js');
    expectScenario(await scenario(api, { threads: build === 'mt' }), build);
  });
});

describe('Deno', () => {
  it.each(['st', 'mt'] as const)('runs the scenario from dist/ (%s)', async (build) => {
    const args = ['run', '--quiet', `--allow-read=${repo}`, join(here, 'deno-main.mjs')];
    if (build === 'mt') args.push('--threads');
    const { stdout } = await run(bin('deno'), args, { cwd: repo, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' } });
    expectScenario(JSON.parse(stdout), build);
  });
});

describe('workerd (Cloudflare Workers)', () => {
  let dir = '';
  let workerd: Awaited<ReturnType<typeof startWorkerd>> | undefined;
  let port = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'adaptree-workerd-'));
    const { rolldown } = await import('rolldown');
    const bundle = await rolldown({
      input: join(here, 'workerd-main.mjs'),
      external: [/\.wasm$/],
      platform: 'neutral',
      logLevel: 'silent',
    });
    await bundle.write({ file: join(dir, 'worker.mjs'), format: 'es' });
    copyFileSync(join(repo, 'dist/wasm/adaptree-st.wasm'), join(dir, 'adaptree-st.wasm'));
    port = await freePort();
    writeWorkerdConfig(dir, { port, modules: ['worker.mjs', 'adaptree-st.wasm'] });
    workerd = await startWorkerd(dir, port);
  });

  afterAll(async () => {
    await workerd?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs the scenario with a precompiled WebAssembly.Module (st)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expectScenario(JSON.parse(text), 'st');
  });
});

/** Opens `url` in headless Chromium with a fresh persistent profile and returns window.__result. */
async function runPage(url: string): Promise<{ result: Record<string, unknown>; errors: string[] }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'adaptree-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(url);
    await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 60_000 });
    const result = (await page.evaluate(() => (window as unknown as { __result: unknown }).__result)) as Record<string, unknown>;
    return { result, errors };
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

describe('Chromium without a bundler', () => {
  let server: Server | undefined;
  let port = 0;
  beforeAll(async () => {
    server = isolatedServer(repo, ['/dist/', '/tests/ts/runtimes/']);
    port = await listen(server);
  });
  afterAll(() => server?.close());

  it('imports dist/index.js as plain ES modules and runs the scenario (mt on the main thread)', async () => {
    const { result, errors } = await runPage(`http://127.0.0.1:${port}/tests/ts/runtimes/browser-plain/index.html`);
    expect(errors).toEqual([]);
    expectScenario(result, 'mt');
  });
});

describe('Chromium (vite-built page)', () => {
  let outDir = '';
  let server: Server | undefined;
  let port = 0;

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'adaptree-vite-'));
    const { build } = await import('vite');
    await build({
      root: join(here, 'browser'),
      logLevel: 'silent',
      configFile: false,
      build: { outDir, emptyOutDir: true, target: 'es2022' },
      worker: { format: 'es' },
      server: { fs: { allow: [repo] } },
    });
    server = isolatedServer(outDir, ['/']);
    port = await listen(server);
  });

  afterAll(() => {
    server?.close();
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  it('runs the scenario with st on the main thread and mt in a worker', async () => {
    const { result: r, errors } = await runPage(`http://127.0.0.1:${port}/index.html`);
    const result = r as Record<string, Record<string, unknown>>;
    expect(errors).toEqual([]);
    expect(result.error).toBeUndefined();
    expect(result.crossOriginIsolated).toBe(true);
    expectScenario(result.st!, 'st');
    expectScenario(result.mt!, 'mt');
  });
});
