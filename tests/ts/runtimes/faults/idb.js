// Fault injection over the real IndexedDB path (main thread): IDBObjectStore.prototype.put
// and .get are wrapped so that
//   'put-throw': the k-th put throws synchronously (a DOMException, as put does for bad data);
//   'put-abort': the k-th put is issued and then its transaction is aborted;
//   'get':       the k-th get throws synchronously (a failed page read).
// Then the store is closed, the faults lifted and the store reopened: it must be exactly the
// last resolved commit (a commit is one transaction: all or nothing). With `checkpointBytes`
// the store's log is small, so that puts fall in commits that append a log frame and in
// commits that checkpoint (a put per page and a clear of the log) alike; `clears` counts the
// checkpoints (close() runs one too), `framePuts` which puts were a commit's frame; `onErrors`
// the codes the store's onError got (a failed checkpoint at close goes there), `putsBeforeClose`
// the puts before close(). `frameAtClose` ends the workload with a commit of a small frame.
import * as api from '/dist/index.js';
import { compareReopened, errorOf, runWorkload } from '../shared/workload.js';

const S = IDBObjectStore.prototype;
const real = { put: S.put, get: S.get, clear: S.clear };
const fault = { mode: '', k: Infinity, puts: 0, gets: 0, clears: 0, framePuts: [], fired: false };

S.put = function put(value, key) {
  if (fault.mode === 'put-throw' || fault.mode === 'put-abort' || fault.mode === 'count') {
    ++fault.puts;
    if (this.name === 'log') fault.framePuts.push(fault.puts);
    if (fault.puts === fault.k) {
      fault.fired = true;
      if (fault.mode === 'put-throw') throw new DOMException('injected fault: put', 'DataError');
      const req = real.put.call(this, value, key);
      this.transaction.abort();
      return req;
    }
  }
  return real.put.call(this, value, key);
};
S.clear = function clear() {
  if (fault.mode !== '') fault.clears++;
  return real.clear.call(this);
};
S.get = function get(key) {
  if (fault.mode === 'get' || fault.mode === 'count') {
    if (++fault.gets === fault.k) {
      fault.fired = true;
      throw new DOMException('injected fault: get', 'InvalidStateError');
    }
  }
  return real.get.call(this, key);
};

export async function run(cmd) {
  const wasm = await api.loadWasm({ threads: cmd.threads });
  await new Promise((res, rej) => {
    const r = indexedDB.deleteDatabase('adaptree:' + cmd.path);
    r.onsuccess = res;
    r.onerror = () => rej(r.error);
  });
  const onErrors = [];
  const s = await api.BTreeStore.open({ path: cmd.path, storage: 'indexeddb', poolSize: 1 << 20, wasm, checkpointBytes: cmd.checkpointBytes, onError: (e) => onErrors.push(e.code) });
  Object.assign(fault, { mode: cmd.mode, k: cmd.k ?? Infinity, puts: 0, gets: 0, clears: 0, framePuts: [], fired: false });
  const r = await runWorkload(s, cmd);
  if (r.error === undefined && cmd.frameAtClose) {
    // One more commit that changes nothing the model sees (a key set and deleted again): a
    // small frame, so that the log is not empty at close and close() checkpoints it.
    try {
      await s.setAsync('~', 1);
      await s.deleteAsync('~');
      await s.commit();
    } catch (e) {
      r.error = errorOf(e);
    }
  }
  const putsBeforeClose = fault.puts;
  let closeError;
  await s.close({ commit: false }).catch((e) => (closeError = errorOf(e)));
  const counts = { puts: fault.puts, putsBeforeClose, gets: fault.gets, clears: fault.clears, framePuts: fault.framePuts, fired: fault.fired };
  fault.mode = '';
  // close() releases the lock a moment later (the lock manager): wait for it. No page 0 (the
  // first commit failed) is a new empty store: what was committed, nothing.
  const again = await api.BTreeStore.open({ path: cmd.path, storage: 'indexeddb', poolSize: 1 << 20, wasm, wait: true });
  const cmp = await compareReopened(again, r);
  await again.close();
  return { ...counts, error: r.error, closeError, onErrors, commits: r.commits, ...cmp };
}
