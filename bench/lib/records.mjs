// The persistent suites' records and timing loop (docs/ANCHORS.md): keys 'k' + 10 digits in random order,
// 100-byte values. One generator for Node (persist-node) and Chromium (browser), so both
// kinds of store see the same data. No Node-only APIs: the browser worker bundles it.
import { SplitMix64 } from './rng.mjs';

export function makeRecords(n, seed, valueBytes = 100) {
  const rng = new SplitMix64(seed * 1000 + 50);
  const seen = new Set();
  const keys = [];
  while (keys.length < n) {
    const d = Math.floor(rng.nextDouble() * 1e10);
    if (seen.has(d)) continue;
    seen.add(d);
    keys.push('k' + String(d).padStart(10, '0'));
  }
  const value = (i) => {
    const b = new Uint8Array(valueBytes);
    const dv = new DataView(b.buffer);
    for (let j = 0; j + 4 <= valueBytes; j += 4) dv.setUint32(j, (i * 2654435761 + j) >>> 0, true);
    return b;
  };
  return { keys, value };
}

// Runs an async operation `count` times, stopping early once `budgetSec` has passed
// (checked every 16 operations); returns what was done and how long it took.
export async function timedAsync(count, budgetSec, body) {
  const t0 = performance.now();
  const deadline = t0 + budgetSec * 1000;
  let done = 0;
  while (done < count) {
    await body(done);
    done++;
    if ((done & 15) === 0 && performance.now() > deadline) break;
  }
  return { ops: done, seconds: (performance.now() - t0) / 1000 };
}
