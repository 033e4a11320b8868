// A storage failure inside a point call carries the backend's error (its message, as `cause`),
// as commit, close and open did: a probe (session 31) got "get of '…': storage I/O failed" with
// no cause from a backend whose read threw EIO.
import { afterAll, describe, expect, it } from 'vitest';
import { BTreeStore, IoError, nodeStorage } from '../../ts/src/index.js';
import type { SyncFile } from '../../ts/src/storage/types.js';
import { wasmFor } from './builds.js';
import { tempDir } from './store-helpers.js';

const tmp = tempDir('io-cause');
afterAll(() => tmp.cleanup());

describe('point calls on a failing storage', () => {
  it('a get whose page read throws is IoError with the backend error as cause, once', async () => {
    const wasm = await wasmFor('st');
    let fail = false;
    const wrap = (f: SyncFile): SyncFile => ({
      read: (d, o) => {
        if (fail) throw Object.assign(new Error('disk on fire'), { code: 'EIO' });
        return f.read(d, o);
      },
      write: (s, o) => f.write(s, o),
      sync: () => f.sync(),
      size: () => f.size(),
      truncate: (n) => f.truncate(n),
    });
    const storage = {
      ...nodeStorage,
      open: async (p: string, o: never) => {
        const x = await nodeStorage.open(p, o);
        return { ...x, data: wrap(x.data), log: wrap(x.log), close: (...a: never[]) => (x.close as (...b: never[]) => unknown)(...a) };
      },
    };
    const s = await BTreeStore.open<number, string>({ path: `${tmp.dir}/s.db`, wasm, keys: 'number', values: 'utf8', storage: storage as never, poolSize: 1 << 20 });
    for (let i = 0; i < 20000; i++) s.set(i, 'v'.repeat(200));
    await s.commit();
    fail = true;
    let err: unknown;
    try {
      for (let k = 0; k < 20000; k += 97) s.get(k); // a 1 MiB pool: pages are read back
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IoError);
    expect((err as Error).message).toContain('disk on fire');
    expect(((err as Error).cause as { code?: string } | undefined)?.code).toBe('EIO');
    fail = false;
    expect(s.get(1)).toBe('v'.repeat(200)); // the store goes on once the storage does
    await s.close();
  });
});
