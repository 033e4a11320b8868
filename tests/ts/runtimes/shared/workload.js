// Workloads of the browser tests, served to every fixture (browser-harness.ts): deterministic
// batches of sets and deletes (opfs/worker.js, faults/), and for the fault-injection tests a
// commit after each batch, a model of every committed state, and the check of a reopened
// store against them (in a dedicated worker for opfs, on the main thread for idb).

/** Batch i of `size` ops from a seeded PRNG: sets (80%) and deletes over `keys` keys, values
 * padded with 0..`pad` bytes. */
export function batch(seed, i, size, { keys = 3000, pad = 120 } = {}) {
  let x = (seed * 2654435761 + i * 40503 + 1) >>> 0;
  const rnd = () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
  const ops = [];
  for (let j = 0; j < size; j++) {
    const k = `k${String(Math.floor(rnd() * keys)).padStart(5, '0')}`;
    ops.push(rnd() < 0.2 ? [k, null] : [k, { b: i, j, pad: 'x'.repeat(Math.floor(rnd() * pad)) }]);
  }
  return ops;
}

const sorted = (m) => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const same = (entries, model) => JSON.stringify(entries) === JSON.stringify(sorted(model));
const errorOf = (e) => ({ name: e?.name, code: e?.code, message: String(e?.message ?? e) });

/**
 * Runs `batches` batches on `s` (async twins, a commit after each) until an operation fails.
 * Returns the models of the last resolved commit and of the commit being attempted when the
 * failure came (undefined if it came before the commit), and the error.
 */
export async function runWorkload(s, { seed, batches, size, keys, pad }) {
  const live = new Map();
  let resolved = new Map(), attempted, error, commits = 0;
  for (let i = 0; i < batches && error === undefined; i++) {
    const ops = batch(seed, i, size, { keys, pad });
    try {
      for (const [k, v] of ops) {
        if (v === null) await s.deleteAsync(k);
        else await s.setAsync(k, v);
        if (v === null) live.delete(k);
        else live.set(k, v);
      }
    } catch (e) {
      error = errorOf(e);
      break;
    }
    attempted = new Map(live);
    try {
      await s.commit();
      resolved = attempted;
      attempted = undefined;
      commits++;
    } catch (e) {
      error = errorOf(e);
    }
  }
  return { resolved, attempted, error, commits };
}

/** Which model a reopened store's entries equal: 'resolved', 'attempted' or 'neither'. */
export async function compareReopened(s, run) {
  const entries = [];
  for await (const e of s.entriesAsync()) entries.push(e);
  await s.checkInvariantsAsync();
  if (same(entries, run.resolved)) return { state: 'resolved', size: entries.length };
  if (run.attempted !== undefined && same(entries, run.attempted)) return { state: 'attempted', size: entries.length };
  return { state: 'neither', size: entries.length, resolvedSize: run.resolved.size, attemptedSize: run.attempted?.size };
}

export { errorOf };
