// Main thread of the OPFS test page: one dedicated worker, driven by the test through
// window.call(cmd) → the worker's reply (or a rejection carrying its error's name and code).
// Progress messages from the worker ({ event }) are logged to the console, where the test
// reads them (the kill test counts commits the page saw resolve).
import * as api from '/dist/index.js';
window.api = api;

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const pending = new Map();
let next = 1;

worker.onmessage = (e) => {
  const m = e.data;
  if (m.event !== undefined) {
    console.log(`adaptree-event ${JSON.stringify(m.event)}`);
    return;
  }
  const p = pending.get(m.seq);
  if (p === undefined) return;
  pending.delete(m.seq);
  if (m.error !== undefined) p.reject(Object.assign(new Error(m.error.message), m.error));
  else p.resolve(m.result);
};
worker.onerror = (e) => console.error(`worker error: ${e.message}`);

/** Sends a command to the worker; resolves with its result, rejects with { name, code, message }. */
window.call = (cmd) =>
  new Promise((resolve, reject) => {
    const seq = next++;
    pending.set(seq, { resolve, reject });
    worker.postMessage({ seq, cmd });
  });

/** Same as call, but resolves with { error: { name, code, message } } instead of rejecting. */
window.tryCall = (cmd) =>
  window.call(cmd).then((result) => ({ result }), (e) => ({ error: { name: e.name, code: e.code, message: e.message, causeName: e.causeName, causeCode: e.causeCode, domCause: e.domCause } }));

/** An 'opfs' store opened on the main thread (it lives in a worker the package starts):
 * applies `ops` with the async twins in two commits, reads them back, closes, reopens. */
window.mainThread = async (path, ops) => {
  const out = {};
  const err = (e) => ({ name: e.name, code: e.code, message: e.message });
  let s = await api.BTreeStore.open({ path, storage: 'opfs' });
  out.isStore = s instanceof api.BTreeStore;
  out.isAsync = s.isAsync;
  out.storage = s.storage;
  const half = Math.floor(ops.length / 2);
  for (const [i, [k, v]] of ops.entries()) {
    if (v === null) await s.deleteAsync(k);
    else await s.setAsync(k, v);
    if (i === half) await s.commit();
  }
  await s.commit();
  out.size = s.size;
  try {
    s.get('x');
    out.syncGet = 'returned';
  } catch (e) {
    out.syncGet = err(e);
  }
  out.first = await s.firstAsync();
  out.getFirst = out.first === undefined ? undefined : await s.getAsync(out.first[0]);
  out.hasMissing = await s.hasAsync('no such key');
  out.many = await s.getManyAsync(ops.slice(0, 3).map(([k]) => k));
  out.stats = (await s.statsAsync()).storage;
  out.range = [];
  for await (const k of s.keysAsync({ gte: 'key:00010', limit: 5 })) out.range.push(k);
  // A dedicated worker of this page (another context of the origin) cannot open it meanwhile.
  out.workerOpen = await tryCall({ op: 'open', path });
  // A bad value is the same typed error as in a worker.
  out.badKey = await s.setAsync(42, 1).then(() => 'ok', err);
  out.badClone = await s.setAsync('f', () => 1).then(() => 'ok', err);
  await s.close();
  out.afterClose = await s.getAsync('a').then(() => 'ok', err);
  s = await api.BTreeStore.open({ path, storage: 'opfs' });
  out.entries = [];
  for await (const e of s) out.entries.push(e);
  out.reopenedSize = s.size;
  await s.close();
  // Close and reopen right away, again and again: never LOCKED by the store just closed.
  out.cycles = 0;
  for (let i = 0; i < 5; i++) {
    const t = await api.BTreeStore.open({ path, storage: 'opfs' });
    await t.setAsync(`cycle${i}`, i);
    await t.close();
    out.cycles++;
  }
  return out;
};

window.ready = call({ op: 'ping' }).then(() => (document.getElementById('out').textContent = 'ready'));
