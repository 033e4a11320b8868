// A tab of opfs-shared.test.ts: starts module workers (worker.js) and runs code in them.
// mkWorker() → its index; wrun(i, code, data) → { done } or { threw: { name, code, message } };
// wkill(i) terminates worker i from outside (no code runs in it).
const workers = [];
window.mkWorker = () =>
  new Promise((resolve, reject) => {
    const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    w.pending = new Map();
    w.seq = 0;
    w.onmessage = (ev) => {
      const m = ev.data;
      if (m.ready) {
        workers.push(w);
        resolve(workers.length - 1);
        return;
      }
      const done = w.pending.get(m.id);
      w.pending.delete(m.id);
      done?.('threw' in m ? { threw: m.threw } : { done: m.done });
    };
    w.onerror = (e) => reject(new Error(`worker error: ${e.message}`));
  });
window.wrun = (i, code, data) =>
  new Promise((resolve) => {
    const w = workers[i];
    const id = ++w.seq;
    w.pending.set(id, resolve);
    w.postMessage({ id, code, data });
  });
window.wkill = (i) => workers[i].terminate();
window.ready = Promise.resolve();
