// Operation streams, generated before timing from fixed seeds so every impl (and the native
// binary) runs the same operations on the same keys. A stream is typed arrays of key indexes
// into the key file's order (plus scan lengths / op kinds).
import { SplitMix64 } from './rng.mjs';
import { Zipfian, scramble } from './zipf.mjs';

export const ZIPF_THETA = 0.99;
export const SCAN_MAX = 50; // the paper: scan lengths uniform in [1, 50]

// Seeds per workload: seed * 1000 + a fixed workload number.
const W = { lookup_zipf: 1, lookup_uniform: 2, scan: 3, ycsb: 10 };

export function zipfIndexes(n, count, seed) {
  const rng = new SplitMix64(seed * 1000 + W.lookup_zipf);
  const z = new Zipfian(n, ZIPF_THETA, rng);
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = scramble(z.next(), n);
  return out;
}

export function uniformIndexes(n, count, seed) {
  const rng = new SplitMix64(seed * 1000 + W.lookup_uniform);
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = rng.nextBelow(n);
  return out;
}

/** Scans: start key by zipf rank, length uniform in [1, maxLen]. */
export function scanOps(n, count, seed, maxLen = SCAN_MAX) {
  const rng = new SplitMix64(seed * 1000 + W.scan);
  const z = new Zipfian(n, ZIPF_THETA, rng);
  const start = new Uint32Array(count), len = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    start[i] = scramble(z.next(), n);
    len[i] = 1 + rng.nextBelow(maxLen);
  }
  return { start, len };
}

// ---- YCSB core workloads A–F (Cooper et al., SoCC 2010; YCSB's workloads/workload[a-f])
export const OP = { READ: 0, UPDATE: 1, INSERT: 2, SCAN: 3, RMW: 4 };
export const YCSB = {
  A: { mix: [[OP.READ, 0.5], [OP.UPDATE, 0.5]], dist: 'zipfian', desc: 'update heavy: 50% read, 50% update' },
  B: { mix: [[OP.READ, 0.95], [OP.UPDATE, 0.05]], dist: 'zipfian', desc: 'read mostly: 95% read, 5% update' },
  C: { mix: [[OP.READ, 1]], dist: 'zipfian', desc: 'read only' },
  D: { mix: [[OP.READ, 0.95], [OP.INSERT, 0.05]], dist: 'latest', desc: 'read latest: 95% read (latest), 5% insert' },
  E: { mix: [[OP.SCAN, 0.95], [OP.INSERT, 0.05]], dist: 'zipfian', desc: 'short ranges: 95% scan of 1..100, 5% insert' },
  F: { mix: [[OP.READ, 0.5], [OP.RMW, 0.5]], dist: 'zipfian', desc: 'read-modify-write: 50% read, 50% RMW' },
};
export const YCSB_ORDER = ['A', 'B', 'C', 'F', 'D', 'E']; // E last: its inserts and scans
export const YCSB_SCAN_MAX = 100;

/**
 * One YCSB workload's ops over `loaded` records (key indexes 0..loaded-1 in the key file) with
 * inserts taking the key file's next unused keys from `nextInsert`.
 * @returns {{ op: Uint8Array, key: Uint32Array, len: Uint8Array, inserted: number }}
 */
export function ycsbOps(name, loaded, nextInsert, count, seed) {
  const w = YCSB[name];
  const rng = new SplitMix64(seed * 1000 + W.ycsb + name.charCodeAt(0));
  const z = new Zipfian(loaded, ZIPF_THETA, rng);
  const op = new Uint8Array(count), key = new Uint32Array(count), len = new Uint8Array(count);
  let inserted = 0;
  for (let i = 0; i < count; i++) {
    const u = rng.nextDouble();
    let acc = 0, kind = w.mix[w.mix.length - 1][0];
    for (const [k, p] of w.mix) { acc += p; if (u < acc) { kind = k; break; } }
    op[i] = kind;
    if (kind === OP.INSERT) {
      key[i] = nextInsert + inserted++;
    } else if (w.dist === 'latest') {
      // YCSB's SkewedLatestGenerator: the most recently inserted record is the most popular
      const newest = nextInsert + inserted - 1;
      const r = z.next();
      key[i] = r <= newest ? newest - r : 0;
    } else {
      key[i] = scramble(z.next(), loaded);
    }
    if (kind === OP.SCAN) len[i] = 1 + rng.nextBelow(YCSB_SCAN_MAX);
  }
  return { op, key, len, inserted };
}
