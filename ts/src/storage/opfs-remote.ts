/**
 * An 'opfs' store opened on a browser's main thread. OPFS sync access handles exist only in
 * dedicated workers, so the store lives in a worker the package ships (opfs-worker.ts, one
 * per store) and this object forwards calls to it. It is a BTreeStore (store.ts links the
 * prototypes) with `isAsync: true`: the async twins (`getAsync`, `setAsync`, ...,
 * `entriesAsync`), `commit`, `close`, `statsAsync`, `treeStatsAsync` work, and so do `size`
 * (the worker sends it with every reply), `path`, `storage` and `closed`. The sync methods
 * throw PageFaultError (NEED_PAGE, pageId -1): no page is ever on this thread.
 *
 * Keys, values and range bounds are encoded here, with the store's codecs (a name or a codec
 * object, as for any store), and decoded here: the worker stores and returns bytes, packed
 * into one buffer a message (opfs-wire.ts). So a value is what its encoding makes of it on
 * this thread when the call is made, as a BTreeMap would have it (a toJSON, a Proxy, an object
 * with methods: structured clone to the worker dropped the first and refused the others, a
 * new-user probe, session 24), and a key or range the encoding refuses is the same
 * InvalidKeyError / InvalidArgumentError, found here. `wasm` is ignored (the worker loads its
 * own module).
 *
 * Calls go in batches: the calls made in one turn of the event loop (say the getAsync of a
 * `Promise.all`, or setAsync calls not awaited one by one) are sent as one message at the end
 * of the turn (a microtask), up to BATCH_MAX calls a message, and the worker answers all the
 * synchronous ones of a batch in one message. The order of the calls is kept. An awaited
 * call alone still costs a round trip to the worker.
 */
import { encodeWith, MAX_KEY_SIZE, type KeyEncoder, type ValueEncoder } from '../encoding/codec.js';
import { isWellFormed, writeUtf8 } from '../encoding/utf8.js';
import { utf8Value } from '../encoding/values.js';
import {
  ClosedError,
  errorFromWire,
  InvalidArgumentError,
  InvalidValueError,
  IoError,
  listOf,
  PageFaultError,
  ReentrancyError,
  ThreadsUnsupportedError,
  type WireError,
} from '../errors.js';
import { keyEncoderOf, valueEncoderOf } from '../map/codecs.js';
import { boundsWith, checkDeleteRange, rangeOfBounds } from '../map/range.js';
import type { Runtime } from '../map/runtime.js';
import type { DeleteRange, Range } from '../map/types.js';
import { BIG, PackReader, PackWriter, type Packed, type Ref } from './opfs-wire.js';
import { booleanFields } from '../options.js';
import { batchOptions, type ProgressCallback } from '../progress.js';

interface WorkerLike {
  postMessage(m: unknown, transfer?: Transferable[]): void;
  terminate(): void;
  onmessage: ((e: { data: Reply }) => void) | null;
  onerror: ((e: { message?: string; preventDefault?(): void }) => void) | null;
}
/** A call as sent to the worker (opfs-worker.ts); a message is `{ calls, packed }`, its keys
 * and values Refs to `packed`. */
interface Call {
  seq: number;
  op: string;
  args: unknown[];
}
/** The worker's answer to some calls; `size` is the store's size when it was sent; the keys
 * and values of the values are Refs to `packed`. */
interface Reply {
  results: { seq: number; value?: unknown; error?: WireError }[];
  size: number;
  packed?: Packed;
}
/** Turns the worker's answer to a call into the caller's keys and values. */
type Decode = (value: never, msg: PackReader) => unknown;
/** The codec wrappers' re-entrancy guard: no wasm instance is used on this thread (a codec may
 * call into adaptree here; it cannot reach the worker's store mid-call). */
const NO_RUNTIME = { busy: 0 } as Runtime;
/** Strings of up to this many characters are written by hand, longer ones by TextEncoder. */
const SHORT_STRING = 256;
const encoder = new TextEncoder();

/** True on a thread that can start a module worker over OPFS but has no sync handles itself. */
export function opfsRemoteAvailable(): boolean {
  const g = globalThis as { Worker?: unknown; navigator?: { storage?: { getDirectory?: unknown } } };
  return typeof g.Worker === 'function' && typeof g.navigator?.storage?.getDirectory === 'function';
}

/**
 * Runs `start`, a `new Worker(new URL('./x.js', import.meta.url), ...)` written out as bundlers
 * recognise it, with the global Worker wrapped for that one synchronous call, to learn the URL
 * the worker was given (a bundler's own, once bundled: the package cannot compute it), so that
 * the error of a worker whose script cannot load names it. Where the global cannot be
 * replaced, the worker starts all the same and the URL is not known.
 */
function recordingWorkerUrl(start: () => WorkerLike): { worker: WorkerLike; url: string | undefined } {
  const g = globalThis as unknown as { Worker: new (url: string | URL, options?: object) => WorkerLike };
  const Native = g.Worker;
  let url: string | undefined;
  const Recording = function (u: string | URL, o?: object): WorkerLike {
    url = String(u);
    return new Native(u, o);
  } as unknown as typeof Native;
  try {
    g.Worker = Recording;
  } catch {
    return { worker: start(), url };
  }
  try {
    return { worker: start(), url };
  } finally {
    g.Worker = Native;
  }
}

const ITER_BATCH = 256;
/** At most this many calls go in one message (a loop of a million unawaited setAsync calls
 * is sent in pieces, not as one structured clone). */
const BATCH_MAX = 4096;

/** The option key under which BTreeStore.open hands over the module its thread has
 * ({ module, threads }), for the worker to instantiate. */
export const WORKER_MODULE: unique symbol = Symbol('adaptree opfs worker module');

export class OpfsWorkerStore {
  readonly #worker: WorkerLike;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void; decode?: Decode }>();
  readonly #path: string;
  readonly #kenc: KeyEncoder<unknown>;
  readonly #venc: ValueEncoder<unknown>;
  #readOnly: boolean;
  #seq = 1;
  /** Writes sent so far: an iterator whose buffered batch is older drops it and reads on after
   * the last key it returned (as a BTreeMap iterator re-seeks after a change). */
  #mod = 0;
  /** Calls made this turn, not sent yet (#flush sends them), and their keys and values. */
  #queue: Call[] = [];
  #out = new PackWriter();
  /** A call's keys and values are being encoded (#call). */
  #encoding = false;
  #size = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** close() commits (not close({ commit: false })); it has settled. */
  #closeCommits = true;
  #closeDone = false;
  /** Set when the worker died: every call rejects with it. */
  #dead: Error | undefined;
  /** The worker has answered (its script loaded and ran). */
  #heard = false;

  private constructor(worker: WorkerLike, url: string | undefined, path: string, kenc: KeyEncoder<unknown>, venc: ValueEncoder<unknown>) {
    this.#worker = worker;
    this.#path = path;
    this.#kenc = kenc;
    this.#venc = venc;
    this.#readOnly = false;
    worker.onmessage = (e) => {
      this.#heard = true;
      const { results, size, packed } = e.data;
      this.#size = size;
      const msg = new PackReader(packed);
      for (const r of results) {
        const p = this.#pending.get(r.seq);
        if (p === undefined) continue;
        this.#pending.delete(r.seq);
        if (r.error !== undefined) p.reject(errorFromWire(r.error));
        else if (p.decode === undefined) p.resolve(r.value);
        else {
          // (a custom codec's decode may throw: CorruptionError, as on a BTreeMap)
          try {
            p.resolve(p.decode(r.value as never, msg));
          } catch (err) {
            p.reject(err);
          }
        }
      }
    };
    worker.onerror = (e) => {
      const where = url ?? 'opfs-worker.js';
      // A script that cannot be fetched or run as a module (a 404, an HTML page served in its
      // place) fires a plain error event before the worker says anything; it said "failed:
      // error" without the script (a new-user probe, session 24).
      const message = typeof e.message === 'string' && e.message !== '' ? e.message : undefined;
      this.#dead = message === undefined && !this.#heard
        ? new IoError(`the worker of the opfs store '${path}' could not start: its script ${where} could not be loaded (missing, or not served as JavaScript): deploy the package's opfs-worker.js with the app, or open the store in your own dedicated worker`)
        : new IoError(`the worker of the opfs store '${path}' (${where}) failed: ${message ?? 'error'}`);
      e.preventDefault?.();
      for (const p of this.#pending.values()) p.reject(this.#dead);
      this.#pending.clear();
    };
  }

  /** Starts the worker and opens the store in it (its errors are this promise's). */
  static async open(options: Record<string, unknown> & { path: string; [WORKER_MODULE]?: unknown }): Promise<OpfsWorkerStore> {
    // The codecs work here (the same checks and errors as a BTreeMap's); the worker is told
    // their names, 'custom' for a codec object, which its store records.
    const kenc = keyEncoderOf<unknown>(options.keys as never, NO_RUNTIME);
    const venc = valueEncoderOf<unknown>(options.values as never, NO_RUNTIME);
    const forwarded: Record<string, unknown> = { keys: kenc.name, values: venc.name };
    for (const k of ['path', 'layout', 'poolSize', 'checkpointBytes', 'logDeltas', 'fill', 'autoCommit', 'create', 'wait', 'readOnly', 'salvage']) {
      if (options[k] !== undefined) forwarded[k] = options[k];
    }
    // (a WebAssembly.Module is cloned to a worker: it instantiates the same module)
    if (options[WORKER_MODULE] !== undefined) forwarded.wasmModule = options[WORKER_MODULE];
    const given = options.workerUrl as string | URL | undefined;
    if (given !== undefined && typeof given !== 'string' && !(given instanceof URL)) {
      throw new InvalidArgumentError(`workerUrl must be a string or a URL, not ${typeof given}`);
    }
    const name = `adaptree opfs ${options.path}`;
    let started: { worker: WorkerLike; url: string | undefined };
    try {
      started = given !== undefined
        ? { worker: new Worker(given, { type: 'module', name }) as unknown as WorkerLike, url: String(given) }
        // Written as bundlers recognise it (vite, webpack 5, ...): they bundle the worker with it.
        : recordingWorkerUrl(() => new Worker(new URL('./opfs-worker.js', import.meta.url), { type: 'module', name }) as unknown as WorkerLike);
    } catch (e) {
      // (a classic-script or CommonJS bundle has no import.meta.url: "Invalid URL", a TypeError
      // with no code; a probe, session 30)
      const why = e instanceof Error ? e.message : String(e);
      if (given !== undefined) throw new InvalidArgumentError(`workerUrl: ${why}`, { cause: e });
      throw new IoError(
        `the opfs store '${options.path}' cannot start its worker (opfs-worker.js beside this module, import.meta.url ` +
          `${String((import.meta as { url?: unknown }).url)}): ${why}; pass the URL of the package's dist/storage/opfs-worker.js as the workerUrl option, or open the store in your own dedicated worker`,
        { cause: e },
      );
    }
    const { worker, url } = started;
    const s = new OpfsWorkerStore(worker, url, options.path, kenc, venc);
    s.#readOnly = options.readOnly === true;
    try {
      await s.#send('open', [forwarded]);
    } catch (e) {
      worker.terminate();
      throw e;
    }
    return s;
  }

  /** Queues a call (its keys and values are in #out already); `decode` makes its answer's. */
  #send(op: string, args: unknown[], decode?: Decode): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    // (From a codec or toJSON while a call is encoded, see #call: a message it filled would go
    // without that call's keys and values.)
    if (this.#encoding) return Promise.reject(new ReentrancyError());
    return new Promise((resolve, reject) => {
      const seq = this.#seq++;
      this.#pending.set(seq, { resolve, reject, decode });
      const n = this.#queue.push({ seq, op, args });
      if (n === 1) queueMicrotask(() => this.#flush());
      else if (n >= BATCH_MAX) this.#flush();
    });
  }

  /** Sends the calls queued this turn as one message, with their keys and values. */
  #flush(): void {
    const calls = this.#queue;
    const { packed, transfer } = this.#out.take();
    if (calls.length === 0) return;
    this.#queue = [];
    if (this.#dead !== undefined) {
      for (const c of calls) this.#settle(c.seq, this.#dead);
      return;
    }
    try {
      this.#worker.postMessage({ calls, packed }, transfer);
    } catch {
      // Keys and values go encoded, so structured clone copies them all; should it fail on some
      // other argument, the calls go in halves, down to those that cannot be sent (a clone that
      // fails transfers nothing).
      this.#post(calls, packed);
    }
  }

  /** Posts calls as one message or, where structured clone fails, the two halves in turn: the
   * calls that cannot be sent fail, as if sent alone, and the others go in order. */
  #post(calls: Call[], packed: Packed | undefined): void {
    try {
      this.#worker.postMessage({ calls, packed });
    } catch (e) {
      if (calls.length === 1) {
        this.#settle(calls[0]!.seq, new InvalidValueError(`cannot send to the store's worker: ${(e as Error).message}`, { cause: e }));
        return;
      }
      const half = calls.length >> 1;
      this.#post(calls.slice(0, half), packed);
      this.#post(calls.slice(half), packed);
    }
  }

  /** Rejects call `seq` without an answer from the worker. */
  #settle(seq: number, error: Error): void {
    const p = this.#pending.get(seq);
    this.#pending.delete(seq);
    p?.reject(error);
  }

  /**
   * Calls `method` of the worker's store with the arguments `args()` encodes into #out (run
   * now: a key, value or range it refuses rejects the call, which is not sent; what it wrote
   * goes unused); `decode` turns the answer back into keys and values. `write`: the call
   * changes the store (iterators then read on afresh, see #mod).
   */
  #call<T>(method: string, args: () => unknown[], decode?: Decode, write = false): Promise<T> {
    if (this.#closed) return Promise.reject(new ClosedError('the store is closed'));
    // A codec or toJSON calling this store while a call's keys and values are being encoded
    // (a BTreeMap refuses it too): its items would go in the middle of the other call's, and
    // a message it filled would be sent without that call.
    if (this.#encoding) return Promise.reject(new ReentrancyError());
    let a: unknown[];
    this.#encoding = true;
    try {
      a = args();
    } catch (e) {
      return Promise.reject(e);
    } finally {
      this.#encoding = false;
    }
    if (write) this.#mod++;
    return this.#send('call', [method, ...a], decode) as Promise<T>;
  }

  /** A key in the next message: its encoding (InvalidKeyError, KeyTooLargeError), made now. */
  #key(key: unknown): Ref {
    const out = this.#out;
    out.reserve(MAX_KEY_SIZE);
    return out.end(this.#kenc.encodeInto(key, out.u8, out.dv, out.used, out.used + MAX_KEY_SIZE));
  }

  /** A value in the next message: its encoding, made now (the caller's object or array may
   * change before the message goes, as after a BTreeMap's set). */
  #value(value: unknown): Ref {
    const p = this.#venc.prepare(value);
    const out = this.#out;
    if (typeof p !== 'string') return out.add(p.length >= BIG ? new Uint8Array(p) : p); // (a large one: a copy to transfer)
    // A string: what json and utf8 give, written as UTF-8; a lone surrogate is refused as the
    // map refuses it (json never has one).
    if (3 * p.length >= BIG) return out.add(utf8Value.encode(p));
    out.reserve(3 * p.length);
    if (p.length <= SHORT_STRING) {
      const end = writeUtf8(p, out.u8, out.used, out.used + 3 * p.length, false);
      if (end < 0) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
      return out.end(end);
    }
    if (this.#venc.name !== 'json' && !isWellFormed(p)) throw new InvalidValueError('utf8 value contains a lone surrogate (not valid Unicode)');
    const { written } = encoder.encodeInto(p, out.u8.subarray(out.used, out.used + 3 * p.length));
    return out.end(out.used + written);
  }

  /** The key at `ref` of an answer (a `bytes` key: a copy of its own, as a BTreeMap's). */
  #keyOf(ref: Ref, msg: PackReader): unknown {
    if (typeof ref !== 'number') return this.#kenc.decodeFrom(ref, new DataView(ref.buffer, ref.byteOffset, ref.byteLength), 0, ref.length, false);
    return this.#kenc.decodeFrom(msg.bytes, msg.dv, msg.start(ref), msg.end(ref), false);
  }

  /** The value at `ref` of an answer (a large `bytes` one is the array the worker sent). */
  #valueOf(ref: Ref | undefined, msg: PackReader): unknown {
    if (ref === undefined) return undefined;
    if (typeof ref !== 'number') return this.#venc.name === 'bytes' ? ref : this.#venc.decodeFrom(ref, 0, ref.length, false);
    const s = msg.start(ref);
    return this.#venc.decodeFrom(msg.bytes, s, msg.end(ref) - s, false);
  }

  #entryOf(e: [Ref, Ref] | undefined, msg: PackReader): [unknown, unknown] | undefined {
    return e === undefined ? undefined : [this.#keyOf(e[0], msg), this.#valueOf(e[1], msg)];
  }

  get path(): string {
    return this.#path;
  }
  get storage(): string {
    return 'opfs';
  }
  get isAsync(): boolean {
    return true;
  }
  get closed(): boolean {
    return this.#closed;
  }
  get readOnly(): boolean {
    return this.#readOnly;
  }
  /** As BTreeStore.refresh: an opfs reader's view cannot change while it is open (false).
   * (It asked the worker, whose store answers with a promise: an IoError, it cannot be sent.) */
  refresh(): Promise<boolean> {
    if (this.#closed) return Promise.reject(new ClosedError('the store is closed'));
    return Promise.resolve(false);
  }
  /** The number of entries as of the last reply from the worker (every write replies). */
  get size(): number {
    if (this.#closed) throw new ClosedError('the store is closed');
    return this.#size;
  }
  get keyEncoding(): string {
    return this.#kenc.name;
  }
  get valueEncoding(): string {
    return this.#venc.name;
  }
  get [Symbol.toStringTag](): string {
    return 'BTreeStore';
  }

  /** A store opened on the main thread lives in the package's worker: not shareable (open it
   * in your own worker on the mt build, then share() it there). */
  share(): never {
    throw new ThreadsUnsupportedError('share(): this opfs store was opened on the main thread and lives in a worker; open it in your own worker (mt build) to share it with other workers');
  }

  commit(): Promise<void> {
    if (this.#closed) {
      // As on every backend (docs/STORE.md): made while close() commits, it shares that commit
      // and settles with it (it rejected CLOSED here, a new-user probe, session 24); after
      // close({ commit: false }) or once close() is done, ClosedError. (Sent to the worker
      // after close(), it never settled: the worker ends with its store.)
      if (this.#closing !== undefined && this.#closeCommits && !this.#closeDone) return this.#closing;
      return Promise.reject(new ClosedError('the store is closed'));
    }
    return this.#send('commit', []) as Promise<void>;
  }

  close(options?: { commit?: boolean }): Promise<void> {
    // Checked here, as BTreeStore.close checks them: sent on, a bad option rejected in the
    // worker after the worker was told to end, and the uncommitted writes went with it
    // (`close({ commit: 'yes' })`; `close(5)` committed; the browser probe, session 32).
    if (options !== undefined) {
      try {
        booleanFields(options, 'close: options', ['commit'] as const);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    if (this.#closing !== undefined) return this.#closing;
    if (this.#encoding) return Promise.reject(new ReentrancyError()); // (see #call)
    this.#closed = true;
    this.#closeCommits = options?.commit !== false;
    const o = options?.commit === undefined ? undefined : { commit: options.commit };
    this.#closing = (this.#send('close', [o]) as Promise<void>).finally(() => {
      this.#closeDone = true;
      this.#worker.terminate();
    });
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  getAsync(key: unknown): Promise<unknown> {
    return this.#call('get', () => [this.#key(key)], (v: Ref | undefined, msg) => this.#valueOf(v, msg));
  }
  hasAsync(key: unknown): Promise<boolean> {
    return this.#call('has', () => [this.#key(key)]);
  }
  async setAsync(key: unknown, value: unknown): Promise<this> {
    // (the value first, as BTreeMap.set encodes it)
    await this.#call('set', () => {
      const v = this.#value(value);
      return [this.#key(key), v];
    }, undefined, true);
    return this;
  }
  deleteAsync(key: unknown): Promise<boolean> {
    return this.#call('delete', () => [this.#key(key)], undefined, true);
  }
  clearAsync(): Promise<void> {
    return this.#call('clear', () => [], undefined, true);
  }
  firstAsync(): Promise<unknown> {
    return this.#call('first', () => [], (e: [Ref, Ref] | undefined, msg) => this.#entryOf(e, msg));
  }
  lastAsync(): Promise<unknown> {
    return this.#call('last', () => [], (e: [Ref, Ref] | undefined, msg) => this.#entryOf(e, msg));
  }
  nextHigherAsync(key: unknown): Promise<unknown> {
    return this.#call('nextHigher', () => [this.#key(key)], (e: [Ref, Ref] | undefined, msg) => this.#entryOf(e, msg));
  }
  nextLowerAsync(key: unknown): Promise<unknown> {
    return this.#call('nextLower', () => [this.#key(key)], (e: [Ref, Ref] | undefined, msg) => this.#entryOf(e, msg));
  }
  // (Checked here, as BTreeStore checks them: Array.from(5) was [], and of null a TypeError
  // thrown, not a rejection.)
  async getManyAsync(keys: Iterable<unknown>): Promise<unknown[]> {
    const list = listOf(keys, 'getManyAsync: keys');
    return this.#call('getMany', () => [list.map((k) => this.#key(k))], (vs: (Ref | undefined)[], msg) => vs.map((v) => this.#valueOf(v, msg)));
  }
  async setManyAsync(entries: Iterable<readonly [unknown, unknown]>, options?: { onProgress?: ProgressCallback }): Promise<this> {
    // (its options were not read at all: a bad one wrote the batch, where every other store
    // refuses it and writes nothing; the browser probe, session 32. onProgress is not reported
    // across the worker: the call is one message.)
    batchOptions(options, 'setManyAsync');
    const list = listOf(entries, 'setManyAsync: entries');
    await this.#call('setMany', () => {
      // [k0, v0, k1, v1, ...]; BTreeMap.setMany's checks, in its order: the entry, its value, its key
      const flat: Ref[] = [];
      for (let i = 0; i < list.length; i++) {
        const e = list[i];
        if (e === null || typeof e !== 'object') throw new InvalidArgumentError(`setMany: entry ${i} is not an entry object`);
        const v = this.#value(e[1]);
        flat.push(this.#key(e[0]), v);
      }
      return [flat];
    }, undefined, true);
    return this;
  }
  deleteRangeAsync(range: DeleteRange<unknown>): Promise<number> {
    return this.#call('deleteRange', () => {
      const r = checkDeleteRange(range);
      const b: Record<string, Ref> = {};
      // (the lower bound first, as BTreeMap.deleteRange encodes them)
      if (r.gt !== undefined) b.gt = this.#key(r.gt);
      else if (r.gte !== undefined) b.gte = this.#key(r.gte);
      if (r.lt !== undefined) b.lt = this.#key(r.lt);
      else if (r.lte !== undefined) b.lte = this.#key(r.lte);
      return [b];
    }, undefined, true);
  }
  checkInvariantsAsync(): Promise<void> {
    return this.#call('checkInvariants', () => []);
  }
  treeStatsAsync(): Promise<unknown> {
    return this.#call('treeStats', () => []);
  }
  statsAsync(): Promise<unknown> {
    return this.#call('stats', () => []);
  }
  /** BTreeStore.compact, in the worker: the pages freed. */
  compactAsync(): Promise<number> {
    return this.#call('compact', () => [], undefined, true);
  }

  entriesAsync(range?: Range<unknown>): AsyncIterableIterator<unknown> {
    return this.#iter('entries', range);
  }
  keysAsync(range?: Range<unknown>): AsyncIterableIterator<unknown> {
    return this.#iter('keys', range);
  }
  valuesAsync(range?: Range<unknown>): AsyncIterableIterator<unknown> {
    return this.#iter('values', range);
  }
  [Symbol.asyncIterator](): AsyncIterableIterator<unknown> {
    return this.entriesAsync();
  }

  /**
   * Reads the range in batches of ITER_BATCH items; each is one 'scan' in the worker (the range
   * again, after the last key returned), so the worker keeps nothing between batches: an
   * iterator dropped unfinished costs only this side's objects (the worker kept every one
   * until return(), ~62 KB each). A write through this store meanwhile makes the iterator drop
   * what it has buffered and read on after the last key it returned, as a BTreeMap iterator
   * re-seeks (it handed out a batch read before a delete, deleted entries included).
   *
   * The range is checked and its bounds encoded here, now, by the code a BTreeMap runs
   * (boundsWith): the same errors, thrown by keysAsync() as BTreeStore's, and the worker gets
   * it normalised (encoded bounds, `reverse` a boolean; the limit is counted here). The worker
   * took `reverse: 1` as reverse and read on forward after the first batch (duplicates,
   * skipped keys), and ignored a limit of '3' or null (a new-user probe, session 24). Keys and
   * values are decoded as they are handed out.
   */
  #iter(kind: 'entries' | 'keys' | 'values', range: Range<unknown> | undefined): AsyncIterableIterator<unknown> {
    if (this.#closed) throw new ClosedError('the store is closed');
    const b = boundsWith(range, kind, (key) => encodeWith(this.#kenc, key));
    const bounds = rangeOfBounds({ ...b, limit: Infinity });
    let left = b.limit;
    const per = kind === 'keys' ? 1 : 2; // refs an entry
    let refs: Ref[] = [];
    let msg: PackReader | undefined; // the answer `refs` are of
    let at = 0;
    let after: Uint8Array | undefined; // the last key returned, encoded
    let mod = -1;
    let ended = false; // the worker's last batch held the rest (as of `mod`)
    let finished = false;
    const done = { done: true, value: undefined } as IteratorReturnResult<undefined>;
    const scan = (count: number) =>
      this.#send('scan', [kind, this.#refsOf(bounds), after === undefined ? undefined : this.#out.add(after), count], (r: { refs: Ref[]; done: boolean }, m) => ({ ...r, msg: m }));
    const ai: AsyncIterableIterator<unknown> = {
      next: async () => {
        if (finished) return done;
        if (this.#closed) throw new ClosedError('the store is closed');
        if (mod !== this.#mod) {
          refs = [];
          at = 0;
          ended = false;
        }
        if (at === refs.length) {
          if (ended || left === 0) {
            finished = true;
            refs = [];
            return done;
          }
          mod = this.#mod;
          const r = (await scan(Math.min(ITER_BATCH, left))) as { refs: Ref[]; done: boolean; msg: PackReader };
          refs = r.refs;
          msg = r.msg;
          at = 0;
          ended = r.done;
          if (refs.length === 0) {
            finished = true;
            return done;
          }
        }
        const k = refs[at]!, v = refs[at + 1];
        at += per;
        after = msg!.view(k);
        left--;
        const value = kind === 'keys' ? this.#keyOf(k, msg!) : kind === 'values' ? this.#valueOf(v, msg!) : [this.#keyOf(k, msg!), this.#valueOf(v, msg!)];
        return { done: false, value };
      },
      return: async () => {
        finished = true;
        refs = [];
        return done;
      },
      [Symbol.asyncIterator]() {
        return ai;
      },
    };
    return ai;
  }

  /** A range of encoded bounds in the next message (its bounds as Refs). */
  #refsOf(r: Range<Uint8Array>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const k of ['gt', 'gte', 'lt', 'lte'] as const) if (r[k] !== undefined) out[k] = this.#out.add(r[k]);
    if (r.reverse === true) out.reverse = true;
    return out;
  }
}

/** Makes OpfsWorkerStore a BTreeStore: instanceof holds, and every BTreeStore method it does
 * not define (the sync ones) throws PageFaultError. Called once by store.ts. */
export function linkOpfsWorkerStore(storeClass: { prototype: object }): void {
  const proto = OpfsWorkerStore.prototype as unknown as Record<string | symbol, unknown>;
  Object.setPrototypeOf(proto, storeClass.prototype);
  for (const name of Reflect.ownKeys(storeClass.prototype)) {
    if (name === 'constructor' || Object.prototype.hasOwnProperty.call(proto, name)) continue;
    const d = Object.getOwnPropertyDescriptor(storeClass.prototype, name)!;
    if (typeof d.value !== 'function') continue;
    const label = typeof name === 'symbol' ? name.toString() : name;
    Object.defineProperty(proto, name, {
      configurable: true,
      writable: true,
      value(this: OpfsWorkerStore) {
        // After close(), what every call says (session 23: NEED_PAGE, a probe found).
        if (this.closed) throw new ClosedError('the store is closed');
        throw new PageFaultError(-1, `${label}: this opfs store was opened on the main thread and lives in a worker; use the ...Async methods (or open the store in your own worker for the synchronous API)`);
      },
    });
  }
}

if (typeof Symbol.asyncDispose !== 'symbol') {
  delete (OpfsWorkerStore.prototype as unknown as Record<string, unknown>)['undefined'];
}
