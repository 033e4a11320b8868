// The worker of bench/browser/diagnose.mjs: where the time of adaptree-opfs's operations goes,
// measured inside one dedicated worker (the browser suite's records: 'k' + 10 digits, 100-byte
// values, loaded in random order, 1000 per commit). Prints text, no rows. Modes:
//   commit  one-put commits vs raw 4 KiB write+flush pairs (alternating rounds), the share of
//           the handles' write()/flush() in a commit, and the cost of one setTimeout(0) hop
//   cold    a store reopened with a pool a tenth of its file: a cold get's parts (a warm get,
//           the read() calls, the page checksum of the pages read, the rest) vs raw 4 KiB reads
//   split   a cold get taken apart by subtraction (splitMode below): cold on OPFS, over in-memory
//           files, a warm get and a warm has, raw 4 KiB reads, the page checksum; least of 15
//           interleaved rounds, then awaited as the suite awaits them
//   load    put_tx1000: setMany vs commit, the commit's write/flush/read time and bytes, pool
//           fixes per record, image and delta frames
//   idbload put_tx1000 on an IndexedDB store (--durability strict|relaxed): setManyAsync vs
//           commit, the readwrite transactions' time in a commit, puts and bytes per commit
//   idbcommit one-commit writes (put_autocommit) on an IndexedDB store (--durability) against a
//           raw IndexedDB put in a readwrite transaction of the same durability, alternating
//           rounds; the store's commit taken apart (before, during, after its transaction)
//   idbtx   the cost of creating a readwrite IndexedDB transaction and of a whole one-put
//           transaction, by database shape and arguments (no store)
//   idbsize what a record's size costs: 489,000 bytes (an idbload commit's frame) put as one
//           record and as chunks of 256 KiB down to 4 KiB, one readwrite transaction each
//           (--durability), in alternating rounds; least and mean per size. No store
//   alloc   copying values out of wasm memory: slice() per size, per value vs per batch; the
//           cost of a view, a subarray, a copy into a slab, a new array
//   scan    50-record scans with entries() vs keys()
//   warm    warm get, has and getMany of 1000 on the loaded store, 12 s each in rounds (long
//           enough that a `perf record` of the run is mostly these loops), then gets awaited as
//           the suite awaits them, against the same harness around an op that returns at once
//   awaited only the awaited part of warm, for 20 s
//   crc     at_checksum of 4092/4096 bytes per module (this build's st/mt, a --base build's),
//           alternating rounds, least and median per module; no store
// A worker named 'immediate' gets a setImmediate on MessageChannel before adaptree loads (the
// store then schedules its commits with it instead of setTimeout(0)).
if (self.name.startsWith('immediate')) {
  const ch = new MessageChannel();
  const queue = [];
  ch.port1.onmessage = () => queue.shift()();
  globalThis.setImmediate = (f) => { queue.push(f); ch.port2.postMessage(0); };
}
const { init, BTreeStore, BTreeMap } = await import('../../dist/index.js');
const { makeRecords } = await import('../lib/records.mjs');
const { copyOut } = await import('../../dist/encoding/bytes.js');
const { SplitMix64 } = await import('../lib/rng.mjs');

const log = (s) => self.postMessage({ log: s });
const now = () => performance.now();
const us = (ms, n) => ((ms / n) * 1000).toFixed(1) + ' us';
const rate = (ms, n) => Math.round(n / (ms / 1000)) + '/s';

/** Times the sync access handles' read/write/flush while `on` (for a breakdown). */
function handleTimer() {
  const proto = FileSystemSyncAccessHandle.prototype;
  const orig = { read: proto.read, write: proto.write, flush: proto.flush };
  const t = { on: false, read: 0, write: 0, flush: 0, reads: 0, bytes: 0 };
  proto.read = function (b, o) { if (!t.on) return orig.read.call(this, b, o); const a = now(); const r = orig.read.call(this, b, o); t.read += now() - a; t.reads++; return r; };
  proto.write = function (b, o) { if (!t.on) return orig.write.call(this, b, o); const a = now(); const r = orig.write.call(this, b, o); t.write += now() - a; t.bytes += b.byteLength; return r; };
  proto.flush = function () { if (!t.on) return orig.flush.call(this); const a = now(); orig.flush.call(this); t.flush += now() - a; };
  t.reset = () => Object.assign(t, { read: 0, write: 0, flush: 0, reads: 0, bytes: 0 });
  t.raw = orig;
  return t;
}

/** Instantiates a module with stub imports (at_checksum needs none), data at 8 MiB. */
async function checksumModule({ name, file, shared }) {
  const mod = await WebAssembly.compile(await (await fetch(file)).arrayBuffer());
  const imports = {};
  let memory = null;
  for (const imp of WebAssembly.Module.imports(mod)) {
    imports[imp.module] ??= {};
    if (imp.kind === 'function') imports[imp.module][imp.name] = () => { throw new Error('stub import ' + imp.name); };
    else memory = imports[imp.module][imp.name] = new WebAssembly.Memory({ initial: 256, maximum: 32768, shared });
  }
  const inst = await WebAssembly.instantiate(mod, imports);
  memory ??= inst.exports.memory;
  const at = 8 << 20, u8 = new Uint8Array(memory.buffer, at, 8192);
  let s = 12345;
  for (let i = 0; i < u8.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; u8[i] = s >>> 24; }
  return { name, run: (len, k) => { let x = 0; for (let i = 0; i < k; i++) x ^= inst.exports.at_checksum(at, len); return x >>> 0; } };
}

async function crcMode(modules) {
  const ms = [];
  for (const m of modules) ms.push(await checksumModule(m));
  for (const len of [4092, 4096]) {
    const values = new Set(ms.map((m) => m.run(len, 1)));
    if (values.size !== 1) throw new Error(`the builds disagree on the checksum of ${len} bytes`);
    for (const m of ms) m.run(len, 3000);
    const t = ms.map(() => []);
    for (let r = 0; r < 30; r++) ms.forEach((m, i) => { const a = now(); m.run(len, 2000); t[i].push(((now() - a) / 2000) * 1000); });
    const parts = ms.map((m, i) => { const v = t[i].sort((a, b) => a - b); return `${m.name} ${v[0].toFixed(2)} us (median ${v[15].toFixed(2)})`; });
    const mins = Object.fromEntries(ms.map((m, i) => [m.name, t[i][0]]));
    const ratios = ['st', 'mt'].filter((f) => mins[`wasm-${f}-base`]).map((f) => `${f} base/new ${(mins[`wasm-${f}-base`] / mins[`wasm-${f}`]).toFixed(2)}x`);
    log(`crc ${len} B: ${parts.join(', ')}${ratios.length ? '; ' + ratios.join(', ') : ''}`);
  }
}


/** A SyncFile over bytes in JS memory (the split mode's store without OPFS I/O). */
class MemFile {
  constructor(u8) { this.b = u8; }
  read(dst, off) { const n = Math.max(0, Math.min(dst.length, this.b.length - off)); dst.set(this.b.subarray(off, off + n)); return n; }
  write(src, off) { if (off + src.length > this.b.length) { const nb = new Uint8Array(off + src.length); nb.set(this.b); this.b = nb; } this.b.set(src, off); }
  sync() {}
  size() { return this.b.length; }
  truncate(n) { const nb = new Uint8Array(n); nb.set(this.b.subarray(0, Math.min(n, this.b.length))); this.b = nb; }
}

/**
 * split: a cold get taken apart by subtraction, in interleaved rounds (least of each, no timer
 * per call): cold gets on OPFS; the same store over an in-memory copy of its files (no I/O:
 * what a fault costs the CPU); warm gets (everything resident); raw 4 KiB reads of the same file
 * into a JS buffer and into a view of wasm memory; the page checksum alone.
 */
async function splitMode({ w, dir, path, keys, n, raw, page, rng, t }) {
  const fileBytes = (await (await dir.getFileHandle('store')).getFile()).size;
  const pool = Math.max(1 << 20, Math.floor(fileBytes / 10));
  const pages = Math.floor(fileBytes / 4096);
  const chunk = new Uint8Array(1 << 20);
  for (let o = 0; o < pages * 4096; o += chunk.length) raw.write(chunk.subarray(0, Math.min(chunk.length, pages * 4096 - o)), { at: o });
  raw.flush();
  const img = new Uint8Array(await (await (await dir.getFileHandle('store')).getFile()).arrayBuffer());
  let logImg = new Uint8Array(0);
  try { logImg = new Uint8Array(await (await (await dir.getFileHandle('store-log')).getFile()).arrayBuffer()); } catch {}
  const mem = (name, u8) => ({ kind: 'sync', name, open: () => ({ data: new MemFile(u8.slice()), log: new MemFile(logImg.slice()), close() {} }) });
  const opts = { keys: 'utf8', values: 'bytes', readOnly: true };
  const C = await BTreeStore.open({ path, storage: 'opfs', poolSize: pool, ...opts });
  // the same store over OPFS copies of its files, through minimal SyncFiles that read into the
  // destination (a view of wasm memory) or into a private buffer and copy
  const handles = [];
  const copyTo = async (name, u8) => { const h = await (await dir.getFileHandle(name, { create: true })).createSyncAccessHandle(); h.truncate(0); h.write(u8, { at: 0 }); h.flush(); handles.push(h); return h; };
  const priv = new Uint8Array(4096);
  const opfsFile = (h, private_) => ({
    read: private_
      ? (dst, off) => { if (dst.length !== 4096) return h.read(dst, { at: off }); const n = h.read(priv, { at: off }); dst.set(n === 4096 ? priv : priv.subarray(0, n)); return n; }
      : (dst, off) => h.read(dst, { at: off }),
    write() { throw new Error('read only'); }, sync() {}, size: () => h.getSize(), truncate() { throw new Error('read only'); },
  });
  const copyStore = async (name, private_) => {
    const d = await copyTo(name, img), l = await copyTo(name + '-log', logImg);
    return BTreeStore.open({ path: name, storage: { kind: 'sync', name, open: () => ({ data: opfsFile(d, private_), log: opfsFile(l, private_), close() {} }) }, poolSize: pool, ...opts });
  };
  const V = await copyStore('copy-view', false), P = await copyStore('copy-private', true);
  for (let i = 0; i < 20000; i++) { V.get(keys[rng.nextBelow(n)]); P.get(keys[rng.nextBelow(n)]); }
  const M = await BTreeStore.open({ path: 'mem-cold', storage: mem('mem-cold', img), poolSize: pool, ...opts });
  const W = await BTreeStore.open({ path: 'mem-warm', storage: mem('mem-warm', img), ...opts });
  for (let i = 0; i < n; i++) W.get(keys[i]);
  for (let i = 0; i < 20000; i++) { C.get(keys[rng.nextBelow(n)]); M.get(keys[rng.nextBelow(n)]); }
  const K = 2000, R = 15;
  const wp = w.exports.at_alloc(4096);
  const parts = {
    cold: () => { for (let i = 0; i < K; i++) C.get(keys[rng.nextBelow(n)]); },
    cold_view: () => { for (let i = 0; i < K; i++) V.get(keys[rng.nextBelow(n)]); },
    cold_private: () => { for (let i = 0; i < K; i++) P.get(keys[rng.nextBelow(n)]); },
    cold_memfile: () => { for (let i = 0; i < K; i++) M.get(keys[rng.nextBelow(n)]); },
    warm: () => { for (let i = 0; i < K; i++) W.get(keys[rng.nextBelow(n)]); },
    warm_has: () => { for (let i = 0; i < K; i++) W.has(keys[rng.nextBelow(n)]); },
    raw_read: () => { for (let i = 0; i < K; i++) t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 }); },
    raw_read_wasm_view: () => { for (let i = 0; i < K; i++) t.raw.read.call(raw, new Uint8Array(w.memory.buffer, wp, 4096), { at: rng.nextBelow(pages) * 4096 }); },
    // the page checksum the store verifies: page_hash (format version 2), CRC-32C in older builds
    crc: () => { const f = w.exports.at_page_hash ?? w.exports.at_checksum; let x = 0; for (let i = 0; i < K; i++) x ^= f(wp, 4092); return x; },
  };
  const best = {};
  const c0 = C.stats(), m0 = M.stats();
  for (let r = 0; r < R; r++) for (const [k, f] of Object.entries(parts)) { const a = now(); f(); best[k] = Math.min(best[k] ?? Infinity, ((now() - a) / K) * 1000); }
  const c1 = C.stats(), m1 = M.stats();
  const miss = (c1.misses - c0.misses) / (K * R), mmiss = (m1.misses - m0.misses) / (K * R);
  log(`split: file ${(fileBytes / 2 ** 20).toFixed(1)} MiB, pool ${(pool / 2 ** 20).toFixed(2)} MiB; per cold get ${miss.toFixed(3)} misses, ${((c1.reads - c0.reads) / (K * R)).toFixed(3)} reads, ` +
    `${((c1.evictions - c0.evictions) / (K * R)).toFixed(3)} evictions, ${((c1.writes - c0.writes) / (K * R)).toFixed(3)} writes (memfile store: ${mmiss.toFixed(3)} misses)`);
  log('  least of ' + R + ' rounds: ' + Object.entries(best).map(([k, v]) => `${k} ${v.toFixed(2)} us`).join(', '));
  const b = best;
  log(`  ratio raw_read/cold ${(b.raw_read / b.cold).toFixed(2)}; per miss: CPU of a fault (memfile - warm) ${((b.cold_memfile - b.warm) / mmiss).toFixed(2)} us ` +
    `(page checksum ${b.crc.toFixed(2)}), OPFS read in the store (cold - memfile) ${((b.cold - b.cold_memfile) / miss).toFixed(2)} us vs raw ${b.raw_read.toFixed(2)} (into wasm memory ${b.raw_read_wasm_view.toFixed(2)})`);
  // The browser suite's harness shape (worker.mjs interleave/measure): every op awaited; a
  // store's op an async function awaiting the store's async get, raw's op a plain call.
  const getA = async (k) => C.get(k);
  const storeOp = async (i) => { if ((await getA(keys[rng.nextBelow(n)])) == null) throw new Error('miss'); };
  const rawOp = () => { t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 }); };
  const rawOpAsync = async (i) => { t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 }); };
  const aparts = { cold_awaited: storeOp, raw_awaited: rawOp, raw_awaited_async: rawOpAsync };
  const abest = {};
  for (let r = 0; r < R; r++) for (const [k, f] of Object.entries(aparts)) { const a = now(); for (let i = 0; i < K; i++) await f(i); abest[k] = Math.min(abest[k] ?? Infinity, ((now() - a) / K) * 1000); }
  log('  as the suite awaits them: ' + Object.entries(abest).map(([k, v]) => `${k} ${v.toFixed(2)} us`).join(', ') +
    `; ratio raw/cold ${(abest.raw_awaited / abest.cold_awaited).toFixed(2)}, with raw's op async too ${(abest.raw_awaited_async / abest.cold_awaited).toFixed(2)}`);
  await C.close(); await M.close(); await W.close(); await V.close(); await P.close();
  for (const h of handles) h.close();
}

/** Times IndexedDB's readwrite transactions while `on` (for a breakdown): how many (txs), from
 * creation to 'complete' (tx, summed), the last one's start and end, their creation (create),
 * and the puts and bytes put. `origTx` is the unpatched transaction(). */
function idbTimer() {
  const t = { on: false, tx: 0, txs: 0, create: 0, txStart: 0, txEnd: 0, bytes: 0, puts: 0, origTx: IDBDatabase.prototype.transaction };
  IDBDatabase.prototype.transaction = function (names, mode, opts) {
    const c0 = now();
    const tx = t.origTx.call(this, names, mode, opts);
    if (t.on && mode === 'readwrite') {
      const a = now();
      t.txs++;
      t.txStart = a;
      t.create += a - c0;
      tx.addEventListener('complete', () => { t.tx += now() - a; t.txEnd = now(); });
    }
    return tx;
  };
  const origPut = IDBObjectStore.prototype.put;
  IDBObjectStore.prototype.put = function (v, k) {
    if (t.on) { t.puts++; t.bytes += v?.byteLength ?? 0; }
    return origPut.call(this, v, k);
  };
  return t;
}

/**
 * idbload: put_tx1000 on an IndexedDB store taken apart: setManyAsync, then the commit, and in
 * it the readwrite transactions (from transaction() to 'complete') and the bytes put.
 */
async function idbLoadMode(n, durability) {
  const { indexedDBStorage } = await import('../../dist/index.js');
  await init();
  const { keys, value } = makeRecords(n, 1);
  const vals = keys.map((_, i) => value(i));
  const path = 'diagnose-idb';
  await new Promise((r) => { const q = indexedDB.deleteDatabase('adaptree:' + path); q.onsuccess = q.onerror = r; });
  const t = idbTimer();
  const storage = durability === 'strict' ? 'indexeddb' : indexedDBStorage({ durability });
  // The core's part of "before it": at_store_commit_begin (sealing: checksums, deltas, the images
  // copied into the commit's buffer), timed around the export.
  const { loadWasm } = await import('../../dist/index.js');
  const wasm = await loadWasm();
  const begin = wasm.exports.at_store_commit_begin;
  let tbegin = 0;
  wasm.exports.at_store_commit_begin = (...a) => { const b0 = now(); try { return begin(...a); } finally { if (t.on) tbegin += now() - b0; } };
  const s = await BTreeStore.open({ path, storage, keys: 'utf8', values: 'bytes', wasm });
  let tset = 0, tcommit = 0;
  const fr = { n: 0, ms: 0, tx: 0, before: 0, after: 0 }, cp = { n: 0, ms: 0, tx: 0, before: 0, after: 0 };
  const t0 = now();
  for (let i = 0; i < n; i += 1000) {
    const batch = keys.slice(i, i + 1000).map((k, j) => [k, vals[i + j]]);
    let a = now(); await s.setManyAsync(batch); tset += now() - a;
    t.on = i >= n / 2;  // the second half: the store at its size
    const p0 = t.puts, x0 = t.tx;
    a = now(); await s.commit();
    if (t.on) {
      const d = now() - a;
      tcommit += d;
      // a checkpoint puts a record per page; a usual commit one frame
      const k = t.puts - p0 > 1 ? cp : fr;
      k.n++; k.ms += d; k.tx += t.tx - x0;
      k.before += t.txStart - a; k.after += now() - t.txEnd;
    }
    t.on = false;
  }
  log(`  at_store_commit_begin: ${(tbegin / (fr.n + cp.n)).toFixed(2)} ms a commit (in "before it")`);
  for (const [name, k] of [['frame commits', fr], ['checkpoints', cp]]) {
    if (k.n) log(`  ${name}: ${k.n}, ${(k.ms / k.n).toFixed(2)} ms each, of which the transaction ${(k.tx / k.n).toFixed(2)} ms, before it ${(k.before / k.n).toFixed(2)} ms, after it ${(k.after / k.n).toFixed(2)} ms`);
  }
  const b = n / 2000;
  log(`idbload (${durability}): ${rate(now() - t0, n)}; second half, per 1000 records: setManyAsync ${(tset / (n / 1000)).toFixed(2)} ms, commit ${(tcommit / b).toFixed(2)} ms, ` +
    `of which readwrite transactions ${(t.tx / b).toFixed(2)} ms (${(t.txs / b).toFixed(2)} per commit), ${(t.puts / b).toFixed(1)} puts, ${Math.round(t.bytes / b / 1024)} KiB put`);
  const st = s.stats();
  log(`  stats: ${JSON.stringify(Object.fromEntries(Object.entries(st).filter(([k]) => /frame|log|checkpoint|write|sync/.test(k))))}`);
  await s.close();
}

/**
 * idbcommit: put_autocommit on an IndexedDB store (setAsync + commit per record) against a raw
 * put in its own readwrite transaction, both of `durability`, in alternating rounds.
 */
async function idbCommitMode(n, durability) {
  const { indexedDBStorage } = await import('../../dist/index.js');
  await init();
  const { keys, value } = makeRecords(n + 20000, 1);
  const vals = keys.map((_, i) => value(i));
  const path = 'diagnose-idbc';
  const del = (name) => new Promise((r) => { const q = indexedDB.deleteDatabase(name); q.onsuccess = q.onerror = r; });
  await del('adaptree:' + path); await del('diagnose-raw');
  const raw = await new Promise((res, rej) => {
    const q = indexedDB.open('diagnose-raw', 1);
    q.onupgradeneeded = () => q.result.createObjectStore('kv');
    q.onsuccess = () => res(q.result); q.onerror = () => rej(q.error);
  });
  const t = Object.assign(idbTimer(), { before: 0, after: 0 });
  const origTx = t.origTx;
  const storage = indexedDBStorage({ durability });
  const s = await BTreeStore.open({ path, storage, keys: 'utf8', values: 'bytes' });
  for (let i = 0; i < n; i += 1000) { await s.setManyAsync(keys.slice(i, i + 1000).map((k, j) => [k, vals[i + j]])); await s.commit(); }
  const txDone = (tx) => new Promise((r, j) => { tx.oncomplete = r; tx.onabort = tx.onerror = () => j(tx.error); });
  let k = n, ta = 0, tr = 0, tset = 0, tcom = 0, ops = 0;
  for (let round = 0; round < 20; round++) {
    let a = now();
    for (let i = 0; i < 25; i++) { const c0 = now(); const tx = origTx.call(raw, 'kv', 'readwrite', { durability }); const c1 = now(); tx.objectStore('kv').put(vals[k + i], keys[k + i]); await txDone(tx); t.rawCreate = (t.rawCreate ?? 0) + c1 - c0; t.rawTx = (t.rawTx ?? 0) + now() - c1; }
    tr += now() - a;
    t.on = true;
    a = now();
    for (let i = 0; i < 25; i++, k++) {
      const b = now(); await s.setAsync(keys[k], vals[k]); const c = now(); await s.commit(); const d = now();
      tset += c - b; tcom += d - c; t.before += t.txStart - c; t.after += d - t.txEnd; ops++;
    }
    ta += now() - a;
    t.on = false;
  }
  log(`idbcommit (${durability}): adaptree setAsync+commit ${rate(ta, ops)} (${us(ta, ops)}), raw put in a transaction ${rate(tr, ops)} (${us(tr, ops)}); ratio ${(tr / ta).toFixed(2)}`);
  log(`  per op: setAsync ${us(tset, ops)}, commit ${us(tcom, ops)}: before the transaction ${us(t.before, ops)}, the transaction ${us(t.tx, ops)}, after it ${us(t.after, ops)}; ${(t.puts / ops).toFixed(2)} puts, ${Math.round(t.bytes / ops)} B put`);
  log(`  transaction creation: adaptree ${us(t.create, ops)}, raw ${us(t.rawCreate, ops)}; creation to complete: raw ${us(t.rawTx, ops)}`);
  await s.close();
  raw.close();
}

self.onmessage = async (e) => {
  const { mode, records: n } = e.data;
  try {
    if (mode === 'crc') {
      await crcMode(e.data.modules);
      self.postMessage({ done: true });
      return;
    }
    log(`worker '${self.name}': setImmediate ${typeof globalThis.setImmediate}, mode ${mode}, ${n} records`);
    if (mode === 'idbtx') {
      const open = (name, stores) => new Promise((res, rej) => {
        const q = indexedDB.open(name, 1);
        q.onupgradeneeded = () => { for (const st of stores) q.result.createObjectStore(st); };
        q.onsuccess = () => res(q.result); q.onerror = () => rej(q.error);
      });
      for (const name of ['t1', 't2']) await new Promise((r) => { const q = indexedDB.deleteDatabase(name); q.onsuccess = q.onerror = r; });
      const d1 = await open('t1', ['kv']), d2 = await open('t2', ['pages', 'log']);
      const v = new Uint8Array(1041).fill(7);
      const cases = {
        'one store, string': () => d1.transaction('kv', 'readwrite', { durability: 'relaxed' }),
        'one store, array': () => d1.transaction(['kv'], 'readwrite', { durability: 'relaxed' }),
        'two-store db, [log]': () => d2.transaction(['log'], 'readwrite', { durability: 'relaxed' }),
        'one store, no options': () => d1.transaction('kv', 'readwrite'),
      };
      const best = {}, sum = {};
      let key = 0;
      for (let round = 0; round < 20; round++) {
        for (const [name, mk] of Object.entries(cases)) {
          let c = 0, all = 0;
          for (let i = 0; i < 25; i++) {
            const a = now(); const tx = mk(); const b = now();
            tx.objectStore(tx.objectStoreNames[tx.objectStoreNames.length - 1]).put(v, key++);
            await new Promise((r, j) => { tx.oncomplete = r; tx.onabort = () => j(tx.error); });
            c += b - a; all += now() - a;
          }
          sum[name] = (sum[name] ?? 0) + c;
          best[name] = Math.min(best[name] ?? Infinity, all);
        }
      }
      for (const name of Object.keys(cases)) log(`idbtx ${name}: creation ${us(sum[name], 500)} mean, whole transaction least ${us(best[name], 25)}`);
      d1.close(); d2.close();
      self.postMessage({ done: true });
      return;
    }
    if (mode === 'idbsize') {
      // One frame-sized record against the same bytes as chunks, in one readwrite transaction
      // each (strict): what a record's size costs (Chromium stores values past 64 KiB apart).
      await new Promise((r) => { indexedDB.deleteDatabase('idbsize').onsuccess = r; });
      const db = await new Promise((res, rej) => { const o = indexedDB.open('idbsize', 1); o.onupgradeneeded = () => o.result.createObjectStore('log'); o.onsuccess = () => res(o.result); o.onerror = () => rej(o.error); });
      const total = 489_000;
      const bytes = new Uint8Array(total);
      for (let i = 0; i < total; i++) bytes[i] = (i * 2654435761) >>> 24;
      const cases = [total, 262_144, 65_000, 60_000, 32_000, 16_000, 4_096];
      const best = {}, sum = {};
      let key = 0;
      for (let round = 0; round < 12; round++) {
        for (const size of cases) {
          for (let i = 0; i < 5; i++) {
            const a = now();
            const tx = db.transaction(['log'], 'readwrite', { durability: e.data.durability ?? 'strict' });
            const st = tx.objectStore('log');
            for (let at = 0; at < total; at += size) st.put(bytes.slice(at, Math.min(total, at + size)), key++);
            await new Promise((r, j) => { tx.oncomplete = r; tx.onabort = () => j(tx.error); });
            const ms = now() - a;
            sum[size] = (sum[size] ?? 0) + ms;
            best[size] = Math.min(best[size] ?? Infinity, ms);
            const d = db.transaction(['log'], 'readwrite', { durability: 'relaxed' });
            d.objectStore('log').clear();
            await new Promise((r) => { d.oncomplete = r; });
          }
        }
      }
      for (const size of cases) log(`idbsize ${total} B as ${Math.ceil(total / size)} record(s) of ${size} B: mean ${(sum[size] / 60).toFixed(2)} ms, least ${best[size].toFixed(2)} ms`);
      db.close();
      self.postMessage({ done: true });
      return;
    }
    if (mode === 'idbcommit') {
      await idbCommitMode(n, e.data.durability ?? 'strict');
      self.postMessage({ done: true });
      return;
    }
    if (mode === 'idbload') {
      await idbLoadMode(n, e.data.durability ?? 'strict');
      self.postMessage({ done: true });
      return;
    }
    const w = await init();
    const { keys, value } = makeRecords(n + 5000, 1);
    const vals = keys.map((_, i) => value(i));
    const root = await navigator.storage.getDirectory();
    await root.removeEntry('diagnose', { recursive: true }).catch(() => {});
    const dir = await root.getDirectoryHandle('diagnose', { create: true });
    const path = 'diagnose/store';
    const t = handleTimer();
    const s = await BTreeStore.open({ path, storage: 'opfs', keys: 'utf8', values: 'bytes' });
    let tset = 0, tcommit = 0;
    t.on = mode === 'load';
    const t0 = now();
    for (let i = 0; i < n; i += 1000) {
      const batch = keys.slice(i, i + 1000).map((k, j) => [k, vals[i + j]]);
      let a = now(); s.setMany(batch); tset += now() - a;
      a = now(); await s.commit(); tcommit += now() - a;
    }
    t.on = false;
    if (mode === 'load') {
      const st = s.stats(), b = n / 1000;
      log(`load: ${rate(now() - t0, n)}; per 1000 records: setMany ${(tset / b).toFixed(1)} ms, commit ${(tcommit / b).toFixed(1)} ms ` +
        `(write ${(t.write / b).toFixed(1)} ms, flush ${(t.flush / b).toFixed(1)} ms, read ${(t.read / b).toFixed(1)} ms); ` +
        `${Math.round(t.bytes / n)} B written per record; log ${(st.log_bytes / 2 ** 20).toFixed(1)} MiB, checkpoints ${st.checkpoints}; ` +
        `pool fixes per record ${((st.hits + st.misses) / n).toFixed(1)} (misses ${st.misses}), image frames ${st.image_frames}, delta frames ${st.delta_frames}`);
    }
    const raw = await (await dir.getFileHandle('raw', { create: true })).createSyncAccessHandle();
    const page = new Uint8Array(4096);
    const rng = new SplitMix64(5);
    if (mode === 'commit') {
      let ta = 0, tr = 0, io = 0, k = n, off = 0;
      for (let round = 0; round < 20; round++) {
        t.reset(); t.on = true;
        let a = now();
        for (let i = 0; i < 20; i++, k++) { s.set(keys[k], vals[k]); await s.commit(); }
        ta += now() - a; t.on = false; io += t.write + t.flush;
        a = now();
        for (let i = 0; i < 20; i++) { raw.write(page, { at: off++ * 4096 }); raw.flush(); }
        tr += now() - a;
      }
      log(`commit: set+commit ${rate(ta, 400)} (${us(ta, 400)} per op, of which the handles' write+flush ${us(io, 400)}); ` +
        `raw write+flush ${rate(tr, 400)} (${us(tr, 400)}); ratio ${(tr / ta).toFixed(2)}`);
      const a = now();
      for (let i = 0; i < 100; i++) await new Promise((r) => setTimeout(r, 0));
      log(`setTimeout(0) chain: ${us(now() - a, 100)} per hop`);
      // the store's own hop to the next turn: a commit with nothing to write (least of 5 x 200)
      let hop = Infinity;
      for (let r = 0; r < 5; r++) { const b = now(); for (let i = 0; i < 200; i++) await s.commit(); hop = Math.min(hop, now() - b); }
      log(`a commit with nothing to write (the store's hop to the next turn): ${us(hop, 200)}`);
    }
    if (mode === 'scan') {
      const sorted = keys.slice(0, n).sort();
      for (let rep = 0; rep < 3; rep++) {
        let c = 0, a = now();
        for (let i = 0; i < 2000; i++) for (const x of s.entries({ gte: sorted[rng.nextBelow(n)], limit: 50 })) c += x.length;
        const te = now() - a;
        a = now();
        for (let i = 0; i < 2000; i++) for (const x of s.keys({ gte: sorted[rng.nextBelow(n)], limit: 50 })) c += x.length;
        log(`scan50: entries() ${rate(te, 2000)} (${us(te, 2000)}), keys() ${rate(now() - a, 2000)} (${us(now() - a, 2000)})`);
      }
    }
    if (mode === 'warm' || mode === 'awaited') {
      const K = 1000, best = {};
      const idx = () => { const a = new Array(K); for (let i = 0; i < K; i++) a[i] = keys[rng.nextBelow(n)]; return a; };
      const parts = {
        get: (ks) => { let c = 0; for (let i = 0; i < K; i++) if (s.get(ks[i])) c++; return c; },
        has: (ks) => { let c = 0; for (let i = 0; i < K; i++) if (s.has(ks[i])) c++; return c; },
        getMany: (ks) => s.getMany(ks).length,
      };
      for (const [name, f] of Object.entries(mode === 'warm' ? parts : {})) {
        let rounds = 0;
        const end = now() + 12000;
        while (now() < end) {
          const ks = idx();
          const a = now();
          if (f(ks) !== K) throw new Error(name + ': a key is missing');
          best[name] = Math.min(best[name] ?? Infinity, ((now() - a) / K) * 1000);
          rounds++;
        }
        log(`warm ${name}: least ${best[name].toFixed(2)} us per key over ${rounds} rounds of ${K}`);
      }
      // As the suite awaits them (worker.mjs: an async op awaiting the store's async get), and the
      // same harness around an op that returns at once: what the awaits alone cost.
      const getA = async (k) => s.get(k), noopA = async (k) => k;
      const awaited = { get_awaited: getA, noop_awaited: noopA, has_awaited: async (k) => s.has(k), getlen_awaited: async (k) => s.get(k).length };
      // (awaited: 20 s of rounds, for a profile of the awaited path)
      const until = now() + (mode === 'awaited' ? 20000 : 0);
      let rounds = 0;
      for (; rounds < 200 || now() < until; rounds++) {
        for (const [name, g] of Object.entries(awaited)) {
          const ks = idx();
          const op = async (i) => { if ((await g(ks[i])) == null) throw new Error('miss'); };
          const a = now();
          for (let i = 0; i < K; i++) await op(i);
          best[name] = Math.min(best[name] ?? Infinity, ((now() - a) / K) * 1000);
          // the same with a clock reading per op, as the suite's interleave() takes one
          const b = now();
          let end = b + 1e9;
          for (let i = 0; i < K; i++) { await op(i); if (performance.now() > end) break; }
          best[name + '_clock'] = Math.min(best[name + '_clock'] ?? Infinity, ((now() - b) / K) * 1000);
        }
      }
      log(`awaited as the suite does (least of ${rounds} rounds of ${K}): get ${best.get_awaited.toFixed(2)} us, the harness alone ${best.noop_awaited.toFixed(2)} us; ` +
        `has ${best.has_awaited.toFixed(2)} us, get(k).length ${best.getlen_awaited.toFixed(2)} us; with a clock reading per op: get ${best.get_awaited_clock.toFixed(2)} us, the harness alone ${best.noop_awaited_clock.toFixed(2)} us`);
    }
    if (mode === 'getloop') {
      // warm sync gets of random keys for 15 s and nothing else: for `perf record -a` of the run
      // (ADAPTREE_CHROMIUM_JS_FLAGS=--perf-basic-prof) once 'getloop start' is printed
      // (--many: getMany of 1000 keys instead of single gets)
      const many = self.name.includes('many') || globalThis.DIAGNOSE_MANY;
      log('getloop start');
      const end = now() + 15000;
      let c = 0, ops = 0;
      const batch = new Array(1000);
      while (now() < end) {
        if (many) {
          for (let i = 0; i < 1000; i++) batch[i] = keys[rng.nextBelow(n)];
          for (const v of s.getMany(batch)) if (v) c++;
        } else {
          for (let i = 0; i < 1000; i++) if (s.get(keys[rng.nextBelow(n)])) c++;
        }
        ops += 1000;
      }
      log(`getloop: ${ops} ${many ? 'getMany keys' : 'gets'}, ${c} found`);
    }
    if (mode === 'suiteget') {
      // The browser suite's get, as worker.mjs runs it (an async wrapper, an async op, the key
      // picked through a random index per op, a clock reading per op), taken apart: mean per op
      // over 25 ms slices, interleaved, 1.5 s each, after one untimed slice each.
      const G = 50000, idx = Uint32Array.from({ length: G }, () => rng.nextBelow(n));
      const db = { async get(k) { return s.get(k); }, async noop(k) { return k; } };
      const pre = Array.from(idx, (k) => keys[k]);
      const variants = {
        suite: async (i) => { if ((await db.get(keys[idx[i]])) == null) throw new Error('miss'); },
        one_await: async (i) => { if (s.get(keys[idx[i]]) == null) throw new Error('miss'); },
        keys_gathered: async (i) => { if ((await db.get(pre[i])) == null) throw new Error('miss'); },
        has: async (i) => { if (!(await s.has(keys[idx[i]]))) throw new Error('miss'); },
        harness: async (i) => { if ((await db.noop(keys[idx[i]])) == null) throw new Error('miss'); },
      };
      // the same records in an in-memory BTreeMap: what the pool costs a get
      const m = new BTreeMap(null, { keys: 'utf8', values: 'bytes' });
      for (let i = 0; i < n; i++) m.set(keys[i], s.get(keys[i]));
      variants.map_get = async (i) => { if (m.get(keys[idx[i]]) == null) throw new Error('miss'); };
      const syncGet = (i0, end) => { let i = i0; for (; now() < end; i++) if (s.get(keys[idx[i % G]]) == null) throw new Error('miss'); return i - i0; };
      const tot = {};
      for (let round = -1; round < 60; round++) {
        for (const [name, op] of Object.entries(variants)) {
          const t0 = now(), end = t0 + 25;
          let i = (round + 1) * 997, c = 0;
          for (; ; c++) { await op((i + c) % G); if (now() > end) { c++; break; } }
          if (round >= 0) { tot[name] ??= [0, 0]; tot[name][0] += now() - t0; tot[name][1] += c; }
        }
        const t0 = now(), c = syncGet(round * 997 + G, t0 + 25);
        if (round >= 0) { tot.sync_get ??= [0, 0]; tot.sync_get[0] += now() - t0; tot.sync_get[1] += c; }
      }
      log('suite get taken apart, mean per op: ' + Object.entries(tot).map(([k, [ms, c]]) => `${k} ${((ms / c) * 1000).toFixed(2)} us`).join(', '));
    }
    if (mode === 'alloc') {
      const u8 = new Uint8Array(w.memory.buffer);
      const off = w.exports.at_alloc(8192);
      for (let rep = 0; rep < 3; rep++) {
        const parts = [];
        let keep = 0;
        for (const len of [16, 64, 65, 100, 1000]) {
          const a = now();
          for (let i = 0; i < 100000; i++) keep += u8.slice(off, off + len).length;
          parts.push(`${len} B ${(((now() - a) / 100000) * 1e6).toFixed(0)} ns`);
        }
        let a = now();
        for (let i = 0; i < 2000; i++) for (let j = 0; j < 50; j++) keep += u8.slice(off + j * 100, off + j * 100 + 100).length;
        const each = now() - a;
        a = now();
        for (let i = 0; i < 2000; i++) { const b = u8.slice(off, off + 5000); for (let j = 0; j < 50; j++) keep += b.subarray(j * 100, j * 100 + 100).length; }
        log(`slice() of wasm memory: ${parts.join(', ')}; 50 values of 100 B: a slice each ${us(each, 2000)}, one slice + 50 subarrays ${us(now() - a, 2000)} (${keep > 0})`);
        // a view of 100 B of a 16 KiB ArrayBuffer (get's slab) and the copy into it
        const ab = new ArrayBuffer(16384), abu8 = new Uint8Array(ab), vparts = [];
        for (const [name, f] of [
          ['new Uint8Array(ab, off, 100)', (i) => new Uint8Array(ab, (i & 127) * 128, 100).length],
          ['abu8.subarray', (i) => abu8.subarray((i & 127) * 128, (i & 127) * 128 + 100).length],
          ['copy 100 B in (set)', (i) => { abu8.set(u8.subarray(off, off + 100), (i & 127) * 128); return 1; }],
          ['new Uint8Array(100)', () => new Uint8Array(100).length],
          ['new Uint8Array(64)', () => new Uint8Array(64).length],
          ['copyOut 100 B', (i) => copyOut(u8, off + (i & 63), 100).length],
          ['hand copy 100 B + view', (i) => { const p = (i & 127) * 128; for (let j = 0; j < 100; j++) abu8[p + j] = u8[off + j]; return new Uint8Array(ab, p, 100).length; }],
        ]) {
          const a = now();
          for (let i = 0; i < 100000; i++) keep += f(i);
          vparts.push(`${name} ${(((now() - a) / 100000) * 1e6).toFixed(0)} ns`);
        }
        log(`views: ${vparts.join(', ')}`);
      }
    }
    if (mode === 'cold') {
      await s.close();
      const fileBytes = (await (await dir.getFileHandle('store')).getFile()).size;
      const pool = Math.max(1 << 20, Math.floor(fileBytes / 10));
      const pages = Math.floor(fileBytes / 4096);
      const chunk = new Uint8Array(1 << 20);
      for (let o = 0; o < pages * 4096; o += chunk.length) raw.write(chunk.subarray(0, Math.min(chunk.length, pages * 4096 - o)), { at: o });
      const warm = await BTreeStore.open({ path, storage: 'opfs', keys: 'utf8', values: 'bytes' });
      for (let i = 0; i < n; i++) warm.get(keys[i]);
      let tw = 0;
      for (let r = 0; r < 10; r++) { const a = now(); for (let i = 0; i < 2000; i++) warm.get(keys[rng.nextBelow(n)]); tw += now() - a; }
      await warm.close();
      const c = await BTreeStore.open({ path, storage: 'opfs', keys: 'utf8', values: 'bytes', poolSize: pool });
      for (let i = 0; i < 20000; i++) c.get(keys[rng.nextBelow(n)]);
      let tc = 0, traw = 0;
      const st0 = c.stats();
      t.reset();
      for (let r = 0; r < 10; r++) {
        t.on = true;
        let a = now();
        for (let i = 0; i < 2000; i++) c.get(keys[rng.nextBelow(n)]);
        tc += now() - a;
        t.on = false;
        a = now();
        for (let i = 0; i < 2000; i++) t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 });
        traw += now() - a;
      }
      const misses = (c.stats().misses - st0.misses) / 20000;
      // where the read() lands: a 4 KiB buffer of its own vs a view into wasm memory (what
      // the store's host import passes), alternating rounds, least of each
      const wp = w.exports.at_alloc(4096);
      let tOwn = Infinity, tWasm = Infinity;
      for (let r = 0; r < 10; r++) {
        let a = now();
        for (let i = 0; i < 1000; i++) t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 });
        tOwn = Math.min(tOwn, now() - a);
        a = now();
        for (let i = 0; i < 1000; i++) t.raw.read.call(raw, new Uint8Array(w.memory.buffer, wp, 4096), { at: rng.nextBelow(pages) * 4096 });
        tWasm = Math.min(tWasm, now() - a);
      }
      log(`raw 4 KiB read into its own buffer ${us(tOwn, 1000)} vs into a view of wasm memory (${(w.memory.buffer.byteLength / 2 ** 20).toFixed(0)} MiB) ${us(tWasm, 1000)}`);
      // the page checksum as the pool verifies it (4092 bytes), least of 10 rounds: page_hash in
      // builds with format version 2 (new stores), else CRC-32C
      const buf = w.exports.at_alloc(4096);
      const sumName = w.exports.at_page_hash ? 'page_hash' : 'CRC-32C';
      const pageSum = w.exports.at_page_hash ?? w.exports.at_checksum;
      let x = 0, crc = Infinity;
      for (let r = 0; r < 10; r++) {
        const a = now();
        for (let i = 0; i < 2000; i++) x ^= pageSum(buf, 4092);
        crc = Math.min(crc, (now() - a) / 2000);
      }
      log(`cold: file ${(fileBytes / 2 ** 20).toFixed(1)} MiB, pool ${(pool / 2 ** 20).toFixed(1)} MiB, ${misses.toFixed(3)} misses per get (${x >>> 31})`);
      log(`cold get ${us(tc, 20000)} (${rate(tc, 20000)}) vs raw 4 KiB read ${us(traw, 20000)} (${rate(traw, 20000)}): ratio ${(traw / tc).toFixed(2)}`);
      log(`  parts per cold get: a warm get ${us(tw, 20000)}; read() ${us(t.read, 20000)} (${us(t.read, t.reads)} per call); ` +
        `${sumName} of 4 KiB ${(crc * 1000).toFixed(1)} us x ${misses.toFixed(2)} = ${(crc * misses * 1000).toFixed(1)} us; ` +
        `the rest ${(((tc - t.read - tw) / 20000 - crc * misses) * 1000).toFixed(1)} us`);
      await c.close();
      // the same reads on the store's own data file (closed, so a handle can be had) vs the raw file
      const sh = await (await dir.getFileHandle('store')).createSyncAccessHandle();
      let tStore = Infinity, tRaw = Infinity;
      for (let r = 0; r < 10; r++) {
        let a = now();
        for (let i = 0; i < 1000; i++) t.raw.read.call(sh, page, { at: rng.nextBelow(pages) * 4096 });
        tStore = Math.min(tStore, now() - a);
        a = now();
        for (let i = 0; i < 1000; i++) t.raw.read.call(raw, page, { at: rng.nextBelow(pages) * 4096 });
        tRaw = Math.min(tRaw, now() - a);
      }
      sh.close();
      log(`raw 4 KiB reads on the store's data file ${us(tStore, 1000)} vs on the raw file ${us(tRaw, 1000)} (least of 10 rounds)`);
    } else if (mode === 'split') {
      await s.close();
      await splitMode({ w, dir, path, keys, n, raw, page, rng, t });
    } else {
      await s.close();
    }
    raw.close();
    await root.removeEntry('diagnose', { recursive: true }).catch(() => {});
    self.postMessage({ done: true });
  } catch (err) {
    self.postMessage({ fatal: String(err?.stack || err) });
  }
};
self.postMessage({ ready: true });
