#!/usr/bin/env node
// Where adaptree-opfs's time goes, in headless Chromium (the browser suite's page, bundle and
// flags; worker: bench/browser/diagnose-worker.mjs, which lists the modes). Prints text.
//   node bench/browser/diagnose.mjs commit|cold|split|load|idbload|idbcommit|idbsize|alloc|scan|warm|awaited|crc|suiteget|getloop [--records N] [--immediate] [--many] [--base DIR]
// crc: the page checksum alone in the worker: at_checksum of 4092 and 4096 bytes from this
// checkout's dist/wasm modules (st, mt) and, with --base DIR (another build's dist/wasm, say
// main's), from those too, in alternating rounds; the builds must agree on every value.
// --immediate: the store schedules commits with a setImmediate on MessageChannel instead of
// setTimeout(0) (what a browser has without it; nested, it waits >= 4 ms).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundle, serve, CHROMIUM, CHROMIUM_ARGS } from './run-browser.mjs';

const args = process.argv.slice(2);
const mode = args[0];
if (!['commit', 'cold', 'split', 'load', 'idbload', 'idbcommit', 'idbtx', 'idbsize', 'alloc', 'scan', 'warm', 'awaited', 'crc', 'suiteget', 'getloop'].includes(mode)) {
  process.stderr.write('usage: node bench/browser/diagnose.mjs commit|cold|split|load|idbload|idbcommit|idbsize|alloc|scan|warm|awaited|crc|suiteget|getloop [--records N] [--immediate] [--many] [--base DIR]\n');
  process.exit(2);
}
const ri = args.indexOf('--records');
const records = ri >= 0 ? Number(args[ri + 1]) : 100_000;
const di = args.indexOf('--durability');
const durability = di >= 0 ? args[di + 1] : 'strict';  // idbload, idbcommit
const name = (args.includes('--immediate') ? 'immediate' : 'plain') + (args.includes('--many') ? '-many' : '');
const bi = args.indexOf('--base');
const base = bi >= 0 ? args[bi + 1] : null;

const { chromium } = await import('playwright-core');
const dir = await bundle();
// crc mode: the modules to time, served beside the bundle
const modules = [];
if (mode === 'crc') {
  const here = path.dirname(new URL(import.meta.url).pathname);
  for (const flavour of ['st', 'mt']) {
    for (const [tag, from] of [['', path.join(here, '../../dist/wasm')], ['-base', base]]) {
      if (!from) continue;
      const file = `crc-${flavour}${tag}.wasm`;
      fs.copyFileSync(path.join(from, `adaptree-${flavour}.wasm`), path.join(dir, file));
      modules.push({ name: `wasm-${flavour}${tag}`, file, shared: flavour === 'mt' });
    }
  }
}
const server = await serve(dir);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-diagnose-'));
const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
try {
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  let finish;
  const done = new Promise((r) => { finish = r; });
  await page.exposeFunction('benchStart', () => JSON.stringify({ mode, records, modules, durability }));
  await page.exposeFunction('benchMessage', (s) => {
    const m = JSON.parse(s);
    if (m.log) process.stdout.write(m.log + '\n');
    if (m.fatal) { process.stderr.write('diagnose: ' + m.fatal + '\n'); process.exitCode = 1; finish(); }
    if (m.done) finish();
  });
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html?worker=diagnose&name=${name}`);
  await done;
} finally {
  await ctx.close();
  server.closeAllConnections();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
