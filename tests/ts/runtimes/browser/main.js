// Browser entry: the page runs the scenario with the st build on the main
// thread and with the mt build in a dedicated worker (cross-origin isolated).
import * as api from '../../../../ts/src/index.ts';
import { scenario } from '../scenario.mjs';

async function run() {
  const results = { crossOriginIsolated: globalThis.crossOriginIsolated === true };
  results.st = await scenario(api, { threads: false });
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  results.mt = await new Promise((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(new Error(e.message));
  });
  return results;
}

run().then(
  (r) => { window.__result = r; document.getElementById('out').textContent = JSON.stringify(r, null, 1); },
  (e) => { window.__result = { error: String(e && e.stack ? e.stack : e) }; },
);
