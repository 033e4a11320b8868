// Deno: workers that attach a shared map and end with self.close() give its stack back
// (tests/ts/fixtures/selfclose.mjs; tests/ts/store.deno.test.ts). With a directory argument,
// also a shared store whose attached worker starts close() without awaiting it and calls
// self.close(): the owner's store stays writable and keeps every write (freed under its
// pending commit, the store turned read-only for every thread: the verify35 probe).
// Prints JSON.
import { BTreeMap, BTreeStore, loadWasm } from '../../dist/index.js';
import { selfClose } from './fixtures/selfclose.mjs';

const out = await selfClose(BTreeMap, loadWasm, 40);
if (Deno.args[0] !== undefined) {
  const path = `${Deno.args[0]}/selfclose.db`;
  const wasm = await loadWasm({ threads: true });
  const s = await BTreeStore.open({ path, wasm });
  s.set('a', 1);
  await s.commit();
  const flag = new Int32Array(new SharedArrayBuffer(8));
  const w = new Worker(new URL('./fixtures/selfclose-store-worker.mjs', import.meta.url), { type: 'module' });
  w.postMessage({ handle: s.share(), out: flag });
  while (Atomics.load(flag, 0) === 0) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 300));
  try {
    s.set('owner', 2);
    await s.close();
    out.store = 'ok';
  } catch (e) {
    out.store = `${e.code}: ${e.message}`;
  }
  const r = await BTreeStore.open({ path });
  out.storeKeys = [...r.keys()];
  out.workerClose = ['not run', 'resolved', 'refused'][Atomics.load(flag, 1)];
  await r.close();
}
console.log(JSON.stringify(out));
Deno.exit(0);
