// The browser suite's aims (issue 10, "Benchmark"), checked on the rows of one run:
//   node bench/lib/aims.mjs RESULT.json     prints the table (report.mjs renders it too)
// Each aim is a ratio of two rows of the same run (ops/s, or bytes per record for space).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const ADAPTREE = ['adaptree-opfs', 'adaptree-indexeddb', 'adaptree-indexeddb-relaxed'];

// [what, workload of adaptree, reference impl, reference workload, target, higher is better]
const AIMS = [
  ['warm reads vs sqlite-wasm', 'get', 'sqlite-wasm-opfs', 'get', 10, true],
  // the same reads as plain calls in the worker (both stores' reads are synchronous there)
  ['warm reads vs sqlite-wasm, plain calls', 'get_sync', 'sqlite-wasm-opfs', 'get_sync', 10, true],
  ['warm batched reads vs sqlite-wasm', 'get_batch1000', 'sqlite-wasm-opfs', 'get_batch1000', 10, true],
  ['warm reads vs raw IndexedDB', 'get', 'indexeddb', 'get', 30, true],
  ['warm batched reads vs raw IndexedDB', 'get_batch1000', 'indexeddb', 'get_batch1000', 30, true],
  ['scans of 50 vs sqlite-wasm', 'scan50', 'sqlite-wasm-opfs', 'scan50', 5, true],
  ['batched writes vs sqlite-wasm', 'put_tx1000', 'sqlite-wasm-opfs', 'put_tx1000', 3, true],
  ['one-commit writes vs raw OPFS write+flush', 'put_autocommit', 'raw-opfs', 'write_flush', 0.5, true],
  ['cold reads vs raw OPFS random 4 KiB reads', 'get_cold', 'raw-opfs', 'read_random', 0.6, true],
  ['space vs SQLite\'s file (bytes/record)', 'put_tx1000', 'sqlite-wasm-opfs', 'put_tx1000', 1, false],
];

/** One entry per (aim, adaptree impl) whose two rows exist: { aim, impl, workload, ref, ours, theirs, ratio, target, higher, met }. */
export function browserAims(rows) {
  const find = (impl, workload) => rows.find((r) => r.suite === 'browser' && r.impl === impl && r.workload === workload);
  const out = [];
  for (const [aim, wl, refImpl, refWl, target, higher] of AIMS) {
    const space = !higher;
    for (const impl of ADAPTREE) {
      const a = find(impl, wl), b = find(refImpl, refWl);
      if (!a || !b) continue;
      const ours = space ? a.bytes_per_record : a.ops_per_sec, theirs = space ? b.bytes_per_record : b.ops_per_sec;
      if (!(ours > 0) || !(theirs > 0)) continue;
      const ratio = ours / theirs;
      out.push({ aim, impl, workload: wl, ref: space ? `${refImpl} bytes/record` : `${refImpl} ${refWl}`, ours, theirs, ratio, target, higher, met: higher ? ratio >= target : ratio <= target });
    }
  }
  return out;
}

const num = (x) => (x >= 100 ? Math.round(x).toString() : x >= 10 ? x.toFixed(1) : x.toFixed(2));

/** Markdown table of browserAims(rows). */
export function aimsTable(aims) {
  const head = ['aim', 'impl', 'ours', 'reference', 'theirs', 'ratio', 'target', 'met'];
  const body = aims.map((a) => [a.aim, a.impl, num(a.ours), a.ref, num(a.theirs), a.ratio.toFixed(2) + '×', (a.higher ? '≥ ' : '≤ ') + a.target + '×', a.met ? 'yes' : 'no']);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) { process.stderr.write('usage: node bench/lib/aims.mjs RESULT.json\n'); process.exit(2); }
  const aims = browserAims(JSON.parse(fs.readFileSync(file, 'utf8')).results);
  process.stdout.write(aims.length ? aimsTable(aims) + '\n' : 'no browser rows with both sides of an aim\n');
}
