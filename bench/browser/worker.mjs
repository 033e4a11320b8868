// Runs inside a dedicated module worker in headless Chromium (bench/browser/run-browser.mjs).
// The browser suite's workload (docs/ANCHORS.md): N records, keys 'k' + 10 digits in random order,
// 100-byte values; each store with its defaults. Messages to the page: {row}, {log}, {skip}, {done}.
import { createStore, setMany, set, get, getMany, clear } from 'idb-keyval';
import { BrowserLevel } from 'browser-level';
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import { SplitMix64 } from '../lib/rng.mjs';
import { makeRecords } from '../lib/records.mjs';
import { init, BTreeStore, indexedDBStorage, opfsStorage } from '../../dist/index.js';

const post = (m) => self.postMessage(m);
const log = (s) => post({ log: s });

const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
const txDone = (tx) => new Promise((res, rej) => { tx.oncomplete = () => res(); tx.onerror = tx.onabort = () => rej(tx.error); });

const POOL = 64 << 20;     // BTreeStore's default pool
const MIN_POOL = 1 << 20;  // the smallest pool BTreeStore takes
let adaptreeWasm;
const adaptreeReady = () => (adaptreeWasm ??= init());

async function removeOpfs(name) {
  const root = await navigator.storage.getDirectory();
  await root.removeEntry(name, { recursive: true }).catch((e) => { if (e.name !== 'NotFoundError') throw e; });
}

/** Bytes of the files in OPFS directory `dir` (only `file` if given). */
async function opfsBytes(dir, file) {
  const d = await (await navigator.storage.getDirectory()).getDirectoryHandle(dir);
  let total = 0;
  for await (const [name, h] of d.entries()) if (h.kind === 'file' && (file === undefined || name === file)) total += (await h.getFile()).size;
  return total;
}

/**
 * `raw-opfs`, the physical reference for adaptree-opfs, on sync access handles in this worker:
 * `write_flush` appends a 4 KiB page to a file and flush()es it (the least a one-put commit
 * costs); `read_random` reads 4 KiB at a random page offset of a file as large as the store's
 * data file (the least a cold point read costs). Both are measured interleaved with the
 * stores' put_autocommit and get_cold (see `interleave`).
 */
async function rawOpfs(seed) {
  const dirName = 'bench-raw-opfs';
  await removeOpfs(dirName);
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(dirName, { create: true });
  const logFile = await (await dir.getFileHandle('log', { create: true })).createSyncAccessHandle();
  const rng = new SplitMix64(seed * 1000 + 52);
  const page = new Uint8Array(4096);
  let data = null, pages = 0, appended = 0;
  return {
    config: 'FileSystemSyncAccessHandle in the worker, 4 KiB',
    writeFlush() { page[0] = appended; logFile.write(page, { at: appended++ * 4096 }); logFile.flush(); },
    async prepareReads(fileBytes) {
      data = await (await dir.getFileHandle('data', { create: true })).createSyncAccessHandle();
      pages = Math.max(1, Math.ceil(fileBytes / 4096));
      const chunk = new Uint8Array(1 << 20);
      for (let i = 0; i < chunk.length; i += 4) chunk[i] = (i * 2654435761) >>> 24;
      for (let off = 0; off < pages * 4096; off += chunk.length) data.write(chunk.subarray(0, Math.min(chunk.length, pages * 4096 - off)), { at: off });
      data.flush();
      return pages * 4096;
    },
    readRandom() { if (data.read(page, { at: rng.nextBelow(pages) * 4096 }) !== 4096) throw new Error('raw-opfs: short read'); },
    async close() { logFile.close(); data?.close(); await removeOpfs(dirName); },
  };
}

async function usage() {
  try { const e = await navigator.storage.estimate(); return e.usage ?? null; } catch { return null; }
}

/** The origin's usage once Chromium's accounting has caught up (it is updated after the
 * writes, not with them): read every 250 ms until two reads agree (5 s at most). */
async function settledUsage() {
  let last = await usage();
  for (let i = 0; i < 20 && last != null; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const u = await usage();
    if (u === last) return u;
    last = u;
  }
  return last;
}

const STORES = {
  async indexeddb() {
    const name = 'bench-raw';
    await req(indexedDB.deleteDatabase(name));
    const open = indexedDB.open(name, 1);
    open.onupgradeneeded = () => open.result.createObjectStore('kv');
    const db = await req(open);
    const S = 'kv';
    const hasGetAllRecords = typeof IDBObjectStore.prototype.getAllRecords === 'function';
    return {
      idbName: name,
      config: 'default durability (relaxed since Chrome 121)',
      async putBatch(ks, vs) { const tx = db.transaction(S, 'readwrite'); const st = tx.objectStore(S); for (let i = 0; i < ks.length; i++) st.put(vs[i], ks[i]); await txDone(tx); },
      async putOne(k, v) { const tx = db.transaction(S, 'readwrite'); tx.objectStore(S).put(v, k); await txDone(tx); },
      async get(k) { return req(db.transaction(S).objectStore(S).get(k)); },
      async getMany(ks) { const st = db.transaction(S).objectStore(S); return Promise.all(ks.map((k) => req(st.get(k)))); },
      async scan(k, n) {
        const st = db.transaction(S).objectStore(S);
        const cur = st.openCursor(IDBKeyRange.lowerBound(k));
        return new Promise((res, rej) => {
          let c = 0;
          cur.onsuccess = () => { const x = cur.result; if (!x || ++c >= n) res(x ? c : c); else x.continue(); };
          cur.onerror = () => rej(cur.error);
        });
      },
      // one request for 50 records: getAllRecords where Chromium has it, else getAll
      async scanAll(k, n) {
        const st = db.transaction(S).objectStore(S);
        const r = hasGetAllRecords ? st.getAllRecords({ query: IDBKeyRange.lowerBound(k), count: n }) : st.getAll(IDBKeyRange.lowerBound(k), n);
        return (await req(r)).length;
      },
      scanAllName: hasGetAllRecords ? 'scan50_getallrecords' : 'scan50_getall',
      async close() { db.close(); },
    };
  },
  async 'idb-keyval'() {
    const store = createStore('bench-keyval', 'kv');
    await clear(store);
    return {
      idbName: 'bench-keyval',
      config: 'createStore, default',
      putBatch: (ks, vs) => setMany(ks.map((k, i) => [k, vs[i]]), store),
      putOne: (k, v) => set(k, v, store),
      get: (k) => get(k, store),
      getMany: (ks) => getMany(ks, store),
      scan: null, // no range API
      // idb-keyval keeps its connection open until the page goes
      async close() { (await store('readonly', (os) => os.transaction.db)).close(); },
    };
  },
  async 'browser-level'() {
    const db = new BrowserLevel('bench-level', { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
    await db.clear();
    return {
      idbName: 'level-js-bench-level', // browser-level's default prefix
      config: 'default',
      putBatch: (ks, vs) => db.batch(ks.map((k, i) => ({ type: 'put', key: k, value: vs[i] }))),
      putOne: (k, v) => db.put(k, v),
      get: (k) => db.get(k),
      getMany: (ks) => db.getMany(ks),
      scan: async (k, n) => (await db.iterator({ gte: k, limit: n }).all()).length,
      async close() { await db.close(); },
    };
  },
  async 'sqlite-wasm-opfs'() {
    const sqlite3 = await sqlite3InitModule({ print: () => {}, printErr: (s) => log('sqlite: ' + s) });
    const pool = await sqlite3.installOpfsSAHPoolVfs({ name: 'bench-sahpool', clearOnInit: true });
    const db = new pool.OpfsSAHPoolDb('/bench.sqlite3');
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB)');
    const ins = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)');
    const sel = db.prepare('SELECT v FROM kv WHERE k = ?');
    const rng = db.prepare('SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?');
    const one = (k) => { sel.bind(1, k); const v = sel.step() ? sel.get(0) : undefined; sel.reset(); return v; };
    return {
      config: `opfs-sahpool, SQLite ${sqlite3.version.libVersion}`,
      sqliteVersion: sqlite3.version.libVersion,
      async putBatch(ks, vs) { db.exec('BEGIN'); for (let i = 0; i < ks.length; i++) { ins.bind([ks[i], vs[i]]); ins.step(); ins.reset(); } db.exec('COMMIT'); },
      async putOne(k, v) { ins.bind([k, v]); ins.step(); ins.reset(); },
      async get(k) { return one(k); },
      getSync: one,
      async getMany(ks) { db.exec('BEGIN'); const out = ks.map(one); db.exec('COMMIT'); return out; },
      async scan(k, n) { rng.bind([k, n]); let c = 0; while (rng.step()) { rng.get(1); c++; } rng.reset(); return c; },
      bytes() { return db.selectValue('PRAGMA page_count') * db.selectValue('PRAGMA page_size'); },
      async close() { ins.finalize(); sel.finalize(); rng.finalize(); db.close(); },
    };
  },
  // adaptree's BTreeStore on OPFS sync access handles, inside this (dedicated module) worker:
  // the whole API is synchronous there (docs/STORE.md, "OPFS in the browser"). utf8 keys,
  // bytes values, the default 64 MiB pool; one commit per batch (setMany) and per put.
  async 'adaptree-opfs'() { return adaptreeOpfs('bench-adaptree-opfs', true); },
  async 'adaptree-opfs-images'() { return adaptreeOpfs('bench-adaptree-opfs-images', false); },
  async 'adaptree-opfs-nofill'() { return adaptreeOpfs('bench-adaptree-opfs-nofill', true, { redistribute: false, xmerge: false }); },
  // The OPFS backend with reuseLog: false: a commit's checkpoint cuts the log before the next
  // one is written (what adaptree-opfs did before session 17; docs/DECISIONS.md).
  async 'adaptree-opfs-cutlog'() { return adaptreeOpfs('bench-adaptree-opfs-cutlog', true, undefined, { ...opfsStorage, reuseLog: false }); },
  // adaptree's BTreeStore on IndexedDB (an async backend: the ...Async methods, page faults
  // awaited), 64 MiB pool, the default 'strict' durability; one commit (one IndexedDB
  // transaction) per batch and per put.
  'adaptree-indexeddb': () => adaptreeIndexedDB('strict'),
  // The same on indexedDBStorage({ durability: 'relaxed' }), the durability Chromium >= 121
  // gives the other IndexedDB stores here by default.
  'adaptree-indexeddb-relaxed': () => adaptreeIndexedDB('relaxed'),
  // adaptree-indexeddb with whole page images in its log's frames (logDeltas: false), and
  // with no log at all (checkpointBytes: 0: a record per changed page in each commit, as
  // before the log; docs/DECISIONS.md "IndexedDB commits append one record").
  'adaptree-indexeddb-images': () => adaptreeIndexedDB('strict', { logDeltas: false }),
  'adaptree-indexeddb-nolog': () => adaptreeIndexedDB('strict', { checkpointBytes: 0 }),
};

// adaptree-opfs and its twins: logDeltas: false, node fill off, another backend object.
async function adaptreeOpfs(dir, logDeltas, fill, storage = 'opfs') {
  await adaptreeReady();
  await removeOpfs(dir);
  const path = dir + '/store';
  const open = (poolSize) => BTreeStore.open({ path, storage, keys: 'utf8', values: 'bytes', poolSize, logDeltas, fill });
  let s = await open(POOL);
  return {
    config: `opfs sync access handles in the worker, 64 MiB pool, one flush per commit${logDeltas ? '' : ', whole pages in the log'}${fill ? ', node fill off' : ''}${storage !== 'opfs' && storage.reuseLog === false ? ', log cut at checkpoints' : ''}`,
    async putBatch(ks, vs) { s.setMany(ks.map((k, i) => [k, vs[i]])); await s.commit(); },
    async putOne(k, v) { s.set(k, v); await s.commit(); },
    async get(k) { return s.get(k); },
    getSync: (k) => s.get(k),
    async getMany(ks) { return s.getMany(ks); },
    async scan(k, n) { let c = 0; for (const e of s.entries({ gte: k, limit: n })) if (e[1]) c++; return c; },
    stats: () => s.stats(),
    tree: async () => s.treeStats(),
    // Cold reads: closed (the pool is gone), reopened with a pool a tenth of the files.
    async reopenSmall() {
      await s.close();
      const fileBytes = await opfsBytes(dir);
      const poolBytes = Math.max(MIN_POOL, Math.floor(fileBytes / 10));
      s = await open(poolBytes);
      return { fileBytes, poolBytes, dataBytes: await opfsBytes(dir, 'store') };
    },
    async close() { await s.close(); },
    bytesAfterClose: () => opfsBytes(dir),
  };
}

async function adaptreeIndexedDB(durability, extra = {}) {
  await adaptreeReady();
  const path = `bench-adaptree-idb-${durability}${Object.entries(extra).map(([k, v]) => `-${k}-${v}`).join('')}`;
  await req(indexedDB.deleteDatabase('adaptree:' + path));
  const storage = durability === 'strict' ? 'indexeddb' : indexedDBStorage({ durability });
  const open = (poolSize) => BTreeStore.open({ path, storage, keys: 'utf8', values: 'bytes', poolSize, ...extra });
  let s = await open(POOL);
  let pageBytes = 0;
  const db = {
    idbName: 'adaptree:' + path,
    config: `indexeddb, ${durability} durability, 64 MiB pool${extra.logDeltas === false ? ', whole pages in the log' : ''}${extra.checkpointBytes === 0 ? ', no log (a record per page)' : ''}`,
    async putBatch(ks, vs) { await s.setManyAsync(ks.map((k, i) => [k, vs[i]])); await s.commit(); },
    async putOne(k, v) { await s.setAsync(k, v); await s.commit(); },
    get: (k) => s.getAsync(k),
    getMany: (ks) => s.getManyAsync(ks),
    async scan(k, n) { let c = 0; for await (const e of s.entriesAsync({ gte: k, limit: n })) if (e[1]) c++; return c; },
    stats: () => s.stats(),
    tree: () => s.treeStatsAsync(),
    async reopenSmall() {
      const fileBytes = s.stats().fileBytes;
      await s.close();
      const poolBytes = Math.max(MIN_POOL, Math.floor(fileBytes / 10));
      s = await open(poolBytes);
      return { fileBytes, poolBytes };
    },
    // bytes_per_record: the page images (what the store holds); usage_bytes_per_record: the
    // origin's usage growth while loading it (IndexedDB's own overhead included), as for the
    // other IndexedDB stores
    async close() { pageBytes = s.stats().fileBytes; await s.close(); },
    bytesAfterClose: async () => pageBytes,
  };
  return db;
}

/**
 * Runs one workload on several stores side by side: each store in turn runs operations for a
 * slice of SLICE_MS, round after round, until it has done `count` or spent `budgetSec` of its
 * own time. On this shared machine the load moves several-fold within a minute; stores run
 * one after another would compare the load at different moments, interleaved they share it.
 * Read workloads (`reads`) first run one untimed slice per store (the JIT's warm-up, the
 * caches), and a store done with `count` in under READ_MIN_SEC goes on, cycling through the
 * same operations, until it has READ_MIN_SEC of its own time: a store reading at 600k/s did
 * its 50k gets in 3 slices (80 ms, the first of them unoptimized code) while sqlite-wasm had
 * 26; now every store is timed over at least 40.
 * parts: [{ op: async (i) => void, sync?: boolean, start?: () => void }] with i < count; a
 * `sync` op is called without await (the get_sync workload); start() is called once the
 * warm-up is over; each part gets res = { ops, seconds }.
 */
const SLICE_MS = 25;
const READ_MIN_SEC = 1;
// With --expose-gc (run-browser.mjs): a full collection before each workload and a young-
// generation one between slices (untimed), so one store's garbage is not collected in
// another's slice. Without it, nothing.
const collect = (type) => { if (typeof self.gc === 'function') self.gc({ type }); };
async function interleave(parts, count, budgetSec, reads) {
  const minSec = reads ? Math.min(READ_MIN_SEC, budgetSec) : 0;
  for (const p of parts) p.res = { ops: 0, seconds: 0 };
  collect('major');
  if (reads) {
    for (const p of parts) {
      collect('minor');
      const end = performance.now() + SLICE_MS;
      try {
        for (let i = 0; performance.now() < end; i++) {
          if (p.sync) p.op(i % count);
          else await p.op(i % count);
        }
      } catch (e) {
        p.failed = e;
      }
    }
  }
  for (const p of parts) p.start?.();
  let active = parts.filter((p) => !p.failed);
  // The order rotates from round to round (as the inmem harness's rounds do): in a fixed order
  // each store ran right after the same other store, whose data had just filled the caches
  // (adaptree-opfs after sqlite-wasm-opfs, adaptree-indexeddb after adaptree-opfs), every round.
  for (let round = 0; active.length; round++) {
    for (let k = 0; k < active.length; k++) {
      const p = active[(k + round) % active.length];
      collect('minor');
      // The clock is read every (mask + 1) ops: every op in a store's first slice, then about
      // 64 times a slice (a reading costs ~0.15 us in a Chromium worker, a tenth of a warm get
      // through this harness, for every store alike).
      const mask = p.mask ?? 0;
      const t0 = performance.now(), end = t0 + SLICE_MS;
      const first = p.res.ops;
      let done = first;
      try {
        if (p.sync) {
          while (done < count || p.res.seconds + (performance.now() - t0) / 1000 < minSec) {
            p.op(done % count);
            done++;
            if ((done & mask) === 0 && performance.now() > end) break;
          }
        } else {
          while (done < count || p.res.seconds + (performance.now() - t0) / 1000 < minSec) {
            await p.op(done % count);
            done++;
            if ((done & mask) === 0 && performance.now() > end) break;
          }
        }
      } catch (e) {
        p.failed = e;
      }
      p.res.seconds += (performance.now() - t0) / 1000;
      p.res.ops = done;
      p.mask = 2 ** Math.floor(Math.log2(Math.max(1, (done - first) / 64))) - 1;
    }
    active = active.filter((p) => !p.failed && (p.res.ops < count || p.res.seconds < minSec) && p.res.seconds < budgetSec);
  }
}

async function runSuite(P) {
  const n = P.records, B = 1000;
  const { keys, value } = makeRecords(n + 2 * P.autocommit, P.seed);
  const vals = keys.map((_, i) => value(i));
  const rng = new SplitMix64(P.seed * 1000 + 51);
  const info = { gc_between_slices: typeof self.gc === 'function' };
  const slots = [];
  for (const name of P.impls) {
    try {
      const db = await STORES[name](P);
      slots.push({ name, db, rows: [], stored: n, miss: 0, usageBytes: 0 });
      if (db.sqliteVersion) info.sqlite = db.sqliteVersion;
    } catch (e) {
      post({ skip: name, reason: 'open failed: ' + String(e?.message || e) });
    }
  }
  const live = () => slots.filter((x) => !x.failed);
  const fail = (x, e) => { x.failed = true; post({ skip: x.name, reason: String(e?.message || e) }); };
  const row = (impl, config, workload, res, extra) => ({ suite: P.suite, dataset: P.dataset, workload, impl, config, keys: n, ops: res.ops,
    seconds: +res.seconds.toFixed(6), ops_per_sec: +(res.ops / res.seconds).toFixed(1), ...extra });
  const say = (r) => log(`${r.impl} ${r.workload}: ${Math.round(r.ops_per_sec)} ops/s (${r.ops} ops, ${r.seconds.toFixed(2)} s)`);
  // adaptree rows also carry the store's I/O per operation (stats() before and after)
  const io = (x, before, ops) => {
    if (!before || !ops) return {};
    const after = x.db.stats();
    const per = (f) => +((after[f] - before[f]) / ops).toFixed(3);
    return { reads_per_op: per('reads'), writes_per_op: per('writes'), syncs_per_op: per('syncs'), misses_per_op: per('misses') };
  };
  // One workload on the given stores (and reference parts), interleaved; rows for each.
  const measure = async (workload, xs, count, opOf, { refs = [], extra = () => ({}), scale = 1, reads = false, sync = false, start = () => {} } = {}) => {
    const parts = xs.map((x) => ({ x, op: opOf(x), sync, start() { this.before = x.db.stats?.(); start(x); } }));
    await interleave([...parts, ...refs], count, P.budgetSec, reads);
    for (const p of parts) {
      if (p.failed) { fail(p.x, p.failed); continue; }
      const res = { ops: p.res.ops * scale, seconds: p.res.seconds };
      const r = row(p.x.name, p.x.db.config, workload, res, { ...extra(p.x), ...io(p.x, p.before, res.ops) });
      p.x.rows.push(r);
      say(r);
    }
    for (const p of refs) {
      if (p.failed) throw p.failed;
      const r = row(p.impl, p.config, p.workload, p.res, p.extra ?? {});
      p.rows.push(r);
      say(r);
    }
  };

  // put_tx1000: the load. The IndexedDB stores one after another, each between two settled
  // readings of the origin's usage (Chromium's accounting cannot tell two databases written
  // at the same time apart: their growth is their size); then the OPFS stores batch by batch
  // in turn (each store's batches timed alone).
  {
    const res = new Map(slots.map((x) => [x, { ops: 0, seconds: 0, before: x.db.stats?.() }]));
    const loadBatch = async (x, i) => {
      const t0 = performance.now();
      try {
        await x.db.putBatch(keys.slice(i, i + B), vals.slice(i, i + B));
      } catch (e) { fail(x, e); return; }
      const r = res.get(x);
      r.seconds += (performance.now() - t0) / 1000;
      r.ops += Math.min(B, n - i);
    };
    for (const x of live().filter((y) => y.db.idbName)) {
      const u0 = await settledUsage();
      for (let i = 0; i < n && !x.failed; i += B) await loadBatch(x, i);
      const u1 = await settledUsage();
      if (u0 != null && u1 != null && u1 > u0) x.usageBytes = u1 - u0;
      log(`loaded ${n} records into ${x.name}`);
    }
    for (let i = 0; i < n; i += B) {
      for (const x of live().filter((y) => !y.db.idbName)) await loadBatch(x, i);
      if ((i / B) % 20 === 19) log(`loaded ${i + B} of ${n} records into each OPFS store`);
    }
    for (const x of live()) {
      const r = res.get(x);
      const ioRow = io(x, r.before, n);
      // adaptree: the tree's shape after the load (what its bytes per record come from)
      let shape = {};
      if (x.db.tree) {
        const t = await x.db.tree();
        shape = { height: t.height, pages: t.pages, fill: +t.fill.toFixed(3), leaf_fill: +t.levels[0].fill.toFixed(3), layouts: t.layouts };
      }
      x.rows.push(row(x.name, x.db.config, 'put_tx1000', r, { ...ioRow, ...shape }));
      say(x.rows[x.rows.length - 1]);
    }
  }

  const raw = live().some((x) => x.name === 'adaptree-opfs') ? await rawOpfs(P.seed) : null;
  const rawRows = [];
  const rawPart = (workload, op, extra) => ({ impl: 'raw-opfs', config: `${raw.config}, interleaved with the stores' ${workload === 'write_flush' ? 'put_autocommit' : 'get_cold'}`, workload, op, extra, rows: rawRows });

  // put_autocommit: one put and one commit each (new keys), with raw OPFS write+flush pairs
  await measure('put_autocommit', live(), P.autocommit, (x) => (i) => x.db.putOne(keys[n + i], vals[n + i]),
    { refs: raw ? [rawPart('write_flush', () => raw.writeFlush())] : [] });
  for (const x of live()) x.stored += x.rows.find((r) => r.workload === 'put_autocommit')?.ops ?? 0;

  const idx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
  await measure('get', live(), P.gets, (x) => async (i) => { if ((await x.db.get(keys[idx[i]])) == null) x.miss++; }, { reads: true });
  // get_sync: the same reads as plain calls, by the stores whose reads are synchronous in a
  // worker (adaptree-opfs, sqlite-wasm), as a worker's code calls them
  await measure('get_sync', live().filter((x) => x.db.getSync), P.gets, (x) => (i) => { if (x.db.getSync(keys[idx[i]]) == null) x.miss++; }, { reads: true, sync: true });
  await measure('get_batch1000', live(), Math.max(1, Math.floor(P.gets / B)), (x) => async (j) => {
    const vs = await x.db.getMany(Array.from(idx.subarray(j * B, (j + 1) * B), (k) => keys[k]));
    for (const v of vs) if (v == null) x.miss++;
  }, { scale: B, reads: true });

  const sorted = keys.slice(0, n).sort();
  const starts = Uint32Array.from({ length: P.scans }, () => rng.nextBelow(n));
  const scanned = new Map();
  const scanWith = (f) => (x) => async (i) => { scanned.set(x, (scanned.get(x) ?? 0) + (await f(x)(sorted[starts[i]], 50))); };
  await measure('scan50', live().filter((x) => x.db.scan), P.scans, scanWith((x) => x.db.scan), { extra: (x) => ({ records: scanned.get(x) }), reads: true, start: (x) => scanned.delete(x) });
  for (const x of live().filter((y) => y.db.scanAll)) {
    scanned.delete(x);
    await measure(x.db.scanAllName, [x], P.scans, scanWith((y) => y.db.scanAll), { extra: (y) => ({ records: scanned.get(y) }), reads: true, start: (y) => scanned.delete(y) });
  }

  // get_cold: each adaptree store closed (its pool dropped) and reopened with a pool a tenth
  // of its files (1 MiB at least), then point reads of random present keys (not get's);
  // interleaved with raw 4 KiB reads of a file as large as adaptree-opfs's data file
  const cold = live().filter((x) => x.db.reopenSmall);
  const coldInfo = new Map();
  let rawFile = null;
  for (const x of cold) {
    try {
      const c = await x.db.reopenSmall();
      coldInfo.set(x, { pool_bytes: c.poolBytes, file_bytes: c.fileBytes, data_to_pool: +(c.fileBytes / c.poolBytes).toFixed(2) });
      if (x.name === 'adaptree-opfs' && raw) rawFile = await raw.prepareReads(c.dataBytes);
    } catch (e) { fail(x, e); }
  }
  const cidx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
  await measure('get_cold', cold.filter((x) => !x.failed), P.gets, (x) => async (i) => { if ((await x.db.get(keys[cidx[i]])) == null) x.miss++; },
    { extra: (x) => coldInfo.get(x), reads: true, refs: rawFile ? [rawPart('read_random', () => raw.readRandom(), { file_bytes: rawFile })] : [] });

  // sizes: files and pages after close; the IndexedDB stores' usage growth while loading
  for (const x of slots) {
    if (x.failed) { await x.db.close().catch(() => {}); continue; }
    try {
      if (x.miss) throw new Error(`${x.miss} gets of present keys missed`);
      x.bytes = x.db.bytes ? x.db.bytes() : null;
      await x.db.close();
      if (x.db.bytesAfterClose) x.bytes = await x.db.bytesAfterClose();
    } catch (e) { fail(x, e); }
  }
  for (const x of live()) {
    const perRecord = (b, count) => +(b / count).toFixed(2);
    for (const r of x.rows) {
      if (x.bytes) r.bytes_per_record = perRecord(x.bytes, x.stored);
      else if (x.usageBytes) r.bytes_per_record = perRecord(x.usageBytes, n);
      if (x.bytes && x.usageBytes) r.usage_bytes_per_record = perRecord(x.usageBytes, n);
      post({ row: r });
    }
  }
  if (raw) { await raw.close(); for (const r of rawRows) post({ row: r }); }
  return info;
}

self.onmessage = async (e) => {
  const P = e.data;
  const info = { crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent };
  try {
    Object.assign(info, await runSuite(P));
  } catch (err) {
    post({ fatal: String(err?.stack || err?.message || err) });
    return;
  }
  post({ done: true, info });
};
post({ ready: true });
