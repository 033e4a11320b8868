// Differential test: BTreeMap against a sorted-array model (model.ts) over >= 100k random
// operations per key encoding and wasm build: set/overwrite/delete/get/has, range queries with
// every bound combination (none/gt/gte x none/lt/lte, reverse, limit), first/last/nextHigher/
// nextLower, getMany/setMany, deleteRange, clear, and iterators that keep going while the map
// is modified under them (the model says what the next entry must be: the first key past the
// last one returned, within the range, with its current value).
// ADAPTREE_PROPERTY_OPS overrides the count; a failure prints the seed and the operation index.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BTreeMap, type KeyEncodingName, type LayoutName, type Range } from '../../ts/src/index.js';
import { BUILDS, wasmFor, type Build } from './builds.js';
import {
  SortedModel,
  bigintArb,
  bytesArb,
  compareBytesNatural,
  compareCodePoints,
  compareTuples,
  numberArb,
  stringArb,
  tupleArb,
} from './model.js';

const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
const OPS = Number(env.ADAPTREE_PROPERTY_OPS ?? 100_000);
const REFERENCE_OPS = Math.min(OPS, 20_000);

interface Encoding<K> {
  name: KeyEncodingName;
  label?: string;
  arb: fc.Arbitrary<K>;
  cmp: (a: K, b: K) => number;
  long: K[];
}

const cmpNum = (a: number, b: number) => (a < b ? -1 : a > b ? 1 : 0);
const cmpBig = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

const ENCODINGS: Encoding<any>[] = [
  { name: 'utf8', arb: stringArb, cmp: compareCodePoints, long: Array.from({ length: 12 }, (_, i) => 'L'.repeat(1000 + i) + i) },
  { name: 'bytes', arb: bytesArb, cmp: compareBytesNatural, long: Array.from({ length: 12 }, (_, i) => new Uint8Array(1013 + i).fill(i)) },
  { name: 'number', arb: numberArb, cmp: cmpNum, long: [] },
  // Runs of consecutive integers: what the core keeps in semi-dense and fully dense leaves.
  { name: 'number', label: 'dense integer', arb: fc.integer({ min: 0, max: 3000 }), cmp: cmpNum, long: [] },
  { name: 'bigint', arb: bigintArb, cmp: cmpBig, long: Array.from({ length: 12 }, (_, i) => 2n ** BigInt(8000 + i) - BigInt(i)) },
  { name: 'tuple', arb: tupleArb, cmp: compareTuples, long: Array.from({ length: 12 }, (_, i) => ['T'.repeat(1000 + i), i]) },
];

/** mulberry32: a small seeded PRNG, so a failure is reproducible from its seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), chance: (p: number) => next() < p };
}

/** Like expect(got).toEqual(want) for the values used here, without expect()'s cost when equal. */
type Msg = () => string;

function eq(got: unknown, want: unknown, what: Msg): void {
  if (got === want) return;
  if (typeof got === 'object' && typeof want === 'object' && got !== null && want !== null && JSON.stringify(got) === JSON.stringify(want)) return;
  expect(got, what()).toEqual(want);
}

function ok(cond: boolean, what: Msg): void {
  if (!cond) expect.fail(what());
}

function uniqueSorted<K>(keys: K[], cmp: (a: K, b: K) => number): K[] {
  const s = [...keys].sort(cmp);
  return s.filter((k, i) => i === 0 || cmp(s[i - 1]!, k) !== 0);
}

function runDifferential<K>(build: Build, enc: Encoding<K>, ops: number, seed: number, layout: LayoutName = 'adaptive') {
  return async () => {
    const wasm = await wasmFor(build);
    const r = rng(seed);
    const cmp = enc.cmp;
    // `baseline` takes keys up to 1011 bytes (no prefix truncation; README "Layouts"): its long
    // keys stop there (the utf8 ones are ASCII, a byte a unit; no other encoding runs under it).
    const long = layout === 'baseline' ? enc.long.filter((k) => typeof k !== 'string' || k.length <= 1011) : enc.long;
    const pool = uniqueSorted([...fc.sample(enc.arb, { numRuns: 1500, seed }), ...long], cmp);
    const probes = fc.sample(enc.arb, { numRuns: 300, seed: seed + 1 }); // bounds that are mostly not keys
    const anyKey = () => (r.chance(0.85) ? pool[r.int(pool.length)]! : probes[r.int(probes.length)]!);
    const m = new BTreeMap<K, unknown>(undefined, { keys: enc.name, wasm, layout });
    const model = new SortedModel<K, unknown>(cmp);
    let op = 0;
    // What the current operation is, rendered only when a check fails.
    let desc: unknown[] = [];
    const what = () => `op ${op} (seed ${seed}, ${build}, ${layout}): ` + desc.map((d) => (typeof d === 'string' ? d : JSON.stringify(d, rep))).join(' ');
    const sameKey = (a: K | undefined, b: K | undefined) => {
      if (a === undefined || b === undefined) return a === b;
      return cmp(a, b) === 0 && !Object.is(a, -0);
    };
    const expectEntry = (got: [K, unknown] | undefined, want: [K, unknown] | undefined) => {
      if (want === undefined) {
        eq(got, undefined, what);
        return;
      }
      ok(got !== undefined, () => `${what()}: got undefined`);
      ok(sameKey(got![0], want[0]), () => `${what()}: key ${JSON.stringify(got![0], rep)} != ${JSON.stringify(want[0], rep)}`);
      eq(got![1], want[1], () => `${what()}: value`);
    };
    const value = () => {
      const x = r.next();
      if (x < 0.7) return op;
      if (x < 0.95) return { op, s: 'v'.repeat(r.int(40)) };
      if (x < 0.999) return null;
      return 'big'.repeat(2000 + r.int(3000)); // past any inline value limit
    };
    const randomRange = (): Range<K> => {
      const range: Range<K> = {};
      const lo = r.int(3), hi = r.int(3);
      if (lo === 1) range.gt = anyKey();
      if (lo === 2) range.gte = anyKey();
      if (hi === 1) range.lt = anyKey();
      if (hi === 2) range.lte = anyKey();
      if (r.chance(0.5)) range.reverse = true;
      if (r.chance(0.6)) range.limit = r.int(25);
      else if (lo === 0 && hi === 0 && !r.chance(0.05)) range.limit = 50 + r.int(50);
      return range;
    };
    /** A narrow range: two pool keys a few places apart (deleteRange must not empty the map). */
    const narrowRange = (): Range<K> => {
      const i = r.int(pool.length), j = Math.min(pool.length - 1, i + r.int(20));
      const range: Range<K> = {};
      if (r.chance(0.5)) range.gt = pool[i]; else range.gte = pool[i];
      if (r.chance(0.5)) range.lt = pool[j]; else range.lte = pool[j];
      return range;
    };
    const modify = () => {
      const x = r.next();
      if (x < 0.5) {
        const k = anyKey(), v = value();
        m.set(k, v);
        model.set(k, v);
      } else if (x < 0.9) {
        const k = anyKey();
        eq(m.delete(k), model.delete(k), () => `${what()}: delete in modify`);
      } else if (x < 0.97) {
        const entries = Array.from({ length: 1 + r.int(20) }, () => [anyKey(), value()] as [K, unknown]);
        m.setMany(entries);
        for (const [k, v] of entries) model.set(k, v);
      } else {
        const range = narrowRange();
        eq(m.deleteRange(range), model.deleteRange(range), () => `${what()}: deleteRange in modify`);
      }
    };

    /** An iterator checked entry by entry while the map changes under it. */
    const iterateWhileModifying = () => {
      const range = randomRange();
      const mode = r.int(3);
      const it = mode === 0 ? m.entries(range) : mode === 1 ? m.keys(range) : m.values(range);
      let last: K | undefined;
      let count = 0;
      const pModify = r.chance(0.3) ? 0 : 0.4;
      for (let step = 0; step < 400; step++) {
        if (r.chance(pModify)) {
          const x = r.next();
          if (x < 0.2 && last !== undefined) {
            m.delete(last); // the entry just returned
            model.delete(last);
          } else {
            modify();
          }
        }
        // What the model says comes next.
        let want: [K, unknown] | undefined;
        if (range.limit === undefined || count < range.limit) {
          const [from, to] = model.span(range);
          if (!range.reverse) {
            const i = last === undefined ? from : Math.max(from, model.upperBound(last));
            if (i < to) want = [model.keys[i]!, model.vals[i]];
          } else {
            const i = last === undefined ? to - 1 : Math.min(to - 1, model.lowerBound(last) - 1);
            if (i >= from) want = [model.keys[i]!, model.vals[i]];
          }
        }
        desc = ['iterate', range, 'step', step];
        const n = it.next();
        if (want === undefined) {
          ok(n.done === true, () => `${what()}: expected the end, got ${JSON.stringify(n.value, rep)}`);
          return;
        }
        ok(n.done === false, () => `${what()}: ended early, expected ${JSON.stringify(want[0], rep)}`);
        if (mode === 0) expectEntry(n.value as [K, unknown], want);
        else if (mode === 1) ok(sameKey(n.value as K, want[0]), () => `${what()}: key ${JSON.stringify(n.value, rep)} != ${JSON.stringify(want[0], rep)}`);
        else eq(n.value, want[1], what);
        last = want[0];
        count++;
      }
      it.return!();
    };

    for (op = 0; op < ops; op++) {
      const x = r.next();
      desc = [];
      if (x < 0.3) {
        const k = anyKey(), v = value();
        desc = ['set', k];
        ok(m.set(k, v) === m, what);
        model.set(k, v);
      } else if (x < 0.42) {
        const k = anyKey();
        desc = ['delete', k];
        eq(m.delete(k), model.delete(k), what);
      } else if (x < 0.57) {
        const k = anyKey();
        desc = ['get', k];
        eq(m.get(k), model.get(k), what);
      } else if (x < 0.62) {
        const k = anyKey();
        desc = ['has', k];
        eq(m.has(k), model.has(k), what);
      } else if (x < 0.72) {
        const range = randomRange();
        desc = ['range', range];
        const want = model.range(range);
        const mode = r.int(3);
        if (mode === 0) {
          const got = [...m.entries(range)];
          eq(got.length, want.length, () => `${what()}: length`);
          got.forEach((e, i) => expectEntry(e, want[i]));
        } else if (mode === 1) {
          const got = [...m.keys(range)];
          eq(got.length, want.length, () => `${what()}: length`);
          got.forEach((k, i) => ok(sameKey(k, want[i]![0]), () => `${what()}: key ${i}`));
        } else {
          eq([...m.values(range)], want.map((e) => e[1]), what);
        }
      } else if (x < 0.8) {
        const y = r.int(4);
        const k = anyKey();
        desc = [['first', 'last', 'nextHigher', 'nextLower'][y]!, k];
        const n = model.size;
        if (y === 0) expectEntry(m.first(), n ? [model.keys[0]!, model.vals[0]] : undefined);
        else if (y === 1) expectEntry(m.last(), n ? [model.keys[n - 1]!, model.vals[n - 1]] : undefined);
        else if (y === 2) {
          const i = model.upperBound(k);
          expectEntry(m.nextHigher(k), i < n ? [model.keys[i]!, model.vals[i]] : undefined);
        } else {
          const i = model.lowerBound(k) - 1;
          expectEntry(m.nextLower(k), i >= 0 ? [model.keys[i]!, model.vals[i]] : undefined);
        }
      } else if (x < 0.83) {
        const keys = Array.from({ length: r.int(40) }, anyKey);
        desc = ['getMany'];
        eq(m.getMany(keys), keys.map((k) => model.get(k)), what);
      } else if (x < 0.86) {
        desc = ['setMany'];
        const entries = Array.from({ length: r.int(40) }, () => [anyKey(), value()] as [K, unknown]);
        m.setMany(entries);
        for (const [k, v] of entries) model.set(k, v);
      } else if (x < 0.875) {
        const range = narrowRange();
        desc = ['deleteRange', range];
        eq(m.deleteRange(range), model.deleteRange(range), what);
      } else if (x < 0.9) {
        iterateWhileModifying();
      } else if (x < 0.9995) {
        desc = ['modify'];
        modify();
      } else {
        desc = ['clear'];
        m.clear();
        model.clear();
      }
      if (m.size !== model.size) expect(m.size, `${what()}: size`).toBe(model.size);
      if (op % 20000 === 19999) {
        m.checkInvariants();
        const all = [...m.keys()];
        expect(all.length).toBe(model.size);
        all.forEach((k, i) => ok(sameKey(k, model.keys[i]), () => `${what()}: full scan at ${i}`));
      }
    }
    m.checkInvariants();
    expect([...m.values()]).toEqual(model.vals);
    m.free();
  };
}

function rep(_k: string, v: unknown) {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `bytes:${Array.from(v)}`;
  if (typeof v === 'string' && v.length > 40) return `${v.slice(0, 20)}...(${v.length})`;
  return v;
}

describe.each(BUILDS)('BTreeMap vs a sorted model on the %s build', (build) => {
  // The mt build runs the st build's code plus its latches: half the operations (suite time).
  const ops = build === 'reference' ? REFERENCE_OPS : build === 'mt' ? Math.ceil(OPS / 2) : OPS;
  ENCODINGS.forEach((enc, i) => {
    it(`${enc.label ?? enc.name} keys: ${ops} random operations`, runDifferential(build, enc, ops, 1000 + 17 * i + (build === 'mt' ? 5 : 0)), 600_000);
  });
});

// The other layout configurations (the paper's ablation steps), fewer operations each.
const LAYOUT_OPS = Math.min(OPS, Number(env.ADAPTREE_LAYOUT_OPS ?? 10_000));
const LAYOUTS: LayoutName[] = ['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense'];
describe.each(BUILDS.filter((b) => b === 'st'))('every layout vs a sorted model on the %s build', (build) => {
  for (const layout of LAYOUTS) {
    for (const enc of [ENCODINGS[0]!, ENCODINGS[2]!, ENCODINGS[3]!]) {
      it(`${layout}, ${enc.label ?? enc.name} keys: ${LAYOUT_OPS} random operations`, runDifferential(build, enc, LAYOUT_OPS, 7000 + LAYOUTS.indexOf(layout), layout), 600_000);
    }
  }
});
