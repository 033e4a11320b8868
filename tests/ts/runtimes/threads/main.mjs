// Workers sharing one BTreeMap in a cross-origin isolated page (docs/THREADS.md): two module
// workers attach to a map the main thread shared and run the stress of threads-stress.mjs
// while the main thread runs it too (its calls spin whenever a worker holds the latch);
// then the main thread waits for a latch a worker holds on purpose (it must spin: a wait
// would trap here).
import { BTreeMap, loadWasm } from '/dist/index.js';
import { checkStress, runStress } from '/tests/ts/fixtures/threads-stress.mjs';

function worker(message) {
  const w = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
  const done = new Promise((resolve, reject) => {
    w.onmessage = (e) => resolve(e.data);
    w.onerror = (e) => reject(new Error(e.message));
  });
  w.postMessage(message);
  return { w, done };
}

async function stress(ops) {
  const wasm = await loadWasm({ threads: true });
  const map = new BTreeMap(null, { wasm });
  const ws = [1, 2].map((id) => worker({ mode: 'stress', handle: map.share(), id, ops }));
  const mine = runStress(map, 0, ops, 3);
  const results = [mine, ...(await Promise.all(ws.map((x) => x.done)))];
  ws.forEach((x) => x.w.terminate());
  const problems = checkStress(map, results);
  const size = map.size;
  map.free();
  return { problems, size, build: wasm.build };
}

async function spin() {
  const wasm = await loadWasm({ threads: true });
  const map = new BTreeMap([['k', 'v']], { wasm });
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const x = worker({ mode: 'hold', handle: map.share(), flag });
  while (Atomics.load(flag, 0) !== 1) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(flag, 0, 3); // the worker holds the latch exclusive until it sees this, and a little longer
  Atomics.notify(flag, 0);
  const value = map.get('k'); // spins until the worker released the latch
  const seenAfter = Atomics.load(flag, 0); // 4: the worker had released it before get returned
  await x.done;
  x.w.terminate();
  map.free();
  return { value, seenAfter };
}

async function run() {
  const ops = Number(new URLSearchParams(location.search).get('ops') ?? 6000);
  return { crossOriginIsolated: globalThis.crossOriginIsolated === true, stress: await stress(ops), spin: await spin() };
}

run().then(
  (r) => { window.__result = r; document.getElementById('out').textContent = JSON.stringify(r, null, 1); },
  (e) => { window.__result = { error: String(e && e.stack ? e.stack : e) }; },
);
