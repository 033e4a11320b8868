// WorkerPool in a cross-origin isolated page (docs/THREADS.md, "A pool of workers"): the
// pool starts module workers from /dist/pool-worker.js (resolved next to /dist/pool.js, as in
// an unbundled app), sets and reads through them, loads an empty map, reports a typed error,
// refuses calls after close(); closing gives the workers' stacks back (pools opened and
// closed do not grow the memory by their stacks). Also a pool over a store on OPFS, run from a
// dedicated worker (store-worker.mjs).
import { BTreeMap, WorkerPool, loadWasm, markWorkerLost } from '/dist/index.js';

const key = (i) => `k${String(i).padStart(7, '0')}`;

async function run() {
  const wasm = await loadWasm({ threads: true });
  const map = new BTreeMap(null, { wasm });
  const pool = await WorkerPool.create(map, { workers: 2 });
  const n = 4000;
  const entries = [];
  for (let i = 0; i < n; i++) entries.push([key((i * 7919) % n), { n: (i * 7919) % n }]);
  await pool.setMany(entries);
  const keys = [];
  for (let i = n + 300; i-- > 0; ) keys.push(i % 4 === 0 ? `absent${i}` : key(i % n));
  const got = await pool.getMany(keys);
  const same = JSON.stringify(got) === JSON.stringify(map.getMany(keys));
  let tooLarge = null;
  try {
    await pool.setMany([['x'.repeat(5000), 1]]);
  } catch (e) {
    tooLarge = e.code;
  }
  const empty = new BTreeMap(null, { wasm, values: 'utf8' });
  const pool2 = await WorkerPool.create(empty, { workers: 2 });
  const sorted = Array.from({ length: 2000 }, (_, i) => [key(i), `v${i}`]);
  await pool2.load(sorted);
  const loaded = JSON.stringify([...empty.entries()]) === JSON.stringify(sorted);
  await pool2.close();
  await pool.close();
  let afterClose = null;
  try {
    await pool.getMany(['a']);
  } catch (e) {
    afterClose = e.code;
  }
  const before = wasm.exports.at_memory_available(); // free heap + unclaimed room
  for (let i = 0; i < 1; i++) {
    const p = await WorkerPool.create(map, { workers: 2 });
    await p.getMany([key(1)]);
    await p.close();
  }
  const grown = before - wasm.exports.at_memory_available();
  const size = map.size;
  map.free();
  empty.free();
  // An opfs store opened on this (main) thread lives in the package's worker: no pool of
  // workers can reach it (typed refusal); fallback 'inline' runs the calls here.
  const { BTreeStore } = await import('/dist/index.js');
  const root = await navigator.storage.getDirectory();
  await root.removeEntry('pool-main', { recursive: true }).catch(() => {});
  const remote = await BTreeStore.open({ path: 'pool-main/s', storage: 'opfs' });
  let remoteRefused = null;
  try {
    await WorkerPool.create(remote, { workers: 2 });
  } catch (e) {
    remoteRefused = e.code;
  }
  const inline = await WorkerPool.create(remote, { fallback: 'inline' });
  await inline.setMany([['a', 1], ['b', 2]]);
  const remoteInline = { workers: inline.workers, got: await inline.getMany(['b', 'x', 'a']) };
  await inline.close();
  let remoteLost = null; // markWorkerLost cannot reach its tree: typed, nothing poisoned
  try {
    markWorkerLost(remote);
  } catch (e) {
    remoteLost = e.code;
  }
  remoteInline.afterLost = await remote.getAsync('a');
  await remote.close();
  // A pool over a store on OPFS, from a dedicated worker (where the store can live).
  const opfsStore = await new Promise((resolve) => {
    const w = new Worker(new URL('./store-worker.mjs', import.meta.url), { type: 'module' });
    w.onmessage = (e) => { resolve(e.data); w.terminate(); };
    w.onerror = (e) => { resolve({ error: String(e.message ?? e) }); w.terminate(); };
  });
  return { crossOriginIsolated, build: wasm.build, workers: 2, same, size, tooLarge, loaded, afterClose, grownMiB: grown / (1 << 20), opfsStore, remoteRefused, remoteInline, remoteLost };
}

run().then(
  (r) => {
    window.__result = r;
    document.getElementById('out').textContent = JSON.stringify(r);
  },
  (e) => {
    window.__result = { error: String(e && e.stack ? e.stack : e) };
  },
);
