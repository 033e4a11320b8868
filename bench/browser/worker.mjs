// Runs inside a dedicated module worker in headless Chromium (bench/browser/run-browser.mjs).
// The browser suite's workload (docs/ANCHORS.md): N records, keys 'k' + 10 digits in random order,
// 100-byte values; each store with its defaults. Messages to the page: {row}, {log}, {skip}, {done}.
import { createStore, setMany, set, get, getMany, clear } from 'idb-keyval';
import { BrowserLevel } from 'browser-level';
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import { SplitMix64 } from '../lib/rng.mjs';
import { makeRecords, timedAsync } from '../lib/records.mjs';

const post = (m) => self.postMessage(m);
const log = (s) => post({ log: s });

const req = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
const txDone = (tx) => new Promise((res, rej) => { tx.oncomplete = () => res(); tx.onerror = tx.onabort = () => rej(tx.error); });

async function usage() {
  try { const e = await navigator.storage.estimate(); return e.usage ?? null; } catch { return null; }
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
      config: 'default durability',
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
      config: 'createStore, default',
      putBatch: (ks, vs) => setMany(ks.map((k, i) => [k, vs[i]]), store),
      putOne: (k, v) => set(k, v, store),
      get: (k) => get(k, store),
      getMany: (ks) => getMany(ks, store),
      scan: null, // no range API
      async close() {},
    };
  },
  async 'browser-level'() {
    const db = new BrowserLevel('bench-level', { keyEncoding: 'utf8', valueEncoding: 'view' });
    await db.open();
    await db.clear();
    return {
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
      async getMany(ks) { db.exec('BEGIN'); const out = ks.map(one); db.exec('COMMIT'); return out; },
      async scan(k, n) { rng.bind([k, n]); let c = 0; while (rng.step()) { rng.get(1); c++; } rng.reset(); return c; },
      bytes() { return db.selectValue('PRAGMA page_count') * db.selectValue('PRAGMA page_size'); },
      async close() { ins.finalize(); sel.finalize(); rng.finalize(); db.close(); },
    };
  },
  // HOOK: adaptree's OPFS and IndexedDB backends (ts/storage) get entries here when they
  // exist ('adaptree-opfs', 'adaptree-idb'): open a BTreeMap on the backend, commit per
  // batch, same workloads; add their names to IMPLS in run-browser.mjs.
};

async function runStore(name, P) {
  const n = P.records;
  const { keys, value } = makeRecords(n + P.autocommit, P.seed);
  const vals = keys.map((_, i) => value(i));
  const rng = new SplitMix64(P.seed * 1000 + 51);
  const u0 = await usage();
  const db = await STORES[name]();
  const rows = [];
  const emit = (workload, res, extra = {}) => {
    const row = { suite: P.suite, dataset: P.dataset, workload, impl: name, config: db.config, keys: n, ops: res.ops,
      seconds: +res.seconds.toFixed(6), ops_per_sec: +(res.ops / res.seconds).toFixed(1), ...extra };
    rows.push(row);
    log(`${name} ${workload}: ${Math.round(row.ops_per_sec)} ops/s (${res.ops} ops, ${res.seconds.toFixed(2)} s)`);
  };
  const B = 1000;
  {
    const t0 = performance.now();
    for (let i = 0; i < n; i += B) {
      await db.putBatch(keys.slice(i, i + B), vals.slice(i, i + B));
      if ((i / B) % 20 === 19) log(`${name}: loaded ${i + B} of ${n}`);
    }
    emit('put_tx1000', { ops: n, seconds: (performance.now() - t0) / 1000 });
  }
  emit('put_autocommit', await timedAsync(P.autocommit, P.budgetSec, (i) => db.putOne(keys[n + i], vals[n + i])));
  const idx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
  let miss = 0;
  emit('get', await timedAsync(P.gets, P.budgetSec, async (i) => { if ((await db.get(keys[idx[i]])) == null) miss++; }));
  const gm = await timedAsync(Math.max(1, Math.floor(P.gets / B)), P.budgetSec, async (j) => {
    const vs = await db.getMany(Array.from(idx.subarray(j * B, (j + 1) * B), (x) => keys[x]));
    for (const v of vs) if (v == null) miss++;
  });
  gm.ops = Math.min(gm.ops * B, P.gets);
  emit('get_batch1000', gm);
  if (db.scan) {
    const sorted = keys.slice(0, n).sort();
    let records = 0;
    const sc = await timedAsync(P.scans, P.budgetSec, async () => { records += await db.scan(sorted[rng.nextBelow(n)], 50); });
    emit('scan50', sc, { records });
    if (db.scanAll) {
      records = 0;
      const sa = await timedAsync(P.scans, P.budgetSec, async () => { records += await db.scanAll(sorted[rng.nextBelow(n)], 50); });
      emit(db.scanAllName, sa, { records });
    }
  }
  if (miss) throw new Error(`${miss} gets of present keys missed`);
  let bytes = db.bytes ? db.bytes() : null;
  await db.close();
  if (bytes == null) { const u1 = await usage(); if (u0 != null && u1 != null && u1 > u0) bytes = u1 - u0; }
  for (const r of rows) {
    if (bytes) r.bytes_per_record = +(bytes / (n + P.autocommit)).toFixed(2);
    post({ row: r });
  }
  return db.sqliteVersion ? { sqlite: db.sqliteVersion } : {};
}

self.onmessage = async (e) => {
  const P = e.data;
  const info = { crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent };
  for (const name of P.impls) {
    try {
      Object.assign(info, await runStore(name, P));
    } catch (err) {
      post({ skip: name, reason: String(err?.message || err) });
    }
  }
  post({ done: true, info });
};
post({ ready: true });
