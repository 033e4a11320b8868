// A dedicated worker of opfs-shared.test.ts: runs the code it is sent as the body of an async
// function of (A: the package, data, G: this worker's globals) and answers its result.
import * as A from '/dist/index.js';

const G = {};
self.onmessage = async (ev) => {
  const { id, code, data } = ev.data;
  try {
    const done = await new Function('A', 'data', 'G', `return (async () => { ${code} })()`)(A, data, G);
    self.postMessage({ id, done });
  } catch (e) {
    self.postMessage({ id, threw: { name: e?.constructor?.name, code: e?.code, message: String(e?.message ?? e) } });
  }
};
self.postMessage({ ready: true });
