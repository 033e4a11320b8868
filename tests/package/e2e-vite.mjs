// The packed tarball in a vite app, as a user builds one: a fresh project installs the tarball,
// vite and `events` (abstract-level's one Node dependency, which browser bundles need), builds a
// page that runs the scenario (common.mjs) on the main thread and in a dedicated module worker
// (`new Worker(new URL('./w.js', import.meta.url), { type: 'module' })`), serves it with
// `vite preview` (COOP/COEP headers: cross-origin isolated, so the worker can also run the mt
// build) and reads the results in headless Chromium (playwright-core + Debian's chromium).
// Same results as in Node: EXPECTED for st on both threads, and for mt in the worker.
// Needs dist/ built.   node tests/package/e2e-vite.mjs [--keep]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  EXPECTED, cleanup, expect, expectedFor, failures, freePort, lockedVersion, packAndInstall, run, same, waitForServer,
} from './common.mjs';

const CHROMIUM = process.env.ADAPTREE_CHROMIUM ?? '/usr/bin/chromium';

const FILES = {
  'index.html': `<!doctype html>
<html>
  <head><meta charset="utf-8"><title>adaptree in a vite app</title></head>
  <body><pre id="out">running</pre><script type="module" src="./main.js"></script></body>
</html>
`,
  'main.js': `import { scenario } from './scenario.mjs';

async function main() {
  const result = { crossOriginIsolated: globalThis.crossOriginIsolated === true };
  result.main = await scenario();
  const worker = new Worker(new URL('./w.js', import.meta.url), { type: 'module' });
  result.worker = await new Promise((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(new Error('worker: ' + e.message));
  });
  worker.terminate();
  return result;
}
main().then(
  (r) => { window.__result = r; document.getElementById('out').textContent = JSON.stringify(r, null, 1); },
  (e) => { window.__result = { error: String(e && e.stack ? e.stack : e) }; },
);
`,
  'w.js': `import { scenario } from './scenario.mjs';

async function main() {
  const st = await scenario();
  const mt = await scenario({ threads: true });
  return { st, mt };
}
main().then((r) => postMessage(r), (e) => postMessage({ error: String(e && e.stack ? e.stack : e) }));
`,
  'vite.config.js': `// Module workers (the default 'iife' cannot code-split); COOP/COEP make the page
// cross-origin isolated, which the mt build's SharedArrayBuffer needs.
const isolated = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
export default {
  build: { target: 'es2022' },
  worker: { format: 'es' },
  server: { headers: isolated },
  preview: { headers: isolated },
};
`,
};

let dir = '';
let preview;
let log = '';
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
try {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing (apt-get install chromium, or set ADAPTREE_CHROMIUM)`);
  const p = packAndInstall([`vite@${lockedVersion('vite')}`, `events@${lockedVersion('events')}`], 'e2e-vite');
  dir = p.dir;
  console.log(`     (packed and installed in ${secs()} s)`);
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(p.app, name), text);

  // vite build, with the project's own vite.
  const vite = join(p.app, 'node_modules/.bin/vite');
  const built = run(vite, ['build', '--logLevel', 'warn'], { cwd: p.app });
  const wasm = run('find', ['dist', '-name', '*.wasm'], { cwd: p.app }).trim().split('\n').filter(Boolean);
  expect(wasm.length === 2, `vite build emitted the package's two wasm modules as assets (${wasm.join(' ')}) ${built.trim()}`);
  console.log(`     (built in ${secs()} s)`);

  // vite preview.
  const port = await freePort();
  preview = spawn(vite, ['preview', '--port', String(port), '--strictPort', '--host', '127.0.0.1'], { cwd: p.app, stdio: ['ignore', 'pipe', 'pipe'] });
  preview.stdout.on('data', (d) => (log += d));
  preview.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}/`;
  await waitForServer(url, preview, () => log);

  // Headless Chromium.
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'adaptree-e2e-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    // Every request the app makes must succeed (the browser's own favicon probe aside).
    page.on('response', (res) => { if (res.status() >= 400 && !res.url().endsWith('/favicon.ico')) errors.push(`${res.status()} ${res.url()}`); });
    await page.goto(url);
    await page.waitForFunction(() => window.__result !== undefined, undefined, { timeout: 45_000 });
    const r = await page.evaluate(() => window.__result);
    expect(r.error === undefined && errors.length === 0, `page ran without errors ${r.error ?? ''} ${errors.join(' | ')}`);
    expect(r.crossOriginIsolated === true, 'vite preview served the page cross-origin isolated (COOP/COEP)');
    expect(same(r.main, EXPECTED), `chromium main thread: scenario from the installed package ${JSON.stringify(r.main)}`);
    expect(same(r.worker?.st, EXPECTED), `chromium module worker (st): same results ${JSON.stringify(r.worker?.st ?? r.worker)}`);
    expect(same(r.worker?.mt, expectedFor('mt')), `chromium module worker (mt, shared memory): same results ${JSON.stringify(r.worker?.mt ?? r.worker)}`);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
} catch (e) {
  expect(false, `${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}\n${log}`);
} finally {
  if (preview && preview.exitCode === null) preview.kill();
  cleanup(dir);
}
console.log(`     (${secs()} s)`);
if (failures()) process.exit(1);
