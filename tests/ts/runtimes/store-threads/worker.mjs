// A module worker of store-threads/main.mjs: the owner (opens, shares, checks) or the peer
// (attaches). Both run the stress in rounds with a commit after each.
import { BTreeStore, loadWasm } from '/dist/index.js';
import { checkStress, runStress } from '/tests/ts/fixtures/threads-stress.mjs';

const ROUNDS = 4;
const PAD = '.'.repeat(400);

async function stress(store, id, ops) {
  const state = {};
  let r = { own: [], last: [], failure: '' };
  let commits = 0;
  for (let i = 0; i < ROUNDS && !r.failure; i++) {
    r = runStress(store, id, Math.ceil(ops / ROUNDS), 5, state, PAD);
    await store.commit();
    commits++;
  }
  return { ...r, commits };
}

let inbox = null;
const nextMessage = () => new Promise((resolve) => (inbox = resolve));

onmessage = async (e) => {
  const m = e.data;
  if (inbox) { const f = inbox; inbox = null; f(m); return; }
  try {
    if (m.mode === 'peer') {
      const store = await BTreeStore.attach(m.handle);
      const r = await stress(store, 2, m.ops);
      await store.close();
      postMessage(r);
      return;
    }
    const wasm = await loadWasm({ threads: true });
    const store = await BTreeStore.open({ path: m.path, storage: 'opfs', wasm, poolSize: 1 << 20 });
    const waitPeer = nextMessage();
    postMessage({ handle: store.share() });
    const mine = await stress(store, 1, m.ops);
    const { peer } = await waitPeer;
    const problems = checkStress(store, [mine, peer]);
    const stats = store.stats();
    await store.close();
    const again = await BTreeStore.open({ path: m.path, storage: 'opfs', wasm: await loadWasm() });
    const reopened = checkStress(again, [mine, peer]);
    const size = again.size;
    await again.close();
    postMessage({ build: wasm.build, problems, reopened, size, evictions: stats.evictions, misses: stats.misses, ownerFailure: mine.failure, ownerCommits: mine.commits });
  } catch (err) {
    postMessage({ error: String(err && err.stack ? err.stack : err), code: err?.code });
  }
};
