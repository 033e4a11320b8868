// persist-node: embedded persistent stores in Node, with the browser suite's workload
// (docs/ANCHORS.md): N records, keys 'k' + 10 digits in random order, 100-byte values, and the
// same with values of P.valueBytes (documents of 1.5 KB: inline in adaptree's leaves since
// session 37, where they took a page each).
// Each store keeps its default durability (named in `config`). adaptree's file backend gets
// a runner here (adaptree-file below). Run by run.mjs as a child process:
//   node bench/lib/persist-node.mjs '<json params>'  -> NDJSON rows on stdout
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SplitMix64 } from './rng.mjs';
import { makeRecords as makeSharedRecords, timedAsync } from './records.mjs';
import { log, fmtOps } from './progress.mjs';

const P = JSON.parse(process.argv[2]);

// Node stores take Buffers: the shared generator's bytes, viewed without a copy.
export function makeRecords(n, seed, valueBytes) {
  const r = makeSharedRecords(n, seed, valueBytes);
  return { keys: r.keys, value: (i) => { const v = r.value(i); return Buffer.from(v.buffer, v.byteOffset, v.byteLength); } };
}

function dirBytes(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.statSync(p).blocks * 512;
  }
  return total;
}

const STORES = {
  async lmdb(dir) {
    const { open } = await import('lmdb');
    const db = open({ path: dir, compression: false, encoding: 'binary' });
    return {
      config: 'default (sync commits)',
      putBatch: async (ks, vs) => db.transactionSync(() => { for (let i = 0; i < ks.length; i++) db.put(ks[i], vs[i]); }),
      putOne: async (k, v) => db.putSync(k, v),
      get: async (k) => db.get(k),
      getMany: async (ks) => db.getMany(ks),
      scan: async (k, n) => { let c = 0; for (const e of db.getRange({ start: k, limit: n })) if (e) c++; return c; },
      close: async () => db.close(),
    };
  },
  async 'classic-level'(dir) {
    const { ClassicLevel } = await import('classic-level');
    const db = new ClassicLevel(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
    await db.open();
    return {
      config: 'default (no fsync per write)',
      putBatch: async (ks, vs) => db.batch(ks.map((k, i) => ({ type: 'put', key: k, value: vs[i] }))),
      putOne: async (k, v) => db.put(k, v),
      get: async (k) => db.get(k),
      getMany: async (ks) => db.getMany(ks),
      scan: async (k, n) => (await db.iterator({ gte: k, limit: n }).all()).length,
      close: async () => db.close(),
    };
  },
  // adaptree's Node file backend (ts/src/storage/node.ts): a BTreeStore on `dir/store.db`
  // (+ -log), utf8 keys, bytes values, 64 MiB pool; one commit per batch / per write.
  async 'adaptree-file'(dir) {
    const { init, BTreeStore } = await import('../../dist/index.js');
    await init();
    const file = path.join(dir, 'store.db');
    const open = (poolSize) => BTreeStore.open({ path: file, storage: 'node', keys: 'utf8', values: 'bytes', poolSize });
    let s = await open(64 << 20);
    return {
      config: 'node files, 64 MiB pool, one fdatasync per commit',
      putBatch: async (ks, vs) => { for (let i = 0; i < ks.length; i++) s.set(ks[i], vs[i]); await s.commit(); },
      putOne: async (k, v) => { s.set(k, v); await s.commit(); },
      get: async (k) => s.get(k),
      getMany: async (ks) => s.getMany(ks),
      scan: async (k, n) => { let c = 0; for (const _ of s.keys({ gte: k, limit: n })) c++; return c; },
      close: async () => s.close(),
      // Cold reads: reopened with a pool a tenth of the data file (at least the 1 MiB minimum),
      // then raw 4 KiB preads at random page offsets of the same file: the physical limit.
      async extra(emit, keys, n, rng, gets) {
        await s.close();
        const bytes = fs.statSync(file).size + fs.statSync(file + '-log').size;
        s = await open(Math.max(1 << 20, Math.floor(bytes / 10)));
        const idx = Uint32Array.from({ length: gets }, () => rng.nextBelow(n));
        let miss = 0;
        emit('get_cold', await timedAsync(gets, P.budgetSec, async (i) => { if (s.get(keys[idx[i]]) === undefined) miss++; }),
          { pool_bytes: Math.max(1 << 20, Math.floor(bytes / 10)), file_bytes: bytes, pool_misses: s.stats().misses });
        if (miss) throw new Error(`${miss} cold gets of present keys missed`);
        await s.close();
        const fd = fs.openSync(file, 'r');
        const pages = Math.max(1, Math.floor(fs.fstatSync(fd).size / 4096));
        const buf = Buffer.alloc(4096);
        emit('pread_4k', await timedAsync(gets, P.budgetSec, async () => { fs.readSync(fd, buf, 0, 4096, rng.nextBelow(pages) * 4096); }), { note: 'raw 4 KiB pread of the data file' });
        fs.closeSync(fd);
        s = await open(64 << 20);
      },
    };
  },
};

async function main() {
  const name = P.impl;
  if (!STORES[name]) { process.stdout.write(JSON.stringify({ skip: true, impl: name, reason: 'no runner' }) + '\n'); return; }
  let make;
  try { make = STORES[name]; } catch (e) { /* unreachable */ }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `adaptree-bench-${name}-`));
  const n = P.records;
  const { keys, value } = makeRecords(n + P.autocommit, P.seed, P.valueBytes ?? 100);
  const vals = keys.map((_, i) => value(i));
  const rng = new SplitMix64(P.seed * 1000 + 51);
  const rows = [];
  const emit = (workload, res, extra = {}) => {
    const row = { suite: P.suite, dataset: P.dataset, workload, impl: name, config: db.config, keys: n, ops: res.ops,
      seconds: +res.seconds.toFixed(6), ops_per_sec: +(res.ops / res.seconds).toFixed(1), ...extra };
    rows.push(row);
    log(`${P.suite} ${name} ${workload}: ${fmtOps(row.ops_per_sec)} ops/s (${res.ops} ops, ${res.seconds.toFixed(2)} s)`);
  };
  const db = await make(dir);
  // put, one transaction/batch per 1000 records
  const B = 1000;
  emit('put_tx1000', await (async () => {
    const t0 = performance.now();
    for (let i = 0; i < n; i += B) await db.putBatch(keys.slice(i, i + B), vals.slice(i, i + B));
    return { ops: n, seconds: (performance.now() - t0) / 1000 };
  })());
  // put, one transaction each (new keys)
  emit('put_autocommit', await timedAsync(P.autocommit, P.budgetSec, (i) => db.putOne(keys[n + i], vals[n + i])));
  const idx = Uint32Array.from({ length: P.gets }, () => rng.nextBelow(n));
  let miss = 0;
  emit('get', await timedAsync(P.gets, P.budgetSec, async (i) => { if ((await db.get(keys[idx[i]])) === undefined) miss++; }));
  const gm = await timedAsync(Math.floor(P.gets / B), P.budgetSec, async (j) => {
    const vs = await db.getMany(Array.from(idx.subarray(j * B, (j + 1) * B), (x) => keys[x]));
    for (const v of vs) if (v === undefined) miss++;
  });
  gm.ops *= B;
  emit('get_batch1000', gm);
  const sorted = [...keys.slice(0, n)].sort();
  let records = 0;
  const sc = await timedAsync(P.scans, P.budgetSec, async () => { records += await db.scan(sorted[rng.nextBelow(n)], 50); });
  emit('scan50', sc, { records });
  if (miss) throw new Error(`${miss} gets of present keys missed`);
  if (db.extra) await db.extra(emit, keys, n, rng, P.gets);
  await db.close();
  const bytes = dirBytes(dir);
  for (const r of rows) r.bytes_per_record = +(bytes / (n + P.autocommit)).toFixed(2);
  fs.rmSync(dir, { recursive: true, force: true });
  for (const r of rows) process.stdout.write(JSON.stringify(r) + '\n');
}

main().catch((e) => {
  log(`${P.impl}: FAILED: ${e.stack || e.message}`);
  process.stdout.write(JSON.stringify({ skip: true, impl: P.impl, reason: String(e.message || e) }) + '\n');
  process.exitCode = 1;
});
