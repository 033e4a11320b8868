/**
 * The per-instance runtime: a wasm instance's exports, context, key areas, growable data
 * area and the memory views over them, and the default instance `new BTreeMap()` uses.
 */
import type { AbiExports } from '../abi.js';
import type { AdaptreeWasm, WasmMemory } from '../wasm.js';
import { OutOfMemoryError } from '../errors.js';

/** A data area larger than this is freed after use (a one-off huge value keeps no memory). */
export const SHRINK_ABOVE = 4 << 20;
const EMPTY = new Uint8Array(0);

/** Per wasm instance: the exports, context, key areas, data area and memory views. */
/** Past this, the data area is reserved at the length asked for, not the next power of 2. */
const LARGE_AREA = 16 << 20;

export class Runtime {
  readonly ex: AbiExports;
  readonly mem: WasmMemory;
  readonly ctx: number;
  readonly res: number;
  readonly shared: boolean;
  readonly maxKey: number;
  /** The longest key the `baseline` layout takes (its nodes keep keys whole). */
  readonly maxKeyUntruncated: number;
  /** Two fixed key areas (a range needs two keys), each maxKey + 16 bytes. */
  readonly keyA: number;
  readonly keyB: number;
  /** A growable data area for values and batches. */
  data = 0;
  dataCap = 0;
  /** > 0 while user code (a custom codec, toJSON) runs inside an adaptree call. */
  busy = 0;
  buf: ArrayBufferLike;
  u8: Uint8Array;
  dv: DataView;
  /** Key area A and the data area as views of their own (st only: TextEncoder.encodeInto writes
   * at a view's start); re-created with the other views and when the data area moves. */
  keyAView: Uint8Array;
  dataView: Uint8Array;

  constructor(readonly wasm: AdaptreeWasm) {
    this.ex = wasm.exports;
    this.mem = wasm.memory;
    this.ctx = wasm.ctx;
    this.res = wasm.result ?? this.ex.at_ctx_result(this.ctx);
    this.maxKey = this.ex.at_max_key_size();
    this.maxKeyUntruncated = this.ex.at_max_key_size_untruncated();
    const area = this.maxKey + 16;
    this.keyA = this.ex.at_alloc(2 * area);
    if (this.keyA === 0) throw new OutOfMemoryError('out of wasm memory allocating key areas');
    this.keyB = this.keyA + area;
    this.buf = this.mem.buffer;
    this.shared = typeof SharedArrayBuffer !== 'undefined' && this.buf instanceof SharedArrayBuffer;
    this.u8 = new Uint8Array(this.buf);
    this.dv = new DataView(this.buf);
    this.keyAView = this.u8.subarray(this.keyA, this.keyA + this.maxKey);
    this.dataView = EMPTY;
  }

  /** Re-creates the views after memory growth. A plain buffer detaches on growth (its views
   * then have length 0, a cheap test); a shared one stays valid but too short, so it is
   * compared with the memory's current buffer. */
  refresh(): void {
    if (this.shared ? this.mem.buffer !== this.buf : this.u8.byteLength === 0) {
      const b = this.mem.buffer;
      this.buf = b;
      this.u8 = new Uint8Array(b);
      this.dv = new DataView(b);
      this.keyAView = this.u8.subarray(this.keyA, this.keyA + this.maxKey);
      this.dataView = this.dataCap === 0 ? EMPTY : this.u8.subarray(this.data, this.data + this.dataCap);
    }
  }

  /** The data area with room for `n` bytes, keeping its first `keep` bytes. Refreshes the views
   * (also without growth: the previous call may have grown memory). */
  reserve(n: number, keep = 0): number {
    if (n > this.dataCap) {
      // Past 1 MiB by half again, not twice: the areas given up (the batch copied out of each)
      // then add up to what a later step needs, so the allocator can reuse them; doubling never
      // could (a 41 MB batch grew memory 16 -> 129 MB, a 40 MB one failed at a 100 MiB budget:
      // session 23's probe).
      let cap = Math.max(4096, this.dataCap < 1 << 20 ? this.dataCap * 2 : Math.ceil((this.dataCap * 1.5) / 65536) * 65536);
      while (cap < n) cap = cap < 1 << 20 ? cap * 2 : Math.ceil((cap * 1.5) / 65536) * 65536;
      // A large value gets its own length (in 64 KiB): doubling gave a 600 MB value a 1 GiB
      // area, more than is left beside the store's copy of it.
      if (n > LARGE_AREA) cap = Math.ceil(n / 65536) * 65536;
      const p = this.ex.at_alloc(cap);
      if (p === 0) throw new OutOfMemoryError(`out of wasm memory reserving ${cap} bytes`);
      this.refresh();
      if (keep > 0) this.u8.copyWithin(p, this.data, this.data + keep);
      if (this.data !== 0) this.ex.at_free(this.data);
      this.data = p;
      this.dataCap = cap;
      this.dataView = this.u8.subarray(p, p + cap);
    }
    this.refresh();
    return this.data;
  }

  /** Out of memory: frees the data area (idle during reads) so that a retry can use that memory
   * for its output; true if there was one. Only on error paths. */
  dropData(): boolean {
    if (this.dataCap === 0) return false;
    this.ex.at_free(this.data);
    this.data = 0;
    this.dataCap = 0;
    this.dataView = EMPTY;
    return true;
  }

  /** An attached instance's map was freed (threads.ts): gives back the key and data areas; the
   * instance itself is released next (AdaptreeWasm.release). */
  release(): void {
    if (this.dataCap !== 0) this.ex.at_free(this.data);
    this.data = 0;
    this.dataCap = 0;
    this.dataView = EMPTY;
    this.ex.at_free(this.keyA);
    runtimes.delete(this.wasm);
  }

  /** Gives back a very large data area after a big value or batch. Touches no view: the call
   * before it may have grown memory (detaching them in st, leaving them short in mt); the
   * next reserve()/refresh() re-creates them. */
  shrink(): void {
    if (this.dataCap > SHRINK_ABOVE) {
      this.ex.at_free(this.data);
      this.data = 0;
      this.dataCap = 0;
      this.dataView = EMPTY;
    }
  }
}

const runtimes = new WeakMap<AdaptreeWasm, Runtime>();

export function runtimeOf(wasm: AdaptreeWasm): Runtime {
  let rt = runtimes.get(wasm);
  if (rt === undefined) {
    rt = new Runtime(wasm);
    runtimes.set(wasm, rt);
  }
  return rt;
}

let defaultWasm: AdaptreeWasm | undefined;

/** @internal Sets the instance `new BTreeMap()` uses when no `wasm` option is given (index.ts init). */
export function setDefaultWasm(w: AdaptreeWasm | undefined): void {
  defaultWasm = w;
}

/** @internal */
export function getDefaultWasm(): AdaptreeWasm | undefined {
  return defaultWasm;
}
