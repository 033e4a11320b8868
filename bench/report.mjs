#!/usr/bin/env node
// npm run bench:report [-- FILE.json ...] [--out DIR/REPORT.md]
// Turns result JSON (schema adaptree-bench/1) into a Markdown report with tables, and SVG
// plots in report/ next to it (hand-written SVG). Default input: bench/results.json.
// Where it goes, unless --out says otherwise: the committed bench/REPORT.md (+ bench/report/)
// only when the input is the committed bench/results.json; any other input is a scratch run
// and its report goes to bench/out/REPORT.md (+ bench/out/report/), which git ignores.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCHEMA, writeWhole } from './lib/schema.mjs';
import { browserAims, inmemAims, aimsTable, idbContext, contextTable } from './lib/aims.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');

// ------------------------------------------------------------------ input

const COMMITTED_RESULTS = path.join(HERE, 'results.json');
const COMMITTED_REPORT = path.join(HERE, 'REPORT.md');
const SCRATCH_REPORT = path.join(HERE, 'out', 'REPORT.md');

/** A bad command line or input: a one-line message and exit 2, not a stack (session 23). */
class UsageError extends Error {}

function parseArgs(argv) {
  const o = { files: [], out: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out') {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError('--out needs a file name');
      o.out = path.resolve(v);
    } else if (argv[i].startsWith('--')) throw new UsageError(`unknown argument ${argv[i]} (usage: bench:report [results.json ...] [--out REPORT.md])`);
    else o.files.push(path.resolve(argv[i]));
  }
  if (!o.files.length) o.files.push(COMMITTED_RESULTS);
  // A quick or partial run must not replace the committed report by accident.
  const committed = o.files.length === 1 && o.files[0] === COMMITTED_RESULTS;
  o.out ??= committed ? COMMITTED_REPORT : SCRATCH_REPORT;
  return o;
}

function load(files) {
  const runs = [];
  const rows = [];
  for (const f of files) {
    let j;
    try {
      j = JSON.parse(fs.readFileSync(f, 'utf8'));
    } catch (e) {
      throw new UsageError(`${f}: ${e.code === 'ENOENT' ? 'no such file' : e instanceof SyntaxError ? `not JSON (${e.message})` : e.message}`);
    }
    if (j?.schema !== SCHEMA) throw new UsageError(`${f}: schema ${j?.schema}, expected ${SCHEMA}`);
    if (!Array.isArray(j.results) || j.results.length === 0) throw new UsageError(`${f}: no results in it`);
    runs.push({ file: f, machine: j.machine ?? {} });
    rows.push(...j.results);
  }
  return { runs, rows };
}

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Index: median ops/s (and bytes/record) per (suite, dataset, workload, impl, config, key encoding). */
class Table {
  constructor(rows) {
    this.rows = rows;
    this.groups = new Map();
    for (const r of rows) {
      const k = Table.key(r.suite, r.dataset, r.workload, r.impl, r.config, r.key_encoding);
      if (!this.groups.has(k)) this.groups.set(k, []);
      this.groups.get(k).push(r);
    }
  }
  static key(...a) { return a.map((x) => x ?? '').join('|'); }
  get(suite, dataset, workload, impl, config, enc) {
    let g = this.groups.get(Table.key(suite, dataset, workload, impl, config, enc));
    if (!g && enc === undefined) {
      // rows of impls that record a key encoding: take the headline encoding
      g = this.rows.filter((r) => r.suite === suite && r.dataset === dataset && r.workload === workload && r.impl === impl && r.config === config && (r.key_encoding === 'utf8' || r.key_encoding === 'bytes'));
      if (!g.length) g = undefined;
    }
    if (!g) return null;
    return {
      ops: median(g.map((r) => r.ops_per_sec)),
      bpr: g.some((r) => r.bytes_per_record != null) ? median(g.filter((r) => r.bytes_per_record != null).map((r) => r.bytes_per_record)) : null,
      rows: g,
    };
  }
  distinct(field, pred = () => true) {
    const out = [];
    for (const r of this.rows) if (pred(r) && !out.includes(r[field])) out.push(r[field]);
    return out;
  }
}

// ------------------------------------------------------------------ formatting

const mops = (x) => (x == null ? '–' : x >= 1e6 ? (x / 1e6).toFixed(2) + 'M' : x >= 1e3 ? (x / 1e3).toFixed(1) + 'k' : x.toFixed(0));
const ratio = (a, b) => (a == null || b == null || !b ? '–' : (a / b).toFixed(2) + '×');
const pct = (a, b) => (a == null || b == null || !b ? null : (a / b - 1) * 100);
const fmtPct = (x) => (x == null ? '–' : (x >= 0 ? '+' : '') + x.toFixed(0) + '%');
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function mdTable(head, body) {
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i ? '---:' : '---')).join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

// ------------------------------------------------------------------ SVG

const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function legend(series, x, y) {
  return series.map((s, i) => `<rect x="${x}" y="${y + i * 16}" width="10" height="10" fill="${PALETTE[i % PALETTE.length]}"/><text x="${x + 14}" y="${y + i * 16 + 9}" font-size="11">${esc(s)}</text>`).join('');
}

/** Axis: nice ticks covering [lo, hi] (linear), or powers of ten (log). */
function axis(lo, hi, log) {
  if (log) {
    const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
    const ticks = [];
    for (let e = a; e <= Math.max(b, a + 1); e++) ticks.push(Math.pow(10, e));
    return { lo: ticks[0], hi: ticks[ticks.length - 1], ticks, map: (v, T, ph) => T + ph * (1 - (Math.log10(v) - a) / (Math.max(b, a + 1) - a)) };
  }
  const step = niceMax((hi - lo) / 4 || 1);
  const l = Math.floor(lo / step) * step, h = Math.max(l + step, Math.ceil(hi / step) * step);
  const ticks = [];
  for (let v = l; v <= h + step / 2; v += step) ticks.push(+v.toPrecision(12));
  return { lo: l, hi: h, ticks, map: (v, T, ph) => T + ph * (1 - (v - l) / (h - l)) };
}

/** Grouped bar chart. values[g][s] (null = missing). signed: bars from 0 both ways; log: log10 axis. */
function barChart({ title, groups, series, values, yLabel, fmt = mops, signed = false, log = false }) {
  const W = Math.max(520, 90 + groups.length * (series.length * 14 + 24) + 150), H = 300;
  const L = 60, R = 150, T = 30, B = 50;
  const pw = W - L - R, ph = H - T - B;
  const flat = values.flat().filter((v) => v != null && Number.isFinite(v) && (!log || v > 0));
  const ax = log ? axis(Math.min(...flat, 1e9), Math.max(...flat, 1), true) : axis(signed ? Math.min(0, ...flat) : 0, Math.max(0, ...flat), false);
  const y = (v) => ax.map(v, T, ph);
  const base = log ? ax.lo : 0;
  const gw = pw / groups.length, bw = Math.min(18, (gw - 12) / series.length);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`;
  s += `<rect width="${W}" height="${H}" fill="white"/><text x="${L}" y="18" font-size="13" font-weight="bold">${esc(title)}</text>`;
  for (const v of ax.ticks) s += `<line x1="${L}" x2="${L + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${L - 4}" y="${y(v) + 4}" font-size="10" text-anchor="end">${esc(fmt(v))}</text>`;
  s += `<line x1="${L}" x2="${L + pw}" y1="${y(base)}" y2="${y(base)}" stroke="#444"/>`;
  s += `<text x="14" y="${T + ph / 2}" font-size="11" transform="rotate(-90 14 ${T + ph / 2})" text-anchor="middle">${esc(yLabel + (log ? ' (log scale)' : ''))}</text>`;
  groups.forEach((g, gi) => {
    const x0 = L + gi * gw + (gw - bw * series.length) / 2;
    series.forEach((_, si) => {
      const v = values[gi][si];
      if (v == null || !Number.isFinite(v) || (log && v <= 0)) return;
      const y1 = y(Math.max(v, base)), y2 = y(Math.min(v, base));
      s += `<rect x="${x0 + si * bw}" y="${y1}" width="${bw - 1}" height="${Math.max(0.5, y2 - y1)}" fill="${PALETTE[si % PALETTE.length]}"><title>${esc(`${g} / ${series[si]}: ${fmt(v)}`)}</title></rect>`;
    });
    s += `<text x="${L + gi * gw + gw / 2}" y="${T + ph + 16}" font-size="11" text-anchor="middle">${esc(g)}</text>`;
  });
  s += legend(series, L + pw + 12, T);
  return s + '</svg>\n';
}

/** Line chart: xs shared, lines[name] = [y or null per x]. */
function lineChart({ title, xs, lines, xLabel, yLabel, fmt = (v) => v.toFixed(0), xfmt = (v) => v }) {
  const W = 620, H = 300, L = 60, R = 150, T = 30, B = 45;
  const pw = W - L - R, ph = H - T - B;
  const names = Object.keys(lines);
  const flat = names.flatMap((n) => lines[n]).filter((v) => v != null && Number.isFinite(v));
  const ax = axis(Math.min(0, ...flat), Math.max(0, ...flat), false);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const x = (v) => L + (pw * (v - x0)) / (x1 - x0 || 1);
  const y = (v) => ax.map(v, T, ph);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`;
  s += `<rect width="${W}" height="${H}" fill="white"/><text x="${L}" y="18" font-size="13" font-weight="bold">${esc(title)}</text>`;
  for (const v of ax.ticks) s += `<line x1="${L}" x2="${L + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${L - 4}" y="${y(v) + 4}" font-size="10" text-anchor="end">${esc(fmt(v))}</text>`;
  s += `<line x1="${L}" x2="${L + pw}" y1="${y(0)}" y2="${y(0)}" stroke="#444"/>`;
  for (const v of xs) s += `<text x="${x(v)}" y="${T + ph + 14}" font-size="10" text-anchor="middle">${esc(xfmt(v))}</text>`;
  s += `<text x="${L + pw / 2}" y="${H - 6}" font-size="11" text-anchor="middle">${esc(xLabel)}</text>`;
  s += `<text x="14" y="${T + ph / 2}" font-size="11" transform="rotate(-90 14 ${T + ph / 2})" text-anchor="middle">${esc(yLabel)}</text>`;
  names.forEach((n, i) => {
    const pts = xs.map((v, j) => [v, lines[n][j]]).filter(([, v]) => v != null && Number.isFinite(v));
    if (!pts.length) return;
    const c = PALETTE[i % PALETTE.length];
    s += `<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.map(([a, b]) => `${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ')}"/>`;
    for (const [a, b] of pts) s += `<circle cx="${x(a).toFixed(1)}" cy="${y(b).toFixed(1)}" r="2.5" fill="${c}"><title>${esc(`${n} @ ${xfmt(a)}: ${fmt(b)}`)}</title></circle>`;
  });
  s += legend(names, L + pw + 12, T);
  return s + '</svg>\n';
}

/** 100% stacked bars: groups × categories, counts[g][c]. */
function stackChart({ title, groups, cats, counts }) {
  const W = Math.max(480, 80 + groups.length * 70 + 160), H = 300, L = 50, R = 160, T = 30, B = 60;
  const pw = W - L - R, ph = H - T - B;
  const gw = pw / groups.length, bw = Math.min(40, gw - 14);
  let s = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`;
  s += `<rect width="${W}" height="${H}" fill="white"/><text x="${L}" y="18" font-size="13" font-weight="bold">${esc(title)}</text>`;
  for (let i = 0; i <= 4; i++) s += `<text x="${L - 4}" y="${T + ph * (1 - i / 4) + 4}" font-size="10" text-anchor="end">${i * 25}%</text><line x1="${L}" x2="${L + pw}" y1="${T + ph * (1 - i / 4)}" y2="${T + ph * (1 - i / 4)}" stroke="#eee"/>`;
  groups.forEach((g, gi) => {
    const tot = counts[gi].reduce((a, b) => a + b, 0) || 1;
    let acc = 0;
    const x = L + gi * gw + (gw - bw) / 2;
    cats.forEach((c, ci) => {
      const v = counts[gi][ci] / tot;
      if (v > 0) s += `<rect x="${x}" y="${T + ph * (1 - acc - v)}" width="${bw}" height="${ph * v}" fill="${PALETTE[ci % PALETTE.length]}"><title>${esc(`${g}: ${c} ${(v * 100).toFixed(1)}% (${counts[gi][ci]})`)}</title></rect>`;
      acc += v;
    });
    const [a, b] = g.split('\n');
    s += `<text x="${x + bw / 2}" y="${T + ph + 14}" font-size="10" text-anchor="middle">${esc(a)}</text>`;
    if (b) s += `<text x="${x + bw / 2}" y="${T + ph + 27}" font-size="10" text-anchor="middle">${esc(b)}</text>`;
  });
  s += legend(cats, L + pw + 12, T);
  return s + '</svg>\n';
}

// ------------------------------------------------------------------ report

const IMPL_ORDER = ['adaptree-native', 'adaptree-wasm', 'adaptree-wasm-mt', 'js-map', 'sorted-btree', 'lmdb', 'classic-level', 'adaptree-opfs', 'adaptree-indexeddb', 'adaptree-indexeddb-relaxed', 'raw-opfs', 'indexeddb', 'idb-keyval', 'browser-level', 'sqlite-wasm-opfs'];
const byOrder = (order) => (a, b) => (order.indexOf(a) < 0 ? 99 : order.indexOf(a)) - (order.indexOf(b) < 0 ? 99 : order.indexOf(b)) || String(a).localeCompare(String(b));
const WL_ORDER = ['insert', 'lookup_zipf', 'lookup_uniform', 'scan', 'iterate'];
const CONFIGS = ['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense', 'adaptive'];

/** Leaf-type counts from a row's `layouts` (whatever nesting the core's stats use). */
function leafCounts(layouts) {
  if (!layouts || typeof layouts !== 'object') return null;
  const src = layouts.leaves && typeof layouts.leaves === 'object' ? layouts.leaves : layouts;
  const out = {};
  for (const [k, v] of Object.entries(src)) if (typeof v === 'number' && !/inner|overflow|total|height/i.test(k)) out[k] = v;
  return Object.keys(out).length ? out : null;
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const { runs, rows } = load(o.files);
  const T = new Table(rows);
  const svgDir = path.join(path.dirname(o.out), 'report');
  fs.mkdirSync(svgDir, { recursive: true });
  for (const f of fs.readdirSync(svgDir)) if (f.endsWith('.svg')) fs.unlinkSync(path.join(svgDir, f));
  const rel = (f) => path.relative(path.dirname(o.out), path.join(svgDir, f)).split(path.sep).join('/');
  const svg = (name, content) => { fs.writeFileSync(path.join(svgDir, name), content); return `![${name}](${rel(name)})`; };
  const out = [];
  const P = (...l) => out.push(...l);
  const headline = [];

  P('# adaptree benchmark report', '');
  P(`Generated by \`npm run bench:report\` from ${runs.map((r) => '`' + path.relative(ROOT, r.file) + '`').join(', ')}. ` +
    'Throughput is operations per second (M = 10^6), the median where a configuration ran more than once. ' +
    'The machine is a shared 2-vCPU VM: absolute numbers move ±20–60% between runs, so read the ratios, which come from one run.', '');

  if (runs.every((r) => r.machine.run?.quick))
    P('> **This report comes from a `--quick` run** (100k keys, few operations): small trees fit in cache and timings are short, so it is ' +
      'noisier and kinder to every structure than a full run. It stands until a full run replaces it.', '');
  for (const r of runs) {
    const l = r.machine.run?.load1, cpus = r.machine.cpus ?? 2;
    if (l && l.max > cpus * 0.75)
      P(`> Other work (builds and tests of concurrent sessions) shared the ${cpus} vCPUs during this run: the 1-minute load average ranged ` +
        `${l.min}–${l.max} (median ${l.median}) where the benchmark alone gives about 1. Single cells can be off by a factor; trust patterns ` +
        'across data sets and workloads more than any one number. Each row carries its `load1` in the result JSON.', '');
  }

  // ---- runs and machine
  P('## Runs and machine', '');
  for (const r of runs) {
    const m = r.machine, run = m.run ?? {};
    P(`- \`${run.command ?? '?'}\`: suites ${(run.suites ?? []).join(', ')}${run.quick ? ' (quick)' : ' (full)'}, started ${run.started ?? '?'}, ` +
      `**duration ${run.duration_sec != null ? (run.duration_sec / 60).toFixed(1) + ' min' : '?'}**, seed ${run.seed ?? '?'}.`);
    P(`- Machine: ${m.cpu} × ${m.cpus} vCPU, ${m.memory_bytes ? (m.memory_bytes / 2 ** 30).toFixed(0) + ' GiB' : '?'} RAM, ${m.os}; Node ${m.node} (V8 ${m.v8})` +
      `${m.chromium ? `; Chromium ${m.chromium} (headless, cross-origin isolated: ${m.browser_cross_origin_isolated})` : ''}${m.sqlite_wasm ? `; SQLite wasm ${m.sqlite_wasm}` : ''}; ` +
      `commit ${m.git_commit ? m.git_commit.slice(0, 10) : '?'}${m.git_dirty ? ' (+ uncommitted changes)' : ''}.`);
    for (const sp of run.spliced ?? [])
      P(`- Suite ${sp.suite}: its ${sp.rows} rows come from a later run, \`${sp.command ?? '?'}\`${sp.quick ? ' (quick)' : ' (full)'}, started ${sp.started ?? '?'}, ` +
        `duration ${sp.duration_sec != null ? (sp.duration_sec / 60).toFixed(1) + ' min' : '?'}, commit ${sp.git_commit ? sp.git_commit.slice(0, 10) : '?'}${sp.git_dirty ? ' (+ uncommitted changes)' : ''}` +
        `${sp.load1 ? `, 1-minute load ${sp.load1.min}–${sp.load1.max}` : ''} (bench/splice.mjs).`);
    const inputs = Object.entries(m.inputs ?? {});
    if (inputs.length) {
      P('- Inputs (SHA-256 verified against pinned values on every use):');
      for (const [k, v] of inputs) P(`  - \`${k}\`: ${v.sha256}${v.url ? ` (${v.url})` : ''}${v.unique_keys ? `, ${v.unique_keys} unique keys, ${v.avg_key_bytes} B average` : ''}`);
    }
  }
  P('');
  const notRun = runs.flatMap((r) => r.machine.not_run ?? []);
  if (notRun.length) {
    P('### Not run', '', 'Implementations that produced no rows, and why (no row is ever estimated or copied):', '');
    const seen = new Set();
    for (const n of notRun) {
      const k = `${n.suite}|${n.impl}|${n.reason}`;
      if (seen.has(k)) continue;
      seen.add(k);
      P(`- **${n.impl}** (${n.suite}): ${n.reason}`);
    }
    P('');
  }

  // ---- in-memory
  const inm = rows.filter((r) => r.suite === 'inmem');
  if (inm.length) {
    P('## In memory: adaptree vs JS structures (`inmem`)', '');
    P('The paper\'s workloads (section 4): load 90% of the keys in random order (untimed), then **insert** the last 10%, ' +
      '**lookup_zipf** (YCSB zipfian, θ = 0.99), **lookup_uniform**, **scan** of 1..50 records from zipfian start keys, and **iterate** ' +
      '(one full pass; ops = records). 8-byte values. adaptree runs through its TypeScript API (`BTreeMap`, `bytes` values; `utf8` keys for strings, ' +
      '4-byte big-endian `bytes` keys for integers — the same bytes the native binary gets; the `number` key encoding is listed separately). ' +
      'js-map has no order, so no scan. Lookup keys are decoded separately from the inserted ones (no pointer-equal strings).', '');
    const datasets = T.distinct('dataset', (r) => r.suite === 'inmem');
    const impls = T.distinct('impl', (r) => r.suite === 'inmem').sort(byOrder(IMPL_ORDER));
    const cfg = (impl) => (impl.startsWith('adaptree') ? 'adaptive' : '-');
    const headImpl = impls.includes('adaptree-wasm') ? 'adaptree-wasm' : impls.find((i) => i.startsWith('adaptree'));
    for (const d of datasets) {
      const keys = inm.find((r) => r.dataset === d)?.keys;
      P(`### ${d} (${keys} keys)`, '');
      const wls = WL_ORDER.filter((w) => inm.some((r) => r.dataset === d && r.workload === w));
      const head = ['workload', ...impls];
      if (headImpl) head.push(`${headImpl} / js-map`, `${headImpl} / sorted-btree`);
      if (impls.includes('adaptree-native') && headImpl !== 'adaptree-native') head.push(`${headImpl} / native`);
      const encs = [...new Set(inm.filter((r) => r.dataset === d && r.impl === 'adaptree-wasm' && r.key_encoding && r.key_encoding !== 'bytes' && r.key_encoding !== 'utf8').map((r) => r.key_encoding))];
      for (const e of encs) head.splice(1 + impls.indexOf('adaptree-wasm') + 1, 0, `adaptree-wasm (${e} keys)`);
      const body = wls.map((w) => {
        const vals = impls.map((i) => T.get('inmem', d, w, i, cfg(i))?.ops ?? null);
        const line = [w, ...vals.map(mops)];
        for (const e of encs) line.splice(1 + impls.indexOf('adaptree-wasm') + 1, 0, mops(T.get('inmem', d, w, 'adaptree-wasm', 'adaptive', e)?.ops));
        if (headImpl) {
          const a = T.get('inmem', d, w, headImpl, 'adaptive')?.ops;
          line.push(ratio(a, T.get('inmem', d, w, 'js-map', '-')?.ops), ratio(a, T.get('inmem', d, w, 'sorted-btree', '-')?.ops));
          if (impls.includes('adaptree-native') && headImpl !== 'adaptree-native') line.push(ratio(a, T.get('inmem', d, w, 'adaptree-native', 'adaptive')?.ops));
        }
        return line;
      });
      P(mdTable(head, body), '');
    }
    // headline: lookups zipf per data set
    if (headImpl) {
      const hb = datasets.map((d) => {
        const g = (i, w) => T.get('inmem', d, w, i, cfg(i))?.ops;
        return [d, ...['insert', 'lookup_zipf', 'scan'].map((w) => `${mops(g(headImpl, w))} (${ratio(g(headImpl, w), g('js-map', w))} js-map, ${ratio(g(headImpl, w), g('sorted-btree', w))} sorted-btree)`)];
      });
      headline.push(`Throughput of ${headImpl} (adaptive, through the TypeScript API) in ops/s, and its ratio to the JS anchors measured in the same run:`, '',
        mdTable(['data set', 'insert', 'lookup zipf 0.99', 'scan 1..50'], hb), '');
    }
    const aims13 = inmemAims(rows);
    if (aims13.length) {
      const met = aims13.filter((a) => a.met).length;
      P(`Aims (issue 13), as ratios of rows of this run: ${met} of ${aims13.length} met.`, '', aimsTable(aims13), '');
    }
    for (const w of WL_ORDER) {
      const ds = datasets.filter((d) => inm.some((r) => r.dataset === d && r.workload === w));
      if (!ds.length) continue;
      const ims = impls.filter((i) => inm.some((r) => r.workload === w && r.impl === i));
      P(svg(`inmem-${w}.svg`, barChart({ title: `inmem: ${w} (ops/s)`, groups: ds, series: ims, values: ds.map((d) => ims.map((i) => T.get('inmem', d, w, i, cfg(i))?.ops ?? null)), yLabel: 'ops/s', log: true })));
    }
    P('');
  }

  // ---- ablation
  const abl = rows.filter((r) => r.suite === 'ablation');
  if (abl.length) {
    P('## Ablation: each layout optimization (`ablation`, Figures 7 and 8)', '');
    P('Each configuration of the paper\'s section 4 on the same keys. Figure 7 compares each step with the previous one ' +
      '(prefix vs baseline, heads vs prefix, hints vs heads); fingerprint, semi-dense, fully-dense and adaptive are compared with hints (Figure 8, 9, 14).', '');
    const steps = [['prefix', 'baseline'], ['heads', 'prefix'], ['hints', 'heads'], ['fingerprint', 'hints'], ['semi-dense', 'hints'], ['fully-dense', 'hints'], ['adaptive', 'hints']];
    const impls = T.distinct('impl', (r) => r.suite === 'ablation').sort(byOrder(IMPL_ORDER));
    const datasets = T.distinct('dataset', (r) => r.suite === 'ablation');
    for (const impl of impls) {
      const wls = WL_ORDER.filter((w) => abl.some((r) => r.impl === impl && r.workload === w));
      P(`### ${impl}`, '');
      for (const w of wls) {
        P(`**${w}** — ops/s per configuration, and the change of each step:`, '');
        const body = datasets.map((d) => {
          const v = Object.fromEntries(CONFIGS.map((c) => [c, T.get('ablation', d, w, impl, c)?.ops ?? null]));
          return [d, ...CONFIGS.map((c) => mops(v[c])), ...steps.map(([a, b]) => fmtPct(pct(v[a], v[b])))];
        });
        P(mdTable(['data set', ...CONFIGS, ...steps.map(([a, b]) => `${a} vs ${b}`)], body), '');
        P(svg(`ablation-${impl}-${w}.svg`, barChart({
          title: `${impl}: ${w}, change per optimization step`, groups: steps.map(([a, b]) => `${a}`), series: datasets,
          values: steps.map(([a, b]) => datasets.map((d) => pct(T.get('ablation', d, w, impl, a)?.ops, T.get('ablation', d, w, impl, b)?.ops))),
          yLabel: 'throughput change', fmt: (v) => fmtPct(v), signed: true,
        })), '');
      }
      const sp = datasets.map((d) => [d, ...CONFIGS.map((c) => { const g = T.get('ablation', d, 'insert', impl, c); return g?.bpr != null ? g.bpr.toFixed(1) : '–'; })]);
      if (sp.some((r) => r.slice(1).some((x) => x !== '–'))) P(`Bytes per record after inserting every key (${impl}):`, '', mdTable(['data set', ...CONFIGS], sp), '');
    }
  }

  // ---- leaf types (Figure 13)
  const withLayouts = rows.filter((r) => r.config === 'adaptive' && leafCounts(r.layouts) && ['lookup_zipf', 'scan'].includes(r.workload) && ['ablation', 'inmem'].includes(r.suite));
  if (withLayouts.length) {
    P('## Leaf types chosen by the adaptive layout (Figure 13)', '');
    P('Share of leaves of each type after the lookup (zipf) and the scan workload, per data set (from `stats()` of the adaptive tree).', '');
    for (const impl of [...new Set(withLayouts.map((r) => r.impl))].sort(byOrder(IMPL_ORDER))) {
      const suite = withLayouts.some((r) => r.impl === impl && r.suite === 'ablation') ? 'ablation' : 'inmem';
      const sel = withLayouts.filter((r) => r.impl === impl && r.suite === suite && (r.key_encoding == null || r.key_encoding === 'bytes' || r.key_encoding === 'utf8'));
      const groups = [], counts = [];
      const cats = [...new Set(sel.flatMap((r) => Object.keys(leafCounts(r.layouts))))];
      for (const d of [...new Set(sel.map((r) => r.dataset))]) for (const w of ['lookup_zipf', 'scan']) {
        const r = sel.find((x) => x.dataset === d && x.workload === w);
        if (!r) continue;
        const c = leafCounts(r.layouts);
        groups.push(`${d}\n${w === 'scan' ? 'scan' : 'lookup'}`);
        counts.push(cats.map((k) => c[k] ?? 0));
      }
      P(`**${impl}** (${suite} suite; scans ran ${suite === 'ablation' || impl === 'adaptree-native' ? '' : 'for a time budget, so '}as many operations as the table's scan row shows — adaption on reads is probabilistic):`, '');
      P(mdTable(['data set / after', ...cats], groups.map((g, i) => [g.replace('\n', ' / '), ...counts[i].map((x) => String(x))])), '');
      P(svg(`leaf-types-${impl}.svg`, stackChart({ title: `${impl}, adaptive: leaf types`, groups, cats, counts })), '');
    }
  }

  // ---- density (Figure 9)
  const den = rows.filter((r) => r.suite === 'density');
  if (den.length) {
    P('## Dense leaves vs density (`density`, Figure 9)', '');
    P('N keys drawn uniformly without replacement from [0, N/density), inserted in random order; throughput change of each configuration over `hints`.', '');
    const impls = [...new Set(den.map((r) => r.impl))].sort(byOrder(IMPL_ORDER));
    const xs = [...new Set(den.map((r) => r.density))].filter((x) => x != null).sort((a, b) => a - b);
    const dsOf = (x) => den.find((r) => r.density === x)?.dataset;
    for (const impl of impls) for (const w of WL_ORDER.filter((w) => den.some((r) => r.impl === impl && r.workload === w))) {
      const cfgs = ['semi-dense', 'fully-dense', 'adaptive'].filter((c) => den.some((r) => r.impl === impl && r.config === c));
      const lines = Object.fromEntries(cfgs.map((c) => [c, xs.map((x) => pct(T.get('density', dsOf(x), w, impl, c)?.ops, T.get('density', dsOf(x), w, impl, 'hints')?.ops))]));
      P(svg(`density-${impl}-${w}.svg`, lineChart({ title: `${impl}: ${w}, change over hints`, xs: xs.map((x) => x * 100), lines, xLabel: 'density (%)', yLabel: 'throughput change (%)', fmt: (v) => fmtPct(v) })), '');
      P(mdTable(['density', 'hints ops/s', ...cfgs.map((c) => `${c} vs hints`)], xs.map((x) => [`${(x * 100).toFixed(0)}%`, mops(T.get('density', dsOf(x), w, impl, 'hints')?.ops), ...cfgs.map((c, i) => fmtPct(lines[c][xs.indexOf(x)]))])), '');
    }
    const spImpl = impls[0];
    const sp = xs.map((x) => [`${(x * 100).toFixed(0)}%`, ...['hints', 'semi-dense', 'fully-dense', 'adaptive'].map((c) => { const g = T.get('density', dsOf(x), 'insert', spImpl, c); return g?.bpr != null ? g.bpr.toFixed(1) : '–'; })]);
    P(`Bytes per record (${spImpl}, Figure 10):`, '', mdTable(['density', 'hints', 'semi-dense', 'fully-dense', 'adaptive'], sp), '');
  }

  // ---- YCSB
  const y = rows.filter((r) => r.suite === 'ycsb');
  if (y.length) {
    P('## YCSB A–F (`ycsb`)', '');
    P('YCSB core workloads with 8-byte values after loading 90% of the keys: A 50/50 read/update, B 95/5 read/update, C read only, ' +
      'D 95% read-latest / 5% insert, E 95% scans of 1..100 / 5% insert, F 50% read / 50% read-modify-write; zipfian θ = 0.99 (D: latest). js-map cannot scan (no E).', '');
    const impls = [...new Set(y.map((r) => r.impl))].sort(byOrder(IMPL_ORDER));
    const cfg = (i) => (i.startsWith('adaptree') ? 'adaptive' : '-');
    const ref = impls.includes('adaptree-wasm') ? 'adaptree-wasm' : impls[0];
    for (const d of [...new Set(y.map((r) => r.dataset))]) {
      const wls = ['ycsb_a', 'ycsb_b', 'ycsb_c', 'ycsb_d', 'ycsb_e', 'ycsb_f'].filter((w) => y.some((r) => r.dataset === d && r.workload === w));
      P(`### ${d}`, '');
      P(mdTable(['workload', ...impls, ...impls.filter((i) => i !== ref).map((i) => `${ref} / ${i}`)], wls.map((w) => {
        const v = impls.map((i) => T.get('ycsb', d, w, i, cfg(i))?.ops ?? null);
        return [w, ...v.map(mops), ...impls.filter((i) => i !== ref).map((i) => ratio(v[impls.indexOf(ref)], v[impls.indexOf(i)]))];
      })), '');
      P(svg(`ycsb-${d}.svg`, barChart({ title: `YCSB on ${d} (ops/s)`, groups: wls.map((w) => w.slice(5).toUpperCase()), series: impls, values: wls.map((w) => impls.map((i) => T.get('ycsb', d, w, i, cfg(i))?.ops ?? null)), yLabel: 'ops/s', log: true })), '');
    }
  }

  // ---- persistent stores
  for (const [suite, title, text] of [
    ['persist-node', 'Persistent stores in Node (`persist-node`)', 'docs/ANCHORS.md\'s workload: keys `k` + 10 digits in random order, 100-byte values (`k10-100B`), and the same with 1500-byte values (`k10-1500B`, fewer records); each store with its default durability (see `config`). Bytes per record: the store\'s directory on disk after the run.'],
    ['browser', 'Persistent stores in headless Chromium (`browser`)', 'One dedicated module worker, a fresh persistent profile, served cross-origin isolated from 127.0.0.1. docs/ANCHORS.md\'s workload: keys `k` + 10 digits in random order, 100-byte values. Every store is open at once and each workload runs on all of them interleaved (25 ms slices in turn, the order rotating each round), so they share the machine\'s load. `get` awaits each read in its own transaction; `get_sync` makes the same reads as plain calls (adaptree-opfs, sqlite-wasm-opfs: synchronous in a worker); `get_batch1000` pipelines 1000 reads in one transaction (adaptree: getMany); scans read 50 records from a random key. adaptree: one commit per batch and per put; `get_cold` after reopening with a pool a tenth of the files; raw-opfs: 4 KiB write+flush pairs and random 4 KiB reads, interleaved with put_autocommit and get_cold. Bytes per record: file sizes (adaptree-opfs), page images (adaptree-indexeddb), SQLite page_count × page_size, else the growth of `navigator.storage.estimate().usage` while loading.'],
  ]) {
    const sr = rows.filter((r) => r.suite === suite);
    if (!sr.length) continue;
    P(`## ${title}`, '', text, '');
    const impls = [...new Set(sr.map((r) => r.impl))].sort(byOrder(IMPL_ORDER));
    const wls = [...new Set(sr.map((r) => r.workload))];
    for (const d of [...new Set(sr.map((r) => r.dataset))]) {
      const keys = sr.find((r) => r.dataset === d)?.keys;
      const many = new Set(sr.map((r) => r.dataset)).size > 1;
      P(`${many ? `\`${d}\`: ` : ''}${keys} records. ops/s:`, '');
      P(mdTable(['workload', ...impls], wls.map((w) => [w, ...impls.map((i) => { const r = sr.find((x) => x.dataset === d && x.impl === i && x.workload === w); return r ? mops(r.ops_per_sec) : '–'; })])), '');
      P(mdTable(['store', 'config', 'bytes/record'], impls.map((i) => { const r = sr.find((x) => x.dataset === d && x.impl === i); return [i, r?.config ?? '', r?.bytes_per_record != null ? r.bytes_per_record.toFixed(1) : '–']; })), '');
      if (suite === 'browser') {
        const aims = browserAims(sr.filter((r) => r.dataset === d));
        if (aims.length) P('Aims (issue 10), as ratios of rows of this run:', '', aimsTable(aims), '');
        const ctx = idbContext(sr.filter((r) => r.dataset === d));
        if (ctx.length) P('IndexedDB itself in this run (context for the IndexedDB rows above, no targets): its own one-put transactions bound any store built on it.', '', contextTable(ctx), '');
      }
      P(svg(many ? `${suite}-${d}.svg` : `${suite}.svg`, barChart({ title: many ? `${suite} ${d}: ops/s` : `${suite}: ops/s`, groups: wls, series: impls, values: wls.map((w) => impls.map((i) => sr.find((x) => x.dataset === d && x.impl === i && x.workload === w)?.ops_per_sec ?? null)), yLabel: 'ops/s', log: true })), '');
    }
  }

  // ---- threads (docs/THREADS.md reads its tables from these rows too)
  const th = rows.filter((r) => r.suite === 'threads');
  if (th.length) {
    P('## Workers sharing one index (`threads`)', '');
    P('Node `worker_threads` on the mt build (docs/THREADS.md). `workers`: 0 is the mt build on the main thread, not shared; 1 and 2 are that many workers ' +
      'attached to one shared map (adaptree-wasm-mt) or store on node files (adaptree-file-mt), the operations split evenly between them; adaptree-wasm and ' +
      'adaptree-file are the st build on one thread. Time runs from releasing the workers until the last one is done; each row is the median of its rounds. ' +
      'On this 2-vCPU machine 2 workers are the most that can run at once.', '');
    const keysOf = (w) => th.find((r) => r.workload === w)?.keys;
    const cols = [];
    for (const r of th.filter((x) => ['lookup', 'insert', 'mix', 'hot'].includes(x.workload))) {
      const c = `${r.impl} ×${r.workers}${r.config !== 'adaptive' ? ` (${r.config.replace(/^adaptive\+/, '')})` : ''}`;
      if (!cols.some((x) => x.c === c)) cols.push({ c, impl: r.impl, workers: r.workers, config: r.config });
    }
    const cell = (w, x) => th.find((r) => r.workload === w && r.impl === x.impl && r.workers === x.workers && r.config === x.config)?.ops_per_sec;
    const wls = ['lookup', 'insert', 'mix', 'hot'].filter((w) => th.some((r) => r.workload === w));
    if (wls.length) {
      P(`${keysOf(wls[0])} keys (9-byte hex keys, 8-byte values); lookup: uniform random keys of the loaded map; insert: new keys in random order into an empty map; ` +
        'mix: 50% lookups, 50% writes; hot: each worker upserts its own 16 keys, all in one leaf at the start. ops/s, one column per impl and worker count:', '');
      for (const part of [cols.filter((x) => x.impl.includes('wasm')), cols.filter((x) => x.impl.includes('file'))]) {
        const ws = wls.filter((w) => part.some((x) => cell(w, x) != null));
        if (ws.length) P(mdTable(['workload', ...part.map((x) => x.c)], ws.map((w) => [w, ...part.map((x) => mops(cell(w, x)))])), '');
      }
    }
    const xm = th.filter((r) => r.workload === 'xmerge');
    if (xm.length) {
      P(`xmerge: ${keysOf('xmerge')} records loaded into a file store with a 1 MiB pool, then as many inserts at 64 Zipf-picked insertion points; XMerge and redistribution on or off:`, '');
      P(mdTable(['config', 'workers', 'ops/s', 'leaf fill', 'bytes/record', 'leaves', 'xmerges', 'evictions'],
        xm.map((r) => [r.config, r.workers, mops(r.ops_per_sec), r.leaf_fill?.toFixed(3) ?? '–', r.bytes_per_record?.toFixed(1) ?? '–', r.leaves ?? '–', r.xmerges ?? '–', r.evictions ?? '–'])), '');
    }
    const ir = th.filter((r) => r.workload === 'insert-read');
    if (ir.length) {
      P('insert-read: one worker inserts N new keys into a loaded map or store while another reads loaded keys until it is done:', '');
      P(mdTable(['impl', "writer's inserts/s", "reader's reads/s"], ir.map((r) => [r.impl, mops(r.ops_per_sec), mops(r.reads_per_sec)])), '');
    }
    const pl = th.filter((r) => r.workload.startsWith('pool-'));
    if (pl.length) {
      P("pool-getMany, pool-setMany: batches through a WorkerPool against the same calls on the main thread (workers 0); ratio: the pool's ops/s over the main thread's:", '');
      P(mdTable(['workload', 'impl', 'workers', 'batch', 'mode', 'ops/s', 'ratio'], pl.map((r) => [r.workload, r.impl, r.workers, r.batch ?? '–', r.mode ?? '–', mops(r.ops_per_sec), r.ratio != null ? r.ratio.toFixed(2) + '×' : '–'])), '');
    }
  }

  // ---- space overview
  const spaceRows = rows.filter((r) => r.bytes_per_record != null && (r.suite === 'inmem') && r.workload === 'insert');
  if (spaceRows.length) {
    P('## Space: bytes per record (`inmem`, after inserting every key)', '');
    P('adaptree: the tree\'s bytes from `stats()` (native: the binary\'s report). JS structures: growth of the V8 heap (after GC) while loading, ' +
      'plus the heap size of the key strings, divided by the record count; the 8-byte values are `Uint8Array`s in every structure.', '');
    const impls = [...new Set(spaceRows.map((r) => r.impl))].sort(byOrder(IMPL_ORDER));
    const ds = [...new Set(spaceRows.map((r) => r.dataset))];
    P(mdTable(['data set', ...impls], ds.map((d) => [d, ...impls.map((i) => { const g = T.get('inmem', d, 'insert', i, i.startsWith('adaptree') ? 'adaptive' : '-'); return g?.bpr != null ? g.bpr.toFixed(1) : '–'; })])), '');
  }

  P('## How to reproduce', '');
  P('```sh', 'npm run build                                   # wasm + dist/ (adaptree-wasm rows)',
    'cmake -S . -B build/native -G Ninja -DADAPTREE_WASM=OFF -DADAPTREE_NATIVE_MARCH=ON && cmake --build build/native --target adaptree-bench-native',
    'npm run bench -- --suite all --out bench/results.json   # full run; --quick for the small one',
    'npm run bench:report                            # bench/results.json -> bench/REPORT.md + bench/report/*.svg', '```', '');
  P('Data sets are downloaded from the npm registry and Maven Central on first use, checked against pinned SHA-256 sums and cached in `~/.cache/adaptree-bench` ' +
    '(never in the repository; the wiki titles are GPL-3.0). `--dataset file:PATH` runs any suite on a newline-separated key file.', '');

  writeWhole(o.out, out.join('\n'));  // (whole or not at all: schema.mjs)
  fs.writeFileSync(path.join(svgDir, 'headline.md'), headline.length ? headline.join('\n') + `\nFull report: [bench/REPORT.md](bench/REPORT.md).\n` : 'No inmem rows.\n');
  process.stderr.write(`wrote ${path.relative(process.cwd(), o.out)} and ${fs.readdirSync(svgDir).length} files in ${path.relative(process.cwd(), svgDir)}\n`);
  if (o.out === SCRATCH_REPORT) process.stderr.write(`(a scratch place, ignored by git; --out ${path.relative(process.cwd(), COMMITTED_REPORT)} replaces the committed report)\n`);
}

try {
  main();
} catch (e) {
  if (!(e instanceof UsageError)) throw e;
  process.stderr.write(`bench:report: ${e.message}\n`);
  process.exit(2);
}
