// The issue-13 table from inmem result files: adaptree-wasm (this dist) against
// adaptree-wasm-base (ADAPTREE_BENCH_BASE), adaptree-native and sorted-btree, as ops/s and
// ratios. Several files: each row keeps its best ops/s over them (noise only ever slows down).
//
//   node bench/ab-table.mjs bench/out/speed.json [more.json ...]
import fs from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node bench/ab-table.mjs RESULT.json [...]');
  process.exit(2);
}
const best = new Map();
for (const f of files) {
  for (const r of JSON.parse(fs.readFileSync(f, 'utf8')).results) {
    if (r.suite !== 'inmem' || !r.ops_per_sec) continue;
    const impl = r.impl + (r.key_encoding === 'number' ? '#num' : '');
    const k = `${r.dataset}|${r.workload}|${impl}`;
    if (!best.has(k) || best.get(k) < r.ops_per_sec) best.set(k, r.ops_per_sec);
  }
}
const get = (d, w, i) => best.get(`${d}|${w}|${i}`);
const fmt = (x) => (x === undefined ? '—' : x >= 1e6 ? (x / 1e6).toFixed(2) + 'M' : (x / 1e3).toFixed(0) + 'k');
const ratio = (a, b) => (a === undefined || b === undefined ? '—' : (a / b).toFixed(2));
const datasets = [...new Set([...best.keys()].map((k) => k.split('|')[0]))];
const workloads = ['insert', 'lookup_zipf', 'lookup_uniform', 'scan', 'iterate'];
console.log('| data set | workload | wasm | wasm (base) | after/before | native | sorted-btree | wasm/native | wasm/sorted-btree |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const d of datasets) {
  for (const w of workloads) {
    for (const impl of ['adaptree-wasm', 'adaptree-wasm#num']) {
      const a = get(d, w, impl);
      if (a === undefined) continue;
      const base = get(d, w, impl === 'adaptree-wasm' ? 'adaptree-wasm-base' : 'adaptree-wasm-base#num');
      const nat = get(d, w, 'adaptree-native'), sb = get(d, w, 'sorted-btree');
      const label = impl.endsWith('#num') ? `${d} (number keys)` : d;
      console.log(`| ${label} | ${w} | ${fmt(a)} | ${fmt(base)} | ${ratio(a, base)} | ${fmt(nat)} | ${fmt(sb)} | ${ratio(a, nat)} | ${ratio(a, sb)} |`);
    }
  }
}
