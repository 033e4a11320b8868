// The suite on 'opfs' inside a dedicated worker, where the store uses sync access handles.
import { runSuite } from './suite.js';

onmessage = async (e) => {
  try {
    postMessage(await runSuite('opfs', e.data.prefix));
  } catch (err) {
    postMessage({ error: String(err && err.stack ? err.stack : err) });
  }
};
