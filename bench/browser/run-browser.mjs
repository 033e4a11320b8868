// The browser suite's runner: bundles bench/browser/worker.mjs with vite (into the bench
// cache, not the repo), serves it from 127.0.0.1 with COOP/COEP (cross-origin isolated, as
// OPFS sync access handles need), and drives Debian's headless Chromium through
// playwright-core with a fresh persistent profile (an incognito context would keep
// IndexedDB/OPFS in memory and flatter them).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { log, warn } from '../lib/progress.mjs';
import { CACHE_DIR } from '../lib/datasets.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
// adaptree-opfs's rows come with raw-opfs rows (write_flush, read_random: its physical
// reference, measured in rounds alternating with it)
export const IMPLS = ['indexeddb', 'idb-keyval', 'browser-level', 'sqlite-wasm-opfs', 'adaptree-opfs', 'adaptree-indexeddb', 'adaptree-indexeddb-relaxed'];
// Only when named (--impls): adaptree-opfs with logDeltas: false (whole pages in the log, as
// before deltas), the A/B reference for docs/DECISIONS.md "Commits log deltas"; adaptree-opfs
// with node fill off (no redistribution, no XMerge), the A/B reference for "Node fill";
// adaptree-opfs with a backend that cuts the log at every checkpoint (reuseLog: false), the
// A/B reference for "A commit's checkpoint keeps the log file".
export const OPTIONAL_IMPLS = ['adaptree-opfs-images', 'adaptree-opfs-nofill', 'adaptree-opfs-cutlog', 'adaptree-indexeddb-images', 'adaptree-indexeddb-nolog'];
export const CHROMIUM = process.env.ADAPTREE_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  // gc() in the worker: the interleaved workloads collect garbage between slices, so each
  // store pays for its own (worker.mjs, interleave). ADAPTREE_CHROMIUM_JS_FLAGS adds more
  // (say --perf-basic-prof, for `perf record` of the run: JIT and wasm code by name).
  `--js-flags=--expose-gc${process.env.ADAPTREE_CHROMIUM_JS_FLAGS ? ' ' + process.env.ADAPTREE_CHROMIUM_JS_FLAGS : ''}`];

export async function bundle() {
  const outDir = path.join(CACHE_DIR, 'browser-build');
  const { build } = await import('vite');
  await build({
    configFile: false,
    logLevel: 'warn',
    root: HERE,
    // adaptree's package starts its own module worker for opfs on a main thread (not used here)
    worker: { format: 'es' },
    build: {
      outDir,
      emptyOutDir: true,
      target: 'esnext',
      minify: false,
      modulePreload: false,
      rollupOptions: {
        // diagnose: the cause measurements of bench/browser/diagnose.mjs (not run by the suite)
        input: { worker: path.join(HERE, 'worker.mjs'), diagnose: path.join(HERE, 'diagnose-worker.mjs') },
        output: { entryFileNames: '[name].js', format: 'es' },
        preserveEntrySignatures: 'allow-extension',
      },
    },
  });
  fs.copyFileSync(path.join(HERE, 'index.html'), path.join(outDir, 'index.html'));
  return outDir;
}

const MIME = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

export function serve(dir) {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const file = path.join(dir, path.normalize(decodeURIComponent(u.pathname)).replace(/^(\.\.[/\\])+/, ''));
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-store' };
    if (!file.startsWith(dir) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) { res.writeHead(404, headers); res.end(); return; }
    res.writeHead(200, { ...headers, 'Content-Type': MIME[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

/**
 * @param job {records, gets, autocommit, scans, budgetSec, seed, suite, dataset}
 * @param onRow (ndjsonLine) => void     @param onSkip (impl, reason) => void
 * @returns machine facts (chromium version, ...) or null
 */
export async function runBrowser(job, onRow, onSkip) {
  const impls = job.impls ? [...IMPLS, ...OPTIONAL_IMPLS].filter((i) => job.impls.includes(i)) : IMPLS;
  const skipAll = (reason) => { for (const i of impls) onSkip(i, reason); return null; };
  if (!fs.existsSync(CHROMIUM)) return skipAll(`no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set ADAPTREE_CHROMIUM)`);
  let chromium;
  try { ({ chromium } = await import('playwright-core')); } catch (e) { return skipAll('playwright-core missing: ' + e.message); }
  log('browser: bundling the worker with vite');
  let dir;
  try { dir = await bundle(); } catch (e) { return skipAll('bundling bench/browser/worker.mjs failed: ' + e.message); }
  const server = await serve(dir);
  const port = server.address().port;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-bench-chromium-'));
  let ctx;
  const info = {};
  try {
    ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    info.chromium = ctx.browser()?.version() ?? null;
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const params = { ...job, impls };
    let finish;
    const done = new Promise((r) => { finish = r; });
    const seen = new Set();
    await page.exposeFunction('benchStart', () => JSON.stringify(params));
    await page.exposeFunction('benchMessage', (s) => {
      const m = JSON.parse(s);
      if (m.log) log('browser: ' + m.log);
      if (m.row) { seen.add(m.row.impl); onRow(JSON.stringify(m.row)); }
      if (m.skip) { seen.add(m.skip); onSkip(m.skip, m.reason); }
      if (m.fatal) { warn('browser worker error: ' + m.fatal); finish({ fatal: m.fatal }); }
      if (m.done) finish(m.info);
    });
    page.on('pageerror', (e) => warn('browser page error: ' + e.message));
    const timeoutMs = 60_000 + impls.length * (job.records / 1000) * 2500;
    let tid;
    const timer = new Promise((r) => { tid = setTimeout(() => r({ fatal: `timed out after ${Math.round(timeoutMs / 1000)} s` }), timeoutMs); });
    log(`browser: Chromium ${info.chromium}, ${impls.join(', ')} with ${job.records} records`);
    await page.goto(`http://127.0.0.1:${port}/index.html`);
    const res = await Promise.race([done, timer]);
    clearTimeout(tid);
    if (res?.fatal) for (const i of impls) if (!seen.has(i)) onSkip(i, 'browser run failed: ' + res.fatal);
    if (res && !res.fatal) {
      info.browser_cross_origin_isolated = res.crossOriginIsolated;
      info.browser_user_agent = res.userAgent;
      if (res.sqlite) info.sqlite_wasm = res.sqlite;
      if (res.gc_between_slices !== undefined) info.browser_gc_between_slices = res.gc_between_slices;
    }
  } catch (e) {
    warn('browser: ' + e.message);
    skipAll('Chromium run failed: ' + e.message.split('\n')[0]);
  } finally {
    if (ctx) await ctx.close().catch(() => {});
    server.closeAllConnections();
    server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return info;
}
