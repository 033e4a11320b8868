// Commits that log deltas vs whole pages (docs/DECISIONS.md, "Commits log deltas"), side by
// side in one run on adaptree's Node file store (BTreeStore, storage 'node'): the same store
// contents, one with logDeltas (the default) and one with logDeltas: false (format-1 logs, as
// before deltas), measured in alternating rounds so that a loaded machine hurts both alike.
//   node bench/log-deltas.mjs [--records 100000] [--rounds 3] [--out bench/out/log-deltas.json]
// Workloads (the persist suites' records: keys 'k' + 10 digits, 100-byte values, 111 bytes):
//   put_autocommit: one new record, then commit (fdatasync)       -> commits/s, log bytes/commit
//   put_tx1000:     1000 new records at random places, one commit -> records/s, log bytes/commit
// Log bytes are the core's commit_log_bytes (frames appended by commits, commit frames
// included; checkpoints not), so checkpoints do not hide them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeRecords } from './lib/records.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg('records', 100_000));
const ROUNDS = Number(arg('rounds', 3));
const ONE = Number(arg('autocommit', 500));
const TX = Number(arg('tx', 10));
const out = arg('out', 'bench/out/log-deltas.json');

const { init, BTreeStore } = await import('../dist/index.js');
await init();
const total = N + ROUNDS * (ONE + TX * 1000);
const { keys, value } = makeRecords(total, 7);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-log-deltas-'));

async function build(name, logDeltas) {
  const file = path.join(dir, `${name}.db`);
  const s = await BTreeStore.open({ path: file, storage: 'node', keys: 'utf8', values: 'bytes', logDeltas });
  for (let i = 0; i < N; i += 1000) {
    for (let j = i; j < Math.min(N, i + 1000); j++) s.set(keys[j], value(j));
    await s.commit();
  }
  await s.close();  // checkpointed: each configuration starts from a data file and an empty log
  return BTreeStore.open({ path: file, storage: 'node', keys: 'utf8', values: 'bytes', logDeltas });
}

const configs = [
  { name: 'deltas', logDeltas: true },
  { name: 'images', logDeltas: false },
];
for (const c of configs) c.store = await build(c.name, c.logDeltas);
const acc = {};
for (const c of configs) acc[c.name] = { one: { ops: 0, sec: 0, bytes: 0, commits: 0 }, tx: { ops: 0, sec: 0, bytes: 0, commits: 0 } };
let next = N;
const st = (s) => s.stats();
for (let r = 0; r < ROUNDS; r++) {
  // Both configurations get the same keys in each round.
  const oneFrom = next;
  next += ONE;
  const txFrom = next;
  next += TX * 1000;
  for (const c of r % 2 ? [...configs].reverse() : configs) {
    const s = c.store;
    const a = acc[c.name];
    let b0 = Number(st(s).commit_log_bytes);
    let t0 = performance.now();
    for (let i = 0; i < ONE; i++) {
      s.set(keys[oneFrom + i], value(oneFrom + i));
      await s.commit();
    }
    a.one.sec += (performance.now() - t0) / 1000;
    a.one.ops += ONE;
    a.one.commits += ONE;
    a.one.bytes += Number(st(s).commit_log_bytes) - b0;
    b0 = Number(st(s).commit_log_bytes);
    t0 = performance.now();
    for (let t = 0; t < TX; t++) {
      for (let j = 0; j < 1000; j++) s.set(keys[txFrom + t * 1000 + j], value(txFrom + t * 1000 + j));
      await s.commit();
    }
    a.tx.sec += (performance.now() - t0) / 1000;
    a.tx.ops += TX * 1000;
    a.tx.commits += TX;
    a.tx.bytes += Number(st(s).commit_log_bytes) - b0;
  }
}
const rows = [];
for (const c of configs) {
  const a = acc[c.name];
  const s = st(c.store);
  for (const [w, m] of [['put_autocommit', a.one], ['put_tx1000', a.tx]]) {
    rows.push({
      suite: 'log-deltas', workload: w, impl: 'adaptree-file', config: c.name, records: N,
      ops: m.ops, seconds: +m.sec.toFixed(4), ops_per_sec: +(m.ops / m.sec).toFixed(1),
      commits_per_sec: +(m.commits / m.sec).toFixed(1),
      log_bytes_per_commit: Math.round(m.bytes / m.commits), log_bytes_per_record: +(m.bytes / m.ops).toFixed(1),
      delta_frames: s.delta_frames, image_frames: s.image_frames,
    });
  }
  await c.store.close();
}
const ratio = {};
for (const w of ['put_autocommit', 'put_tx1000']) {
  const d = rows.find((x) => x.config === 'deltas' && x.workload === w), i = rows.find((x) => x.config === 'images' && x.workload === w);
  ratio[w] = { throughput: +(d.ops_per_sec / i.ops_per_sec).toFixed(2), log_bytes: +(d.log_bytes_per_commit / i.log_bytes_per_commit).toFixed(3) };
}
for (const r of rows) {
  console.log(`${r.workload.padEnd(15)} ${r.config.padEnd(7)} ${String(r.ops_per_sec).padStart(10)} records/s ` +
    `${String(r.commits_per_sec).padStart(8)} commits/s ${String(r.log_bytes_per_commit).padStart(9)} log B/commit ${String(r.log_bytes_per_record).padStart(7)} B/record`);
}
for (const [w, x] of Object.entries(ratio)) console.log(`${w}: deltas/images throughput ${x.throughput}x, log bytes ${x.log_bytes}x`);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), host: os.hostname(), cpus: os.cpus().length, rounds: ROUNDS, rows, ratio }, null, 2) + '\n');
console.log(`wrote ${out}`);
fs.rmSync(dir, { recursive: true, force: true });
