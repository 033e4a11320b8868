// Deno entry for a store on Deno files shared with a Deno worker (docs/THREADS.md, "Stores";
// tests/ts/store.deno.test.ts): the owner opens it on the mt build and shares it; the worker
// (this same file, as a module worker) attaches, opening its own FsFiles on the same paths;
// both run the stress of fixtures/threads-stress.mjs in rounds with a commit after each, on
// a pool far smaller than the data. Prints JSON: the checks against both models, before and
// after reopening on the st build, and the pool's evictions.
import { BTreeStore, loadWasm } from '../../dist/index.js';
import { checkStress, runStress } from './fixtures/threads-stress.mjs';

const ROUNDS = 4, OPS = 6000, PAD = '.'.repeat(300);

async function stress(store, id) {
  const state = {};
  let r = { own: [], last: [], failure: '' };
  for (let i = 0; i < ROUNDS && !r.failure; i++) {
    r = runStress(store, id, OPS / ROUNDS, 9, state, PAD);
    await store.commit();
  }
  return r;
}

if (typeof Deno.args[0] !== 'string' || self.name === 'peer') {
  // The worker.
  self.onmessage = async (e) => {
    const store = await BTreeStore.attach(e.data);
    const r = await stress(store, 2);
    await store.close();
    self.postMessage(r);
  };
} else {
  const path = `${Deno.args[0]}/shared.db`;
  const wasm = await loadWasm({ threads: true });
  const store = await BTreeStore.open({ path, wasm, poolSize: 1 << 20 });
  const worker = new Worker(import.meta.url, { type: 'module', name: 'peer' });
  const peerDone = new Promise((resolve) => (worker.onmessage = (e) => resolve(e.data)));
  worker.postMessage(store.share());
  const mine = await stress(store, 1);
  const peer = await peerDone;
  worker.terminate();
  const out = { build: wasm.build, failures: [mine.failure, peer.failure], problems: checkStress(store, [mine, peer]) };
  out.evicted = store.stats().evictions > 0;
  await store.close();
  const again = await BTreeStore.open({ path, wasm: await loadWasm() });
  out.reopened = checkStress(again, [mine, peer]);
  out.size = again.size > 1000;
  await again.close();
  console.log(JSON.stringify(out));
}
