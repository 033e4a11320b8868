// Where the time of a BTreeMap call goes: JS encoding, the JS↔wasm boundary, the wasm core,
// decoding. Prints ns per operation for each stage, and, with --ab DIR, the public API of this
// checkout's dist/ against another dist/ (say a copy of main's) in alternating rounds in this
// one process, as ratios. Nothing here is a test; numbers only.
//
//   node bench/split.mjs [--dataset urls,dense,...] [--keys 100000] [--ops 200000] [--rounds 6]
//                        [--reps 5] [--ab /path/to/other/dist] [--core-only] [--sorted] [--out FILE.json]
// Every figure is the least of its repetitions / rounds: on a shared machine noise only adds.
//
// Stages, per lookup (uniform random present keys, 8-byte `bytes` values as in the inmem suite):
//   boundary   an empty-ish export (at_count) called from JS
//   encode     the key encoder writing into wasm memory (no call into wasm)
//   core/call  at_get per key on keys already encoded in wasm memory (core + boundary)
//   core/loop  at_get_many over batches of 1024 such keys: the core alone, one boundary per batch
//              (compare with bench/native's lookup_uniform for the wasm tax)
//   decode     the value decoder on a result in wasm memory
//   api        BTreeMap.get
// Scans (1..50 from zipf start keys) and full iteration likewise: the core alone
// (at_cursor_seek + at_cursor_next_batch on pre-encoded keys) against the API.
import path from 'node:path';
import fs from 'node:fs';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { prepareDataset } from './lib/datasets.mjs';
import { readKeyFile, decodeKeys, keyViews } from './lib/keyfile.mjs';
import { uniformIndexes, scanOps } from './lib/workloads.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf('--' + name);
  return i >= 0 ? args[i + 1] : dflt;
};
const DATASETS = opt('dataset', 'urls,dense').split(',');
const N = +opt('keys', 100000);
const OPS = +opt('ops', 200000);
const ROUNDS = +opt('rounds', 6);
const AB = opt('ab', null);
const OUT = opt('out', null);
/** --core-only: skip the API rounds (to alternate with bench/native for the wasm tax). */
const CORE_ONLY = args.includes('--core-only');
/** --sorted: also time sorted-btree on the API's operations, in the same rounds. */
const SORTED = args.includes('--sorted');
const SortedBTree = SORTED ? ((m) => m.default?.default ?? m.default ?? m)(await import('sorted-btree')) : null;
const SCANS = Math.max(1, OPS >> 3);
/** Repetitions of each core stage: the least time counts (noise only ever adds). */
const REPS = +opt('reps', 5);

async function loadDist(dir) {
  const mod = await import(pathToFileURL(path.join(dir, 'index.js')).href);
  const abi = await import(pathToFileURL(path.join(dir, 'abi.js')).href);
  const enc = {
    utf8: (await import(pathToFileURL(path.join(dir, 'encoding/utf8.js')).href)).utf8Key,
    bytes: (await import(pathToFileURL(path.join(dir, 'encoding/bytes.js')).href)).bytesKey,
    number: (await import(pathToFileURL(path.join(dir, 'encoding/number.js')).href)).numberKey,
  };
  const values = await import(pathToFileURL(path.join(dir, 'encoding/values.js')).href);
  const w = await mod.init();
  return { mod, abi, enc, values, w };
}

function valueFor(i) {
  const v = new Uint8Array(8);
  v[0] = i; v[1] = i >>> 8; v[2] = i >>> 16; v[3] = i >>> 24;
  return v;
}

/** ns per op of body(), best of `reps` runs (each over `ops` operations). */
function time(ops, body, reps = REPS) {
  let best = Infinity;
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    body();
    const dt = Number(process.hrtime.bigint() - t0);
    if (dt < best) best = dt;
  }
  return best / ops;
}

const rows = [];
function row(dataset, workload, stage, ns, extra = {}) {
  rows.push({ dataset, workload, stage, ns_per_op: +ns.toFixed(1), ...extra });
  console.log(`${dataset.padEnd(7)} ${workload.padEnd(15)} ${stage.padEnd(28)} ${ns.toFixed(1).padStart(9)} ns/op`);
}

/** The core alone: a tree made through the ABI, keys pre-encoded in wasm memory. */
function coreSplit(d, name, keyBytes, jsKeys, kencName, idx, scans) {
  const { w, abi, enc, values } = d;
  const ex = w.exports, ctx = w.ctx;
  const res = ex.at_ctx_result(ctx);
  const mem = () => new Uint8Array(w.memory.buffer);
  const dv = () => new DataView(w.memory.buffer);
  const tree = ex.at_tree_new(abi.LayoutConfig.adaptive);
  const n = keyBytes.length;
  // load: one at_set per key from a scratch area
  const scratch = ex.at_alloc(2048);
  for (let i = 0; i < n; i++) {
    const u8 = mem();
    u8.set(keyBytes[i], scratch);
    u8.set(valueFor(i), scratch + 1100);
    ex.at_set(tree, ctx, scratch, keyBytes[i].length, scratch + 1100, 8);
  }
  // every probe key, encoded once, in one area: [u32 len][bytes] (at_get_many's format)
  let total = 0;
  for (let i = 0; i < idx.length; i++) total += 4 + keyBytes[idx[i]].length;
  const area = ex.at_alloc(total);
  const ptr = new Uint32Array(idx.length), len = new Uint32Array(idx.length);
  {
    const u8 = mem(), v = dv();
    let p = area;
    for (let i = 0; i < idx.length; i++) {
      const k = keyBytes[idx[i]];
      v.setUint32(p, k.length, true);
      u8.set(k, p + 4);
      ptr[i] = p + 4; len[i] = k.length;
      p += 4 + k.length;
    }
  }
  const ops = idx.length;
  row(name, 'lookup_uniform', 'boundary (at_count)', time(ops, () => { for (let i = 0; i < ops; i++) ex.at_count(tree); }));
  const kenc = enc[kencName];
  {
    const u8 = mem(), v = dv();
    row(name, 'lookup_uniform', `encode (${kencName})`, time(ops, () => {
      for (let i = 0; i < ops; i++) kenc.encodeInto(jsKeys[idx[i]], u8, v, scratch, scratch + 1024);
    }));
  }
  row(name, 'lookup_uniform', 'core/call (at_get)', time(ops, () => { for (let i = 0; i < ops; i++) ex.at_get(tree, ctx, ptr[i], len[i]); }));
  const B = 1024;
  row(name, 'lookup_uniform', 'core/loop (at_get_many)', time(ops, () => {
    for (let i = 0; i < ops; i += B) ex.at_get_many(tree, ctx, ptr[i] - 4, Math.min(B, ops - i));
  }));
  ex.at_get(tree, ctx, ptr[0], len[0]);
  {
    const u8 = mem(), v = dv();
    const vp = v.getUint32(res + abi.Result.VALUE_PTR, true), vl = v.getUint32(res + abi.Result.VALUE_LEN, true);
    row(name, 'lookup_uniform', 'decode (bytes, 8 B)', time(ops, () => { for (let i = 0; i < ops; i++) values.bytesValue.decodeFrom(u8, vp, vl, false); }));
  }
  // scans and iteration, core alone
  const cur = ex.at_cursor_new(tree);
  // values, in columns where the build has them (as the iterators ask)
  const BATCH = abi.BatchFlags ? abi.BatchFlags.VALUES | abi.BatchFlags.COLUMNS : 1;
  let recs = 0;
  const sOps = scans.start.length;
  row(name, 'scan', 'core (seek+next_batch)', time(sOps, () => {
    const u8 = mem(); // (a view per scan cost as much as the seek; memory does not grow here)
    for (let i = 0; i < sOps; i++) {
      const k = keyBytes[scans.start[i]];
      for (let j = 0; j < k.length; j++) u8[scratch + j] = k[j];
      ex.at_cursor_seek(cur, scratch, k.length, 0);
      ex.at_cursor_next_batch(cur, ctx, scans.len[i], 256 * 1024, BATCH);
      recs += scans.len[i];
    }
  }));
  row(name, 'iterate', 'core (next_batch 1024)', time(n, () => {
    ex.at_cursor_seek(cur, scratch, 0, abi.SeekFlags.EDGE);
    while (ex.at_cursor_next_batch(cur, ctx, 1024, 256 * 1024, BATCH) === 0) {}
  }));
  ex.at_cursor_free(cur);
  ex.at_tree_free(tree);
  ex.at_free(area);
  ex.at_free(scratch);
}

/** The public API: a map per dist, alternating rounds; returns ns per op for each. */
function apiSplit(dists, name, keys, probe, kencName, idx, scans) {
  const maps = dists.map((d) => {
    const m = new d.mod.BTreeMap(undefined, { keys: kencName, values: 'bytes' });
    for (let i = 0; i < keys.length; i++) m.set(keys[i], valueFor(i));
    return m;
  });
  const work = {
    lookup_uniform: [idx.length, (m) => { let x = 0; for (let i = 0; i < idx.length; i++) x += m.get(probe[idx[i]]).length; return x; }],
    scan: [scans.start.length, (m) => {
      let x = 0;
      for (let i = 0; i < scans.start.length; i++) for (const e of m.entries({ gte: probe[scans.start[i]], limit: scans.len[i] })) x += e[1].length;
      return x;
    }],
    iterate: [keys.length, (m) => { let x = 0; for (const e of m.entries()) x += e[1].length; return x; }],
    iterate_forEach: [keys.length, (m) => { let x = 0; m.forEach((v) => { x += v.length; }); return x; }],
    iterate_keys: [keys.length, (m) => { let x = 0; for (const k of m.keys()) if (k !== undefined) x++; return x; }],
  };
  // --sorted: sorted-btree (the inmem suite's anchor) on the same operations, in the same rounds,
  // as the suite's runner drives it (bench/lib/impls/sorted-btree.mjs).
  let sb = null;
  if (SORTED && !(keys[0] instanceof Uint8Array)) {
    const t = new SortedBTree();
    for (let i = 0; i < keys.length; i++) t.set(keys[i], valueFor(i));
    let want = 0;
    const stop = (k, v, n) => (n + 1 >= want ? { break: n + 1 } : undefined);
    sb = {
      lookup_uniform: () => { let x = 0; for (let i = 0; i < idx.length; i++) x += t.get(probe[idx[i]]).length; return x; },
      scan: () => {
        let x = 0;
        for (let i = 0; i < scans.start.length; i++) { want = scans.len[i]; x += t.forRange(probe[scans.start[i]], t.maxKey(), true, stop); }
        return x;
      },
      iterate: () => { let x = 0; t.forEach(() => { x++; }); return x; },
      iterate_forEach: () => { let x = 0; t.forEach(() => { x++; }); return x; },
      iterate_keys: () => { let x = 0; t.forEach(() => { x++; }); return x; },
    };
  }
  const subjects = maps.length + (sb ? 1 : 0);
  for (const [wl, [ops, body]] of Object.entries(work)) {
    const ns = [];
    for (let j = 0; j < subjects; j++) ns.push(Infinity);
    for (let r = 0; r < ROUNDS; r++) {
      for (let j = 0; j < subjects; j++) {
        const k = (j + r) % subjects;
        ns[k] = Math.min(ns[k], time(ops, k < maps.length ? () => body(maps[k]) : sb[wl], 1));
      }
    }
    row(name, wl, `api (${dists[0].label})`, ns[0]);
    if (dists.length > 1) row(name, wl, `api (${dists[1].label})`, ns[1], { ratio_vs_first: +(ns[0] / ns[1]).toFixed(3) });
    if (sb) row(name, wl, 'sorted-btree', ns[maps.length], { this_dist_vs_sorted: +(ns[maps.length] / ns[maps.length - 1]).toFixed(3) });
  }
  for (const m of maps) m.free();
}

const here = await loadDist(path.join(ROOT, 'dist'));
here.label = 'this dist';
const dists = [here];
if (AB) {
  const other = await loadDist(path.resolve(AB));
  other.label = path.resolve(AB);
  dists.unshift(other);
  here.label = 'this dist';
  other.label = 'other dist';
}
for (const ds of DATASETS) {
  const prep = await prepareDataset(ds, N, 1);
  const kf = readKeyFile(prep.path);
  const str = prep.kind === 'string';
  const bytes = keyViews(kf).map((b) => new Uint8Array(b));
  const jsKeys = str ? decodeKeys(kf, 'string') : bytes;
  const probe = str ? decodeKeys(kf, 'string') : bytes;
  const kenc = str ? 'utf8' : 'bytes';
  const idx = uniformIndexes(kf.n, OPS, 1);
  const scans = scanOps(kf.n, SCANS, 1);
  coreSplit(here, ds, bytes, jsKeys, kenc, idx, scans);
  if (!CORE_ONLY) apiSplit(dists, ds, jsKeys, probe, kenc, idx, scans);
  if (!str) {
    const nums = decodeKeys(kf, prep.kind);
    coreSplit(here, ds + '#num', bytes.map((_, i) => here.enc.number.encode(nums[i])), nums, 'number', idx, scans);
    if (!CORE_ONLY) apiSplit(dists, ds + '#num', nums, nums, 'number', idx, scans);
  }
}
if (OUT) fs.writeFileSync(OUT, JSON.stringify({ schema: 'adaptree-split/1', keys: N, ops: OPS, rows }, null, 1));
