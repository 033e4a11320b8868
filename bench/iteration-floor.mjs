#!/usr/bin/env node
// The floor of a full iteration that hands out a Uint8Array per value (adaptree's `bytes`
// values, as the inmem suite's iterate row), against sorted-btree's whole forEach over values it
// already holds: 1M entries, number keys, 8-byte values, least of 12 alternating rounds, ns per
// entry, with adaptree's BTreeMap.forEach (dist/: `npm run build`) on the same entries. "floor": keys from an array, each value a view of one slab (what adaptree's iterators
// make: the cheapest Uint8Array V8 has), a callback per entry, no tree at all; "own": an 8-byte
// array of its own per value. Issue 13's "full iteration >= 1.0x sorted-btree" needs the whole
// iteration under sorted-btree's time per entry; the view alone costs more (bench/README.md).
//   node bench/iteration-floor.mjs
import BTreeMod from 'sorted-btree';
import { BTreeMap, init } from '../dist/index.js';
const BTree = BTreeMod.default ?? BTreeMod;
const N = 1_000_000;
const t = new BTree();
const keys = Float64Array.from({ length: N }, (_, i) => i);
for (let i = 0; i < N; i++) t.set(i, new Uint8Array(8));
await init();
const m = new BTreeMap(undefined, { keys: 'number', values: 'bytes' });
m.setMany(Array.from({ length: N }, (_, i) => [i, new Uint8Array(8)]));
const slab = new ArrayBuffer(1024 * 8);
const ks = new Array(1024).fill(0).map((_, i) => i);
function floor(f) {
  // batches of 1024: keys in an array, values as views of one slab, a callback per entry
  for (let b = 0; b < N; b += 1024) {
    const vs = new Array(1024);
    for (let i = 0; i < 1024; i++) vs[i] = new Uint8Array(slab, i * 8, 8);
    for (let i = 0; i < 1024; i++) f(vs[i], ks[i] + b);
  }
}
const src = new Uint8Array(slab);
function floorOwn(f) {
  for (let b = 0; b < N; b += 1024) {
    const vs = new Array(1024);
    for (let i = 0; i < 1024; i++) { const v = new Uint8Array(8); for (let j = 0; j < 8; j++) v[j] = src[i * 8 + j]; vs[i] = v; }
    for (let i = 0; i < 1024; i++) f(vs[i], ks[i] + b);
  }
}
function floorNoValues(f) {
  for (let b = 0; b < N; b += 1024) for (let i = 0; i < 1024; i++) f(undefined, ks[i] + b);
}
const best = {};
for (let r = 0; r < 12; r++) {
  for (const [name, run] of [['sorted-btree forEach', () => { let c = 0; t.forEach(() => { c++; }); return c; }],
    ['adaptree BTreeMap forEach', () => { let c = 0; m.forEach((v) => { if (v) c++; }); return c; }],
    ['floor: a view per value + callback', () => { let c = 0; floor((v) => { if (v) c++; }); return c; }],
    ['floor: own 8-byte array per value', () => { let c = 0; floorOwn((v) => { if (v) c++; }); return c; }],
    ['floor: callback only', () => { let c = 0; floorNoValues(() => { c++; }); return c; }]]) {
    const a = performance.now(); run(); const ns = (performance.now() - a) * 1e6 / N;
    best[name] = Math.min(best[name] ?? Infinity, ns);
  }
}
for (const [k, v] of Object.entries(best)) console.log(k.padEnd(40), v.toFixed(1), 'ns/entry');
