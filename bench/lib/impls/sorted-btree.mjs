// Anchor: sorted-btree 2.x (qwertie/btree-typescript), an in-memory B+ tree written in TS.
import BTreeMod from 'sorted-btree';
const BTree = BTreeMod.default ?? BTreeMod;

export default {
  name: 'sorted-btree',
  ordered: true,
  keyForm: 'js',
  async unavailable() { return null; },
  async open() {
    const t = new BTree();
    let want = 0;
    const stop = (k, v, n) => (n + 1 >= want ? { break: n + 1 } : undefined);
    return {
      config: '-',
      set: (k, v) => { t.set(k, v); },
      get: (k) => t.get(k),
      delete: (k) => t.delete(k),
      // n records from the first key >= k
      scan(k, n) {
        want = n;
        const r = t.forRange(k, t.maxKey(), true, stop);
        return typeof r === 'number' ? r : r;
      },
      iterate() { let c = 0; t.forEach(() => { c++; }); return c; },
      close() { t.clear(); },
    };
  },
};
