// Main thread of the OPFS test page: one dedicated worker, driven by the test through
// window.call(cmd) → the worker's reply (or a rejection carrying its error's name and code).
// Progress messages from the worker ({ event }) are logged to the console, where the test
// reads them (the kill test counts commits the page saw resolve).
import * as api from '/dist/index.js';
window.api = api;

const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const pending = new Map();
let next = 1;

worker.onmessage = (e) => {
  const m = e.data;
  if (m.event !== undefined) {
    console.log(`adaptree-event ${JSON.stringify(m.event)}`);
    return;
  }
  const p = pending.get(m.seq);
  if (p === undefined) return;
  pending.delete(m.seq);
  if (m.error !== undefined) p.reject(Object.assign(new Error(m.error.message), m.error));
  else p.resolve(m.result);
};
worker.onerror = (e) => console.error(`worker error: ${e.message}`);

/** Sends a command to the worker; resolves with its result, rejects with { name, code, message }. */
window.call = (cmd) =>
  new Promise((resolve, reject) => {
    const seq = next++;
    pending.set(seq, { resolve, reject });
    worker.postMessage({ seq, cmd });
  });

/** Same as call, but resolves with { error: { name, code, message } } instead of rejecting. */
window.tryCall = (cmd) =>
  window.call(cmd).then((result) => ({ result }), (e) => ({ error: { name: e.name, code: e.code, message: e.message, causeName: e.causeName, causeCode: e.causeCode, domCause: e.domCause } }));

/** An 'opfs' store opened on the main thread (it lives in a worker the package starts):
 * applies `ops` with the async twins in two commits, reads them back, closes, reopens. */
window.mainThread = async (path, ops) => {
  const out = {};
  const err = (e) => ({ name: e.name, code: e.code, message: e.message });
  let s = await api.BTreeStore.open({ path, storage: 'opfs' });
  out.isStore = s instanceof api.BTreeStore;
  out.isAsync = s.isAsync;
  out.storage = s.storage;
  const half = Math.floor(ops.length / 2);
  for (const [i, [k, v]] of ops.entries()) {
    if (v === null) await s.deleteAsync(k);
    else await s.setAsync(k, v);
    if (i === half) await s.commit();
  }
  await s.commit();
  out.size = s.size;
  try {
    s.get('x');
    out.syncGet = 'returned';
  } catch (e) {
    out.syncGet = err(e);
  }
  out.first = await s.firstAsync();
  out.getFirst = out.first === undefined ? undefined : await s.getAsync(out.first[0]);
  out.hasMissing = await s.hasAsync('no such key');
  out.many = await s.getManyAsync(ops.slice(0, 3).map(([k]) => k));
  out.stats = (await s.statsAsync()).storage;
  out.range = [];
  for await (const k of s.keysAsync({ gte: 'key:00010', limit: 5 })) out.range.push(k);
  // A range the store refuses: its typed error (keysAsync throws it, as BTreeStore's does).
  out.badRange = await (async () => {
    for await (const k of s.keysAsync({ gte: 42 })) void k;
  })().then(() => 'ok', err);
  // Two scans side by side, broken off early, then one to the end.
  const a = s.keysAsync(), b = s.keysAsync({ gte: 'key:00005' });
  out.twoScans = [(await a.next()).value, (await b.next()).value, (await a.next()).value];
  await a.return();
  await b.return();
  out.allKeys = 0;
  for await (const k of s.keysAsync()) out.allKeys += k ? 1 : 0;
  // Found by a new-user probe (session 22): a write while an iterator had a batch buffered
  // (256 entries read ahead) left deleted entries and old values in it; now it reads on after
  // the last key it returned, as a worker's or IndexedDB's iterator does.
  {
    const ks = [];
    for await (const k of s.keysAsync()) ks.push(k);
    const it = s.entriesAsync();
    const first = (await it.next()).value;
    await s.deleteAsync(ks[3]);
    await s.setAsync(ks[5], 'changed');
    const rest = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    out.iterAfterWrites = { first: first[0], deletedSeen: rest.some(([k]) => k === ks[3]), changed: rest.find(([k]) => k === ks[5])?.[1], count: rest.length, keys: ks.length };
    await s.setAsync(ks[3], 'back');
  }
  out.refresh = await s.refresh().then((v) => v, err);
  out.getManyFive = await s.getManyAsync(5).then(() => 'ok', err);
  out.setManyNull = await (async () => s.setManyAsync(null))().then(() => 'ok', err);
  // A dedicated worker of this page (another context of the origin) cannot open it meanwhile.
  out.workerOpen = await tryCall({ op: 'open', path });
  // A bad value is the same typed error as in a worker.
  out.badKey = await s.setAsync(42, 1).then(() => 'ok', err);
  out.badClone = await s.setAsync('f', () => 1).then(() => 'ok', err);
  await s.close();
  out.afterClose = await s.getAsync('a').then(() => 'ok', err);
  // (sync methods said NEED_PAGE after close, session 23)
  out.syncAfterClose = [() => s.get('a'), () => s.set('a', 1), () => s.stats()].map((f) => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return err(e);
    }
  });
  // (a commit after close was sent to the ended worker and never settled)
  out.commitAfterClose = await Promise.race([s.commit().then(() => 'ok', err), new Promise((r) => setTimeout(() => r('pending after 3 s'), 3000))]);
  s = await api.BTreeStore.open({ path, storage: 'opfs' });
  out.entries = [];
  for await (const e of s) out.entries.push(e);
  out.reopenedSize = s.size;
  await s.close();
  // Close and reopen right away, again and again: never LOCKED by the store just closed.
  out.cycles = 0;
  for (let i = 0; i < 5; i++) {
    const t = await api.BTreeStore.open({ path, storage: 'opfs' });
    await t.setAsync(`cycle${i}`, i);
    await t.close();
    out.cycles++;
  }
  return out;
};

/** Calls made in one turn on a main-thread 'opfs' store go to its worker in batches: counts
 * the messages the page posts to Workers (a wrapped Worker.prototype.postMessage) while
 * `ops` (set, or delete where the value is null), a key the store refuses, gets of every key
 * and a commit are issued without awaiting each; then a turn with a value the encoding
 * refuses among good calls; reads everything back after a reopen. */
window.mainBurst = async (path, ops) => {
  const err = (e) => ({ name: e.name, code: e.code });
  const proto = Worker.prototype;
  const post = proto.postMessage;
  let posts = 0;
  proto.postMessage = function (...a) {
    posts++;
    return post.apply(this, a);
  };
  try {
    const s = await api.BTreeStore.open({ path, storage: 'opfs' });
    const out = {};
    posts = 0;
    const writes = ops.map(([k, v], i) => {
      if (i === 7) s.setAsync(42, 'a number key').then(() => (out.badKey = 'ok'), (e) => (out.badKey = err(e)));
      return v === null ? s.deleteAsync(k) : s.setAsync(k, v);
    });
    const reads = ops.map(([k]) => s.getAsync(k));
    const committed = s.commit();
    out.calls = writes.length + reads.length + 2;
    await Promise.all(writes);
    out.reads = await Promise.all(reads);
    await committed;
    out.postsForBurst = posts;
    out.size = s.size;
    // a value the encoding refuses, among good calls of one turn: it alone fails
    posts = 0;
    const mixed = [s.setAsync('mixed:1', 1), s.setAsync('mixed:fn', () => 1), s.setAsync('mixed:2', 2), s.getAsync('mixed:1'), s.getAsync('mixed:2'), s.hasAsync('mixed:fn')];
    out.mixed = await Promise.all(mixed.map((p) => p.then((v) => (v === s ? 'store' : v), err)));
    out.postsForMixed = posts;
    await s.deleteRangeAsync({ gte: 'mixed:', lt: 'mixed;' });
    await s.commit();
    await s.close();
    const t = await api.BTreeStore.open({ path, storage: 'opfs', create: false });
    posts = 0;
    out.reopened = await Promise.all(ops.map(([k]) => t.getAsync(k)));
    out.postsForReads = posts;
    // a scan's iterator and its first batch: one message
    posts = 0;
    const it = t.keysAsync();
    out.firstKey = (await it.next()).value;
    out.postsForScanStart = posts;
    await it.return();
    out.entries = [];
    for await (const e of t) out.entries.push(e);
    await t.close();
    return out;
  } finally {
    proto.postMessage = post;
  }
};

/** What a call gave: its result, or its error's name, code, message (and its cause's). */
const outcome = (f) =>
  (async () => f())().then(
    (value) => ({ value }),
    (e) => ({ error: { name: e?.name, code: e?.code, message: String(e?.message ?? e), ...(e?.cause !== undefined ? { cause: { name: e.cause?.name, message: String(e.cause?.message ?? e.cause) } } : {}) } }),
  );

/** A main-thread 'opfs' store beside a BTreeMap given the same calls: ranges (a truthy
 * non-boolean `reverse`, bad limits, ...), values whose encoding runs user code (toJSON, a
 * Proxy, an object with methods), keys the encoding refuses, codec objects. Found by a
 * new-user probe (session 24): the worker took `reverse: 1` for forward when it read on
 * (duplicates, skipped entries), ignored a limit of '3' or null, and got values by structured
 * clone (toJSON skipped, a Proxy refused) and keys too (a Symbol key: INVALID_VALUE). */
window.mainAgrees = async (path) => {
  await api.init();
  const out = {};
  const m = new api.BTreeMap();
  const s = await api.BTreeStore.open({ path, storage: 'opfs' });
  for (let i = 0; i < 600; i++) {
    const k = 'k' + String(i).padStart(4, '0');
    m.set(k, i);
    void s.setAsync(k, i);
  }
  await s.commit();
  const ranges = [{ reverse: true }, { reverse: 1 }, { reverse: 'yes' }, { reverse: 0 }, { reverse: 1, gt: 'k0100', lte: 'k0400' }, { reverse: 'yes', limit: 300 },
    { reverse: [], gte: 'k0590' }, { limit: '3' }, { limit: null }, { limit: -1 }, { limit: 2.5 }, { limit: 3 }, { gt: 'a', gte: 'b' }, { from: 'k0005' }, { gte: 42 }, 5];
  out.ranges = [];
  for (const range of ranges) {
    for (const kind of ['keys', 'values', 'entries']) {
      const map = await outcome(() => [...m[kind](range)]);
      const store = await outcome(async () => {
        const got = [];
        for await (const x of s[`${kind}Async`](range)) got.push(x);
        return got;
      });
      out.ranges.push({ range: JSON.stringify(range), kind, map, store });
    }
  }
  for (const range of [{ gte: 'k0590', reverse: 1 }, { gt: 'k0580', limit: 1 }, { gte: 7 }, { lt: 'k0005', form: 1 }]) {
    out.ranges.push({ range: JSON.stringify(range), kind: 'deleteRange', map: await outcome(() => m.deleteRange(range)), store: await outcome(() => s.deleteRangeAsync(range)) });
  }

  // Values: what the value encoding makes of them on this thread, as a BTreeMap does.
  class User {
    constructor() {
      this.name = 'ada';
      this.password = 'hunter2';
    }
    toJSON() {
      return { name: this.name };
    }
  }
  const values = { user: new User(), method: { a: 1, f() { return 1; } }, proxy: new Proxy({ a: 1, b: [1, 2] }, {}), date: new Date(0), fn: () => 1, big: 1n, sym: Symbol('v') };
  out.values = {};
  for (const [k, v] of Object.entries(values)) {
    const map = await outcome(() => (m.set(k, v), m.get(k)));
    const store = await outcome(async () => (await s.setAsync(k, v), s.getAsync(k)));
    out.values[k] = { map, store };
  }
  // A value changed after an unawaited setAsync: the store has it as it was at the call.
  const changing = { n: 1 };
  const p = s.setAsync('changing', changing);
  changing.n = 2;
  await p;
  out.changing = await s.getAsync('changing');
  m.set('changing', { n: 1 });
  // Keys the key encoding refuses: InvalidKeyError (KeyTooLargeError), as on a BTreeMap.
  const keys = { symbol: Symbol('k'), fn: () => 1, number: 42, object: {}, long: 'x'.repeat(2000), surrogate: 'a\ud800' };
  out.keys = {};
  for (const [name, k] of Object.entries(keys)) {
    out.keys[name] = {
      map: [await outcome(() => m.set(k, 1)), await outcome(() => m.get(k)), await outcome(() => m.getMany(['a', k])), await outcome(() => m.setMany([['a', 1], [k, 2]])), await outcome(() => m.nextHigher(k))],
      store: [await outcome(() => s.setAsync(k, 1)), await outcome(() => s.getAsync(k)), await outcome(() => s.getManyAsync(['a', k])), await outcome(() => s.setManyAsync([['a', 1], [k, 2]])), await outcome(() => s.nextHigherAsync(k))],
    };
  }
  // The other calls, beside the map: many entries at once, values past the size that travels
  // in a buffer of its own (64 KiB) among small ones, both ends, a value whose toJSON calls the
  // store (refused, as a BTreeMap refuses it).
  const big = (n) => ({ n, s: 'b'.repeat(100_000 + n) });
  const batch = [['m:1', 1], ['m:2', big(2)], ['m:3', 'three'], ['m:4', big(4)], ['m:5', [5]]];
  m.setMany(batch);
  await s.setManyAsync(batch);
  const all = async (it) => {
    const got = [];
    for await (const x of it) got.push(x);
    return got;
  };
  out.more = {
    map: [m.getMany(['m:4', 'm:0', 'm:2']), [...m.entries({ gte: 'm:', lt: 'm;' })], [...m.values({ gte: 'm:', lt: 'm;', reverse: true, limit: 4 })], m.last(), m.nextLower('m:3'), m.nextHigher('m:3'), m.first()],
    store: [await s.getManyAsync(['m:4', 'm:0', 'm:2']), await all(s.entriesAsync({ gte: 'm:', lt: 'm;' })), await all(s.valuesAsync({ gte: 'm:', lt: 'm;', reverse: true, limit: 4 })), await s.lastAsync(), await s.nextLowerAsync('m:3'), await s.nextHigherAsync('m:3'), await s.firstAsync()],
  };
  let inner;
  const reentrant = {
    toJSON: () => {
      inner = s.getAsync('m:1');
      inner.catch(() => {}); // (looked at below)
      return 'outer';
    },
  };
  out.reentrant = { set: await outcome(() => s.setAsync('reentrant', reentrant)), inner: await outcome(() => inner), back: await s.getAsync('reentrant') };
  m.set('reentrant', 'outer');
  out.size = [m.size, s.size];
  out.mapEntries = [...m.entries()].filter(([k]) => !k.startsWith('m:'));
  await s.deleteRangeAsync({ gte: 'm:', lt: 'm;' });
  await s.close();

  // Codec objects work as on any backend: keys in the codec's order, values through it; a
  // bytes value changed after the call is stored as it was.
  const codecs = () => ({
    keys: { encode: (n) => { if (typeof n !== 'number') throw new TypeError('not a number'); return new Uint8Array([255 - n]); }, decode: (b) => 255 - b[0] },
    values: { encode: (v) => new TextEncoder().encode(`v:${v}`), decode: (b) => new TextDecoder().decode(b).slice(2) },
  });
  const cm = new api.BTreeMap(null, codecs());
  out.codecs = await outcome(async () => {
    const t = await api.BTreeStore.open({ path: path + '-codecs', storage: 'opfs', ...codecs() });
    try {
      for (const n of [3, 1, 2]) {
        cm.set(n, `n${n}`);
        await t.setAsync(n, `n${n}`);
      }
      const got = [];
      for await (const e of t.entriesAsync({ gte: 2 })) got.push(e);
      return {
        map: [...cm.entries({ gte: 2 })], store: got, first: [cm.first(), await t.firstAsync()], encodings: [t.keyEncoding, t.valueEncoding],
        badKey: [(await outcome(() => cm.set('x', 1))).error, (await outcome(() => t.setAsync('x', 1))).error],
      };
    } finally {
      await t.close();
    }
  });
  out.bytes = await outcome(async () => {
    const t = await api.BTreeStore.open({ path: path + '-bytes', storage: 'opfs', values: 'bytes' });
    try {
      const b = new Uint8Array([1, 2, 3]);
      const q = t.setAsync('b', b);
      b[0] = 9;
      await q;
      return [...(await t.getAsync('b'))];
    } finally {
      await t.close();
    }
  });
  return out;
};

/** An error of the store's worker keeps its cause: the main-thread store is opened on files a
 * sync access handle holds without the lock (LockedError, caused by the DOMException). */
window.mainCause = async (path) => {
  await call({ op: 'hold', path: path + '-log' });
  try {
    return await outcome(() => api.BTreeStore.open({ path, storage: 'opfs' }));
  } finally {
    await call({ op: 'unhold', path: path + '-log' });
  }
};

/** commit() after close() on a main-thread store, as on every backend (docs/STORE.md): made
 * while close() runs, it shares close's commit and resolves with it; after close({ commit:
 * false }), or once close() is done, ClosedError. */
window.mainCommitAfterClose = async (path) => {
  const out = {};
  for (const commit of [true, false]) {
    const s = await api.BTreeStore.open({ path, storage: 'opfs' });
    await s.setAsync('a', commit ? 1 : 2);
    const closing = s.close({ commit });
    const during = await Promise.race([outcome(() => s.commit()), new Promise((r) => setTimeout(() => r('pending after 3 s'), 3000))]);
    await closing;
    const after = await outcome(() => s.commit());
    const t = await api.BTreeStore.open({ path, storage: 'opfs' });
    out[commit] = { during, after: after.error?.code, a: await t.getAsync('a') };
    await t.close();
  }
  return out;
};

/** open() when the package's worker script cannot be loaded (the test answers its request
 * with a 404 or an HTML page). */
window.mainNoWorker = (path) => outcome(() => api.BTreeStore.open({ path, storage: 'opfs' }));

window.ready = call({ op: 'ping' }).then(() => (document.getElementById('out').textContent = 'ready'));
