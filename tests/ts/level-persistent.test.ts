// adaptree/level over a BTreeStore on node files: data outlives close and the process, writes
// resolve once committed, snapshots still hold while the store is persistent, and the open
// options (createIfMissing, errorIfExists) and locking behave like classic-level's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { init } from '../../ts/src/index.js';
import { AdaptreeLevel, persistentStore } from '../../ts/src/level/index.js';

let dir = '';
let n = 0;
const loc = () => join(dir, `db${++n}`);

beforeAll(async () => {
  await init();
  dir = mkdtempSync(join(tmpdir(), 'adaptree-level-persistent-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('AdaptreeLevel with a location', () => {
  it('keeps its data across close and reopen (put, batch, del, clear)', async () => {
    const path = loc();
    let db = new AdaptreeLevel<string, unknown>(path, { valueEncoding: 'json' });
    expect(db.supports.permanence).toBe(true);
    expect(db.supports.getSync).toBe(true);
    await db.put('a', { n: 1 });
    await db.batch([{ type: 'put', key: 'b', value: [2] }, { type: 'put', key: 'c', value: 'three' }, { type: 'del', key: 'a' }]);
    for (let i = 0; i < 2000; i++) await db.put(`k${String(i).padStart(5, '0')}`, i);
    await db.clear({ gte: 'k01000' });
    expect(db.getSync('b')).toEqual([2]);
    await db.close();
    expect(existsSync(path)).toBe(true);

    db = new AdaptreeLevel<string, unknown>({ location: path, storage: 'node', valueEncoding: 'json' });
    expect(await db.get('a')).toBeUndefined();
    expect(await db.get('b')).toEqual([2]);
    expect(await db.get('c')).toBe('three');
    const keys = await db.keys({ gte: 'k' }).all();
    expect(keys.length).toBe(1000);
    expect(keys.at(-1)).toBe('k00999');
    await db.close();
  });

  it('a write is durable once its promise resolves: a process that exits without close() loses nothing', () => {
    const path = loc();
    // The child puts, then exits at once (no close, no checkpoint): recovery must replay the log.
    const child = `
      const { AdaptreeLevel } = await import(${JSON.stringify(new URL('../../dist/level/index.js', import.meta.url).href)});
      const db = new AdaptreeLevel(${JSON.stringify(path)}, { valueEncoding: 'json' });
      await Promise.all([db.put('x', 1), db.put('y', 2), db.batch([{ type: 'put', key: 'z', value: 3 }])]);
      process.exit(0);
    `;
    execFileSync(process.execPath, ['--input-type=module', '-e', child], { stdio: 'pipe' });
    return (async () => {
      const db = new AdaptreeLevel<string, number>(path, { valueEncoding: 'json' });
      expect(await db.iterator().all()).toEqual([['x', 1], ['y', 2], ['z', 3]]);
      await db.close();
    })();
  });

  it('snapshots and iterators see the state they were taken in', async () => {
    const db = new AdaptreeLevel(loc());
    await db.batch([{ type: 'put', key: 'a', value: '1' }, { type: 'put', key: 'b', value: '2' }]);
    const snapshot = db.snapshot();
    const it = db.iterator();
    await db.put('a', 'changed');
    await db.del('b');
    expect(await db.get('a', { snapshot })).toBe('1');
    expect(await it.all()).toEqual([['a', '1'], ['b', '2']]);
    expect(await db.iterator().all()).toEqual([['a', 'changed']]);
    await snapshot.close();
    await db.close();
  });

  // A new-user probe (session 23): with an iterator open (or a snapshot, or a limit), clear()
  // went in chunks of 1024 keys, each awaited to its own commit: a crash left part of it, a put
  // made meanwhile was deleted by a later chunk, and close() during it kept part of it.
  it('clear() with an iterator open is one write: a put made while it runs stays, close() keeps all or nothing', async () => {
    const where = loc();
    let db = new AdaptreeLevel(where);
    await db.batch(Array.from({ length: 5000 }, (_, i) => ({ type: 'put' as const, key: 'r' + String(i).padStart(5, '0'), value: 'v' })));
    const it = db.iterator();
    await it.next();
    const clearing = db.clear();
    const put = db.put('r04999z', 'new');
    await put;
    await clearing;
    expect(await db.get('r04999z')).toBe('new');
    await it.close();
    // close() right after a chunked clear begins: all of it is durable
    await db.batch(Array.from({ length: 5000 }, (_, i) => ({ type: 'put' as const, key: 's' + String(i).padStart(5, '0'), value: 'v' })));
    const it2 = db.iterator();
    await it2.next();
    const clearing2 = db.clear({ gte: 's', lt: 't' });
    await db.close();
    await clearing2.catch(() => {});
    db = new AdaptreeLevel(where);
    expect(await db.keys().all()).toEqual(['r04999z']);
    await db.close();
  });

  it('createIfMissing: false and errorIfExists: true', async () => {
    const path = loc();
    const missing = new AdaptreeLevel(path, { createIfMissing: false });
    await expect(missing.open()).rejects.toMatchObject({ code: 'LEVEL_DATABASE_NOT_OPEN', cause: { message: expect.stringMatching(/does not exist/) } });
    expect(existsSync(path)).toBe(false);
    // its directory missing too: the same (it said "its directory ... does not exist (open
    // creates the store's files, not directories)", while LEVEL.md says the directory is
    // created, which createIfMissing: false does not: a level probe, session 35)
    const deeper = join(loc(), 'sub', 'db');
    await expect(new AdaptreeLevel(deeper, { createIfMissing: false }).open()).rejects.toMatchObject({
      code: 'LEVEL_DATABASE_NOT_OPEN',
      cause: { code: 'INVALID_ARGUMENT', message: `the store at '${deeper}' does not exist (createIfMissing: false)` },
    });
    const db = new AdaptreeLevel(path);
    await db.put('k', 'v');
    await db.close();
    await expect(db.open({ errorIfExists: true })).rejects.toMatchObject({ cause: { message: expect.stringMatching(/already exists/) } });
    await db.open();
    expect(await db.get('k')).toBe('v');
    await db.close();
    // a location under a file: the cause was Node's own EEXIST from mkdir, without a code
    const file = loc();
    writeFileSync(file, 'a file');
    const under = new AdaptreeLevel(join(file, 'db'));
    await expect(under.open()).rejects.toMatchObject({ code: 'LEVEL_DATABASE_NOT_OPEN', cause: { code: 'IO_ERROR' } });
  });

  it('on an asynchronous backend a db opened and closed empty exists afterwards (errorIfExists, createIfMissing: false)', async () => {
    // An empty commit writes nothing there, so the level commits a new empty store once.
    const db = new AdaptreeLevel({ location: `async-empty-${++n}`, storage: 'async-memory' });
    await db.open();
    await db.close();
    await expect(db.open({ createIfMissing: false, errorIfExists: true })).rejects.toMatchObject({
      code: 'LEVEL_DATABASE_NOT_OPEN', cause: { code: 'INVALID_ARGUMENT', message: expect.stringMatching(/already exists/) },
    });
    await db.open({ createIfMissing: false });
    expect(await db.keys().all()).toEqual([]);
    await db.close();
  });

  // A probe (session 31): on an async store clear() read what to delete when it was called, not
  // in its turn among the writes: a put called before it survived, and a put called after it
  // (resolved, read back) was then deleted; a plain clear() went in chunks, a commit each.
  it('on an asynchronous backend clear() takes its turn among the writes called before and after it', async () => {
    for (const storage of ['async-memory', 'memory'] as const) {
      const db = new AdaptreeLevel<string, string>({ location: `clear-order-${++n}`, storage });
      await db.open();
      await db.put('a', 'old');
      const before = db.put('b', 'new');
      await db.clear();
      await before;
      expect(await db.keys().all(), storage).toEqual([]);
      await db.put('a', 'old');
      const c = db.clear();
      await db.put('a', 'new');
      expect(await db.get('a')).toBe('new');
      await c;
      expect(await db.get('a'), storage).toBe('new');
      // A clear of many keys, with a put called after it.
      await db.batch(Array.from({ length: 5000 }, (_, i) => ({ type: 'put' as const, key: `k${i}`, value: 'v' })));
      const c2 = db.clear();
      const p2 = db.put('k1', 'after');
      await c2;
      await p2;
      expect(await db.keys().all(), storage).toEqual(['k1']);
      await db.del('k1');
      expect(await db.keys().all()).toEqual([]);
      await db.close();
    }
    expect(() => new AdaptreeLevel({ storage: 'indexeddb' })).toThrow(/storage needs a location/);
    expect(() => new AdaptreeLevel({ storage: 'node', poolSize: 1 << 20 })).toThrow(/storage, poolSize need a location/);
  });

  it('a second open of the same location is refused (LockedError) until the first closes', async () => {
    const path = loc();
    const a = new AdaptreeLevel(path);
    await a.open();
    const b = new AdaptreeLevel(path);
    await expect(b.open()).rejects.toMatchObject({ code: 'LEVEL_DATABASE_NOT_OPEN', cause: { code: 'LOCKED' } });
    await a.close();
    await b.open();
    await b.close();
  });

  it('runs on the in-process memory backend too, and through the persistentStore factory', async () => {
    const name = `mem-${++n}`;
    let db = new AdaptreeLevel({ store: persistentStore({ location: name, storage: 'memory' }) });
    await db.put('m', 'v');
    await db.close();
    db = new AdaptreeLevel({ location: name, storage: 'memory' });
    expect(await db.get('m')).toBe('v');
    await db.close();
    expect(() => new AdaptreeLevel({ location: 'x', store: persistentStore({ location: 'y' }) })).toThrow(/either location or store/);
  });

  it('claims getSync only on a backend that is synchronous here (not indexeddb, async-memory, or opfs off a worker)', async () => {
    expect(persistentStore({ location: 'a', storage: 'node' }).sync).toBe(true);
    expect(persistentStore({ location: 'a', storage: 'memory' }).sync).toBe(true);
    expect(persistentStore({ location: 'a', storage: 'indexeddb' }).sync).toBe(false);
    expect(persistentStore({ location: 'a', storage: 'async-memory' }).sync).toBe(false);
    // opfs is synchronous only in a dedicated worker (sync access handles); Node has none.
    expect(persistentStore({ location: 'a', storage: 'opfs' }).sync).toBe(false);
    const db = new AdaptreeLevel({ location: `async-${++n}`, storage: 'async-memory' });
    expect(db.supports.getSync).toBe(false);
    await db.put('k', 'v');
    expect(await db.get('k')).toBe('v');
    await db.close();
  });
});
