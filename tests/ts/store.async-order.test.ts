// The async twins take their place in a store's call order where they are called (a new-user
// probe, session 36, with many calls in flight on asynchronous backends):
// - a commit() requested while an earlier one still waits for its writes' pages resolved with
//   that earlier flush, without the writes made between the two; close({ commit: false }) then
//   dropped them, and a reopen lacked writes whose commit had resolved;
// - an async iterator's next() after the first was ordered where the previous one settled, so
//   a write made after it (a deleteRangeAsync) was seen by it.
import { describe, expect, it } from 'vitest';
import { BTreeStore, memoryStorage } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import type { StorageBackend } from '../../ts/src/index.js';
import { uniqueName } from './store-helpers.js';

const K = (i: number) => 'a' + String(i).padStart(5, '0');

/** A store of 3000 keys of 600 bytes, reopened cold on a 1 MiB pool (most pages must be read). */
async function coldStore(storage: StorageBackend, path: string): Promise<BTreeStore<string, string>> {
  const open = () => BTreeStore.open<string, string>({ path, storage, poolSize: 1 << 20 });
  const s = await open();
  await s.setManyAsync(Array.from({ length: 3000 }, (_, i) => [K(i), 'x'.repeat(600)] as [string, string]));
  await s.close();
  return open();
}

describe('async calls in the order they are made', () => {
  it('a commit requested after writes made since an earlier, still waiting commit holds them', async () => {
    for (const withClose of [true, false]) {
      const storage = createAsyncMemoryStorage();
      const path = uniqueName('order-commit');
      let s = await coldStore(storage, path);
      // a write and a commit; that commit still waits for the write's pages in the next turn
      const a = s.setAsync(K(10), 'first');
      const c1 = s.commit();
      await new Promise((r) => setTimeout(r, 0));
      const b = s.setAsync(K(2000), 'second');
      const c2 = s.commit();
      if (withClose) {
        await Promise.all([a, c1, b, c2, s.close({ commit: false })]);
      } else {
        await Promise.all([a, c1, b, c2]);
        // what a crash right after c2 resolved leaves: the commits, nothing else
        await s.close({ commit: false });
      }
      s = await BTreeStore.open<string, string>({ path, storage });
      expect([await s.getAsync(K(10)), await s.getAsync(K(2000))], `close: ${withClose}`).toEqual(['first', 'second']);
      await s.close();
    }
  });

  it("an async iterator's next() comes before a write made after it, awaited or not", async () => {
    for (const [name, storage] of [['async-memory', createAsyncMemoryStorage()], ['memory', memoryStorage]] as const) {
      const path = uniqueName('order-iter');
      await (await coldStore(storage, path)).close();
      for (let v = 0; v < 8; v++) {
        const s = await BTreeStore.open<string, string>({ path, storage, poolSize: 1 << 20 });
        const reverse = (v & 1) === 1, writesBefore = (v & 2) === 2, awaitFirst = (v & 4) === 4;
        const what = `${name} reverse=${reverse} writesBefore=${writesBefore} awaitFirst=${awaitFirst}`;
        const it = s.keysAsync({ reverse });
        const p1 = it.next();
        const writes: Promise<unknown>[] = [];
        if (writesBefore) for (let j = 0; j < 30; j++) writes.push(s.setAsync(K((j * 97) % 3000), 'y'));
        if (awaitFirst) await p1;
        const p2 = it.next(); // before the deleteRangeAsync below
        const gone = s.deleteRangeAsync({});
        const [r1, r2, n] = await Promise.all([p1, p2, gone, ...writes]);
        expect([r1.value, r2.done ? 'done' : r2.value, n], what).toEqual(reverse ? [K(2999), K(2998), 3000] : [K(0), K(1), 3000]);
        await Promise.all(writes);
        await s.close({ commit: false });
      }
    }
  });
});
