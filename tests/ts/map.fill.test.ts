// Node fill through the map's API (README, "Node fill"): a map splits 1-to-2 unless asked
// (`fill: { redistribute: true }`), redistribution fills leaves fuller with the same contents,
// and `compact()` (XMerge) gives pages back after deletes. The core's own tests
// (tests/core/rebalance_test.cc) cover every layout; these check the plumbing and defaults.
import { beforeAll, describe, expect, it } from 'vitest';
import { BTreeMap, BTreeStore, InvalidArgumentError, ClosedError } from '../../ts/src/index.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { SplitMix } from './store-rng.js';
import { uniqueName } from './store-helpers.js';

function randomKeys(n: number, seed: number): string[] {
  const rng = new SplitMix(seed);
  const out = new Set<string>();
  while (out.size < n) out.add(`user:${rng.int(1e9).toString(36)}:${rng.int(1e6)}`);
  return [...out];
}

describe.each(REAL_BUILDS)('%s build: node fill', (build) => {
  let wasm: AdaptreeWasm;
  beforeAll(async () => {
    wasm = await wasmFor(build);
  });

  it('redistribution is off by default in a map, and on request fills leaves fuller with the same contents', () => {
    const keys = randomKeys(20000, 7);
    const plain = new BTreeMap<string, number>(null, { wasm, layout: 'baseline' });
    const full = new BTreeMap<string, number>(null, { wasm, layout: 'baseline', fill: { redistribute: true } });
    const off = new BTreeMap<string, number>(null, { wasm, layout: 'baseline', fill: { redistribute: false } });
    keys.forEach((k, i) => {
      plain.set(k, i);
      full.set(k, i);
      off.set(k, i);
    });
    const a = plain.stats(), b = full.stats(), c = off.stats();
    expect(c.pages).toBe(a.pages); // off is the default
    expect(a.fill).toBeLessThan(0.78); // ln 2 territory after a random load
    expect(b.fill).toBeGreaterThan(0.8);
    expect(b.pages).toBeLessThan(a.pages * 0.9);
    full.checkInvariants();
    expect([...full.entries()]).toEqual([...plain.entries()]);
    for (const m of [plain, full, off]) m.free();
  });

  it('compact() packs leaves after deletes and keeps every entry', () => {
    const keys = randomKeys(20000, 11);
    const m = new BTreeMap<string, number>(null, { wasm });
    keys.forEach((k, i) => m.set(k, i));
    const rng = new SplitMix(3);
    const model = new Map<string, number>();
    keys.forEach((k, i) => {
      if (rng.int(10) < 7) m.delete(k);
      else model.set(k, i);
    });
    const before = m.stats();
    const it = m.keys();
    it.next(); // a live iterator across the compaction resumes after its last key
    const freed = m.compact();
    const after = m.stats();
    expect(freed).toBeGreaterThan(0);
    expect(after.pages).toBe(before.pages - freed);
    expect(after.fill).toBeGreaterThan(before.fill + 0.2);
    m.checkInvariants();
    expect(m.size).toBe(model.size);
    for (const [k, v] of model) expect(m.get(k)).toBe(v);
    let n = 1;
    for (const _ of it) n++;
    expect(n).toBe(model.size);
    expect(m.compact()).toBe(0); // nothing left to pack
    m.free();
    expect(() => m.compact()).toThrow(ClosedError);
  });

  it('bad fill options are INVALID_ARGUMENT', async () => {
    for (const fill of [5, null, 'yes', { redistribute: 'yes' }, { edges: 1 }, { edge: false }]) {
      expect(() => new BTreeMap(null, { wasm, fill: fill as never })).toThrow(InvalidArgumentError);
    }
    for (const fill of [{ edges: 'no' }, { xmerge: 0 }]) {
      await expect(BTreeStore.open({ path: uniqueName('fill'), storage: 'memory', wasm, fill: fill as never })).rejects.toThrow(InvalidArgumentError);
    }
  });

  // Keys sharing a long prefix inserted in order (ids, timestamps after a tenant's path) used to
  // take 4-5x the pages of a random order in a map: the last leaf keeps whole keys (its upper
  // fence is +infinity, so no prefix) and split in the middle it left half leaves that later
  // appends never came back to (session 31). Edge refills (`fill.edges`, on by default) hand
  // its records to the leaf beside it, where they lose the prefix.
  it('keys with a shared prefix inserted in order or in reverse fill leaves as a random order does', async () => {
    const prefix = 'tenant-0042/project-7/events/2026-11-28/';
    const n = 20000;
    const keys = Array.from({ length: n }, (_, i) => prefix + String(i).padStart(8, '0'));
    const shuffled = keys.slice();
    const rng = new SplitMix(9);
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const pages = (order: string[], fill?: { edges?: boolean }) => {
      const m = new BTreeMap<string, number>(null, { wasm, layout: 'hints', ...(fill ? { fill } : {}) });
      order.forEach((k) => m.set(k, 1));
      m.checkInvariants();
      expect(m.size).toBe(n);
      expect(m.first()?.[0]).toBe(keys[0]);
      expect(m.last()?.[0]).toBe(keys[n - 1]);
      const p = m.stats().pages;
      m.free();
      return p;
    };
    const random = pages(shuffled);
    const asc = pages(keys), desc = pages(keys.slice().reverse());
    const ascOff = pages(keys, { edges: false });
    expect(asc).toBeLessThanOrEqual(random * 1.1);
    expect(desc).toBeLessThanOrEqual(random * 1.1);
    expect(ascOff).toBeGreaterThan(asc * 3); // the paper's middle splits
    // A store (redistribution on) as well; its stats count the refills.
    const s = await BTreeStore.open<string, number>({ path: uniqueName('fill'), storage: 'memory', wasm, layout: 'hints' });
    keys.forEach((k) => s.set(k, 1));
    await s.commit();
    s.checkInvariants();
    expect(s.treeStats().pages).toBeLessThanOrEqual(random * 1.1);
    expect(s.stats().edge_refills).toBeGreaterThan(0);
    await s.close();
  });

  // The edge's inner nodes keep whole separators too: 600-byte prefixes in order made a few
  // entries an inner node and more levels than a random order (session 32). The edge inner
  // node's neighbour now takes its entries first (core: Rebalancer::refill_inner).
  it('inner nodes at the edge fill too: keys with a long shared prefix in order take no more levels', async () => {
    const prefix = 'p'.repeat(600);
    const n = 6000;
    const keys = Array.from({ length: n }, (_, i) => prefix + String(i).padStart(8, '0'));
    const shuffled = keys.slice();
    const rng = new SplitMix(3);
    for (let i = n - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const shape = (order: string[]) => {
      const m = new BTreeMap<string, number>(null, { wasm, layout: 'hints' });
      order.forEach((k) => m.set(k, 1));
      m.checkInvariants();
      expect(m.size).toBe(n);
      const { height, pages } = m.stats();
      m.free();
      return { height, pages };
    };
    const random = shape(shuffled), asc = shape(keys), desc = shape(keys.slice().reverse());
    for (const s of [asc, desc]) {
      expect(s.height).toBeLessThanOrEqual(random.height);
      expect(s.pages).toBeLessThanOrEqual(random.pages * 1.1);
    }
    const s = await BTreeStore.open<string, number>({ path: uniqueName('fill'), storage: 'memory', wasm, layout: 'hints' });
    keys.forEach((k) => s.set(k, 1));
    await s.commit();
    s.checkInvariants();
    expect(s.stats().inner_refills).toBeGreaterThan(0);
    expect(s.treeStats().height).toBeLessThanOrEqual(random.height);
    await s.close();
  });

  it('a store redistributes by default, can be told not to, and compacts', async () => {
    const keys = randomKeys(6000, 5);
    const stats = async (fill?: { redistribute?: boolean; xmerge?: boolean }) => {
      const s = await BTreeStore.open<string, number>({ path: uniqueName('fill'), storage: 'memory', wasm, ...(fill ? { fill } : {}) });
      keys.forEach((k, i) => s.set(k, i));
      await s.commit();
      const st = s.treeStats();
      return { s, st };
    };
    const on = await stats();
    const off = await stats({ redistribute: false, xmerge: false });
    expect(on.st.fill).toBeGreaterThan(off.st.fill + 0.05);
    keys.forEach((k, i) => i % 4 !== 0 && off.s.delete(k));
    const freed = off.s.compact();
    expect(freed).toBeGreaterThan(0);
    await off.s.commit();
    off.s.checkInvariants();
    expect(off.s.size).toBe(keys.length / 4);
    expect(await on.s.compactAsync()).toBeGreaterThanOrEqual(0);
    expect(await on.s.compactAsync()).toBe(0); // packed: nothing left
    on.s.checkInvariants();
    expect(on.s.size).toBe(keys.length);
    await on.s.close();
    await off.s.close();
  });
});
