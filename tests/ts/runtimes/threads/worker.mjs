// A module worker on a map the page shared (main.mjs).
import { BTreeMap, loadWasm } from '/dist/index.js';
import { runStress } from '/tests/ts/fixtures/threads-stress.mjs';

onmessage = async (e) => {
  const m = e.data;
  if (m.mode === 'stress') {
    const map = await BTreeMap.attach(m.handle);
    const r = runStress(map, m.id, m.ops, 3);
    map.free();
    postMessage(r);
    return;
  }
  // 'hold': take the tree latch exclusive (test-only export), tell the page, keep it until the
  // page is about to call, then 50 ms more (the page's call spins meanwhile), release.
  const wasm = await loadWasm({ attach: m.handle.instance });
  const flag = m.flag;
  wasm.exports.at_debug_latch(m.handle.tree, 1);
  Atomics.store(flag, 0, 1);
  while (Atomics.load(flag, 0) !== 3) Atomics.wait(flag, 0, 1, 1000);
  Atomics.wait(flag, 0, 3, 50);
  Atomics.store(flag, 0, 4);
  wasm.exports.at_debug_latch(m.handle.tree, 0);
  postMessage('released');
};
