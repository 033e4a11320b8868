// The persistent suites' records (ANCHORS.md): keys 'k' + 10 digits in random order,
// 100-byte values. One generator for Node (persist-node) and Chromium (browser), so both
// kinds of store see the same data. No Node-only APIs: the browser worker bundles it.
import { SplitMix64 } from './rng.mjs';

export function makeRecords(n, seed) {
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
    const b = new Uint8Array(100);
    const dv = new DataView(b.buffer);
    for (let j = 0; j < 100; j += 4) dv.setUint32(j, (i * 2654435761 + j) >>> 0, true);
    return b;
  };
  return { keys, value };
}
