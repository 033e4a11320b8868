// Runs inside a dedicated module worker in headless Chromium (bench/browser/run-browser.mjs).
// The browser suite's workload (docs/ANCHORS.md): N records, keys 'k' + 10 digits in random order,
// 100-byte values; each store with its defaults. Messages to the page: {row}, {log}, {skip}, {done}.
import { createStore, setMany, set, get, getMany, clear } from 'idb-keyval';
import { BrowserLevel } from 'browser-level';
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import { SplitMix64 } from '../lib/rng.mjs';
import { makeRecords, timedAsync } from '../lib/records.mjs';
import { init, BTreeStore, indexedDBStorage } from '../../dist/index.js';

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
 * data file (the least a cold point read costs). Both run in rounds alternating with the
 * adaptree workload they are the reference for (see `paired` below).
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

/**
 * Runs `a` and its reference `b` in alternating rounds of 16 operations until `a` has done
 * `count` (or the budget is spent), timing each side alone: on this shared machine the disk's
 * flush latency moves several-fold within a minute, and a ratio of two workloads measured
 * minutes apart would mostly measure that.
 */
async function paired(count, budgetSec, a, b) {
  const deadline = performance.now() + budgetSec * 1000;
  const A = { ops: 0, seconds: 0 }, B = { ops: 0, seconds: 0 };
  while (A.ops < count && performance.now() < deadline) {
    const k = Math.min(16, count - A.ops);
    for (const [side, f] of [[A, a], [B, b]]) {
      const t0 = performance.now();
      for (let j = 0; j < k; j++) await f(side.ops + j);
      side.seconds += (performance.now() - t0) / 1000;
      side.ops += k;
    }
  }
  return [A, B];
}

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
  // adaptree's BTreeStore on OPFS sync access handles, inside this (dedicated module) worker:
  // the whole API is synchronous there (docs/STORE.md, "OPFS in the browser"). utf8 keys,
  // bytes values, the default 64 MiB pool; one commit per batch (setMany) and per put.
  async 'adaptree-opfs'(P) {
    await adaptreeReady();
    const dir = 'bench-adaptree-opfs';
    await removeOpfs(dir);
    const path = dir + '/store';
    const open = (poolSize) => BTreeStore.open({ path, storage: 'opfs', keys: 'utf8', values: 'bytes', poolSize });
    let s = await open(POOL);
    const raw = await rawOpfs(P.seed);
    return {
      config: 'opfs sync access handles in the worker, 64 MiB pool, one flush per commit',
      async putBatch(ks, vs) { s.setMany(ks.map((k, i) => [k, vs[i]])); await s.commit(); },
      async putOne(k, v) { s.set(k, v); await s.commit(); },
      async get(k) { return s.get(k); },
      async getMany(ks) { return s.getMany(ks); },
      async scan(k, n) { let c = 0; for (const e of s.entries({ gte: k, limit: n })) if (e[1]) c++; return c; },
      stats: () => s.stats(),
      reference: { impl: 'raw-opfs', config: raw.config, put_autocommit: ['write_flush', () => raw.writeFlush()], get_cold: ['read_random', () => raw.readRandom()] },
      // Cold reads: closed (the pool is gone), reopened with a pool a tenth of the files; the
      // raw reads get a file as large as the data file.
      async reopenSmall() {
        await s.close();
        const fileBytes = await opfsBytes(dir);
        const poolBytes = Math.max(MIN_POOL, Math.floor(fileBytes / 10));
        s = await open(poolBytes);
        const rawBytes = await raw.prepareReads(await opfsBytes(dir, 'store'));
        return { fileBytes, poolBytes, reference: { file_bytes: rawBytes } };
      },
      async close() { await s.close(); await raw.close(); },
      bytesAfterClose: () => opfsBytes(dir),
    };
  },
  // adaptree's BTreeStore on IndexedDB (an async backend: the ...Async methods, page faults
  // awaited), 64 MiB pool, the default 'strict' durability; one commit (one IndexedDB
  // transaction) per batch and per put. put_autocommit_relaxed: the same single-put commits
  // on indexedDBStorage({ durability: 'relaxed' }), the durability the other IndexedDB stores
  // here get by default.
  async 'adaptree-indexeddb'() {
    await adaptreeReady();
    const path = 'bench-adaptree-idb';
    await req(indexedDB.deleteDatabase('adaptree:' + path));
    const open = (poolSize, storage = 'indexeddb') => BTreeStore.open({ path, storage, keys: 'utf8', values: 'bytes', poolSize });
    let s = await open(POOL);
    let pageBytes = 0;
    const db = {
      config: 'indexeddb, strict durability, 64 MiB pool',
      async putBatch(ks, vs) { await s.setManyAsync(ks.map((k, i) => [k, vs[i]])); await s.commit(); },
      async putOne(k, v) { await s.setAsync(k, v); await s.commit(); },
      get: (k) => s.getAsync(k),
      getMany: (ks) => s.getManyAsync(ks),
      async scan(k, n) { let c = 0; for await (const e of s.entriesAsync({ gte: k, limit: n })) if (e[1]) c++; return c; },
      stats: () => s.stats(),
      relaxed: {
        // reopened on the relaxed backend; a lookup of each key about to be put reads its
        // leaf (and the inner pages above it) back into the pool, so these puts find their
        // pages resident as the strict ones did
        async begin(ks) {
          await s.close();
          s = await open(POOL, indexedDBStorage({ durability: 'relaxed' }));
          for (const k of ks) await s.getAsync(k);
        },
        putOne: (k, v) => db.putOne(k, v),
      },
      async reopenSmall() {
        const fileBytes = s.stats().fileBytes;
        await s.close();
        const poolBytes = Math.max(MIN_POOL, Math.floor(fileBytes / 10));
        s = await open(poolBytes);
        return { fileBytes, poolBytes };
      },
      // bytes_per_record: the page images (what the store holds); usage_bytes_per_record: the
      // origin's usage growth, IndexedDB's own overhead included (as for the other IDB stores)
      async close() { pageBytes = s.stats().fileBytes; await s.close(); },
      bytesAfterClose: async () => pageBytes,
      usageToo: true,
    };
    return db;
  },
};

async function runStore(name, P) {
  const n = P.records;
  const { keys, value } = makeRecords(n + 2 * P.autocommit, P.seed);
  const vals = keys.map((_, i) => value(i));
  const rng = new SplitMix64(P.seed * 1000 + 51);
  const u0 = await usage();
  const db = await STORES[name](P);
  const rows = [], refRows = [];
  let stored = n;
  const row = (impl, config, workload, res, extra) => ({ suite: P.suite, dataset: P.dataset, workload, impl, config, keys: n, ops: res.ops,
    seconds: +res.seconds.toFixed(6), ops_per_sec: +(res.ops / res.seconds).toFixed(1), ...extra });
  const say = (r) => log(`${r.impl} ${r.workload}: ${Math.round(r.ops_per_sec)} ops/s (${r.ops} ops, ${r.seconds.toFixed(2)} s)`);
  // adaptree rows also carry the store's I/O per operation (stats() before and after)
  const io = (before, ops) => {
    if (!before) return {};
    const after = db.stats();
    const per = (x) => +((after[x] - before[x]) / ops).toFixed(3);
    return { reads_per_op: per('reads'), writes_per_op: per('writes'), syncs_per_op: per('syncs'), misses_per_op: per('misses') };
  };
  // Runs a workload; where the store names a physical reference for it (db.reference), the
  // two alternate (paired) and the reference's row is emitted too.
  const measured = async (workload, count, op, extra = {}) => {
    const before = db.stats?.();
    const ref = db.reference?.[workload];
    let res, refRes;
    if (ref) [res, refRes] = await paired(count, P.budgetSec * 2, op, ref[1]);
    else res = await timedAsync(count, P.budgetSec, op);
    const r = row(name, db.config, workload, res, { ...extra, ...io(before, res.ops) });
    rows.push(r);
    say(r);
    if (ref) {
      const rr = row(db.reference.impl, `${db.reference.config}; rounds of 16 alternating with ${name} ${workload}`, ref[0], refRes, extra.reference ?? {});
      refRows.push(rr);
      say(rr);
    }
    return res;
  };
  const B = 1000;
  {
    const before = db.stats?.();
    const t0 = performance.now();
    for (let i = 0; i < n; i += B) {
      await db.putBatch(keys.slice(i, i + B), vals.slice(i, i + B));
      if ((i / B) % 20 === 19) log(`${name}: loaded ${i + B} of ${n}`);
    }
    const res = { ops: n, seconds: (performance.now() - t0) / 1000 };
    const r = row(name, db.config, 'put_tx1000', res, io(before, n));
    rows.push(r);
    say(r);
  }
  const ac = await measured('put_autocommit', P.autocommit, (i) => db.putOne(keys[n + i], vals[n + i]));
  stored += ac.ops;
  const idx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
  let miss = 0;
  await measured('get', P.gets, async (i) => { if ((await db.get(keys[idx[i]])) == null) miss++; });
  {
    const before = db.stats?.();
    const gm = await timedAsync(Math.max(1, Math.floor(P.gets / B)), P.budgetSec, async (j) => {
      const vs = await db.getMany(Array.from(idx.subarray(j * B, (j + 1) * B), (x) => keys[x]));
      for (const v of vs) if (v == null) miss++;
    });
    gm.ops = Math.min(gm.ops * B, P.gets);
    const r = row(name, db.config, 'get_batch1000', gm, io(before, gm.ops));
    rows.push(r);
    say(r);
  }
  if (db.scan) {
    const sorted = keys.slice(0, n).sort();
    let records = 0;
    const before = db.stats?.();
    const sc = await timedAsync(P.scans, P.budgetSec, async () => { records += await db.scan(sorted[rng.nextBelow(n)], 50); });
    rows.push(row(name, db.config, 'scan50', sc, { records, ...io(before, sc.ops) }));
    say(rows[rows.length - 1]);
    if (db.scanAll) {
      records = 0;
      const sa = await timedAsync(P.scans, P.budgetSec, async () => { records += await db.scanAll(sorted[rng.nextBelow(n)], 50); });
      rows.push(row(name, db.config, db.scanAllName, sa, { records }));
      say(rows[rows.length - 1]);
    }
  }
  if (db.relaxed) {
    const base = n + P.autocommit;
    await db.relaxed.begin(keys.slice(base, base + P.autocommit));
    const rx = await measured('put_autocommit_relaxed', P.autocommit, (i) => db.relaxed.putOne(keys[base + i], vals[base + i]));
    stored += rx.ops;
  }
  if (db.reopenSmall) {
    // cold reads: the store closed (its pool dropped) and reopened with a pool a tenth of its
    // files (1 MiB at least), then point reads of random present keys (other keys than `get`'s)
    const { fileBytes, poolBytes, reference } = await db.reopenSmall();
    const cidx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
    await measured('get_cold', P.gets, async (i) => { if ((await db.get(keys[cidx[i]])) == null) miss++; },
      { pool_bytes: poolBytes, file_bytes: fileBytes, data_to_pool: +(fileBytes / poolBytes).toFixed(2), reference });
  }
  if (miss) throw new Error(`${miss} gets of present keys missed`);
  let bytes = db.bytes ? db.bytes() : null;
  await db.close();
  if (db.bytesAfterClose) bytes = await db.bytesAfterClose();
  let usageBytes = null;
  if (bytes == null || db.usageToo) { const u1 = await usage(); if (u0 != null && u1 != null && u1 > u0) usageBytes = u1 - u0; }
  bytes ??= usageBytes;
  for (const r of rows) {
    delete r.reference;
    if (bytes) r.bytes_per_record = +(bytes / stored).toFixed(2);
    if (db.usageToo && usageBytes) r.usage_bytes_per_record = +(usageBytes / stored).toFixed(2);
    post({ row: r });
  }
  for (const r of refRows) post({ row: r });
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
