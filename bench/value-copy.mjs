// Values out of wasm (issue 13 step 1, issue 10's scan50/getMany): BTreeMap.get, getMany of
// 1000 keys and scans of 50 records with `bytes` values of a few sizes, this checkout's dist/
// against another (--ab DIR, say a copy of main's dist/) in alternating rounds in this one
// process. Prints ns per value (least over the rounds: noise only adds); numbers only.
//
//   node bench/value-copy.mjs [--ab /path/to/other/dist] [--keys 20000] [--sizes 8,32,100,1000]
//                             [--rounds 7] [--out FILE.json]
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : dflt;
};
const AB = opt('ab', null);
const N = +opt('keys', 20000);
const SIZES = opt('sizes', '8,32,100,1000').split(',').map(Number);
const ROUNDS = +opt('rounds', 7);
const OUT = opt('out', null);

async function load(dir, label) {
  const mod = await import(pathToFileURL(path.join(dir, 'index.js')).href);
  await mod.init();
  return { mod, label };
}
const dists = [await load(path.join(ROOT, 'dist'), 'this dist')];
if (AB) dists.unshift(await load(path.resolve(AB), 'other dist'));

// Deterministic keys k0000000..; probe order from a fixed LCG.
const keys = Array.from({ length: N }, (_, i) => 'k' + String(i).padStart(7, '0'));
const order = new Uint32Array(N);
for (let i = 0, x = 12345; i < N; i++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; order[i] = x % N; }
const rows = [];

function time(fn) {
  const t = process.hrtime.bigint();
  const x = fn();
  return [Number(process.hrtime.bigint() - t), x];
}

for (const size of SIZES) {
  const maps = dists.map((d) => {
    const m = new d.mod.BTreeMap(undefined, { values: 'bytes' });
    const v = new Uint8Array(size);
    m.setMany(keys.map((k, i) => { v[0] = i; return [k, v.slice()]; }));
    return m;
  });
  const batch = order.slice(0, 1000);
  const batchKeys = Array.from(batch, (i) => keys[i]);
  const work = {
    get: [N, (m) => { let x = 0; for (let i = 0; i < N; i++) x += m.get(keys[order[i]]).length; return x; }],
    getMany1000: [20 * 1000, (m) => { let x = 0; for (let r = 0; r < 20; r++) for (const v of m.getMany(batchKeys)) x += v.length; return x; }],
    scan50: [400 * 50, (m) => {
      let x = 0;
      for (let r = 0; r < 400; r++) for (const [, v] of m.entries({ gte: keys[order[r]], limit: 50 })) x += v.length;
      return x;
    }],
  };
  for (const [wl, [ops, body]] of Object.entries(work)) {
    const ns = dists.map(() => Infinity);
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < dists.length; j++) {
        const k = (j + r) % dists.length;
        ns[k] = Math.min(ns[k], time(() => body(maps[k]))[0] / ops);
      }
    }
    const row = { value_bytes: size, workload: wl, ns_per_value: {} };
    dists.forEach((d, j) => { row.ns_per_value[d.label] = +ns[j].toFixed(1); });
    if (dists.length > 1) row.speedup = +(ns[0] / ns[1]).toFixed(2);
    rows.push(row);
    console.log(`${String(size).padStart(5)} B  ${wl.padEnd(12)} ` + dists.map((d, j) => `${d.label}: ${ns[j].toFixed(0)} ns`).join('  ') + (row.speedup ? `  (${row.speedup}x)` : ''));
  }
  for (const m of maps) m.free();
}
if (OUT) fs.writeFileSync(OUT, JSON.stringify({ schema: 'adaptree-value-copy/1', keys: N, rows }, null, 1));
