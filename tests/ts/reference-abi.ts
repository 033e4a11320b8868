// A reference implementation of the C ABI (bindings/adaptree.h) in plain TypeScript over a
// real WebAssembly.Memory: sorted arrays instead of a B+-Tree, a bump allocator that grows
// the memory often (so stale views would show), cursors that resume by key. It lets the map
// tests tell a TypeScript bug from a core bug: a test that passes here and fails on st/mt
// points at the core.
import type { AbiExports } from '../../ts/src/abi.js';
import type { AdaptreeWasm, AttachHandle } from '../../ts/src/wasm.js';
import { numberKey } from '../../ts/src/encoding/number.js';

const OK = 0, NOT_FOUND = 1, KEY_TOO_LARGE = -1, INVALID = -5;
const REVERSE = 1, EXCLUSIVE = 2, EDGE = 4;
const LO_NONE = 1, LO_EXCL = 2, HI_NONE = 4, HI_EXCL = 8;
const MAX_KEY = 1024;
/** The core's kMaxKeySizeUntruncated: `baseline` (layout 0) sets keys up to this long. */
const MAX_KEY_UNTRUNCATED = 1011;

function cmp(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

class Writer {
  buf = new Uint8Array(256);
  length = 0;
  private room(n: number) {
    if (this.length + n > this.buf.length) {
      const b = new Uint8Array(Math.max(this.length + n, 2 * this.buf.length));
      b.set(this.buf.subarray(0, this.length));
      this.buf = b;
    }
  }
  u32(x: number) { this.room(4); new DataView(this.buf.buffer).setUint32(this.length, x >>> 0, true); this.length += 4; }
  bytes(b: Uint8Array) { this.room(b.length); this.buf.set(b, this.length); this.length += b.length; }
  done() { return this.buf.subarray(0, this.length); }
}

interface Tree { keys: Uint8Array[]; vals: Uint8Array[]; maxKey: number; }
interface Cursor { tree: number; bound: Uint8Array | null; exclusive: boolean; reverse: boolean; }
interface Ctx { result: number; out: number; outCap: number; }

export function referenceWasm(): AdaptreeWasm {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
  let brk = 1024;
  const sizes = new Map<number, number>();
  const u8 = () => new Uint8Array(memory.buffer);
  const dv = () => new DataView(memory.buffer);
  function alloc(n: number): number {
    const p = (brk + 15) & ~15;
    brk = p + Math.max(n, 1);
    const need = Math.ceil(brk / 65536) - memory.buffer.byteLength / 65536;
    if (need > 0) memory.grow(need);
    sizes.set(p, n);
    return p;
  }
  const trees = new Map<number, Tree>();
  const cursors = new Map<number, Cursor>();
  const ctxs = new Map<number, Ctx>();
  let nextId = 1;
  let poisonWord = 0;
  const read = (p: number, n: number) => u8().slice(p, p + n);
  function lower(t: Tree, k: Uint8Array): number {
    let lo = 0, hi = t.keys.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (cmp(t.keys[m]!, k) < 0) lo = m + 1; else hi = m; }
    return lo;
  }
  function upper(t: Tree, k: Uint8Array): number {
    let lo = 0, hi = t.keys.length;
    while (lo < hi) { const m = (lo + hi) >> 1; if (cmp(t.keys[m]!, k) <= 0) lo = m + 1; else hi = m; }
    return lo;
  }
  function output(c: Ctx, bytes: Uint8Array): number {
    if (bytes.length > c.outCap) { c.outCap = Math.max(bytes.length, 2 * c.outCap); c.out = alloc(c.outCap); }
    u8().set(bytes, c.out);
    return c.out;
  }
  function setResult(c: Ctx, kp: number, kl: number, vp: number, vl: number, aux: number) {
    const d = dv();
    d.setUint32(c.result, kp, true); d.setUint32(c.result + 4, kl, true);
    d.setUint32(c.result + 8, vp, true); d.setUint32(c.result + 12, vl, true); d.setUint32(c.result + 16, aux, true);
  }
  /** Index of the record a cursor would read next, or -1. */
  function position(cur: Cursor): number {
    const t = trees.get(cur.tree)!;
    if (cur.bound === null) return cur.reverse ? t.keys.length - 1 : (t.keys.length ? 0 : -1);
    if (!cur.reverse) {
      const i = cur.exclusive ? upper(t, cur.bound) : lower(t, cur.bound);
      return i < t.keys.length ? i : -1;
    }
    const i = (cur.exclusive ? lower(t, cur.bound) : upper(t, cur.bound)) - 1;
    return i;
  }
  function put(t: Tree, k: Uint8Array, v: Uint8Array) {
    const i = lower(t, k);
    if (i < t.keys.length && cmp(t.keys[i]!, k) === 0) t.vals[i] = v;
    else { t.keys.splice(i, 0, k); t.vals.splice(i, 0, v); }
  }

  let numKey = 0;
  const numKeyAt = () => (numKey ||= alloc(24));
  const putNum = (x: number) => {
    const bytes = numberKey.encode(x);
    u8().set(bytes, numKeyAt());
    return bytes.length;
  };
  const ex: AbiExports = {
    at_abi_version: () => 1,
    at_page_size: () => 4096,
    at_max_key_size: () => MAX_KEY,
    at_max_key_size_untruncated: () => MAX_KEY_UNTRUNCATED,
    at_alloc: (n) => alloc(n),
    at_free: () => {},
    at_ctx_new: () => { const id = alloc(20); ctxs.set(id, { result: id, out: 0, outCap: 0 }); return id; },
    at_ctx_free: () => {},
    at_ctx_result: (c) => ctxs.get(c)!.result,
    at_tree_new: (cfg) => { if (cfg > 7) return 0; const id = nextId++ * 16; trees.set(id, { keys: [], vals: [], maxKey: cfg === 0 ? MAX_KEY_UNTRUNCATED : MAX_KEY }); return id; },
    at_tree_free: (t) => { trees.delete(t); },
    // One thread only: nothing to share, nothing to wait for.
    at_tree_share: () => -5,
    at_ctx_set_wait: () => 0,
    at_debug_latch: () => 0,
    at_set: (t, c, k, kl, v, vl) => {
      if (kl > trees.get(t)!.maxKey) return KEY_TOO_LARGE;
      put(trees.get(t)!, read(k, kl), read(v, vl));
      alloc(kl + vl); // like the core's page allocation: memory grows during a set
      return OK;
    },
    at_get: (t, c, k, kl) => {
      const tr = trees.get(t)!, key = read(k, kl), i = lower(tr, key);
      if (i >= tr.keys.length || cmp(tr.keys[i]!, key) !== 0) return NOT_FOUND;
      const cx = ctxs.get(c)!;
      const vp = output(cx, tr.vals[i]!);
      setResult(cx, 0, 0, vp, tr.vals[i]!.length, 0);
      return OK;
    },
    at_has: (t, _c, k, kl) => {
      const tr = trees.get(t)!, key = read(k, kl), i = lower(tr, key);
      return i < tr.keys.length && cmp(tr.keys[i]!, key) === 0 ? OK : NOT_FOUND;
    },
    at_remove: (t, _c, k, kl) => {
      const tr = trees.get(t)!, key = read(k, kl), i = lower(tr, key);
      if (i >= tr.keys.length || cmp(tr.keys[i]!, key) !== 0) return NOT_FOUND;
      tr.keys.splice(i, 1); tr.vals.splice(i, 1);
      return OK;
    },
    // Number keys as doubles: encoded with the TypeScript encoder (the real builds encode in C).
    at_get_num: (t, c, x) => (x !== x ? INVALID : ex.at_get(t, c, numKeyAt(), putNum(x))),
    at_has_num: (t, c, x) => (x !== x ? INVALID : ex.at_has(t, c, numKeyAt(), putNum(x))),
    at_set_num: (t, c, x, v, vl) => (x !== x ? INVALID : ex.at_set(t, c, numKeyAt(), putNum(x), v, vl)),
    at_remove_num: (t, c, x) => (x !== x ? INVALID : ex.at_remove(t, c, numKeyAt(), putNum(x))),
    at_count: (t) => trees.get(t)!.keys.length,
    at_clear: (t) => { const tr = trees.get(t)!; tr.keys = []; tr.vals = []; return OK; },
    at_set_many: (t, c, b, n) => {
      const tr = trees.get(t)!, d = dv();
      let p = b;
      for (let i = 0; i < n; i++) {
        const kl = d.getUint32(p, true); const k = read(p + 4, kl); p += 4 + kl;
        const vl = d.getUint32(p, true); const v = read(p + 4, vl); p += 4 + vl;
        // (value_len and aux: the entries applied, as the core says them)
        if (kl > tr.maxKey) { setResult(ctxs.get(c)!, 0, 0, 0, i, i); return KEY_TOO_LARGE; }
        put(tr, k, v);
      }
      setResult(ctxs.get(c)!, 0, 0, 0, n, n);
      return OK;
    },
    at_get_many: (t, c, b, n) => {
      const tr = trees.get(t)!, d = dv();
      const w = new Writer();
      let p = b;
      for (let i = 0; i < n; i++) {
        const kl = d.getUint32(p, true); const k = read(p + 4, kl); p += 4 + kl;
        const j = lower(tr, k);
        if (j < tr.keys.length && cmp(tr.keys[j]!, k) === 0) { w.u32(tr.vals[j]!.length); w.bytes(tr.vals[j]!); }
        else w.u32(0xffffffff);
      }
      const cx = ctxs.get(c)!;
      const vp = output(cx, w.done());
      setResult(cx, 0, 0, vp, w.length, n);
      return OK;
    },
    at_delete_range: (t, _c, lo, ll, hi, hl, flags) => {
      const tr = trees.get(t)!;
      const from = flags & LO_NONE ? 0 : flags & LO_EXCL ? upper(tr, read(lo, ll)) : lower(tr, read(lo, ll));
      const to = flags & HI_NONE ? tr.keys.length : flags & HI_EXCL ? lower(tr, read(hi, hl)) : upper(tr, read(hi, hl));
      if (to <= from) return 0;
      tr.keys.splice(from, to - from); tr.vals.splice(from, to - from);
      return to - from;
    },
    at_stats: (t, c) => {
      const cx = ctxs.get(c)!;
      const json = new TextEncoder().encode(JSON.stringify({ count: trees.get(t)!.keys.length, height: 1 }));
      setResult(cx, 0, 0, output(cx, json), json.length, 0);
      return OK;
    },
    at_check: () => OK,
    at_cursor_new: (t) => { const id = nextId++ * 16; cursors.set(id, { tree: t, bound: null, exclusive: false, reverse: false }); return id; },
    at_cursor_free: (c) => { if (!cursors.delete(c)) throw new Error('reference ABI: cursor freed twice'); },
    at_cursor_seek: (c, k, kl, flags) => {
      const cur = cursors.get(c);
      if (!cur) throw new Error('reference ABI: seek on a freed cursor');
      cur.reverse = (flags & REVERSE) !== 0;
      cur.exclusive = (flags & EXCLUSIVE) !== 0;
      cur.bound = flags & EDGE ? null : read(k, kl);
      return position(cur) >= 0 ? OK : NOT_FOUND;
    },
    at_cursor_next: (c, x, want) => {
      const cur = cursors.get(c)!;
      const i = position(cur);
      if (i < 0) return NOT_FOUND;
      const tr = trees.get(cur.tree)!;
      const k = tr.keys[i]!, v = want ? tr.vals[i]! : new Uint8Array(0);
      const both = new Uint8Array(k.length + v.length);
      both.set(k); both.set(v, k.length);
      const cx = ctxs.get(x)!;
      const p = output(cx, both);
      setResult(cx, p, k.length, p + k.length, v.length, 0);
      cur.bound = k; cur.exclusive = true;
      return OK;
    },
    at_cursor_next_batch: (c, x, maxRecords, maxBytes, want) => {
      const cur = cursors.get(c);
      if (!cur) throw new Error('reference ABI: next_batch on a freed cursor');
      const tr = trees.get(cur.tree)!;
      const w = new Writer();
      const ks: Uint8Array[] = [], vs: Uint8Array[] = [];
      let n = 0;
      // Number columns count 12 bytes a record plus the values against maxBytes (the core does).
      const numbers = (want & 6) === 6;
      let numberBytes = 0;
      while (n < maxRecords && (n === 0 || (numbers ? numberBytes : w.length) < maxBytes)) {
        const i = position(cur);
        if (i < 0) break;
        const k = tr.keys[i]!, v = want & 1 ? tr.vals[i]! : new Uint8Array(0);
        w.u32(k.length); w.bytes(k); w.u32(v.length); w.bytes(v);
        ks.push(k); vs.push(v);
        numberBytes += 12 + v.length;
        cur.bound = k; cur.exclusive = true;
        n++;
      }
      if (n === 0) return NOT_FOUND;
      if (numbers) {
        // Number keys as doubles (bindings/adaptree.h AT_BATCH_NUMBERS): header [n][keys offset]
        // [values offset][0], value lengths, f64 keys (NaN: not a number encoding), values.
        const c = new Writer();
        c.u32(n); c.u32(16 + 4 * n); c.u32(16 + 12 * n); c.u32(0);
        for (const v of vs) c.u32(v.length);
        const f = new DataView(new ArrayBuffer(8));
        for (const k of ks) {
          let x = NaN;
          try { x = numberKey.decode(k); } catch { /* NaN */ }
          f.setFloat64(0, x, true);
          c.bytes(new Uint8Array(f.buffer));
        }
        for (const v of vs) c.bytes(v);
        const cx = ctxs.get(x)!;
        setResult(cx, 0, 2, output(cx, c.done()), c.length, n); // key_len 2: number columns
        return OK;
      }
      if (want & 2) {
        // Columns (bindings/adaptree.h): header, key lengths (bit 31: a byte >= 0x80), value lengths, keys, values.
        const c = new Writer();
        const high = ks.map((k) => k.some((x) => x >= 0x80));
        c.u32(n); c.u32(ks.reduce((a, k) => a + k.length, 0)); c.u32(high.includes(true) ? 1 : 0); c.u32(0);
        ks.forEach((k, j) => c.u32((k.length | (high[j] ? 0x80000000 : 0)) >>> 0));
        for (const v of vs) c.u32(v.length);
        for (const k of ks) c.bytes(k);
        for (const v of vs) c.bytes(v);
        const cx = ctxs.get(x)!;
        setResult(cx, 0, 1, output(cx, c.done()), c.length, n); // key_len 1: in columns
        return OK;
      }
      const cx = ctxs.get(x)!;
      setResult(cx, 0, 0, output(cx, w.done()), w.length, n);
      return OK;
    },
    at_cursor_seek_batch: (c, x, k, kl, flags, maxRecords, maxBytes, want) => {
      const s = ex.at_cursor_seek(c, k, kl, flags);
      if (s !== OK) { setResult(ctxs.get(x)!, 0, 0, 0, 0, 0); return s; }
      return ex.at_cursor_next_batch(c, x, maxRecords, maxBytes, want);
    },
    // (the stop bound only spares the core copying records past the range's end; the iterator
    // drops such records itself, so the reference may hand them out)
    at_cursor_seek_batch_to: (c, x, k, kl, flags, maxRecords, maxBytes, want) => ex.at_cursor_seek_batch(c, x, k, kl, flags, maxRecords, maxBytes, want),
    at_atomic_add_u32: () => 0,
    at_checksum: () => 0,
    at_page_hash: () => 0,
    at_set_memory_limit: () => 0,
    at_memory_limit: () => 2 ** 31,
    at_memory_available: () => 2 ** 31,
    at_debug_trap: () => { throw new WebAssembly.RuntimeError('unreachable'); },
    at_poison_word: () => (poisonWord ||= alloc(4)),
  };
  const ctx = ex.at_ctx_new();
  let scratchPtr = 0, scratchSize = 0;
  return {
    build: 'st',
    module: undefined as unknown as WebAssembly.Module,
    exports: ex,
    memory,
    ctx,
    result: ex.at_ctx_result(ctx),
    u8,
    dv,
    scratch(n: number) { if (n > scratchSize) { scratchPtr = alloc(n); scratchSize = n; } return scratchPtr; },
    attachHandle(): AttachHandle { throw new Error('not supported'); },
    maxMemory: 2 ** 31,
    setMaxMemory() {},
    poisoned: false,
  };
}
