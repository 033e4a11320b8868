/**
 * Snapshots over a store that has none: copy-on-write per key, in an overlay.
 *
 * A snapshot is a `Version`: the state of the store at the moment it was taken. The store
 * itself only ever holds the newest state. A version keeps, in a small `BTreeMap` of its
 * own (the overlay), the value every key had when the version was taken, for exactly the
 * keys written since: before a write changes the store, the old value of each key it
 * touches (or "absent") goes into every open version that has no entry for that key yet.
 * Reading a version: its overlay if the key is there, else the store. Scanning a version:
 * the store's entries merged with the overlay's, the overlay winning on equal keys (and an
 * "absent" entry hiding the key).
 *
 * Costs:
 * - taking a snapshot: O(1); versions taken with no write in between share one overlay;
 * - a write while v versions are open: one extra `getMany` on the store for the old values,
 *   then O(v log m) overlay work (m = overlay size); with no version open, nothing extra;
 * - memory: one copy of the old value per key written while the version is open, freed
 *   when the last reader of the version closes (iterators hold an implicit version each, so
 *   an iterator left open makes every later write of a key it could see copy that key once);
 * - reads: one overlay lookup per key; scans merge two sorted batches.
 *
 * Why reads are consistent with an async store too: the old values are recorded *before*
 * the store is written, and a read through a version asks the store *before* it asks the
 * overlay. A store read that already sees a write is then corrected by the overlay, which
 * by then holds the old value. A version taken *while* a write is being applied is given that
 * write's new values at once (`pending`), so it sees the write whole, never half of it.
 */
import { BTreeMap } from '../map.js';
import type { AdaptreeWasm } from '../wasm.js';
import { compareBytes } from '../encoding/codec.js';
import { MAX_KEY_SIZE } from '../encoding/codec.js';
import { clampRange, type StoreEntry, type StoreRange } from './store.js';

const TAG_ABSENT = 0;
const TAG_PRESENT = 1;
const ABSENT_BYTES = new Uint8Array([TAG_ABSENT]);

/** What an overlay knows about a key: not there, or the key's value in this version. */
export const NOT_IN_OVERLAY: unique symbol = Symbol('not in overlay');

export class Version {
  /** Readers (snapshots, iterators, single reads) holding the version. */
  refs = 1;
  #map: BTreeMap<Uint8Array, Uint8Array> | null = null;
  readonly #wasm: AdaptreeWasm | undefined;

  constructor(wasm: AdaptreeWasm | undefined) {
    this.#wasm = wasm;
  }

  /** Records the value `key` has in this version, unless one is recorded already. */
  record(key: Uint8Array, value: Uint8Array | undefined): void {
    // A key longer than any the store can hold was absent then and is now: nothing to keep
    // (the overlay, a BTreeMap, refuses it: a del of such a key, a no-op, threw KEY_TOO_LARGE
    // while an iterator was open, and took the rest of its batch with it; a probe, session 29).
    if (key.length > MAX_KEY_SIZE) return;
    let m = this.#map;
    if (m === null) {
      m = this.#map = new BTreeMap<Uint8Array, Uint8Array>(null, {
        keys: 'bytes',
        values: 'bytes',
        ...(this.#wasm !== undefined ? { wasm: this.#wasm } : {}),
      });
    } else if (m.has(key)) {
      return;
    }
    m.set(key, tag(value));
  }

  /** The value of `key` in this version if the overlay has it (undefined: absent then). */
  lookup(key: Uint8Array): Uint8Array | undefined | typeof NOT_IN_OVERLAY {
    const m = this.#map;
    if (m === null || key.length > MAX_KEY_SIZE) return NOT_IN_OVERLAY;
    const t = m.get(key);
    return t === undefined ? NOT_IN_OVERLAY : untag(t);
  }

  /** Overlay entries within the range, at most `limit`; values undefined where absent. */
  scan(range: StoreRange, limit: number): StoreEntry[] {
    const m = this.#map;
    if (m === null || m.size === 0) return [];
    const out: StoreEntry[] = [];
    // (bounds of any length, as the store takes them: store.ts clampRange)
    for (const [k, t] of m.entries({ ...clampRange(range), limit })) out.push([k, untag(t)]);
    return out;
  }

  get empty(): boolean {
    return this.#map === null || this.#map.size === 0;
  }

  free(): void {
    this.#map?.free();
    this.#map = null;
  }
}

function tag(value: Uint8Array | undefined): Uint8Array {
  if (value === undefined) return ABSENT_BYTES;
  const t = new Uint8Array(value.length + 1);
  t[0] = TAG_PRESENT;
  t.set(value, 1);
  return t;
}

function untag(t: Uint8Array): Uint8Array | undefined {
  return t[0] === TAG_PRESENT ? t.subarray(1) : undefined;
}

/** The open versions of one store, and the bookkeeping of writes against them. */
export class Versions {
  readonly #open = new Set<Version>();
  /** The newest version, while no write has happened since it was taken: shareable. */
  #fresh: Version | null = null;
  /** The write being applied to an async store (its new values), else null. */
  #pending: { puts: [Uint8Array, Uint8Array][]; dels: Uint8Array[] } | null = null;
  readonly #wasm: AdaptreeWasm | undefined;

  constructor(wasm: AdaptreeWasm | undefined) {
    this.#wasm = wasm;
  }

  /** Number of distinct open versions (shared ones count once). */
  get size(): number {
    return this.#open.size;
  }

  /** A version of the store as it is now; release() it when done. O(1). */
  acquire(): Version {
    const f = this.#fresh;
    if (f !== null) {
      f.refs++;
      return f;
    }
    const v = new Version(this.#wasm);
    const p = this.#pending;
    if (p !== null) {
      for (const [k, val] of p.puts) v.record(k, val);
      for (const k of p.dels) v.record(k, undefined);
    }
    this.#open.add(v);
    this.#fresh = v;
    return v;
  }

  release(v: Version): void {
    if (--v.refs > 0) return;
    this.#open.delete(v);
    if (this.#fresh === v) this.#fresh = null;
    v.free();
  }

  /**
   * Before a write: records the old values of its keys into every open version. `olds[i]`
   * is the current value of `keys[i]`. After this, no open version is shareable.
   */
  recordOld(keys: Uint8Array[], olds: (Uint8Array | undefined)[]): void {
    for (const v of this.#open) {
      for (let i = 0; i < keys.length; i++) v.record(keys[i]!, olds[i]);
    }
    this.#fresh = null;
  }

  /** Marks a write whose store call is in flight (async stores), or none. */
  setPending(p: { puts: [Uint8Array, Uint8Array][]; dels: Uint8Array[] } | null): void {
    this.#pending = p;
    if (p !== null) this.#fresh = null;
  }

  /** Frees every version (db closing). */
  clear(): void {
    for (const v of this.#open) v.free();
    this.#open.clear();
    this.#fresh = null;
  }
}

/**
 * Merges a batch of store entries with the overlay entries covering the same key interval,
 * the overlay winning on equal keys; entries whose version value is absent are dropped.
 * Both inputs are sorted in the scan's direction.
 */
export function mergeBatch(live: StoreEntry[], overlay: StoreEntry[], reverse: boolean, values: boolean): StoreEntry[] {
  if (overlay.length === 0) return live;
  const out: StoreEntry[] = [];
  const dir = reverse ? -1 : 1;
  let i = 0, j = 0;
  while (i < live.length || j < overlay.length) {
    let c: number;
    if (i === live.length) c = 1;
    else if (j === overlay.length) c = -1;
    else c = compareBytes(live[i]![0], overlay[j]![0]) * dir;
    if (c < 0) {
      out.push(live[i++]!);
      continue;
    }
    if (c === 0) i++;
    const [k, v] = overlay[j++]!;
    if (v !== undefined) out.push([k, values ? v : undefined]);
  }
  return out;
}
