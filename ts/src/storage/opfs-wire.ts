/**
 * The bytes a message between a main-thread opfs store (opfs-remote.ts) and its worker
 * (opfs-worker.ts) carries: the encoded keys and values of its calls, or of its answers, packed
 * into one buffer (transferred), each named in the calls by its index (a `Ref`). A structured
 * clone of an array or an ArrayBuffer per key and value cost twice the time of the whole call
 * (a new backing store for each on both sides). A value of BIG bytes or more goes as a
 * Uint8Array of its own instead (transferred too): its Ref is the array.
 */

/** Packed byte strings from this size up travel as arrays of their own. */
export const BIG = 64 << 10;
/** Packed bytes from this size up are transferred; less is cheaper to copy (an awaited call
 * alone took 24 -> 40 us a round trip with its few bytes transferred both ways). */
const TRANSFER_MIN = 16 << 10;

/** An encoded key or value in a message: the index of a packed one, or one of its own. */
export type Ref = number | Uint8Array;

/** The packed bytes of a message: item i is bytes[ends[i - 1] (0 for i = 0), ends[i]). */
export interface Packed {
  bytes: Uint8Array;
  ends: number[];
}

/** Packs the byte strings of one message. */
export class PackWriter {
  u8: Uint8Array;
  dv: DataView;
  /** Bytes written; an item in progress is at [ends[last], used). */
  used = 0;
  #ends: number[] = [];
  /** Arrays of their own to transfer with the message. */
  own: ArrayBuffer[] = [];

  constructor(size = 4096) {
    this.u8 = new Uint8Array(size);
    this.dv = new DataView(this.u8.buffer);
  }

  /** Makes room for `n` more bytes (the buffer may be a new one after the call). */
  reserve(n: number): void {
    if (this.used + n <= this.u8.length) return;
    const next = new Uint8Array(Math.max(this.used + n, 2 * this.u8.length));
    next.set(this.u8.subarray(0, this.used));
    this.u8 = next;
    this.dv = new DataView(next.buffer);
  }

  /** Ends the item written since the last one at `end` (the caller wrote u8[used, end)); its index. */
  end(end: number): number {
    this.used = end;
    this.#ends.push(end);
    return this.#ends.length - 1;
  }

  /** A copy of `b` in the message; a large one as it is when it is all of its buffer (the
   * message transfers it: the caller must not use it again), else a copy of its own. */
  add(b: Uint8Array): Ref {
    if (b.length >= BIG) {
      const own = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer ? b : b.slice();
      this.own.push(own.buffer as ArrayBuffer);
      return own;
    }
    this.reserve(b.length);
    this.u8.set(b, this.used);
    return this.end(this.used + b.length);
  }

  get count(): number {
    return this.#ends.length;
  }

  /** The packed bytes (undefined for none) and the buffers to transfer; starts afresh. */
  take(): { packed: Packed | undefined; transfer: ArrayBuffer[] } {
    const transfer = this.own;
    this.own = [];
    if (this.#ends.length === 0) return { packed: undefined, transfer };
    const bytes = this.u8.slice(0, this.used);
    const ends = this.#ends;
    if (bytes.length >= TRANSFER_MIN) transfer.push(bytes.buffer);
    this.used = 0;
    this.#ends = [];
    return { packed: { bytes, ends }, transfer };
  }
}

/** Reads the items of a message's Packed. */
export class PackReader {
  readonly bytes: Uint8Array;
  readonly dv: DataView;
  readonly #ends: number[];

  constructor(p: Packed | undefined) {
    this.bytes = p?.bytes ?? new Uint8Array(0);
    this.#ends = p?.ends ?? [];
    this.dv = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  start(i: number): number {
    return i === 0 ? 0 : this.#ends[i - 1]!;
  }

  end(i: number): number {
    const e = this.#ends[i];
    if (e === undefined) throw new RangeError(`opfs store message: no item ${i}`);
    return e;
  }

  /** The bytes of `ref`: a view of the message's buffer, or the array itself. */
  view(ref: Ref): Uint8Array {
    if (typeof ref !== 'number') return ref;
    const s = this.start(ref);
    return new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + s, this.end(ref) - s);
  }
}
