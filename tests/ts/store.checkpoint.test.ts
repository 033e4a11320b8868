// The checkpoint threshold is a store option (checkpointBytes, through
// at_store_set_checkpoint_bytes): commits checkpoint once the log passes it; bad values are
// INVALID_ARGUMENT; the default stays 64 MiB (no checkpoint before close in a small workload).
// logDeltas (default true) makes one-entry commits log deltas, not pages; false logs pages.
import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { BTreeStore, InvalidArgumentError } from '../../ts/src/index.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { tempDir } from './store-helpers.js';

const tmp = tempDir('checkpoint');
afterAll(() => tmp.cleanup());

describe.each(REAL_BUILDS)('checkpointBytes (%s)', (build) => {
  it('bounds the log; the default does not checkpoint a small workload; bad values are refused', async () => {
    const wasm = await wasmFor(build);
    const run = async (path: string, checkpointBytes?: number) => {
      const s = await BTreeStore.open<string, number>({ path, wasm, ...(checkpointBytes !== undefined ? { checkpointBytes } : {}) });
      for (let i = 0; i < 100; i++) {
        for (let j = 0; j < 40; j++) s.set(`k${i}:${j}`, i);
        await s.commit();
      }
      const st = s.stats();
      await s.close();
      const again = await BTreeStore.open<string, number>({ path, wasm });
      expect(again.size).toBe(4000);
      expect(again.get('k99:39')).toBe(99);
      await again.close();
      return st;
    };
    const small = await run(join(tmp.dir, `small-${build}`), 64 << 10);
    expect(small.checkpoints).toBeGreaterThan(3);
    expect(small.log_bytes).toBeLessThan(200 << 10);
    const dflt = await run(join(tmp.dir, `default-${build}`));
    expect(dflt.checkpoints).toBe(0);
    for (const bad of [-1, NaN, Infinity, '1' as unknown as number]) {
      await expect(BTreeStore.open({ path: join(tmp.dir, `bad-${build}`), wasm, checkpointBytes: bad })).rejects.toBeInstanceOf(InvalidArgumentError);
    }
  });
});

describe.each(REAL_BUILDS)('logDeltas (%s)', (build) => {
  it('one-entry commits log deltas (false: whole pages), both reopen the same; bad values are refused', async () => {
    const wasm = await wasmFor(build);
    const run = async (path: string, logDeltas?: boolean) => {
      const s = await BTreeStore.open<string, string>({ path, wasm, ...(logDeltas !== undefined ? { logDeltas } : {}) });
      for (let j = 0; j < 3000; j++) s.set(`k${String(j).padStart(5, '0')}`, 'x'.repeat(60));
      await s.commit();
      const before = s.stats();
      for (let i = 0; i < 100; i++) {
        s.set(`k${String((i * 997) % 3000).padStart(5, '0')}`, `v${i}`);
        await s.commit();
      }
      const after = s.stats();
      await s.close();
      const again = await BTreeStore.open<string, string>({ path, wasm });
      expect(again.size).toBe(3000);
      expect(again.get(`k${String((99 * 997) % 3000).padStart(5, '0')}`)).toBe('v99');
      await again.close();
      return {
        perCommit: (Number(after.commit_log_bytes) - Number(before.commit_log_bytes)) / 100,
        deltas: Number(after.delta_frames) - Number(before.delta_frames),
      };
    };
    const deltas = await run(join(tmp.dir, `deltas-${build}`));
    const pages = await run(join(tmp.dir, `pages-${build}`), false);
    expect(deltas.deltas).toBeGreaterThanOrEqual(90);
    expect(pages.deltas).toBe(0);
    expect(pages.perCommit).toBeGreaterThan(4096);
    expect(deltas.perCommit).toBeLessThan(pages.perCommit / 4);
    await expect(BTreeStore.open({ path: join(tmp.dir, `bad-deltas-${build}`), wasm, logDeltas: 1 as unknown as boolean })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
