// Foundation smoke tests: each wasm build instantiates and calls into the core;
// the mt build shares one memory between worker_threads, whose atomic writes
// each see.
import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { loadWasm, threadsAvailable, type AdaptreeWasm } from '../../ts/src/wasm.js';
import { LayoutConfig, Status } from '../../ts/src/abi.js';

const enc = new TextEncoder();

function put(w: AdaptreeWasm, bytes: Uint8Array): number {
  const p = w.exports.at_alloc(Math.max(1, bytes.length));
  w.u8().set(bytes, p);
  return p;
}

// Test vectors of the page checksum, fixed in core/hash.h: the same bytes
// must hash the same natively and in wasm (docs/ARCHITECTURE.md, decision 3).
import { CHECKSUM_VECTORS } from './fixtures/checksum-vectors.js';

describe.each(['st', 'mt'] as const)('%s build', (build) => {
  it('instantiates and reports its build and limits', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    expect(w.build).toBe(build);
    expect(w.exports.at_abi_version()).toBe(1);
    expect(w.exports.at_page_size()).toBe(4096);
    expect(w.exports.at_max_key_size()).toBeGreaterThanOrEqual(1024);
    expect(w.memory.buffer instanceof SharedArrayBuffer).toBe(build === 'mt');
  });

  it('computes the project checksum like the native build', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    for (const [input, expected] of CHECKSUM_VECTORS) {
      const p = put(w, input);
      expect(w.exports.at_checksum(p, input.length) >>> 0).toBe(expected);
      w.exports.at_free(p);
    }
  });

  it('stores, finds and removes a record through the C ABI', async () => {
    const w = await loadWasm({ threads: build === 'mt' });
    const tree = w.exports.at_tree_new(LayoutConfig.adaptive);
    expect(tree).not.toBe(0);
    const k = put(w, enc.encode('hello'));
    const v = put(w, enc.encode('world'));
    expect(w.exports.at_set(tree, w.ctx, k, 5, v, 5)).toBe(Status.OK);
    expect(w.exports.at_count(tree)).toBe(1);
    expect(w.exports.at_get(tree, w.ctx, k, 5)).toBe(Status.OK);
    const dv = w.dv();
    const vp = dv.getUint32(w.result + 8, true);
    const vl = dv.getUint32(w.result + 12, true);
    expect(new TextDecoder().decode(w.u8().slice(vp, vp + vl))).toBe('world');
    expect(w.exports.at_remove(tree, w.ctx, k, 5)).toBe(Status.OK);
    expect(w.exports.at_get(tree, w.ctx, k, 5)).toBe(Status.NOT_FOUND);
    expect(w.exports.at_check(tree, w.ctx)).toBe(Status.OK);
    w.exports.at_tree_free(tree);
  });
});

describe('mt build across worker_threads', () => {
  it('is available in Node', () => {
    expect(threadsAvailable()).toBe(true);
  });

  it('two workers on one shared memory see each other\'s atomic writes', async () => {
    const w = await loadWasm({ threads: true });
    const counter = w.exports.at_alloc(4);
    w.dv().setUint32(counter, 0, true);
    const iterations = 200_000;
    const run = (tag: number) =>
      new Promise<{ build: string; intact: boolean }>((resolve, reject) => {
        const worker = new Worker(new URL('./fixtures/attach-worker.mjs', import.meta.url), {
          workerData: { handle: w.attachHandle(), counter, iterations, tag },
        });
        worker.once('message', resolve);
        worker.once('error', reject);
      });
    const results = await Promise.all([run(0xa1), run(0xb2)]);
    for (const r of results) {
      expect(r.build).toBe('mt');
      expect(r.intact).toBe(true);
    }
    // Every increment from both threads landed: no lost updates.
    expect(Atomics.load(new Uint32Array(w.memory.buffer), counter >>> 2)).toBe(2 * iterations);
    expect(w.exports.at_atomic_add_u32(counter, 0)).toBe(2 * iterations);
  });
});
