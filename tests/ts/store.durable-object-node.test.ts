// The durable-object backend without workerd: over a fake `ctx.storage` whose `sql.exec` is a
// real SQLite (@sqlite.org/sqlite-wasm, in memory) returning BLOBs as ArrayBuffers as workerd
// does, and whose `transactionSync` is a savepoint. Checks the chunk files against MemoryFile
// (random reads, writes across chunk boundaries, truncation, reopen), the error mapping
// (SQLITE_FULL via max_page_count → QuotaExceededError, others → IoError), the lock, and a
// real store (commit, crash = a new storage object over the same database, reopen).
// The runtime itself is tested in tests/ts/runtimes/durable-object.test.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import sqlite3InitModule from '@sqlite.org/sqlite-wasm';
import { InvalidArgumentError, IoError, LockedError, QuotaExceededError } from '../../ts/src/errors.js';
import { MemoryFile } from '../../ts/src/storage/memory.js';
import { durableObjectStorage, type DurableObjectStorageLike } from '../../ts/src/storage/durable-object.js';
import { BTreeStore } from '../../ts/src/store.js';
import { SplitMix } from './store-rng.js';

type Db = {
  exec(o: { sql: string; bind?: unknown[]; rowMode: 'object'; returnValue: 'resultRows' }): Record<string, unknown>[];
  exec(sql: string): unknown;
};
let sqlite3: { oo1: { DB: new (name: string) => Db }; config: { warn: (...a: unknown[]) => void } };

beforeAll(async () => {
  sqlite3 = (await sqlite3InitModule({ print() {}, printErr() {} } as never)) as never;
  sqlite3.config.warn = () => {}; // the expected SQLITE_FULL would be logged on every step that fails
});

/** expect(a).toEqual(b) for long byte arrays, fast, naming the first difference. */
function sameBytes(a: Uint8Array, b: Uint8Array, what: string): void {
  if (a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length))) return;
  const i = a.findIndex((x, j) => x !== b[j]);
  expect.fail(`${what}: lengths ${a.length}/${b.length}, first difference at ${i}: ${a[i]} vs ${b[i]}`);
}

/** A fresh object's storage, or a new storage object over `db` (what a restarted isolate sees). */
function fakeStorage(db: Db = new sqlite3.oo1.DB(':memory:')): DurableObjectStorageLike & { db: Db; execs: number } {
  let depth = 0;
  const st = {
    db,
    execs: 0,
    sql: {
      exec(query: string, ...bindings: unknown[]) {
        st.execs++;
        const rows = db.exec({ sql: query, bind: bindings.length ? bindings : undefined, rowMode: 'object', returnValue: 'resultRows' });
        for (const r of rows) for (const k of Object.keys(r)) if (r[k] instanceof Uint8Array) r[k] = (r[k] as Uint8Array).slice().buffer;
        return { toArray: () => rows };
      },
    },
    transactionSync<T>(f: () => T): T {
      const name = `sp${depth++}`;
      db.exec(`SAVEPOINT ${name}`);
      try {
        const r = f();
        db.exec(`RELEASE ${name}`);
        return r;
      } catch (e) {
        try {
          db.exec(`ROLLBACK TO ${name}`);
          db.exec(`RELEASE ${name}`);
        } catch {
          /* SQLITE_FULL may have rolled the transaction back already */
        }
        throw e;
      } finally {
        depth--;
      }
    },
  };
  return st;
}

describe('durable-object backend over SQLite (Node)', () => {
  it('chunk files behave as MemoryFiles: random writes across chunks, reads, truncation, sync, reopen', () => {
    const st = fakeStorage();
    const backend = durableObjectStorage(st, { chunkSize: 4096 });
    const rng = new SplitMix(7);
    const model = { data: new MemoryFile(), log: new MemoryFile() };
    let files = backend.open('f', { create: true });
    for (let step = 0; step < 600; step++) {
      const which = rng.int(2) === 0 ? 'data' : 'log';
      const f = files[which], m = model[which];
      const op = rng.int(10);
      if (op < 5) {
        const len = 1 + rng.int(rng.int(4) === 0 ? 20000 : 200);
        const off = rng.int(m.size() + 9000);
        const src = new Uint8Array(len);
        for (let i = 0; i < len; i++) src[i] = rng.int(256);
        f.write(src, off);
        m.write(src, off);
      } else if (op < 8) {
        const len = 1 + rng.int(12000), off = rng.int(m.size() + 100);
        const a = new Uint8Array(len).fill(0xee), b = new Uint8Array(len).fill(0xee);
        expect(f.read(a, off)).toBe(m.read(b, off));
        sameBytes(a, b, `step ${step}: ${which} read at ${off}, ${len} bytes`);
      } else if (op === 8) {
        const n = rng.int(m.size() + 5000);
        f.truncate(n);
        m.truncate(n);
      } else {
        f.sync();
        if (rng.int(3) === 0) {
          // Everything synced: a reopen (also over a new storage object) sees the same files.
          files.log.sync();
          files.data.sync();
          files.close();
          files = durableObjectStorage(rng.int(2) ? st : fakeStorage(st.db)).open('f', { create: false });
        }
      }
      expect(f.size()).toBe(m.size());
    }
    for (const which of ['data', 'log'] as const) {
      const a = new Uint8Array(model[which].size());
      files[which].read(a, 0);
      sameBytes(a, model[which].snapshot(), `${which} at the end`);
    }
    files.close();
    expect(backend.list()).toEqual(['f']);
  });

  it('create: false, the lock per storage object and path, remove, list, chunk size kept, bad arguments', () => {
    const st = fakeStorage();
    const b = durableObjectStorage(st);
    expect(() => b.open('x', { create: false })).toThrow(InvalidArgumentError);
    const x = b.open('x', { create: true });
    expect(() => b.open('x', { create: true })).toThrow(LockedError);
    expect(() => durableObjectStorage(st).open('x', { create: true })).toThrow(LockedError); // same storage object
    durableObjectStorage(fakeStorage()).open('x', { create: true }).close(); // another object
    const y = b.open('y', { create: true });
    expect(() => b.remove('x')).toThrow(LockedError);
    x.data.write(new Uint8Array(10000).fill(1), 0);
    x.close();
    y.close();
    expect(b.list()).toEqual(['x', 'y']);
    const again = durableObjectStorage(st, { chunkSize: 65536 }).open('x', { create: false });
    expect(again.data.size()).toBe(10000); // flushed at close
    const n = st.db.exec({ sql: "SELECT count(*) AS n, max(length(data)) AS m FROM adaptree_chunks WHERE store = 'x'", rowMode: 'object', returnValue: 'resultRows' })[0]!;
    expect(n).toEqual({ n: 1, m: 10000 }); // created with 16 KiB chunks, reopened with them
    again.close();
    b.remove('x');
    expect(b.list()).toEqual(['y']);
    expect(() => durableObjectStorage(st, { chunkSize: 5000 })).toThrow(InvalidArgumentError);
    expect(() => durableObjectStorage({} as never).open('z', { create: true })).toThrow(/SQLite-backed/);
    // Closed for a store the garbage collector found dropped (close(false, true)): the lock
    // goes, nothing is written (a finalizer runs outside any request, where workerd refuses
    // storage calls and logged the uncaught error; a new-user probe, session 23).
    const z = b.open('z', { create: true });
    z.data.write(new Uint8Array(100).fill(2), 0); // buffered, never synced
    const execs = st.execs;
    z.close(false, true);
    expect(st.execs).toBe(execs);
    const z2 = b.open('z', { create: false });
    expect(z2.data.size()).toBe(0);
    z2.close();
  });

  it('maps SQLITE_FULL to QuotaExceededError and other SQL errors to IoError, with the cause', () => {
    const st = fakeStorage();
    const f = durableObjectStorage(st).open('q', { create: true });
    st.db.exec('PRAGMA max_page_count = 40');
    let err: unknown;
    try {
      for (let i = 0; i < 100; i++) {
        f.log.write(new Uint8Array(16384).fill(i), i * 16384);
        f.log.sync();
      }
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QuotaExceededError);
    expect((err as Error).message).toMatch(/SQLITE_FULL/);
    expect((err as { cause?: unknown }).cause).toBeDefined();
    st.db.exec('DROP TABLE adaptree_chunks');
    expect(() => f.data.read(new Uint8Array(10), 0)).not.toThrow(); // size 0: nothing read
    expect(() => {
      f.data.write(new Uint8Array(10), 0);
      f.data.sync();
    }).toThrow(IoError);
  });

  it('wait: true queues a second open until the first is closed; checkpointBytes bounds the log', async () => {
    const st = fakeStorage();
    const backend = durableObjectStorage(st);
    expect(backend.checkpointBytes).toBe(8 << 20);
    expect(() => durableObjectStorage(st, { checkpointBytes: -1 })).toThrow(InvalidArgumentError);
    const a = await BTreeStore.open<string, number>({ path: 'w', storage: backend, checkpointBytes: 64 << 10 });
    await expect(BTreeStore.open({ path: 'w', storage: backend })).rejects.toBeInstanceOf(LockedError);
    let got: BTreeStore<string, number> | undefined;
    const b = BTreeStore.open<string, number>({ path: 'w', storage: backend, wait: true }).then((s) => (got = s));
    const c = BTreeStore.open<string, number>({ path: 'w', storage: backend, wait: true });
    // The log is checkpointed whenever it passes 64 KiB (commits log deltas: ~2 KB each here).
    for (let i = 0; i < 120; i++) {
      for (let j = 0; j < 50; j++) a.set(`k${i}:${j}`, i);
      await a.commit();
    }
    const stats = a.stats();
    expect(stats.checkpoints).toBeGreaterThan(2);
    expect(stats.log_bytes).toBeLessThan(256 << 10);
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toBeUndefined(); // still waiting
    await a.close();
    const second = await b;
    expect(second.size).toBe(6000);
    await second.close();
    const third = await c; // the next in line
    expect(third.get('k119:49')).toBe(119);
    await third.close();
  });

  it('holds a store: random ops + commit, crash (a new storage object, no close), reopen to the last commit; quota fails a commit', async () => {
    const st = fakeStorage();
    const open = (s: DurableObjectStorageLike) => BTreeStore.open<string, number>({ path: 'main', storage: durableObjectStorage(s), poolSize: 1 << 20 });
    const rng = new SplitMix(11);
    const model = new Map<string, number>();
    let s = await open(st);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3000; i++) {
        const k = `k${rng.int(5000)}`;
        if (rng.int(5) === 0) {
          s.delete(k);
          model.delete(k);
        } else {
          const v = rng.next();
          s.set(k, v);
          model.set(k, v);
        }
      }
      await s.commit();
      // Uncommitted writes, then a "crash": the isolate is gone, a new one opens the object.
      for (let i = 0; i < 500; i++) s.set(`lost${i}`, i);
      s = await open(fakeStorage(st.db));
      expect([...s.entries()]).toEqual([...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
      s.checkInvariants();
    }
    await s.close();
    const st2 = fakeStorage(st.db); // st still holds the store the first "crash" abandoned
    s = await open(st2);
    expect(s.size).toBe(model.size);
    await expect(open(st2)).rejects.toBeInstanceOf(LockedError);
    st.db.exec('PRAGMA max_page_count = 1');
    for (let i = 0; i < 20000; i++) s.set(`big${i}`, i);
    await expect(s.commit()).rejects.toBeInstanceOf(QuotaExceededError);
    await s.close({ commit: false }).catch(() => undefined);
    st.db.exec('PRAGMA max_page_count = 1000000');
    s = await open(fakeStorage(st.db));
    expect(s.size).toBe(model.size);
    await s.close();
  });

  // Store writes made inside the caller's own transactionSync that then threw are rolled back
  // with it, the chunks the pool spilled to the log among them. The next commit resolved over the
  // hole they left, and was gone after a restart (a probe, session 31): it now fails (IoError,
  // then the store refuses writes) and a reopen finds the last commit that stood.
  it('a commit after store writes rolled back by the caller\'s transactionSync fails; a reopen has the last commit', async () => {
    const st = fakeStorage();
    const open = (s: DurableObjectStorageLike) => BTreeStore.open<string, string>({ path: 'main', storage: durableObjectStorage(s), poolSize: 1 << 20 });
    const s = await open(st);
    for (let i = 0; i < 1000; i++) s.set(`k${i}`, 'v');
    await s.commit();
    const big = 'x'.repeat(200);
    expect(() =>
      st.transactionSync!(() => {
        for (let i = 0; i < 40000; i++) s.set(`t${i}`, big); // more than the 1 MiB pool: pages spill
        throw new Error('user rollback');
      }),
    ).toThrow('user rollback');
    try {
      s.set('marker', 'm'); // (may read a page whose chunk went: CORRUPT)
    } catch {
      /* the commit below must fail either way */
    }
    await expect(s.commit()).rejects.toMatchObject({ code: 'IO_ERROR' });
    await s.close({ commit: false }).catch(() => undefined);
    const again = await open(fakeStorage(st.db));
    expect(again.size).toBe(1000);
    expect(again.get('marker')).toBeUndefined();
    again.checkInvariants();
    await again.close();
  });
});
