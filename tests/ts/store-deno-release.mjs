// Deno entry (tests/ts/store.deno.test.ts): a store on Deno files shared with a Deno worker;
// the owner closes it while the worker's attached store sits idle. The worker's store must let
// go of its files without a call of its own (Deno has no unref'd BroadcastChannel: an unref'd
// timer looks), and the process must still end by itself. Prints JSON: the worker's open
// descriptors of the store's files while attached and ~1 s after the owner's close.
import { BTreeStore, loadWasm } from '../../dist/index.js';

const fdsOf = (path) => {
  let n = 0;
  for (const e of Deno.readDirSync('/proc/self/fd')) {
    try {
      if (Deno.readLinkSync(`/proc/self/fd/${e.name}`).startsWith(path)) n++;
    } catch {
      /* gone meanwhile */
    }
  }
  return n;
};

if (self.name === 'peer') {
  self.onmessage = async (e) => {
    if (e.data.handle) {
      self.store = await BTreeStore.attach(e.data.handle);
      self.store.set('from-worker', 1);
      await self.store.commit();
      self.postMessage({ attached: fdsOf(e.data.path) });
    } else {
      // The owner closed the store; this worker has made no call since.
      await new Promise((r) => setTimeout(r, 1000));
      self.postMessage({ after: fdsOf(e.data.path) });
    }
  };
} else {
  const path = `${Deno.args[0]}/release.db`;
  const wasm = await loadWasm({ threads: true });
  const store = await BTreeStore.open({ path, wasm });
  const worker = new Worker(import.meta.url, { type: 'module', name: 'peer' });
  const next = () => new Promise((resolve) => (worker.onmessage = (e) => resolve(e.data)));
  let reply = next();
  worker.postMessage({ handle: store.share(), path });
  const { attached } = await reply;
  await store.close();
  reply = next();
  worker.postMessage({ path });
  const { after } = await reply;
  worker.terminate();
  const again = await BTreeStore.open({ path, wasm: await loadWasm() });
  console.log(JSON.stringify({ attached, after, value: again.get('from-worker') }));
  await again.close();
}
