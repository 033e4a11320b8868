// The page: window.runSuite('indexeddb') runs the suite here on the main thread;
// window.runSuite('opfs') runs it in a dedicated worker (worker.js). Both resolve to
// { tap, supports, databases } or { error }.
import { runSuite } from './suite.js';

function inWorker(prefix) {
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  return new Promise((resolve) => {
    worker.onmessage = (e) => {
      worker.terminate();
      resolve(e.data);
    };
    worker.onerror = (e) => {
      worker.terminate();
      resolve({ error: `worker: ${e.message}` });
    };
    worker.postMessage({ prefix });
  });
}

window.runSuite = async (storage, prefix = 'suite') => {
  try {
    return storage === 'opfs' ? await inWorker(prefix) : await runSuite(storage, prefix);
  } catch (err) {
    return { error: String(err && err.stack ? err.stack : err) };
  }
};
document.getElementById('out').textContent = 'ready';
