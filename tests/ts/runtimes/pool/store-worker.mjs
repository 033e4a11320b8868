// A dedicated module worker that opens a store on OPFS (sync access handles), shares it with
// a WorkerPool of 2 nested module workers (each opens its own 'readwrite-unsafe' handles on
// the same files), writes and reads through them, closes, and reopens the store on the st
// build to check what the workers wrote (pool-browser.test.ts, via main.mjs).
import { BTreeStore, WorkerPool, loadWasm } from '/dist/index.js';

const key = (i) => `k${String(i).padStart(7, '0')}`;

async function run() {
  const wasm = await loadWasm({ threads: true });
  const root = await navigator.storage.getDirectory();
  await root.removeEntry('pool-store', { recursive: true }).catch(() => {});
  const path = 'pool-store/s';
  const store = await BTreeStore.open({ path, storage: 'opfs', wasm, poolSize: 1 << 20 });
  const pool = await WorkerPool.create(store, { workers: 2 });
  const n = 6000;
  const entries = [];
  for (let i = 0; i < n; i++) entries.push([key((i * 7919) % n), { n: (i * 7919) % n, pad: 'p'.repeat(200) }]);
  await pool.setMany(entries);
  const got = await pool.getMany([key(7), 'absent', key(n - 1)]);
  await pool.close(); // each worker's store commits its writes and detaches
  const evictions = store.stats().evictions;
  await store.close();
  const again = await BTreeStore.open({ path, storage: 'opfs' }); // the st build
  const result = { got: got.map((v) => (v ? v.n : null)), size: again.size, last: again.get(key(n - 1))?.n, evictions };
  await again.close();
  return result;
}

run().then(
  (r) => postMessage(r),
  (e) => postMessage({ error: String(e && e.stack ? e.stack : e) }),
);
