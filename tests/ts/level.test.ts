// adaptree/level beyond abstract-level's suite (tests/ts/level-suite.mjs runs that one):
// snapshots against a model under random writes (sync and async store), overlays larger than
// a batch, version bookkeeping, atomic batches, key limits, and a snapshot taken while an
// async store is half-way through a write.
import { beforeAll, describe, expect, it } from 'vitest';
import { KeyTooLargeError, init, loadWasm } from '../../ts/src/index.js';
import { AdaptreeLevel, MemoryStore, type LevelStore, type LevelStoreFactory } from '../../ts/src/level/index.js';
import type { AdaptreeWasm } from '../../ts/src/wasm.js';

beforeAll(async () => {
  await init();
});

type Db = AdaptreeLevel<string, string>;

/** The memory store behind promises; `stepwise` applies a write one key per microtask. */
function asyncStore(opts: { stepwise?: boolean; gate?: () => Promise<void> } = {}): LevelStoreFactory {
  let store: MemoryStore | null = null;
  const later = <T>(f: () => T): Promise<T> => Promise.resolve().then(f);
  return {
    sync: false,
    permanence: false,
    open(wasm: AdaptreeWasm): LevelStore {
      const s = (store ??= new MemoryStore({ wasm }));
      return {
        sync: false,
        maxKeySize: s.maxKeySize,
        get: (k) => later(() => s.get(k)),
        getMany: (ks) => later(() => s.getMany(ks)),
        has: (k) => later(() => s.has(k)),
        write: async (puts, dels) => {
          // A store checks a write before applying any of it (writes are all or nothing).
          for (const [k] of puts) if (k.length > s.maxKeySize) throw new KeyTooLargeError();
          if (!opts.stepwise) return later(() => s.write(puts, dels));
          for (const p of puts) {
            if (opts.gate) await opts.gate();
            await later(() => s.write([p], []));
          }
          for (const d of dels) {
            if (opts.gate) await opts.gate();
            await later(() => s.write([], [d]));
          }
        },
        deleteRange: (r) => later(() => s.deleteRange(r)),
        scan: (r, n, v) => later(() => s.scan(r, n, v)),
        close: () => later(() => {}),
      };
    },
  };
}

/** A sorted snapshot of a model map. */
function sortedEntries(m: Map<string, string>): [string, string][] {
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Model of one range read: bounds, reverse, limit. UTF-8 order = code unit order for ASCII keys. */
function modelRange(e: [string, string][], o: { gt?: string; gte?: string; lt?: string; lte?: string; reverse?: boolean; limit?: number }): [string, string][] {
  let r = e.filter(([k]) => (o.gt === undefined || k > o.gt) && (o.gte === undefined || k >= o.gte) && (o.lt === undefined || k < o.lt) && (o.lte === undefined || k <= o.lte));
  if (o.reverse) r = r.reverse();
  if (o.limit !== undefined && o.limit >= 0) r = r.slice(0, o.limit);
  return r;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STORES: [string, () => LevelStoreFactory | undefined][] = [
  ['memory store', () => undefined],
  ['async store', () => asyncStore()],
  ['async stepwise store', () => asyncStore({ stepwise: true })],
];

describe.each(STORES)('adaptree/level on the %s', (_name, makeStore) => {
  function open(): Db {
    const store = makeStore();
    return new AdaptreeLevel<string, string>(store ? { store } : {});
  }

  it('snapshots and open iterators match a model under random writes', async () => {
    const db = open();
    await db.open();
    const rand = rng(14);
    const key = () => 'k' + String(Math.floor(rand() * 300)).padStart(3, '0');
    const model = new Map<string, string>();
    type Snap = { snap: ReturnType<Db['snapshot']>; state: [string, string][]; map: Map<string, string> };
    const snaps: Snap[] = [];
    type It = { it: ReturnType<Db['iterator']>; expect: [string, string][]; pos: number };
    const its: It[] = [];
    let checks = 0;
    for (let step = 0; step < 3000; step++) {
      const r = rand();
      if (r < 0.35) {
        const k = key(), v = 'v' + step;
        await db.put(k, v);
        model.set(k, v);
      } else if (r < 0.5) {
        const k = key();
        await db.del(k);
        model.delete(k);
      } else if (r < 0.6) {
        const ops = Array.from({ length: 1 + Math.floor(rand() * 20) }, (_, i) =>
          rand() < 0.7 ? { type: 'put' as const, key: key(), value: `b${step}.${i}` } : { type: 'del' as const, key: key() });
        await db.batch(ops);
        for (const op of ops) op.type === 'put' ? model.set(op.key, op.value) : model.delete(op.key);
      } else if (r < 0.63) {
        const a = key(), b = key();
        const o = { gte: a < b ? a : b, lt: a < b ? b : a, limit: rand() < 0.5 ? Math.floor(rand() * 30) : -1, reverse: rand() < 0.5 };
        const gone = modelRange(sortedEntries(model), o);
        await db.clear(o);
        for (const [k] of gone) model.delete(k);
      } else if (r < 0.68 && snaps.length < 6) {
        snaps.push({ snap: db.snapshot(), state: sortedEntries(model), map: new Map(model) });
      } else if (r < 0.71 && snaps.length > 0) {
        await snaps.splice(Math.floor(rand() * snaps.length), 1)[0]!.snap.close();
      } else if (r < 0.76 && its.length < 4) {
        const a = key();
        const o = rand() < 0.5 ? { gte: a, reverse: rand() < 0.5 } : { lt: a, reverse: rand() < 0.5 };
        its.push({ it: db.iterator(o), expect: modelRange(sortedEntries(model), o), pos: 0 });
      } else if (r < 0.86 && its.length > 0) {
        // Read a few entries of an open iterator: it must still show the state it was made in.
        const i = Math.floor(rand() * its.length);
        const x = its[i]!;
        const got = await x.it.nextv(1 + Math.floor(rand() * 40));
        expect(got).toEqual(x.expect.slice(x.pos, x.pos + got.length));
        x.pos += got.length;
        if (got.length === 0) {
          expect(x.pos).toBe(x.expect.length);
          await x.it.close();
          its.splice(i, 1);
        }
        checks++;
      } else if (snaps.length > 0) {
        const s = snaps[Math.floor(rand() * snaps.length)]!;
        const a = key(), b = key();
        const o = { gt: a < b ? a : b, lte: a < b ? b : a, reverse: rand() < 0.5, limit: rand() < 0.3 ? 5 : -1 };
        const gotAll = await db.iterator({ ...o, snapshot: s.snap }).all();
        expect(gotAll).toEqual(modelRange(s.state, o));
        const ks = [key(), key(), key()];
        expect(await db.getMany(ks, { snapshot: s.snap })).toEqual(ks.map((k) => s.map.get(k)));
        expect(await db.get(ks[0]!, { snapshot: s.snap })).toBe(s.map.get(ks[0]!));
        expect(await db.has(ks[1]!, { snapshot: s.snap })).toBe(s.map.has(ks[1]!));
        // seek inside a snapshot iterator
        const it = db.keys({ snapshot: s.snap, reverse: o.reverse });
        it.seek(ks[2]!);
        const after = s.state.map((e) => e[0]).filter((k) => (o.reverse ? k <= ks[2]! : k >= ks[2]!));
        expect(await it.all()).toEqual(o.reverse ? after.reverse() : after);
        checks++;
      }
    }
    expect(checks).toBeGreaterThan(300);
    expect(await db.iterator().all()).toEqual(sortedEntries(model));
    for (const x of its) await x.it.close();
    for (const s of snaps) await s.snap.close();
    expect(db.openVersions).toBe(0);
    await db.close();
  });

  it('a snapshot outlives writes that touch more keys than a batch holds', async () => {
    const db = open();
    const keys = Array.from({ length: 3000 }, (_, i) => 'a' + String(i).padStart(5, '0'));
    await db.batch(keys.map((k) => ({ type: 'put' as const, key: k, value: 'old' })));
    const snap = db.snapshot();
    // Delete every other key, overwrite the rest, insert as many new keys in between.
    await db.batch(keys.map((k, i) => (i % 2 ? { type: 'del' as const, key: k } : { type: 'put' as const, key: k, value: 'new' })));
    await db.batch(keys.map((k) => ({ type: 'put' as const, key: k + '+', value: 'inserted' })));
    const fwd = await db.iterator({ snapshot: snap }).all();
    expect(fwd).toEqual(keys.map((k) => [k, 'old']));
    const rev = await db.keys({ snapshot: snap, reverse: true }).all();
    expect(rev).toEqual([...keys].reverse());
    let n = 0;
    for await (const [k, v] of db.iterator({ snapshot: snap, gte: 'a01000', lt: 'a02000' })) {
      expect(k).toBe(keys[1000 + n]);
      expect(v).toBe('old');
      n++;
    }
    expect(n).toBe(1000);
    // Clearing inside the snapshot removes what the snapshot sees, not what was added since.
    await db.clear({ snapshot: snap });
    expect(await db.keys().all()).toEqual(keys.map((k) => k + '+'));
    expect((await db.keys({ snapshot: snap }).all()).length).toBe(3000);
    expect(db.openVersions).toBe(1);
    await snap.close();
    expect(db.openVersions).toBe(0);
    await db.close();
  });

  it('snapshots taken with no write in between share one version', async () => {
    const db = open();
    await db.put('a', '1');
    const s1 = db.snapshot(), s2 = db.snapshot(), it = db.iterator();
    expect(db.openVersions).toBe(1);
    await db.put('a', '2');
    const s3 = db.snapshot();
    expect(db.openVersions).toBe(2);
    expect(await db.get('a', { snapshot: s1 })).toBe('1');
    expect(await db.get('a', { snapshot: s2 })).toBe('1');
    expect(await db.get('a', { snapshot: s3 })).toBe('2');
    expect(await it.all()).toEqual([['a', '1']]);
    await s1.close();
    expect(db.openVersions).toBe(2);
    await s2.close();
    await it.close();
    expect(db.openVersions).toBe(1);
    await s3.close();
    expect(db.openVersions).toBe(0);
    await db.close();
  });

  it('a batch with a key over 1024 bytes fails whole, with a typed error', async () => {
    const db = open();
    await db.put('keep', '1');
    const err = await db.batch([
      { type: 'put', key: 'new', value: 'x' },
      { type: 'del', key: 'keep' },
      { type: 'put', key: 'x'.repeat(1025), value: 'x' },
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as { code?: string }).code).toBe('KEY_TOO_LARGE');
    expect(await db.iterator().all()).toEqual([['keep', '1']]);
    // A key that cannot be stored cannot be present: reads and deletes of one are no-ops.
    expect(await db.get('y'.repeat(2000))).toBeUndefined();
    await db.del('y'.repeat(2000));
    // Range bounds longer than a key still bound correctly.
    await db.batch([{ type: 'put', key: 'y'.repeat(1024), value: 'a' }, { type: 'put', key: 'y'.repeat(1023) + 'z', value: 'b' }]);
    expect(await db.keys({ gt: 'y'.repeat(1500) }).all()).toEqual(['y'.repeat(1023) + 'z']);
    expect(await db.keys({ lt: 'y'.repeat(1500), gte: 'x' }).all()).toEqual(['y'.repeat(1024)]);
    await db.close();
  });

  // A probe (session 29): with a version open (any iterator in flight, a snapshot), keys and
  // bounds longer than 1024 bytes reached the version's overlay, a BTreeMap that refuses them:
  // del(long) threw KEY_TOO_LARGE and took the rest of its batch with it, and reads, scans,
  // clears and seeks through a snapshot with a long key or bound threw.
  it('keys and bounds over 1024 bytes while a snapshot or an iterator is open: as with none', async () => {
    const db = open();
    const long = 'x'.repeat(2000);
    await db.put('a', '1');
    await db.put('y', '1');
    const it = db.iterator();
    await it.next();
    await db.del(long);
    await db.batch([{ type: 'del', key: long }, { type: 'put', key: 'b', value: '2' }]);
    expect(await db.get('b')).toBe('2');
    const it2 = db.keys({ lt: long });
    await db.put('a', '2');
    expect(await it2.all()).toEqual(['a', 'b']);
    await it.close();
    const snap = db.snapshot();
    await db.put('a', '3');
    await db.put('z', '3');
    expect(await db.get(long, { snapshot: snap })).toBeUndefined();
    expect(await db.has(long, { snapshot: snap })).toBe(false);
    expect(await db.getMany([long, 'a'], { snapshot: snap })).toEqual([undefined, '2']);
    expect(await db.keys({ gt: long, snapshot: snap }).all()).toEqual(['y']);
    expect(await db.keys({ lte: long, snapshot: snap }).all()).toEqual(['a', 'b']);
    expect(await db.iterator({ lt: long, reverse: true, snapshot: snap }).all()).toEqual([['b', '2'], ['a', '2']]);
    const it3 = db.keys({ snapshot: snap });
    it3.seek(long);
    expect(await it3.all()).toEqual(['y']);
    await db.clear({ lt: long, snapshot: snap });
    expect(await db.keys().all()).toEqual(['y', 'z']);
    await snap.close();
    expect(db.openVersions).toBe(0);
    await db.close();
  });

  // abstract-level: "If range options like gt were passed to db.iterator() and target does not
  // fall within that range, the iterator will reach its natural end". A target before the
  // range's start went to the start (a probe against memory-level, session 29; abstract-level
  // 3.1.1's own "seek() respects range" test asserts nothing, so the suite run missed it).
  it('seek() to a target outside the range ends the iteration', async () => {
    const db = open();
    await db.batch(['1', '4', '5', '6', '7'].map((k) => ({ type: 'put' as const, key: k, value: k })));
    const seekKeys = async (range: object, target: string) => {
      const it = db.keys(range);
      it.seek(target);
      const got = await it.all();
      return got;
    };
    for (const [range, target, want] of [
      [{ gt: '5' }, '4', []],
      [{ gt: '5' }, '0', []],
      [{ gt: '5' }, '5', []],
      [{ gte: '5' }, '5', ['5', '6', '7']],
      [{ gte: '5' }, '4', []],
      [{ gt: '4', lt: '7' }, '8', []],
      [{ gt: '4', lt: '7' }, '6', ['6']],
      [{ lt: '5', reverse: true }, '6', []],
      [{ lt: '5', reverse: true }, '5', []],
      [{ lte: '5', reverse: true }, '5', ['5', '4', '1']],
      [{ lte: '5', gt: '1', reverse: true }, '0', []],
      [{}, '3', ['4', '5', '6', '7']],
      [{ reverse: true }, '3', ['1']],
    ] as [object, string, string[]][]) {
      expect(await seekKeys(range, target), `${JSON.stringify(range)} seek ${target}`).toEqual(want);
      const snap = db.snapshot();
      expect(await seekKeys({ ...range, snapshot: snap }, target), `snapshot: ${JSON.stringify(range)} seek ${target}`).toEqual(want);
      await snap.close();
    }
    // and a later seek back into the range goes on from there
    const it = db.keys({ gt: '4' });
    it.seek('2');
    expect(await it.next()).toBeUndefined();
    it.seek('6');
    expect(await it.all()).toEqual(['6', '7']);
    await db.close();
  });

  it('keeps its data across close and open (same instance), the last write of a batch wins', async () => {
    const db = open();
    await db.batch([
      { type: 'put', key: 'a', value: '1' },
      { type: 'del', key: 'a' },
      { type: 'del', key: 'b' },
      { type: 'put', key: 'b', value: '2' },
    ]);
    await db.close();
    await db.open();
    expect(await db.iterator().all()).toEqual([['b', '2']]);
    await db.close();
  });
});

describe('adaptree/level specifics', () => {
  it('free() releases an in-memory db for good: 600 made, used and freed without a turn of the event loop fit a 64 MiB budget', async () => {
    // (close() keeps the data for a reopen, as memory-level does: 230 closed dbs filled a
    // 64 MiB budget before a finalizer could run; a new-user probe, session 24)
    const wasm = await loadWasm({ maxMemory: 64 << 20 }); // an instance of its own
    for (let i = 0; i < 600; i++) {
      const db = new AdaptreeLevel({ wasm });
      await db.open();
      await db.put('k', 'v' + i);
      expect(await db.get('k')).toBe('v' + i);
      await db.free();
    }
    const again = new AdaptreeLevel({ wasm });
    await again.open();
    await again.put('a', '1');
    await again.free();
    await again.open(); // a freed db opens again, empty
    expect(await again.get('a')).toBeUndefined();
    await again.free();
  });

  it('manifest: what the memory store claims, and getSync', async () => {
    const db = new AdaptreeLevel<string, string>();
    expect(db.supports).toMatchObject({
      implicitSnapshots: true, explicitSnapshots: true, has: true, getSync: true, seek: true, permanence: false,
    });
    await db.put('a', 'b');
    const s = db.snapshot();
    await db.put('a', 'c');
    expect(db.getSync('a')).toBe('c');
    expect(db.getSync('a', { snapshot: s })).toBe('b');
    await s.close();
    await db.close();
    const adb = new AdaptreeLevel<string, string>({ store: asyncStore() });
    expect(adb.supports.getSync).toBe(false);
    await adb.open();
    expect(() => adb.getSync('a')).toThrow(expect.objectContaining({ code: 'LEVEL_NOT_SUPPORTED' }));
    await adb.close();
  });

  it('a snapshot taken while an async store is half-way through a write sees the write whole', async () => {
    // The store applies a write one key at a time, each step waiting for the test's go.
    const waiting: (() => void)[] = [];
    let paused = false;
    const gate = () => (paused ? new Promise<void>((r) => waiting.push(r)) : Promise.resolve());
    const until = async (f: () => boolean) => {
      for (let i = 0; i < 1000 && !f(); i++) await new Promise((r) => setTimeout(r, 0));
      expect(f()).toBe(true);
    };
    const db = new AdaptreeLevel<string, string>({ store: asyncStore({ stepwise: true, gate }) });
    const keys = ['a', 'b', 'c', 'd'];
    await db.batch(keys.map((k) => ({ type: 'put' as const, key: k, value: 'old' })));
    paused = true;
    const write = db.batch(keys.map((k) => ({ type: 'put' as const, key: k, value: 'new' })));
    for (let applied = 0; applied < 2; applied++) {
      await until(() => waiting.length === 1);
      waiting.shift()!();
    }
    await until(() => waiting.length === 1); // two keys written, the third waits
    const raw = await db.store.getMany(keys.map((k) => new TextEncoder().encode(k)));
    expect(raw.map((v) => new TextDecoder().decode(v))).toEqual(['new', 'new', 'old', 'old']);
    const snap = db.snapshot();
    expect(await db.values({ snapshot: snap }).all()).toEqual(['new', 'new', 'new', 'new']);
    expect(await db.getMany(['a', 'd'], { snapshot: snap })).toEqual(['new', 'new']);
    expect(await db.get('c')).toBe('new'); // a plain read takes a version too
    paused = false;
    while (waiting.length > 0) waiting.shift()!();
    await write;
    expect(await db.values({ snapshot: snap }).all()).toEqual(['new', 'new', 'new', 'new']);
    await snap.close();
    await db.close();
  });

  it('rejects options that are not an object with a typed error', () => {
    expect(() => new AdaptreeLevel(null as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
