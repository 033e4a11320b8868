// One scenario, run unmodified in every runtime (Node, Deno, workerd, a
// vite-built page in Chromium): the public API from a user's point of view.
// It returns plain data; runtimes.test.ts compares it with EXPECTED.
export async function scenario(api, initOptions = {}) {
  const wasm = await api.init(initOptions);
  const out = { build: wasm?.build ?? null };
  const m = new api.BTreeMap();
  for (let i = 0; i < 5000; i++) m.set(`key${String(i).padStart(5, '0')}`, { i, tag: 'v' + i });
  out.size = m.size;
  out.get = m.get('key00042');
  out.missing = m.get('nope') === undefined;
  out.first = m.first();
  out.last = m.last();
  out.range = [...m.keys({ gte: 'key00010', lt: 'key00013' })];
  out.reverse = [...m.keys({ lte: 'key00003', reverse: true, limit: 2 })];
  out.deleted = m.delete('key00001');
  out.hasDeleted = m.has('key00001');
  out.order = true;
  let prev = '';
  for (const [k] of m) {
    if (k <= prev) out.order = false;
    prev = k;
  }
  try {
    m.set(12345, 'x');
    out.wrongType = 'no error';
  } catch (e) {
    out.wrongType = `${e instanceof TypeError}:${e.code}`;
  }
  try {
    m.set('x'.repeat(5000), 'x');
    out.tooLarge = 'no error';
  } catch (e) {
    out.tooLarge = `${e instanceof RangeError}:${e.code}`;
  }
  out.sizeAfterErrors = m.size;
  const n = new api.BTreeMap(undefined, { keys: 'number', values: 'bytes' });
  for (let i = 1000; i >= 0; i--) n.set(i * 0.5, new Uint8Array([i & 255, i >> 8]));
  out.numbers = [...n.keys({ gt: 10, limit: 3 })];
  out.bytes = Array.from(n.get(7.5) ?? []);
  m.free();
  n.free();
  try {
    m.get('key00042');
    out.closed = 'no error';
  } catch (e) {
    out.closed = e.code;
  }
  return out;
}

export const EXPECTED = {
  size: 5000,
  get: { i: 42, tag: 'v42' },
  missing: true,
  first: ['key00000', { i: 0, tag: 'v0' }],
  last: ['key04999', { i: 4999, tag: 'v4999' }],
  range: ['key00010', 'key00011', 'key00012'],
  reverse: ['key00003', 'key00002'],
  deleted: true,
  hasDeleted: false,
  order: true,
  wrongType: 'true:INVALID_KEY',
  tooLarge: 'true:KEY_TOO_LARGE',
  sizeAfterErrors: 4999,
  numbers: [10.5, 11, 11.5],
  bytes: [15, 0],
  closed: 'CLOSED',
};
