// The `threads` suite (docs/THREADS.md): one BTreeMap shared by 1 and 2 worker_threads on the
// mt build, against the same workloads on one thread. Prints one JSON row per measurement
// (README's bench format plus `workers`):
//   adaptree-wasm     st build, the main thread of this process (workers: 1)
//   adaptree-wasm-mt  mt build: the map is shared (map.share()) and 1 or 2 workers attach and
//                     run the operations, split evenly; workers: 0 is the mt build on the main
//                     thread without sharing (what a single-threaded user of mt pays)
//   adaptree-file     st build, a BTreeStore on node files instead of a map (workers: 1)
//   adaptree-file-mt  mt build, that store shared (store.share()) with 1 or 2 workers (workers:
//                     0 is it on the main thread, not shared); each case ends with its commits
// Workloads: lookup (uniform random keys of a loaded map), insert (N new keys, random order,
// into an empty map), mix (50% lookups, 50% writes of random keys), hot (skewed writes: each
// worker upserts its own 16 keys, and all workers' hot keys start in one leaf of a loaded map;
// rows for 1 and 2 workers, and 2 workers with Contention Split on: config
// 'adaptive+contention-split', docs/THREADS.md), xmerge (skewed inserts into a file store
// whose 1 MiB pool is far smaller than its data: N records loaded, then N new ones whose key
// ranges follow a Zipf distribution over 64 ranges; rows adaptree-file-mt for 1 and 2
// workers, config 'adaptive' (XMerge on, the default) and 'adaptive+no-xmerge' (fill:
// { xmerge: false }), each with the leaf fill, bytes per record, the store's xmerges and
// evictions after the inserts), insert-read (a map and a file store loaded with N keys,
// shared by 2 workers: one inserts N new keys while the other reads loaded keys until it is
// done; ops_per_sec is the writer's inserts, reads_per_sec the reader's: what writes that
// hold the tree latch exclusive cost readers, docs/THREADS.md phase 2c). Time runs from releasing
// the workers (they wait on an Atomics flag after attaching) until the last one is done.
// Each measurement runs `rounds` times; the row is the median round.
// ADAPTREE_BENCH_BASELINE=<a dist/ directory of another build> adds its mt build's rows as
// impl `adaptree-wasm-mt-base` (and its file store as `adaptree-file-mt-base`; workers 1 and 2)
// to the same rounds, so that a change and the
// build before it are measured side by side on a loaded machine (same-run ratios).
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const DIST = new URL('../../dist/index.js', import.meta.url).href;
const distOf = (dir) => pathToFileURL(path.join(path.resolve(dir), 'index.js')).href;

const hex = (i) => ((Math.imul(i, 0x9e3779b1) >>> 0).toString(16).padStart(8, '0'));
const key = (i) => `k${hex(i)}`;
const value = (i) => `v${hex(i + 1)}`.slice(0, 8);

function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
}

/** Runs `ops` operations of `workload` on map; part `part` of `parts` (inserts take their slice of keys). */
const HOT = 16;
const hotKey = (part, j) => `h${part}${hex(j + 1)}`;

// xmerge: keys in 64 ranges ('k' + range + a unique word); loaded keys spread evenly over them,
// inserted keys pick their range by Zipf (theta 0.99).
const RANGES = 64;
const rangeKey = (r, i) => `k${r.toString(16).padStart(2, '0')}${hex(i)}`;
const ZIPF_CDF = (() => {
  const w = Array.from({ length: RANGES }, (_, r) => 1 / Math.pow(r + 1, 0.99));
  const total = w.reduce((a, b) => a + b, 0);
  let acc = 0;
  return w.map((x) => (acc += x / total));
})();
function zipfRange(u) {
  let lo = 0, hi = RANGES - 1;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (ZIPF_CDF[mid] < u) lo = mid + 1; else hi = mid; }
  // (the hot ranges scattered over the key space, not all at its start)
  return Math.imul(lo, 37) % RANGES;
}

function run(map, workload, keys, ops, part, parts, seed) {
  const next = rng(seed + part * 7919);
  let found = 0;
  if (workload === 'xmerge') {
    // `keys` inserts in all, this part's share: a range by Zipf, then that range's next key in
    // ascending order ('z' + a counter sorts after the range's loaded keys): 64 insertion
    // points, as TPC-C's orders have one per district (the paper's example).
    const counters = new Array(RANGES).fill(0);
    for (let i = keys + part; i < 2 * keys; i += parts) {
      const r = zipfRange(next() / 2 ** 32);
      map.set(`k${r.toString(16).padStart(2, '0')}z${String(counters[r]++ * parts + part).padStart(8, '0')}`, value(i));
    }
    return keys;
  }
  if (workload === 'hot') {
    for (let n = 0; n < ops; n++) map.set(hotKey(part, next() % HOT), value(n));
    return ops;
  }
  if (workload === 'insert') {
    // key i belongs to part i % parts; a scrambled order inside the part
    for (let i = part; i < keys; i += parts) map.set(key(i), value(i));
    return keys;
  }
  for (let n = 0; n < ops; n++) {
    const i = next() % keys;
    if (workload === 'mix' && (next() & 1)) map.set(key(i), value(n));
    else if (map.get(key(i)) !== undefined) found++;
  }
  return found;
}

async function workerMain() {
  const { handle, flag, workload, keys, ops, part, parts, seed, dist, store } = workerData;
  const { BTreeMap, BTreeStore } = await import(dist);
  const map = store ? await BTreeStore.attach(handle) : await BTreeMap.attach(handle);
  const f = new Int32Array(flag);
  Atomics.add(f, 1, 1); // attached
  Atomics.notify(f, 1);
  while (Atomics.load(f, 0) === 0) Atomics.wait(f, 0, 0);
  if (workload === 'insert-read') {
    // part 0 inserts `keys` new (odd) keys, then raises flag 2; part 1 reads loaded (even)
    // keys until then. Each reports its operations and milliseconds.
    const t0 = performance.now();
    let n = 0;
    if (part === 0) {
      for (let i = 0; i < keys; i++) map.set(key(2 * i + 1), value(i));
      n = keys;
      Atomics.store(f, 2, 1);
    } else {
      const next = rng(seed + 5);
      while (Atomics.load(f, 2) === 0) {
        for (let j = 0; j < 100; j++) if (map.get(key(2 * (next() % keys))) === undefined) throw new Error('insert-read: a loaded key is missing');
        n += 100;
      }
    }
    const ms = performance.now() - t0;
    if (store) await map.close();
    else map.free();
    parentPort.postMessage({ n, ms });
    return;
  }
  run(map, workload, keys, ops, part, parts, seed);
  if (store) await map.close(); // commits this worker's writes (inside the timed part)
  else map.free();
  parentPort.postMessage('done');
}

// File stores (rows adaptree-file, adaptree-file-mt): a BTreeStore on node files in a
// temporary directory instead of a BTreeMap; workers attach to it (BTreeStore.attach) and
// every store case ends with its commit inside the timed part.
let storeSeq = 0;
async function openStore(BTreeStore, wasm, options = {}) {
  const os = await import('node:os'), fs = await import('node:fs'), path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-threads-bench-'));
  const store = await BTreeStore.open({ path: path.join(dir, `s${storeSeq++}.db`), wasm, values: 'utf8', ...options });
  return { store, done: async () => { await store.close(); fs.rmSync(dir, { recursive: true, force: true }); } };
}

function load(map, n, workload) {
  const keyOf = workload === 'xmerge' ? (i) => rangeKey(i % RANGES, i) : key;
  const batch = [];
  for (let i = 0; i < n; i++) {
    batch.push([keyOf(i), value(i)]);
    if (batch.length === 10000) { map.setMany(batch); batch.length = 0; }
  }
  map.setMany(batch);
}

/** Runs `workload` on a map (or, with BTreeStore, a file store opened with `storeOptions`)
 * shared by `workers` workers; returns the seconds, or with `report` { seconds, ...report(store) }
 * (called after the workers are done, before the store closes). */
async function measureShared(BTreeMap, wasm, workload, keys, ops, workers, seed, dist = DIST, csplit = false, BTreeStore = null, storeOptions = {}, report = null) {
  const opened = BTreeStore ? await openStore(BTreeStore, wasm, storeOptions) : null;
  const map = opened ? opened.store : new BTreeMap(null, { wasm, values: 'utf8' });
  if (workload !== 'insert') load(map, keys, workload);
  if (opened && workload === 'xmerge') await map.commit();
  if (workload === 'hot') for (let p = 0; p < 2; p++) for (let j = 0; j < HOT; j++) map.set(hotKey(p, j), value(j));
  let splitsOf = null;
  if (csplit) {
    const h = map.share(); // (an extra handle: its stack region stays reserved, as any share())
    wasm.exports.at_debug_latch(h.tree, 4);
    splitsOf = () => wasm.exports.at_debug_latch(h.tree, 6);
  }
  const flag = new SharedArrayBuffer(8);
  const f = new Int32Array(flag);
  const ws = [];
  const done = [];
  for (let p = 0; p < workers; p++) {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { handle: map.share(), flag, workload, keys, ops: Math.ceil(ops / workers), part: p, parts: workers, seed, dist, store: opened !== null },
    });
    done.push(new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); }));
    ws.push(w);
  }
  while (Atomics.load(f, 1) < workers) await new Promise((r) => setTimeout(r, 5));
  const t0 = performance.now();
  Atomics.store(f, 0, 1);
  Atomics.notify(f, 0);
  await Promise.all(done);
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(ws.map((w) => w.terminate()));
  if (workload === 'insert' && map.size !== keys) throw new Error(`insert: ${map.size} keys, expected ${keys}`);
  if (workload === 'xmerge' && map.size !== 2 * keys) throw new Error(`xmerge: ${map.size} keys, expected ${2 * keys}`);
  if (splitsOf) process.stderr.write(`threads bench: ${workers} workers, contention splits: ${splitsOf()}\n`);
  const extra = report ? report(map) : null;
  if (opened) await opened.done();
  else map.free();
  return extra ? { seconds, ...extra } : seconds;
}

// insert-read: a map or file store loaded with `keys` keys (even ones), shared by two
// workers: one inserts `keys` new keys while the other reads loaded keys until it is done.
// Returns the writer's seconds and the reader's reads per second (extra `reads_per_sec`).
async function measureInsertRead(BTreeMap, wasm, keys, seed, dist = DIST, BTreeStore = null) {
  const opened = BTreeStore ? await openStore(BTreeStore, wasm) : null;
  const map = opened ? opened.store : new BTreeMap(null, { wasm, values: 'utf8' });
  const batch = [];
  for (let i = 0; i < keys; i++) {
    batch.push([key(2 * i), value(i)]);
    if (batch.length === 10000) { map.setMany(batch); batch.length = 0; }
  }
  map.setMany(batch);
  const flag = new SharedArrayBuffer(12);
  const f = new Int32Array(flag);
  const ws = [], done = [];
  for (let p = 0; p < 2; p++) {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { handle: map.share(), flag, workload: 'insert-read', keys, ops: 0, part: p, parts: 2, seed, dist, store: opened !== null },
    });
    done.push(new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); }));
    ws.push(w);
  }
  while (Atomics.load(f, 1) < 2) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(f, 0, 1);
  Atomics.notify(f, 0);
  const [writer, reader] = await Promise.all(done);
  await Promise.all(ws.map((w) => w.terminate()));
  if (map.size !== 2 * keys) throw new Error(`insert-read: ${map.size} keys, expected ${2 * keys}`);
  if (opened) await opened.done();
  else map.free();
  return { seconds: writer.ms / 1000, reads_per_sec: Math.round(reader.n / (reader.ms / 1000)) };
}

// xmerge rows' extras: the tree's leaf fill and bytes per record, the store's XMerge count and
// evictions (treeStats reads every page: after the clock).
function xmergeReport(store) {
  const t = store.treeStats(), st = store.stats();
  return { leaf_fill: +t.levels[0].fill.toFixed(4), bytes_per_record: +t.bytes_per_record.toFixed(2), leaves: t.levels[0].nodes,
    xmerges: st.xmerges, xmerge_attempts: st.xmerge_attempts, evictions: st.evictions };
}

async function measureLocal(BTreeMap, wasm, workload, keys, ops, seed, BTreeStore = null) {
  const opened = BTreeStore ? await openStore(BTreeStore, wasm) : null;
  const map = opened ? opened.store : new BTreeMap(null, { wasm, values: 'utf8' });
  if (workload !== 'insert') load(map, keys);
  if (workload === 'hot') for (let j = 0; j < HOT; j++) map.set(hotKey(0, j), value(j));
  if (opened) await map.commit();
  const t0 = performance.now();
  run(map, workload, keys, ops, 0, 1, seed);
  if (opened) await map.commit();
  const seconds = (performance.now() - t0) / 1000;
  if (opened) await opened.done();
  else map.free();
  return seconds;
}

async function main() {
  const p = JSON.parse(process.argv[2] ?? '{}');
  const keys = p.keys ?? 200_000;
  const ops = p.ops ?? 1_000_000;
  const rounds = p.rounds ?? 3;
  const seed = p.seed ?? 1;
  const { BTreeMap, BTreeStore, loadWasm } = await import(DIST);
  const st = await loadWasm();
  const mt = await loadWasm({ threads: true });
  if (mt.build !== 'mt') throw new Error('no mt build here (SharedArrayBuffer)');
  const baseDir = process.env.ADAPTREE_BENCH_BASELINE;
  let base = null;
  if (baseDir) {
    const b = await import(distOf(baseDir));
    base = { BTreeMap: b.BTreeMap, BTreeStore: b.BTreeStore, mt: await b.loadWasm({ threads: true }), dist: distOf(baseDir) };
  }
  const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
  for (const workload of p.workloads ?? ['lookup', 'insert', 'mix', 'hot', 'xmerge', 'insert-read']) {
    // xmerge: its own key count (a store under a 1 MiB pool loads slowly), XMerge on and off
    // with redistribution on (the default) and off (the paper's splits), 1 and 2 workers
    const xkeys = p.xmergeKeys ?? keys;
    const n = workload === 'insert' || workload === 'insert-read' ? keys : workload === 'xmerge' ? xkeys : ops;
    const xm = (workers, redistribute, xmerge) => () => measureShared(BTreeMap, mt, workload, xkeys, ops, workers, seed, DIST, false, BTreeStore,
      { poolSize: 1 << 20, fill: { redistribute, xmerge } }, xmergeReport);
    const ir = (impl, b, stores) => [impl, 2, () => measureInsertRead(b.BTreeMap, b.mt, keys, seed, b.dist, stores ? b.BTreeStore : null)];
    const cases = workload === 'insert-read' ? [
      ir('adaptree-wasm-mt', { BTreeMap, BTreeStore, mt, dist: DIST }, false),
      ir('adaptree-file-mt', { BTreeMap, BTreeStore, mt, dist: DIST }, true),
      ...(base ? [ir('adaptree-wasm-mt-base', base, false), ir('adaptree-file-mt-base', base, true)] : []),
    ] : workload === 'xmerge' ? [1, 2].flatMap((w) => [
      ['adaptree-file-mt', w, xm(w, true, true)],
      ['adaptree-file-mt', w, xm(w, true, false), 'adaptive+no-xmerge'],
      ['adaptree-file-mt', w, xm(w, false, true), 'adaptive+no-redistribute'],
      ['adaptree-file-mt', w, xm(w, false, false), 'adaptive+no-redistribute+no-xmerge'],
    ]) : workload === 'hot' ? [
      ['adaptree-wasm-mt', 0, () => measureLocal(BTreeMap, mt, workload, keys, ops, seed)],
      ['adaptree-wasm-mt', 1, () => measureShared(BTreeMap, mt, workload, keys, ops, 1, seed)],
      ['adaptree-wasm-mt', 2, () => measureShared(BTreeMap, mt, workload, keys, ops, 2, seed)],
      ['adaptree-wasm-mt', 2, () => measureShared(BTreeMap, mt, workload, keys, ops, 2, seed, DIST, true), 'adaptive+contention-split'],
    ] : [
      ['adaptree-wasm', 1, () => measureLocal(BTreeMap, st, workload, keys, ops, seed)],
      ['adaptree-wasm-mt', 0, () => measureLocal(BTreeMap, mt, workload, keys, ops, seed)],
      ['adaptree-wasm-mt', 1, () => measureShared(BTreeMap, mt, workload, keys, ops, 1, seed)],
      ['adaptree-wasm-mt', 2, () => measureShared(BTreeMap, mt, workload, keys, ops, 2, seed)],
      // The same on a file store (docs/THREADS.md, "Stores"): resident point reads share the
      // tree latch, everything else (writes, faults, commits) holds it exclusive.
      ['adaptree-file', 1, () => measureLocal(BTreeMap, st, workload, keys, ops, seed, BTreeStore)],
      ['adaptree-file-mt', 0, () => measureLocal(BTreeMap, mt, workload, keys, ops, seed, BTreeStore)],
      ['adaptree-file-mt', 1, () => measureShared(BTreeMap, mt, workload, keys, ops, 1, seed, DIST, false, BTreeStore)],
      ['adaptree-file-mt', 2, () => measureShared(BTreeMap, mt, workload, keys, ops, 2, seed, DIST, false, BTreeStore)],
    ];
    if (p.stores === false && workload !== 'insert-read') cases.splice(workload === 'xmerge' ? 0 : 4);
    if (base && workload !== 'xmerge' && workload !== 'insert-read') {
      cases.push(['adaptree-wasm-mt-base', 1, () => measureShared(base.BTreeMap, base.mt, workload, keys, ops, 1, seed, base.dist)]);
      cases.push(['adaptree-wasm-mt-base', 2, () => measureShared(base.BTreeMap, base.mt, workload, keys, ops, 2, seed, base.dist)]);
      if (p.stores !== false && workload !== 'hot') {
        cases.push(['adaptree-file-mt-base', 1, () => measureShared(base.BTreeMap, base.mt, workload, keys, ops, 1, seed, base.dist, false, base.BTreeStore)]);
        cases.push(['adaptree-file-mt-base', 2, () => measureShared(base.BTreeMap, base.mt, workload, keys, ops, 2, seed, base.dist, false, base.BTreeStore)]);
      }
    }
    // --impl: only its rows (a workload with none is not run)
    if (p.impls) for (let c = cases.length - 1; c >= 0; c--) if (!p.impls.includes(cases[c][0])) cases.splice(c, 1);
    if (cases.length === 0) continue;
    // Rounds rotate through the cases, so that machine noise hits them alike.
    const times = cases.map(() => []);
    for (let r = 0; r < rounds; r++) for (let c = 0; c < cases.length; c++) times[c].push(await cases[c][2]());
    cases.forEach(([impl, workers, , config], c) => {
      // the median round by time; its extras (xmerge) come with it
      const rs = times[c].map((t) => (typeof t === 'number' ? { seconds: t } : t)).sort((a, b) => a.seconds - b.seconds);
      const { seconds, ...extra } = rs[rs.length >> 1];
      console.log(JSON.stringify({
        dataset: workload === 'xmerge' ? 'hex-keys-zipf64' : 'hex-keys', workload, impl, config: config ?? 'adaptive', keys: workload === 'xmerge' ? xkeys : keys, ops: n, workers,
        seconds: +seconds.toFixed(6), ops_per_sec: Math.round(n / seconds), ...extra,
      }));
    });
  }
  // (the pool's rows carry ratios to the calling thread's row: all are measured for either)
  if (p.pool !== false && (!p.impls || p.impls.some((i) => i === 'adaptree-wasm-mt' || i === 'adaptree-wasm-mt-pool'))) await poolRows(p, keys, ops, rounds, seed, median);
}

// ------------------------------------------------------------------ pool rows
// WorkerPool (ts/src/pool.ts) against the map's own batch calls on the calling thread, mt
// build. Workloads: pool-getMany (`ops` lookups of random present keys, in getMany batches of
// BATCH keys) and pool-setMany (`keys` new entries, random order, into an empty map, in
// setMany batches of BATCH). Rows: adaptree-wasm-mt workers 0 = map.getMany / map.setMany on
// the calling thread; adaptree-wasm-mt-pool workers 1 and 2 = pool.getMany / pool.setMany
// (keys, entries and values travel to and from the workers by structured clone), `mode`
// 'awaited' (each batch awaited before the next) or 'pipelined' (all batches handed over at
// once). Each pool row carries `ratio`: its ops/s over the calling thread's. The pool is
// created before the clock starts and closed after it stops.
const BATCH = 10_000;

function poolBatches(workload, keys, ops, seed) {
  const next = rng(seed + 17);
  const out = [];
  if (workload === 'pool-setMany') {
    const order = Array.from({ length: keys }, (_, i) => i);
    for (let i = keys - 1; i > 0; i--) { const j = next() % (i + 1); [order[i], order[j]] = [order[j], order[i]]; }
    for (let a = 0; a < keys; a += BATCH) out.push(order.slice(a, a + BATCH).map((i) => [key(i), value(i)]));
  } else {
    for (let a = 0; a < ops; a += BATCH) {
      const b = [];
      for (let i = a; i < Math.min(ops, a + BATCH); i++) b.push(key(next() % keys));
      out.push(b);
    }
  }
  return out;
}

async function measurePool(BTreeMap, WorkerPool, wasm, workload, keys, batches, workers, pipelined) {
  const map = new BTreeMap(null, { wasm, values: 'utf8' });
  if (workload === 'pool-getMany') load(map, keys);
  const pool = workers > 0 ? await WorkerPool.create(map, { workers }) : null;
  let found = 0;
  const t0 = performance.now();
  if (pipelined) {
    // Every batch handed to the pool at once: the calling thread clones the next batches
    // while the workers answer the first ones.
    const answers = await Promise.all(batches.map((b) => (workload === 'pool-setMany' ? pool.setMany(b) : pool.getMany(b))));
    if (workload === 'pool-getMany') for (const vs of answers) for (const v of vs) if (v !== undefined) found++;
  } else for (const b of batches) {
    if (workload === 'pool-setMany') {
      if (pool) await pool.setMany(b);
      else map.setMany(b);
    } else {
      const vs = pool ? await pool.getMany(b) : map.getMany(b);
      for (const v of vs) if (v !== undefined) found++;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  if (pool) await pool.close();
  if (workload === 'pool-setMany' && map.size !== keys) throw new Error(`pool-setMany: ${map.size} keys, expected ${keys}`);
  if (workload === 'pool-getMany' && found !== batches.reduce((n, b) => n + b.length, 0)) throw new Error('pool-getMany: keys missing');
  map.free();
  return seconds;
}

async function poolRows(p, keys, ops, rounds, seed, median) {
  const { BTreeMap, WorkerPool, loadWasm } = await import('../../dist/index.js');
  const mt = await loadWasm({ threads: true });
  for (const workload of p.poolWorkloads ?? ['pool-getMany', 'pool-setMany']) {
    const batches = poolBatches(workload, keys, ops, seed);
    const n = batches.reduce((k, b) => k + b.length, 0);
    // mode 'awaited': each batch awaited before the next (a caller that needs the answer);
    // 'pipelined': all batches handed over at once.
    const cases = [
      ['adaptree-wasm-mt', 0, false],
      ['adaptree-wasm-mt-pool', 1, false],
      ['adaptree-wasm-mt-pool', 2, false],
      ['adaptree-wasm-mt-pool', 1, true],
      ['adaptree-wasm-mt-pool', 2, true],
    ];
    const times = cases.map(() => []);
    for (let r = 0; r < rounds; r++) {
      for (let c = 0; c < cases.length; c++) times[c].push(await measurePool(BTreeMap, WorkerPool, mt, workload, keys, batches, cases[c][1], cases[c][2]));
    }
    const base = n / median(times[0]);
    cases.forEach(([impl, workers, pipelined], c) => {
      if (p.impls && !p.impls.includes(impl)) return;
      const seconds = median(times[c]);
      const row = {
        dataset: 'hex-keys', workload, impl, config: 'adaptive', keys, ops: n, workers, batch: BATCH,
        mode: pipelined ? 'pipelined' : 'awaited', seconds: +seconds.toFixed(6), ops_per_sec: Math.round(n / seconds),
      };
      if (workers > 0) row.ratio = +((n / seconds) / base).toFixed(3);
      console.log(JSON.stringify(row));
    });
  }
}

if (isMainThread) main().catch((e) => { process.stderr.write(`threads bench: ${e.stack || e.message}\n`); process.exit(1); });
else workerMain();
