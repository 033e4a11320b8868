// The inspection API on bad input (a new-user probe, session 22): a freed InspectableMap was
// still inspected and answered with another map's tree (its address reused), an id that is no
// node was 'corrupt' on a sound map and root + 0.7 read the root, and a plain BTreeMap gave a
// TypeError without a code.
import { describe, expect, it } from 'vitest';
import { BTreeMap, InspectableMap, decodeHeader, hexToBytes, inspectTree, isAdaptreeError, nodeDump, pageImage } from '../../ts/src/index.js';
import { REAL_BUILDS, wasmFor } from './builds.js';

const codeOf = (f: () => unknown): string => {
  try {
    f();
    return 'returned';
  } catch (e) {
    return isAdaptreeError(e) ? e.code : `untyped ${String(e)}`;
  }
};

describe.each(REAL_BUILDS)('inspection on bad input (%s)', (build) => {
  it('a freed map is CLOSED even when a newer map has its tree address; bad ids and plain maps are INVALID_ARGUMENT', async () => {
    const wasm = await wasmFor(build);
    for (let round = 0; round < 5; round++) {
      const a = new InspectableMap<string, number>(null, { wasm });
      a.set('a1', 1);
      a.free();
      const b = new InspectableMap<string, number>([['b1', 1], ['b2', 2]], { wasm });
      expect(codeOf(() => inspectTree(a))).toBe('CLOSED');
      expect(codeOf(() => nodeDump(a, inspectTree(b).root))).toBe('CLOSED');
      expect(codeOf(() => pageImage(a, inspectTree(b).root))).toBe('CLOSED');
      b.free();
    }
    const m = new InspectableMap<number, number>(null, { wasm, keys: 'number' });
    for (let i = 0; i < 5000; i++) m.set(i, i);
    m.checkInvariants();
    const tree = inspectTree(m);
    expect(nodeDump(m, tree.root).id).toBe(tree.root);
    for (const bad of [999_999, -1, NaN, 'abc', tree.root + 0.7, 2 ** 32 + tree.root]) {
      expect(codeOf(() => nodeDump(m, bad as number)), String(bad)).toBe('INVALID_ARGUMENT');
      expect(codeOf(() => pageImage(m, bad as number)), String(bad)).toBe('INVALID_ARGUMENT');
    }
    const plain = new BTreeMap<string, number>(null, { wasm });
    expect(codeOf(() => inspectTree(plain))).toBe('INVALID_ARGUMENT');
    plain.free();
    m.free();
  });
});

// Session 23 (a probe): hexToBytes('zz') gave [0] and 'abc' [0xab], silently; decodeHeader of a
// short or missing page threw a RangeError/TypeError without a code.
describe('the page helpers refuse what is not a page or hex', () => {
  it('hexToBytes and decodeHeader: INVALID_ARGUMENT', () => {
    expect([...hexToBytes('00ff10')]).toEqual([0, 255, 16]);
    for (const bad of ['zz', 'abc', null, 5]) {
      expect(() => hexToBytes(bad as never), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    for (const bad of [new Uint8Array(3), null, 'page']) {
      expect(() => decodeHeader(bad as never), String(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});
