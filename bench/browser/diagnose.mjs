#!/usr/bin/env node
// Where adaptree-opfs's time goes, in headless Chromium (the browser suite's page, bundle and
// flags; worker: bench/browser/diagnose-worker.mjs, which lists the modes). Prints text.
//   node bench/browser/diagnose.mjs commit|cold|load|alloc|scan [--records N] [--immediate]
// --immediate: the store schedules commits with a setImmediate on MessageChannel instead of
// setTimeout(0) (what a browser has without it; nested, it waits >= 4 ms).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundle, serve, CHROMIUM, CHROMIUM_ARGS } from './run-browser.mjs';

const args = process.argv.slice(2);
const mode = args[0];
if (!['commit', 'cold', 'load', 'alloc', 'scan'].includes(mode)) {
  process.stderr.write('usage: node bench/browser/diagnose.mjs commit|cold|load|alloc|scan [--records N] [--immediate]\n');
  process.exit(2);
}
const ri = args.indexOf('--records');
const records = ri >= 0 ? Number(args[ri + 1]) : 100_000;
const name = args.includes('--immediate') ? 'immediate' : 'plain';

const { chromium } = await import('playwright-core');
const server = await serve(await bundle());
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-diagnose-'));
const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
try {
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  let finish;
  const done = new Promise((r) => { finish = r; });
  await page.exposeFunction('benchStart', () => JSON.stringify({ mode, records }));
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
