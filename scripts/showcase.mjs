// The main job of `npm run showcase`: an in-memory benchmark of adaptree
// (wasm, through its TypeScript API) side by side with JavaScript's Map,
// sorted-btree and the native build of the same core, on real data sets
// fetched from the npm registry and on generated integers. It prints a table
// of throughput and ratios, and writes bench/out/showcase.json (the benchmark
// schema) for `npm run bench:report`, whose report of it goes to bench/out/ too (the
// committed bench/REPORT.md comes only from bench/results.json).
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'bench/out/showcase.json');
mkdirSync(path.dirname(out), { recursive: true });
const args = ['bench/run.mjs', '--suite', 'inmem', '--quick', '--out', out, ...process.argv.slice(2)];
console.log(`$ node ${args.join(' ')}`);
const r = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
if (r.status !== 0) process.exit(r.status ?? 1);

const { results } = JSON.parse(readFileSync(out, 'utf8'));
const impls = ['adaptree-wasm', 'adaptree-native', 'js-map', 'sorted-btree'];
const groups = new Map();
for (const row of results) {
  if (row.config !== 'adaptive' && row.impl.startsWith('adaptree')) continue;
  const k = `${row.dataset}\t${row.workload}`;
  if (!groups.has(k)) groups.set(k, {});
  groups.get(k)[row.impl] = row.ops_per_sec;
}
const fmt = (x) => (x === undefined ? '—' : (x / 1e6).toFixed(2));
const ratio = (a, b) => (a && b ? (a / b).toFixed(2) + '×' : '—');
console.log('\nMops/s (adaptree: adaptive layout)  — one run, compare ratios, not absolute numbers\n');
const header = ['dataset', 'workload', ...impls, 'wasm/js-map', 'wasm/sorted-btree'];
const rows = [...groups].map(([k, v]) => [
  ...k.split('\t'),
  ...impls.map((i) => fmt(v[i])),
  ratio(v['adaptree-wasm'], v['js-map']),
  ratio(v['adaptree-wasm'], v['sorted-btree']),
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of rows) console.log(line(row));
console.log(`\nresults: ${path.relative(root, out)}`);
console.log(`report with plots: npm run bench:report -- ${path.relative(root, out)}   (writes bench/out/REPORT.md, not the committed bench/REPORT.md)`);
