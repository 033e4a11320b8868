// Anchor: the built-in Map (hash table, unordered: no scans; iteration in insertion order).
export default {
  name: 'js-map',
  ordered: false,
  keyForm: 'js', // strings for string data sets, numbers for integer ones
  async unavailable() { return null; },
  async open() {
    const m = new Map();
    return {
      config: '-',
      set: (k, v) => { m.set(k, v); },
      get: (k) => m.get(k),
      delete: (k) => m.delete(k),
      scan: null,
      iterate() { let c = 0; for (const e of m) if (e[1] !== undefined) c++; return c; },
      close() { m.clear(); },
    };
  },
};
