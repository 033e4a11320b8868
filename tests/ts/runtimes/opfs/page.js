// Main thread of the OPFS test page: one dedicated worker, driven by the test through
// window.call(cmd) → the worker's reply (or a rejection carrying its error's name and code).
// Progress messages from the worker ({ event }) are logged to the console, where the test
// reads them (the kill test counts commits the page saw resolve).
import * as api from '/dist/index.js';

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
  window.call(cmd).then((result) => ({ result }), (e) => ({ error: { name: e.name, code: e.code, message: e.message, causeName: e.causeName } }));

/** Opening 'opfs' on the main thread: sync access handles do not exist here. */
window.openOnMainThread = async () => {
  try {
    const s = await api.BTreeStore.open({ path: 'main-thread', storage: 'opfs' });
    await s.close();
    return { opened: true };
  } catch (e) {
    return { error: { name: e.name, code: e.code, message: e.message } };
  }
};

window.ready = call({ op: 'ping' }).then(() => (document.getElementById('out').textContent = 'ready'));
