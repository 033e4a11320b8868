// Acceptance test of the demo page (demo/): builds it with vite like `npm start` does,
// serves the built files with demo/serve.mjs (cross-origin isolated, and once without
// isolation), and drives it in headless Chromium: every workload, the drawn tree against
// stats(), leaves converting between lookups and scans, dense leaves for dense keys, the
// inspector against the core's own node dump, own keys pasted and uploaded. Any console
// error fails it. Screenshots of each view go to build/demo-screenshots/.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');
const shots = join(repo, 'build', 'demo-screenshots');

interface Layouts {
  inner: number;
  basic_leaf: number;
  fingerprint_leaf: number;
  semi_dense_leaf: number;
  fully_dense_leaf: number;
  [k: string]: number;
}
interface Dump {
  id: number;
  tag: number;
  layout: string;
  flags: number;
  count: number;
  prefix_len: number;
  counter: number;
  lower: string | null;
  upper: string | null;
  used: number;
  slots: { key: string }[];
  [k: string]: unknown;
}

declare const adaptreeDemo: {
  stats(): { count: number; height: number; layouts: Layouts };
  nodeDump(id: number): Dump;
  pageImage(id: number): number[];
  state: { build: string; keys: number; kind: string };
  charts(): { workloads: string[]; mixPoints: number };
};

async function serve(dir: string, isolate: boolean): Promise<{ proc: ChildProcess; url: string }> {
  const args = [join(repo, 'demo', 'serve.mjs'), '--dir', dir, '--port', '0'];
  if (!isolate) args.push('--no-isolation');
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+\//.exec(out);
      if (m) resolve(m[0]);
    });
    proc.on('exit', (code) => reject(new Error(`serve.mjs exited (${code}): ${out}`)));
  });
  return { proc, url };
}

describe('demo page (vite build, served statically)', () => {
  let outDir = '';
  const servers: ChildProcess[] = [];
  let isolatedUrl = '', plainUrl = '';
  let browser: Browser | undefined;
  const errors: string[] = [];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), 'adaptree-demo-'));
    mkdirSync(shots, { recursive: true });
    const { build } = await import('vite');
    await build({ configFile: join(repo, 'demo', 'vite.config.ts'), logLevel: 'silent', build: { outDir, emptyOutDir: true } });
    const a = await serve(outDir, true), b = await serve(outDir, false);
    servers.push(a.proc, b.proc);
    isolatedUrl = a.url;
    plainUrl = b.url;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const p of servers) p.kill();
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  async function open(url: string): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width: 1500, height: 1000 } });
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`pageerror: ${String(e)}`));
    await page.goto(url);
    await idle(page);
    return page;
  }

  const idle = (page: Page) => page.waitForSelector('body[data-state="idle"]', { timeout: 60_000 });

  async function shot(page: Page, name: string, selector?: string): Promise<void> {
    await page.mouse.move(0, 0);
    if (selector) await page.locator(selector).screenshot({ path: join(shots, `${name}.png`) });
    else await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  }

  /** The drawn tree, the stats chips and stats() from the API agree. Returns the layouts. */
  async function checkDrawing(page: Page): Promise<Layouts> {
    const { drawn, chips, stats, total } = await page.evaluate(() => {
      const drawn: Record<string, number> = {};
      const nodes = document.querySelectorAll<HTMLElement>('#tree .node');
      for (const n of nodes) drawn[n.dataset.layout!] = (drawn[n.dataset.layout!] ?? 0) + 1;
      const chips: Record<string, number> = {};
      for (const c of document.querySelectorAll<HTMLElement>('[data-stat-layout]')) chips[c.dataset.statLayout!] = Number(c.dataset.n);
      return { drawn, chips, stats: adaptreeDemo.stats(), total: nodes.length };
    });
    const l = stats.layouts;
    const expected: Record<string, number> = {};
    for (const k of ['inner', 'basic_leaf', 'fingerprint_leaf', 'semi_dense_leaf', 'fully_dense_leaf']) if (l[k]! > 0) expected[k] = l[k]!;
    expect(drawn).toEqual(expected);
    expect(total).toBe(l.inner + l.basic_leaf + l.fingerprint_leaf + l.semi_dense_leaf + l.fully_dense_leaf);
    for (const [k, v] of Object.entries(chips)) expect(v, `chip ${k}`).toBe(l[k]);
    // Levels drawn: one row per level of the tree.
    expect(await page.locator('#tree .level').count()).toBe(stats.height);
    return l;
  }

  async function runWorkload(page: Page, id: string, ms: number): Promise<number> {
    await page.click(`button[data-workload="${id}"]`);
    await page.waitForSelector('body[data-state="running"]');
    // Live throughput: at least one sample with operations.
    await page.waitForFunction(() => Number(document.getElementById('ops')!.dataset.ops) > 0, undefined, { timeout: 30_000 });
    await page.waitForTimeout(ms);
    await page.click('#stop');
    await idle(page);
    return Number(await page.locator('#ops').getAttribute('data-ops'));
  }

  /** Runs a workload until `done(layouts)` holds (polling stats()), then stops. */
  async function runUntil(page: Page, id: string, done: string): Promise<void> {
    await page.click(`button[data-workload="${id}"]`);
    await page.waitForFunction(`(() => { const l = adaptreeDemo.stats().layouts; return ${done}; })()`, undefined, { timeout: 60_000, polling: 250 });
    await page.click('#stop');
    await idle(page);
  }

  /** Clicks node `id` and checks every decoded field the inspector shows against the core's dump. */
  async function checkInspector(page: Page, id: number): Promise<Dump> {
    await page.click(`#tree .node[data-id="${id}"]`);
    await page.waitForSelector(`#inspector h3[data-page-id="${id}"]`);
    const shown = await page.evaluate(() => {
      const el = document.getElementById('inspector')!;
      const field = (k: string) => el.querySelector<HTMLElement>(`[data-field="${k}"]`);
      const text = (k: string) => field(k)?.textContent ?? null;
      const hexText = el.querySelector('pre.hex')!.textContent!;
      const bytes: number[] = [];
      for (const line of hexText.split('\n')) {
        const parts = line.trim().split(/\s+/).slice(1, 17);
        for (const p of parts) bytes.push(parseInt(p, 16));
      }
      return {
        tag: text('tag'),
        flags: text('flags'),
        count: text('count'),
        prefix_len: text('prefix_len'),
        counter: text('counter'),
        used: text('used'),
        lower: field('lower')?.dataset.hex ?? null,
        upper: field('upper')?.dataset.hex ?? null,
        keys: [...el.querySelectorAll<HTMLElement>('table.slots tr[data-key]')].map((r) => r.dataset.key!),
        fingerprints: field('fingerprints')?.dataset.hex ?? null,
        bitmap: field('bitmap')?.dataset.hex ?? null,
        hints: field('hint_heads')?.dataset.values ?? null,
        header: Object.fromEntries(
          ['heap_start', 'heap_used', 'capacity', 'value_size', 'upper_child', 'sorted', 'fp_capacity', 'slot_count', 'key_len', 'ref', 'upper_reserve', 'values_off']
            .map((k) => [k, text(k)]).filter(([, v]) => v !== null),
        ),
        bytes,
      };
    });
    const [dump, image] = await page.evaluate((i) => [adaptreeDemo.nodeDump(i), adaptreeDemo.pageImage(i)] as const, id);
    expect(dump.id).toBe(id);
    expect(shown.tag).toBe(`${dump.tag} (${dump.layout})`);
    expect(shown.flags!.startsWith(`0x${dump.flags.toString(16).padStart(2, '0')}`)).toBe(true);
    expect(Number(shown.count)).toBe(dump.count);
    expect(Number(shown.prefix_len)).toBe(dump.prefix_len);
    expect(shown.counter!.split(' ')[0]).toBe(String(dump.counter));
    expect(Number(shown.used)).toBe(dump.used);
    expect(shown.lower === '' ? null : shown.lower).toBe(dump.lower);
    expect(shown.upper === '' ? null : shown.upper).toBe(dump.upper);
    expect(shown.keys).toEqual(dump.slots.map((s) => s.key));
    for (const [k, v] of Object.entries(shown.header)) expect(String(v), k).toBe(String(dump[k]));
    if (dump.layout === 'fingerprint_leaf') expect(shown.fingerprints).toBe(dump.fingerprints);
    if (dump.layout === 'fully_dense_leaf') expect(shown.bitmap).toBe(dump.bitmap);
    if ((dump.layout === 'inner' || dump.layout === 'basic_leaf') && (dump.flags & 2) !== 0) {
      expect(Array.isArray(dump.hint_heads)).toBe(true);
      expect(shown.hints).toBe((dump.hint_heads as number[]).join(','));
    }
    // The raw page shown is the page the core holds.
    expect(shown.bytes).toEqual(image);
    // Leaves: records shown = the count in the header; dense leaves list present keys.
    if (dump.layout !== 'inner') expect(shown.keys.length).toBe(dump.count);
    return dump;
  }

  const firstNode = (page: Page, layout: string) =>
    page.locator(`#tree .node[data-layout="${layout}"]`).first().getAttribute('data-id').then(Number);

  // A new-user probe (session 22): a malformed %-escape ended the server (an uncaught
  // URIError), and a sibling directory whose name starts with the served one's was served.
  it('serve.mjs answers a malformed path 400 and goes on, and serves nothing outside its directory', async () => {
    const sibling = outDir + '-secret';
    mkdirSync(sibling, { recursive: true });
    writeFileSync(join(sibling, 'pw.txt'), 'SECRET');
    const status = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(isolatedUrl);
        httpGet({ host: u.hostname, port: u.port, path }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        }).on('error', reject);
      });
    try {
      expect(await status('/%E0%A4%A')).toBe(400);
      expect(await status(`/%2e%2e/${basename(sibling)}/pw.txt`)).toBe(404);
      expect(await status('/')).toBe(200);
    } finally {
      rmSync(sibling, { recursive: true, force: true });
    }
  });

  it('runs every workload, converts leaves, inspects nodes (cross-origin isolated: mt)', async () => {
    const page = await open(isolatedUrl);
    expect(await page.locator('#build').getAttribute('data-build')).toBe('mt');
    expect(await page.locator('#env').textContent()).toContain('memory only');
    expect(await page.locator('#env').textContent()).toContain('threads on');
    await checkDrawing(page);
    await shot(page, '01-overview-urls');

    // Every workload, with live throughput; the drawing matches stats() after each.
    const before = (await page.evaluate(() => adaptreeDemo.stats())).count;
    expect(await runWorkload(page, 'insert', 1200)).toBeGreaterThan(0);
    const after = (await page.evaluate(() => adaptreeDemo.stats())).count;
    expect(after).toBeGreaterThan(before);
    await checkDrawing(page);
    for (const w of ['lookup-uniform', 'lookup-zipf', 'scan']) {
      expect(await runWorkload(page, w, 1200), w).toBeGreaterThan(0);
      await checkDrawing(page);
    }
    await page.locator('#mix').fill('30');
    expect(await page.locator('#mix-value').textContent()).toContain('30% scans');
    expect(await runWorkload(page, 'mix', 1200)).toBeGreaterThan(0);
    await checkDrawing(page);
    // Each workload has its series in the throughput chart; the layout chart has a point per sample.
    const charts = await page.evaluate(() => adaptreeDemo.charts());
    expect(charts.workloads).toEqual(['inserts', 'point lookups (uniform)', 'point lookups (zipf)', 'scans', 'mix (slider)']);
    expect(charts.mixPoints).toBeGreaterThan(5);

    // Operation adaption: lookups → fingerprint leaves, scans → sorted leaves, and back.
    await runUntil(page, 'lookup-uniform', 'l.fingerprint_leaf > 4 * l.basic_leaf');
    const a = await checkDrawing(page);
    const keys = (await page.evaluate(() => adaptreeDemo.stats())).count;
    await shot(page, '02-after-lookups');
    await runUntil(page, 'scan', 'l.basic_leaf > 4 * l.fingerprint_leaf');
    const b = await checkDrawing(page);
    await shot(page, '03-after-scans');
    await runUntil(page, 'lookup-uniform', 'l.fingerprint_leaf > l.basic_leaf');
    const c = await checkDrawing(page);
    expect((await page.evaluate(() => adaptreeDemo.stats())).count).toBe(keys); // no inserts: conversions only
    expect(b.basic_leaf).toBeGreaterThan(a.basic_leaf);
    expect(b.fingerprint_leaf).toBeLessThan(a.fingerprint_leaf);
    expect(c.fingerprint_leaf).toBeGreaterThan(b.fingerprint_leaf);
    await shot(page, '04-charts', '.charts');

    // The inspector against the core's dump: a fingerprint leaf, a sorted leaf, an inner node.
    await checkInspector(page, await firstNode(page, 'fingerprint_leaf'));
    await shot(page, '05-inspector-fingerprint', '#inspector-section');
    await checkInspector(page, await firstNode(page, 'basic_leaf'));
    await shot(page, '06-inspector-sorted-leaf', '#inspector-section');
    const inner = await checkInspector(page, await firstNode(page, 'inner'));
    expect(inner.slots.length).toBe(inner.count);
    await shot(page, '07-inspector-inner', '#inspector-section');

    // Key adaption: dense integers give fully dense leaves.
    await page.selectOption('#dataset', 'dense');
    await page.waitForFunction(() => adaptreeDemo.state.keys > 0 && document.body.dataset.state === 'idle');
    const d = await checkDrawing(page);
    expect(d.fully_dense_leaf).toBeGreaterThan(0);
    await checkInspector(page, await firstNode(page, 'fully_dense_leaf'));
    await shot(page, '08-dense-integers');
    await shot(page, '09-inspector-fully-dense', '#inspector-section');

    // The semi-dense configuration on partitioned integers.
    await page.selectOption('#layout', 'semi-dense');
    await idle(page);
    await page.selectOption('#dataset', 'partitioned');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().config === 'semi-dense');
    const sd = await checkDrawing(page);
    expect(sd.semi_dense_leaf).toBeGreaterThan(0);
    await checkInspector(page, await firstNode(page, 'semi_dense_leaf'));
    await shot(page, '10-inspector-semi-dense', '#inspector-section');

    // The other samples and configurations draw what stats() reports.
    for (const [ds, layout] of [['titles', 'adaptive'], ['sparse', 'adaptive'], ['partitioned', 'adaptive'], ['urls', 'baseline']] as const) {
      await page.selectOption('#layout', layout);
      await idle(page);
      await page.selectOption('#dataset', ds);
      await page.waitForFunction((cfg) => document.body.dataset.state === 'idle' && adaptreeDemo.stats().config === cfg, layout);
      await checkDrawing(page);
      if (ds === 'titles') await shot(page, '11-titles');
    }
    await page.selectOption('#layout', 'adaptive');
    await idle(page);

    // Own keys: pasted, then uploaded.
    await page.locator('#own').evaluate((d) => ((d as HTMLDetailsElement).open = true));
    const pasted = Array.from({ length: 3000 }, (_, i) => `user:${(i * 7919) % 100000}:profile`).join('\n') + '\nuser:0:profile\n';
    // As a paste: the whole text at once (typing 3000 lines through fill() takes minutes).
    await page.locator('#paste').evaluate((t, v) => ((t as HTMLTextAreaElement).value = v), pasted);
    await page.click('#load-own');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().count === 3000);
    await checkDrawing(page);
    await shot(page, '12-own-keys');
    const upload = Array.from({ length: 5000 }, (_, i) => String(1000 + 3 * i)).join('\n');
    await page.setInputFiles('#upload', { name: 'keys.txt', mimeType: 'text/plain', buffer: Buffer.from(upload) });
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().count === 5000 && adaptreeDemo.state.kind === 'number');
    await checkDrawing(page);
    expect(await runWorkload(page, 'scan', 600)).toBeGreaterThan(0);
    // Keys with a lone surrogate are dropped (the build threw, the page stayed 'loading' with
    // the previous tree's figures: a new-user probe, session 23).
    await page.locator('#paste').evaluate((t) => ((t as HTMLTextAreaElement).value = 'alpha\nbad\ud800key\nomega\n'));
    await page.click('#load-own');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().count === 2);
    await checkDrawing(page);
    // A key the layout refuses (`baseline` takes 1011 bytes, the page's paste 1024): the page
    // kept the previous tree's drawing and figures beside the new map, and a click on a drawn
    // node threw "no node 466 in this tree" (a probe, session 33). It shows the map it holds.
    await page.selectOption('#layout', 'baseline');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().config === 'baseline' && adaptreeDemo.stats().count === 2);
    await page.locator('#paste').evaluate((t, v) => ((t as HTMLTextAreaElement).value = v), pasted);  // a tree of many nodes first
    await page.click('#load-own');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().count === 3000);
    await page.locator('#paste').evaluate((t) => ((t as HTMLTextAreaElement).value = 'a\nb\n' + 'k'.repeat(1015) + '\n'));
    await page.click('#load-own');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && /cannot insert these keys/.test(document.querySelector('#load-status')?.textContent ?? ''));
    expect(await page.locator('#load-status').textContent()).toContain("'baseline' layout takes keys up to 1011 bytes");
    await checkDrawing(page);
    await page.locator('#tree .node').last().click();
    await page.selectOption('#layout', 'adaptive');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().config === 'adaptive');
    // A probe (session 30): an upload over 1 MiB sat in the text box, whose redraw between the
    // build's chunks took 60-80x the inserts (and was shown as their time); a layout change
    // after the box was emptied kept the old tree under the new layout's name; a workload
    // clicked during a build ran beside it and was left running under an idle page.
    const big = Array.from({ length: 60000 }, (_, i) => `https://example.org/item/${(i * 7919) % 1000003}/page`).join('\n');
    await page.setInputFiles('#upload', { name: 'big.txt', mimeType: 'text/plain', buffer: Buffer.from(big) });
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().count === 60000);
    expect(await page.locator('#paste').inputValue()).toBe('');
    expect(await page.locator('#paste').getAttribute('placeholder')).toMatch(/big\.txt: .* MB uploaded/);
    await page.selectOption('#layout', 'fingerprint');
    await page.waitForFunction(() => document.body.dataset.state === 'idle' && adaptreeDemo.stats().config === 'fingerprint' && adaptreeDemo.stats().count === 60000);
    await page.selectOption('#size', '100000'); // (a new build: 20 chunks, the page drawn between them)
    await page.waitForFunction(() => document.body.dataset.state === 'loading' && adaptreeDemo.state.keys > 0, undefined, { polling: 'raf' });
    await page.evaluate(() => document.querySelector<HTMLButtonElement>('button[data-workload="lookup-uniform"]')!.click());
    await idle(page);
    expect(await page.evaluate(() => adaptreeDemo.state.running)).toBe(null);

    await page.close();
    expect(errors).toEqual([]);
  }, 300_000);

  it('works without cross-origin isolation: the st build, and says so', async () => {
    const page = await open(plainUrl);
    expect(await page.evaluate(() => globalThis.crossOriginIsolated)).toBe(false);
    expect(await page.locator('#build').getAttribute('data-build')).toBe('st');
    expect(await page.locator('#env').textContent()).toContain('not cross-origin isolated');
    await checkDrawing(page);
    expect(await runWorkload(page, 'lookup-zipf', 600)).toBeGreaterThan(0);
    await checkDrawing(page);
    await shot(page, '13-single-threaded', 'header');
    await page.close();
    expect(errors).toEqual([]);
  }, 120_000);
});
