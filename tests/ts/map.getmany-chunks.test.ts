// getMany's output crosses from wasm in chunks of about 1 MiB (at_get_many answers keys until
// its output passes that, then the next call goes on after them). One call for the whole result
// grew wasm memory by ~3x the result, and wasm memory never shrinks: 100 values of 1 MiB took
// it from 119 to 361 MiB, 200 to 1132 MiB (session 32). These cases cross chunk seams with
// absent keys, every value codec, a custom decoder that calls into the map, and an async
// store whose pages fault between chunks.
import { describe, expect, it } from 'vitest';
import { BTreeMap, BTreeStore } from '../../ts/src/index.js';
import { createAsyncMemoryStorage } from '../../ts/src/storage/async-memory.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { uniqueName } from './store-helpers.js';

const KiB = 1024;
const MiB = 1024 * KiB;

function blob(len: number, seed: number): Uint8Array {
  const b = new Uint8Array(len);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < len; i += 64) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x & 255;
  }
  b[len - 1] = seed & 255;
  return b;
}

function same(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(Buffer.from(b.buffer, b.byteOffset, b.length));
}

describe.each(REAL_BUILDS)('getMany in chunks (%s)', (build) => {
  it('bytes values: 130 MiB of results grow wasm memory by a chunk, not 3x the result; absent keys at the seams', async () => {
    const w = await wasmFor(build);
    const m = new BTreeMap<string, Uint8Array>(null, { values: 'bytes', wasm: w });
    const model = new Map<string, Uint8Array>();
    for (let i = 0; i < 100; i++) {
      // values of 1 MiB, and of 300-700 KiB, so that the chunks end at different keys
      const v = blob(i % 3 === 0 ? MiB : 300 * KiB + (i % 5) * 100 * KiB, i);
      const k = `k${String(i).padStart(3, '0')}`;
      m.set(k, v);
      model.set(k, v);
    }
    for (let i = 0; i < 200; i++) m.set(`s${String(i).padStart(3, '0')}`, blob(8, i));
    const keys: string[] = [];
    for (let r = 0; r < 2; r++) {
      for (let i = 0; i < 100; i++) {
        keys.push(`k${String(i).padStart(3, '0')}`);
        if (i % 7 === 0) keys.push(`absent${i}`);
        if (i % 11 === 0) keys.push(`s${String(i).padStart(3, '0')}`);
      }
    }
    const before = w.memory.buffer.byteLength;
    const got = m.getMany(keys);
    expect(got.length).toBe(keys.length);
    keys.forEach((k, i) => {
      const want = k.startsWith('s') ? blob(8, Number(k.slice(1))) : model.get(k);
      expect(same(got[i], want), k).toBe(true);
    });
    // (the values copied out take JS memory; wasm memory holds about one chunk at a time)
    // (one call for these ~130 MiB grew it by ~500 MiB (507.6 measured))
    console.log(`getMany of ${keys.length} keys, ~130 MiB: wasm memory +${((w.memory.buffer.byteLength - before) / MiB).toFixed(1)} MiB (${build})`);
    expect(w.memory.buffer.byteLength - before).toBeLessThanOrEqual(32 * MiB);
    m.free();
  });

  it('json and utf8 values across chunks', async () => {
    const w = await wasmFor(build);
    for (const values of ['json', 'utf8'] as const) {
      const m = new BTreeMap<number, string>(null, { keys: 'number', values, wasm: w });
      const model: string[] = [];
      for (let i = 0; i < 60; i++) {
        const v = String.fromCharCode(97 + (i % 26)).repeat(100 * KiB + i) + 'é€';
        m.set(i, v);
        model.push(v);
      }
      const keys = [...Array(60).keys(), -1, 1000, ...Array(60).keys()].reverse();
      const got = m.getMany(keys);
      keys.forEach((k, i) => expect(got[i]).toBe(model[k]));
      m.free();
    }
  });

  it('a custom codec decodes every chunk (once every key is answered)', async () => {
    const w = await wasmFor(build);
    let calls = 0;
    const m: BTreeMap<string, { n: number; len: number }> = new BTreeMap(null, {
      wasm: w,
      values: {
        encode: (v: { n: number; len: number }) => {
          const b = new Uint8Array(v.len);
          b[0] = v.n;
          return b;
        },
        decode: (b: Uint8Array) => {
          calls++;
          return { n: b[0]!, len: b.length };
        },
      },
    });
    for (let i = 0; i < 30; i++) m.set(`c${String(i).padStart(3, '0')}`, { n: i, len: 200 * KiB });
    const keys = Array.from({ length: 30 }, (_, i) => `c${String(29 - i).padStart(3, '0')}`);
    keys.splice(10, 0, 'nope');
    const got = m.getMany(keys);
    expect(calls).toBe(30);
    keys.forEach((k, i) => expect(got[i]).toEqual(k === 'nope' ? undefined : { n: Number(k.slice(1)), len: 200 * KiB }));
    m.free();
  });

  it('an async store: page faults between and inside chunks, values of one commit', async () => {
    const wasm = await wasmFor(build);
    const storage = createAsyncMemoryStorage();
    const path = uniqueName('chunks');
    const open = () => BTreeStore.open<string, Uint8Array>({ path, storage, values: 'bytes', wasm, poolSize: MiB });
    let s = await open();
    const model = new Map<string, Uint8Array>();
    for (let i = 0; i < 40; i++) {
      const v = blob(150 * KiB + i * 1000, 500 + i);
      const k = `v${String(i).padStart(3, '0')}`;
      s.set(k, v);
      model.set(k, v);
    }
    await s.commit();
    await s.close();
    s = await open();  // (a cold 1 MiB pool: the 6 MiB of values fault as they are read)
    const keys = [...model.keys()].reverse();
    keys.splice(5, 0, 'missing');
    const got = await s.getManyAsync(keys);
    keys.forEach((k, i) => expect(same(got[i], model.get(k)), k).toBe(true));
    await s.close();
  });
});
