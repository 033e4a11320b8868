// init(): the one-time async setup, and which wasm instance `new BTreeMap()` uses.
import { describe, expect, it } from 'vitest';
import { BTreeMap, NotInitializedError, init, initialized } from '../../ts/src/index.js';
import { REAL_BUILDS } from './builds.js';

describe.skipIf(REAL_BUILDS.length === 0)('init()', () => {
  it('before init, new BTreeMap() throws NotInitializedError (code NOT_INITIALIZED)', () => {
    expect(initialized()).toBeUndefined();
    let err: unknown;
    try {
      new BTreeMap();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NotInitializedError);
    expect((err as NotInitializedError).code).toBe('NOT_INITIALIZED');
  });

  it('loads the st build by default, once; maps then use it', async () => {
    const p1 = init();
    const p2 = init();
    expect(p2 === p1).toBe(true);
    const w = await p1;
    expect(w.build).toBe('st');
    expect((await init()) === w).toBe(true);
    expect(initialized() === w).toBe(true);
    const m = new BTreeMap<string, number>();
    m.set('a', 1);
    expect(m.get('a')).toBe(1);
    m.free();
  });

  it('init({ threads: true }) switches the default to the mt build; older maps keep theirs', async () => {
    const st = await init();
    const old = new BTreeMap<string, number>([['x', 1]]);
    const mt = await init({ threads: true });
    expect(mt.build).toBe('mt');
    expect(mt === st).toBe(false);
    expect((await init({ threads: true })) === mt).toBe(true);
    const m = new BTreeMap<string, number>([['y', 2]]);
    expect(m.get('y')).toBe(2);
    expect(old.get('x')).toBe(1);
    expect(old.get('y')).toBeUndefined();
    m.free();
    old.free();
    expect((await init({ threads: false })).build).toBe('st');
  });

  it('accepts a precompiled WebAssembly.Module (what Cloudflare Workers give)', async () => {
    const w = await init();
    const again = await init({ wasm: w.module });
    expect(again === w).toBe(false); // (not.toBe would pretty-print the whole wasm memory)
    expect(again.build).toBe('st');
    const m = new BTreeMap<string, string>([['k', 'v']], { values: 'utf8' });
    expect(m.get('k')).toBe('v');
    m.free();
  });
});
