// One runner process: one data set, one impl, one or more configurations. Prints one JSON row
// per line on stdout (the same protocol as bench/native's binary); progress on stderr.
// Run by bench/run.mjs as: node --expose-gc bench/lib/child.mjs '<json params>'
import { readKeyFile, decodeKeys, keyViews } from './keyfile.mjs';
import { zipfIndexes, uniformIndexes, scanOps, ycsbOps, YCSB, YCSB_ORDER, OP } from './workloads.mjs';
import { SplitMix64 } from './rng.mjs';
import { log, fmtOps } from './progress.mjs';
import { getImpl } from './impls/index.mjs';

const P = JSON.parse(process.argv[2]);
const gc = globalThis.gc ?? (() => {});
const CHUNK = 1024;

function emit(row) {
  process.stdout.write(JSON.stringify(row) + '\n');
}

function heapBytes() {
  gc(); gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Runs body(from, to) over [0, count) in chunks until done or the time budget is spent. */
function timed(count, budgetSec, body) {
  const t0 = performance.now();
  const deadline = t0 + budgetSec * 1000;
  let done = 0, check = 0;
  while (done < count) {
    const to = Math.min(count, done + CHUNK);
    check += body(done, to);
    done = to;
    if (performance.now() > deadline) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  return { ops: done, seconds, check };
}

function valueFor(i) {
  const v = new Uint8Array(8);
  v[0] = i; v[1] = i >>> 8; v[2] = i >>> 16; v[3] = i >>> 24;
  return v;
}
function valueIndex(v) {
  return v && v.length === 8 ? (v[0] | (v[1] << 8) | (v[2] << 16) | (v[3] << 24)) >>> 0 : -1;
}

/** Extracts (bytes, layouts) from adaptree's stats() whatever its exact field names. */
function fromStats(st) {
  if (!st || typeof st !== 'object') return {};
  const bytes = st.bytes ?? st.bytes_used ?? st.bytesUsed ?? st.memoryBytes ?? (st.pages != null ? st.pages * (st.page_size ?? st.pageSize ?? 4096) : undefined);
  const layouts = st.layouts ?? st.leafTypes ?? st.leaf_types ?? st.leaves ?? undefined;
  return { bytes, layouts: layouts && typeof layouts === 'object' ? layouts : undefined };
}

async function main() {
  const impl = await getImpl(P.impl);
  const why = await impl.unavailable();
  if (why) {
    log(`${P.impl}: not run: ${why}`);
    emit({ skip: true, impl: P.impl, reason: why });
    return;
  }
  const kf = readKeyFile(P.keysPath);
  const n = kf.n;
  // Key values as each impl takes them. JS anchors: strings / numbers; their heap (strings)
  // counts toward the anchors' bytes per record.
  const h0 = heapBytes();
  const jsKeys = decodeKeys(kf, P.kind);
  const keyHeap = Math.max(0, heapBytes() - h0 - 8 * n);
  let keys = jsKeys;
  // Lookups and scans use separately decoded keys: an app's lookup key is rarely the very
  // string object it inserted (which would let Map and sorted-btree compare by pointer).
  let probe = P.kind === 'string' ? decodeKeys(kf, P.kind) : jsKeys;
  let keyEncoding;
  if (impl.keyForm === 'adaptree') {
    keyEncoding = P.kind === 'string' ? 'utf8' : P.keyEncoding || 'bytes';
    if (keyEncoding === 'bytes') keys = probe = keyViews(kf);
  }
  const configs = impl.configs ? P.configs : ['-'];
  if (P.mode !== 'ycsb') {
    await runPaper(impl, configs, keys, probe, keyEncoding, keyHeap, n);
    return;
  }
  for (const config of configs) {
    await runYcsb(impl, config, keys, probe, keyEncoding, keyHeap, n);
    gc();
  }
}

function baseRow(implName, config, keyEncoding, n) {
  const r = { suite: P.suite, dataset: P.dataset, workload: '', impl: implName, config, keys: n };
  if (keyEncoding) r.key_encoding = keyEncoding;
  if (P.extra) Object.assign(r, P.extra);
  return r;
}

function finish(row, res, store, space) {
  row.ops = res.ops;
  row.seconds = +res.seconds.toFixed(6);
  row.ops_per_sec = +(res.ops / res.seconds).toFixed(1);
  if (space.bytesPerRecord != null) row.bytes_per_record = +space.bytesPerRecord.toFixed(2);
  if (store.stats) {
    const s = fromStats(store.stats());
    if (s.layouts) row.layouts = s.layouts;
    if (s.bytes != null) row.bytes_per_record = +(s.bytes / row.keys).toFixed(2);
  }
  emit(row);
  log(`${P.suite} ${P.dataset} ${row.impl}/${row.config} ${row.workload}: ${fmtOps(row.ops_per_sec)} ops/s (${res.ops} ops, ${res.seconds.toFixed(2)} s)`);
}

async function load(impl, config, keys, keyEncoding, count, keyHeap) {
  const h0 = heapBytes();
  const store = await impl.open({ config, keyEncoding, kind: P.kind });
  const t0 = performance.now();
  for (let i = 0; i < count; i++) store.set(keys[i], valueFor(i));
  log(`${P.suite} ${P.dataset} ${impl.name}/${store.config}: loaded ${count} keys (untimed, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  return { store, h0 };
}

function verify(store, keys, n, label) {
  const rng = new SplitMix64(P.seed * 1000 + 99);
  for (let j = 0; j < 1000; j++) {
    const i = rng.nextBelow(n);
    const got = valueIndex(store.get(keys[i]));
    if (got !== i) throw new Error(`${label}: get(key #${i}) returned value #${got}: wrong answers, no rows`);
  }
}

/**
 * The paper's workloads on one or more configurations of one impl. Several configurations are
 * compared side by side: all stores are loaded first, then each workload's operation stream is
 * cut into ROUNDS chunks and every round times each store on the same chunk, in an order that
 * rotates from round to round. Noise on this shared machine then lands on every configuration
 * alike (bench/native does the same). A single store runs in CHUNK-sized rounds. The time budget
 * ends a workload at a round boundary, so all stores run the same operations.
 */
async function runPaper(impl, configs, keys, probe, keyEncoding, keyHeap, n) {
  const W = new Set(P.workloads);
  const n90 = Math.floor(n * 0.9);
  const single = configs.length === 1;
  const ROUNDS = P.rounds ?? 10;
  const subjects = [];
  for (const config of configs) {
    const { store, h0 } = await load(impl, config, keys, keyEncoding, n90, keyHeap);
    subjects.push({ store, h0, config: store.config, label: `${impl.name}/${store.config} on ${P.dataset}`, space: {} });
  }
  const sideBySide = (count, budgetSec, body) => {
    const rounds = single ? Math.ceil(count / CHUNK) : ROUNDS;
    for (const s of subjects) s.seconds = 0;
    const t0 = performance.now();
    let done = 0;
    for (let r = 0; r < rounds && done < count; r++) {
      const lo = Math.floor((count * r) / rounds), hi = Math.floor((count * (r + 1)) / rounds);
      if (hi === lo) continue;
      for (let k = 0; k < subjects.length; k++) {
        const s = subjects[(k + r) % subjects.length];
        const ts = performance.now();
        body(s, lo, hi);
        s.seconds += (performance.now() - ts) / 1000;
      }
      done = hi;
      if (performance.now() - t0 > budgetSec * 1000 * subjects.length) break;
    }
    return done;
  };
  const report = (workload, ops, extra = {}) => {
    if (!single) extra = { rounds: ROUNDS, ...extra };
    for (const s of subjects) finish({ ...baseRow(impl.name, s.config, keyEncoding, n), workload, ...extra }, { ops, seconds: s.seconds }, s.store, s.space);
  };
  const vals = [];
  for (let i = n90; i < n; i++) vals.push(valueFor(i));
  // insert: the last 10%, timed, always run (the other workloads need every key)
  const insOps = sideBySide(n - n90, Infinity, (s, a, b) => {
    for (let i = a; i < b; i++) s.store.set(keys[n90 + i], vals[i]);
  });
  vals.length = 0;
  for (const s of subjects) {
    // Without stats() (the JS anchors) space is the heap's growth, keys included.
    if (!s.store.stats && single) s.space.bytesPerRecord = (heapBytes() - s.h0 + keyHeap) / n;
    verify(s.store, probe, n, s.label);
  }
  if (W.has('insert')) report('insert', insOps);
  const lookup = (name, idx) => {
    let miss = 0;
    const ops = sideBySide(idx.length, P.budgetSec, (s, a, b) => {
      for (let i = a; i < b; i++) if (s.store.get(probe[idx[i]]) === undefined) miss++;
    });
    if (miss) throw new Error(`${impl.name} on ${P.dataset} ${name}: ${miss} lookups of present keys missed: no rows`);
    report(name, ops);
  };
  if (W.has('lookup_zipf')) lookup('lookup_zipf', zipfIndexes(n, P.lookups, P.seed));
  if (W.has('lookup_uniform')) lookup('lookup_uniform', uniformIndexes(n, P.lookups, P.seed));
  if (W.has('scan')) {
    if (!subjects[0].store.scan) log(`${impl.name} on ${P.dataset}: scan skipped (${impl.name} is unordered)`);
    else {
      const { start, len } = scanOps(n, P.scans, P.seed);
      let records = 0;
      const ops = sideBySide(start.length, P.budgetSec, (s, a, b) => {
        for (let i = a; i < b; i++) records += s.store.scan(probe[start[i]], len[i]);
      });
      if (records < ops * subjects.length) throw new Error(`${impl.name} on ${P.dataset} scan: ${records} records for ${ops} scans per store: no rows`);
      report('scan', ops, { records: Math.round(records / subjects.length) });
    }
  }
  if (W.has('iterate')) {
    // Several passes, as bench/native makes (a.rounds / 2 = 5): one pass of 1M entries took
    // 0.05-0.1 s, its first batches in unoptimized code, and moved 2x between two runs.
    const passes = single ? 5 : 3;
    const ops = sideBySide(passes, Infinity, (s, a, b) => {
      for (let pass = a; pass < b; pass++) {
        const c = s.store.iterate();
        if (c !== n) throw new Error(`${s.label} iterate: ${c} records, expected ${n}: no rows`);
      }
    });
    report('iterate', ops * n); // records visited
  }
  for (const s of subjects) s.store.close();
}

async function runYcsb(impl, config, keys, probe, keyEncoding, keyHeap, n) {
  const loaded = Math.floor(n * 0.9);
  const { store } = await load(impl, config, keys, keyEncoding, loaded, keyHeap);
  const label = `${impl.name}/${store.config} on ${P.dataset}`;
  verify(store, probe, loaded, label);
  const updVals = Array.from({ length: 1024 }, (_, i) => valueFor(i));
  let next = loaded; // the key file's next unused key
  for (const name of YCSB_ORDER) {
    if (!P.workloads.includes('ycsb_' + name.toLowerCase())) continue;
    const room = n - next;
    const w = YCSB[name];
    const hasInsert = w.mix.some(([k]) => k === OP.INSERT);
    const count = hasInsert ? Math.min(P.ycsbOps, Math.floor(room / 0.06)) : P.ycsbOps;
    if (w.mix.some(([k]) => k === OP.SCAN) && !store.scan) { log(`${label}: YCSB ${name} skipped (unordered: no scans)`); continue; }
    const ops = ycsbOps(name, loaded, next, count, P.seed);
    if (next + ops.inserted > n) throw new Error('YCSB ran out of keys to insert');
    let miss = 0, done = 0;
    const res = timed(count, P.budgetSec, (a, b) => {
      for (let i = a; i < b; i++) {
        const k = ops.op[i] === OP.INSERT ? keys[ops.key[i]] : probe[ops.key[i]];
        switch (ops.op[i]) {
          case OP.READ: if (store.get(k) === undefined) miss++; break;
          case OP.UPDATE: store.set(k, updVals[i & 1023]); break;
          case OP.INSERT: store.set(k, updVals[i & 1023]); break;
          case OP.SCAN: store.scan(k, ops.len[i]); break;
          case OP.RMW: { const v = store.get(k); if (v === undefined) miss++; store.set(k, updVals[(i + 1) & 1023]); break; }
        }
      }
      done = b;
      return 0;
    });
    // inserts that ran consume keys even when the budget stopped the stream early
    let ins = 0;
    for (let i = 0; i < done; i++) if (ops.op[i] === OP.INSERT) ins++;
    next += ins;
    if (miss) throw new Error(`${label} YCSB ${name}: ${miss} reads of present keys missed: no rows`);
    finish({ ...baseRow(impl.name, store.config, keyEncoding, next), workload: 'ycsb_' + name.toLowerCase() }, res, store, {});
  }
  store.close();
}

main().catch((e) => {
  log(`${P.impl} on ${P.dataset}: FAILED: ${e.stack || e.message}`);
  emit({ skip: true, impl: P.impl, reason: String(e.message || e) });
  process.exitCode = 1;
});
