// Fault injection over the real OPFS sync-access-handle path: the k-th write, flush or
// truncate of any FileSystemSyncAccessHandle fails (a write is torn: its first half reaches
// the file), and every one after it fails too (the device is gone) until the run ends. Then
// the store is closed, the faults are lifted and the store reopened: it must be exactly the
// last resolved commit, or the one in flight when the failure came.
import { BTreeStore, init } from '/dist/index.js';
import { compareReopened, errorOf, runWorkload } from '../shared/workload.js';

const P = FileSystemSyncAccessHandle.prototype;
const real = { write: P.write, flush: P.flush, truncate: P.truncate };
const fault = { on: false, k: Infinity, n: 0, failed: false, op: '', firstTruncate: 0 };
const injected = (what) => new DOMException(`injected fault: ${what}`, 'InvalidStateError');

/** True when this I/O must fail (the k-th, and every one after it). */
function hit(op) {
  if (!fault.on) return false;
  if (fault.failed) return true;
  if (++fault.n < fault.k) return false;
  fault.failed = true;
  fault.op = op;
  return 'first';
}

P.write = function write(buffer, options) {
  const h = hit('write');
  if (h === 'first') {
    const half = buffer.subarray(0, buffer.length >> 1);
    if (half.length > 0) real.write.call(this, half, options); // torn
  }
  if (h) throw injected('write');
  return real.write.call(this, buffer, options);
};
P.flush = function flush() {
  if (hit('flush')) throw injected('flush');
  return real.flush.call(this);
};
P.truncate = function truncate(size) {
  const h = hit('truncate');
  // Which I/O the run's first truncate was (a commit's checkpoint keeps the log, so the
  // truncates come late, in close's checkpoint): the test puts a k there.
  if (fault.on && fault.firstTruncate === 0) fault.firstTruncate = fault.n;
  if (h) throw injected('truncate');
  return real.truncate.call(this, size);
};

async function remove(path) {
  const root = await navigator.storage.getDirectory();
  try {
    await root.removeEntry(path.split('/')[0], { recursive: true });
  } catch (e) {
    if (e.name !== 'NotFoundError') throw e;
  }
}

async function run(cmd) {
  const wasm = await init({ threads: cmd.threads });
  await remove(cmd.path);
  // A small checkpoint threshold: checkpoints (data file writes, flushes, log truncates) happen
  // during the workload too (the smallest allowed: commits log deltas, the log grows slowly).
  // A checkpoint that fails after its commit is durable goes to onError (the commit resolves).
  let checkpointError;
  const s = await BTreeStore.open({ path: cmd.path, storage: 'opfs', poolSize: 1 << 20, checkpointBytes: 64 << 10, wasm, onError: (e) => (checkpointError ??= errorOf(e)) });
  Object.assign(fault, { on: true, k: cmd.k ?? Infinity, n: 0, failed: false, op: '', firstTruncate: 0 });
  const r = await runWorkload(s, cmd);
  const workIos = fault.n;
  let deltas, checkpoints;
  try {
    const st = s.stats();
    deltas = st.delta_frames;
    checkpoints = st.checkpoints;
  } catch {
    // a store closed by its failure: no figures
  }
  let closeError;
  await s.close({ commit: false }).catch((e) => (closeError = errorOf(e)));
  const ios = fault.n, op = fault.op, firstTruncate = fault.firstTruncate;
  fault.on = false;
  const again = await BTreeStore.open({ path: cmd.path, storage: 'opfs', create: false, poolSize: 1 << 20, wasm });
  const cmp = await compareReopened(again, r);
  await again.close();
  return { ios, workIos, op, firstTruncate, deltas, checkpoints, error: r.error, checkpointError, closeError, commits: r.commits, ...cmp };
}

onmessage = async (e) => {
  try {
    postMessage({ seq: e.data.seq, result: await run(e.data.cmd) });
  } catch (err) {
    postMessage({ seq: e.data.seq, error: errorOf(err) });
  }
};
