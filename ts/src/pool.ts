/**
 * WorkerPool: a few workers attached to one shared BTreeMap (docs/THREADS.md, "A pool of
 * workers") that run getMany / setMany / load for the calling thread, split over the workers,
 * results in input order.
 *
 * ```ts
 * await init({ threads: true });
 * const map = new BTreeMap<string, number>();
 * const pool = await WorkerPool.create(map, { workers: 2 });
 * await pool.setMany(entries);
 * const values = await pool.getMany(keys);   // same order as keys
 * await pool.close();                          // frees the workers' attachments, ends them
 * ```
 *
 * Workers are Node worker_threads, or module workers where `Worker` exists (browsers, Deno),
 * running `pool-worker.js` from this package. `new Worker(new URL('./pool-worker.js',
 * import.meta.url), { type: 'module' })` is written as bundlers (vite, webpack 5) recognise
 * it, so a bundled app gets the worker bundled too; `workerUrl` overrides it.
 *
 * Honest expectations (bench `--suite threads`, pool rows): keys, entries and values are
 * structured-cloned to and from the workers, which costs about what encoding them costs, and
 * in phase 1 every write holds the one tree latch. A pool pays off when the calling thread
 * must stay free (a page's main thread) or the per-key work is large, not for raw speed.
 */
import {
  AdaptreeError,
  ClosedError,
  errorFromWire,
  InstanceUnusableError,
  InvalidArgumentError,
  IoError,
  InvalidKeyError,
  InvalidValueError,
  listOf,
  ThreadsUnsupportedError,
  withApplied,
  type WireError,
} from './errors.js';
import { BTreeMap } from './map.js';
import { BTreeStore, type SharedStoreHandle } from './store.js';
import { OpfsWorkerStore } from './storage/opfs-remote.js';
import { describe } from './encoding/utf8.js';
import { markWorkerLost, treeOfAny, type SharedMapHandle } from './threads.js';
import type { WasmUrl } from './wasm.js';
import { knownFields } from './options.js';

/** Options of `WorkerPool.create`. */
export interface WorkerPoolOptions {
  /** Number of workers; default `navigator.hardwareConcurrency - 1`, between 1 and 4. */
  workers?: number;
  /**
   * Where the map cannot be shared (it is on the st build: `init()` without `threads`, or a
   * page that is not cross-origin isolated): `'throw'` (default) rejects with
   * ThreadsUnsupportedError; `'inline'` gives a pool of 0 workers that runs every call on
   * the calling thread (same API, same results, no parallelism).
   */
  fallback?: 'throw' | 'inline';
  /** The worker script, where the default (pool-worker.js next to this module) does not resolve. */
  workerUrl?: string | WasmUrl;
  /** Stack reserved for each worker's instance (`map.share(stackSize)`); default 1 MiB. */
  stackSize?: number;
}

interface Reply {
  seq: number;
  value?: unknown;
  error?: WireError;
}

/** A started worker, Node or web, behind one interface. */
interface Port {
  post(m: unknown): void;
  terminate(): Promise<void>;
  /** Node: keeps the process alive while a call waits for this worker (an idle pool does not). */
  busy(yes: boolean): void;
}

interface Slot {
  port: Port;
  handle: SharedMapHandle | SharedStoreHandle;
  /** Requests sent and not answered. */
  readonly pending: Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>;
  alive: boolean;
  /** The worker's script runs (its `{ seq: 0 }` came): from then on it may touch the memory. */
  started: boolean;
}

/** @internal Tests: the pool's workers (their terminate() ends one, as a crash would). */
export const POOL_PORTS: unique symbol = Symbol('adaptree.poolPorts') as never;

/** Fewer keys or entries than this per worker are not worth a message. */
const MIN_CHUNK = 256;

function defaultWorkers(): number {
  const hc = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 2;
  return Math.max(1, Math.min(4, hc - 1));
}

type NodeWorker = {
  postMessage(m: unknown): void;
  terminate(): Promise<number>;
  on(e: 'message', f: (m: Reply) => void): void;
  on(e: 'exit', f: (code: number) => void): void;
  on(e: 'error', f: (err: Error) => void): void;
  ref(): void;
  unref(): void;
};
type WebWorker = {
  postMessage(m: unknown): void;
  terminate(): void;
  addEventListener(type: 'message', f: (e: { data: Reply }) => void): void;
  addEventListener(type: 'error', f: (e: { message?: string; preventDefault?(): void }) => void): void;
};

/** A worker that could not be made: the workerUrl given is refused (InvalidArgumentError), or
 * the package's own pool-worker.js cannot be located (IoError; a probe's CommonJS bundle,
 * with no import.meta.url, was told "workerUrl: Invalid URL" though it had given none). */
function workerError(url: string | URL | undefined, e: unknown): Error {
  const why = (e as Error)?.message ?? String(e);
  if (url !== undefined) return new InvalidArgumentError(`workerUrl: ${why}`, { cause: e });
  return new IoError(
    `WorkerPool: cannot start the package's pool worker (pool-worker.js beside this module, import.meta.url ` +
      `${String((import.meta as { url?: unknown }).url)}): ${why}; pass its URL as workerUrl`,
    { cause: e },
  );
}

/** Starts one worker: a web Worker where the global exists (browsers, Deno, Bun), else Node's. */
async function spawn(url: string | URL | undefined, name: string, onReply: (r: Reply) => void, onGone: (why: string) => void): Promise<Port> {
  if (typeof (globalThis as { Worker?: unknown }).Worker === 'function') {
    // `new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module' })` written out
    // literally: bundlers (vite, webpack 5) recognise exactly this and bundle the worker.
    let w: WebWorker;
    try {
      w = (
        url !== undefined
          ? new Worker(url, { type: 'module', name })
          : new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module', name })
      ) as unknown as WebWorker;
    } catch (e) {
      throw workerError(url, e);
    }
    w.addEventListener('message', (e) => onReply(e.data));
    w.addEventListener('error', (e) => {
      e.preventDefault?.();
      onGone(e.message ?? 'the worker failed');
    });
    return {
      post: (m) => w.postMessage(m),
      terminate: async () => w.terminate(),
      busy: () => {},
    };
  }
  const specifier = 'node:worker_threads';
  const wt = (await import(/* @vite-ignore */ /* webpackIgnore: true */ specifier)) as { Worker: new (u: string | URL, o?: object) => NodeWorker };
  // Not a literal: a browser bundle must not turn this one into an (unbundled) asset.
  const file = './pool-worker.js';
  // A 'file:' URL as a string is a URL here, as a web Worker takes it (Node refused it with
  // its own ERR_WORKER_PATH, session 22).
  const where = typeof url === 'string' && /^file:/i.test(url) ? new URL(url) : url;
  let w: NodeWorker;
  try {
    w = new wt.Worker(where ?? new URL(/* webpackIgnore: true */ file, import.meta.url), { name });
  } catch (e) {
    throw workerError(url, e);
  }
  w.on('message', onReply);
  let failure = '';
  w.on('error', (e) => {
    failure = `${e.message}; `; // 'exit' follows and reports it
  });
  w.on('exit', (code) => onGone(`${failure}the worker exited with code ${code}`));
  // Idle workers do not keep a Node process alive (close() still ends them); a call waiting
  // for one does (else `await pool.getMany(...)` could be the last thing and Node would exit).
  w.unref();
  return {
    post: (m) => w.postMessage(m),
    terminate: async () => {
      await w.terminate();
    },
    busy: (yes) => (yes ? w.ref() : w.unref()),
  };
}

/** The error of a batch whose part [a, b) of `total` entries failed with `e` (what that part
 * applied in its `applied`): `applied` becomes the entries in input order that are in, those of
 * the parts before it and what it applied, and so does the message's count (it counted the
 * failing worker's part: "0 of 4096 entries were applied" beside applied: 12288, a probe,
 * session 31). */
function partFailed(e: unknown, [a, b]: [number, number], total: number): unknown {
  const applied = a + ((e as { applied?: number } | null)?.applied ?? 0);
  if (e instanceof Error) e.message = e.message.replace(/\d+ of \d+ entries were applied/, `${applied} of ${total} entries in input order were applied (a part of ${b - a} failed)`);
  return withApplied(e, applied);
}

/** Splits [0, n) into at most `parts` contiguous chunks of at least MIN_CHUNK (except one). */
function chunks(n: number, parts: number): [number, number][] {
  const k = Math.max(1, Math.min(parts, Math.ceil(n / MIN_CHUNK)));
  const out: [number, number][] = [];
  for (let i = 0; i < k; i++) out.push([Math.floor((i * n) / k), Math.floor(((i + 1) * n) / k)]);
  return out;
}

/** The typed error for a request that structured clone refused: InvalidKeyError when a key
 * cannot be copied (getMany's keys, or an entry's key), else InvalidValueError. */
function uncloneable(m: Record<string, unknown>, e: unknown): Error {
  const why = `cannot send to a pool worker: ${(e as Error).message}`;
  const clones = (x: unknown): boolean => {
    try {
      structuredClone(x);
      return true;
    } catch {
      return false;
    }
  };
  if (Array.isArray(m.keys)) {
    const i = m.keys.findIndex((k) => !clones(k));
    return new InvalidKeyError(i < 0 ? why : `${why} (key ${i})`, { cause: e });
  }
  if (Array.isArray(m.entries)) {
    const i = (m.entries as unknown[]).findIndex((x) => Array.isArray(x) && !clones(x[0]));
    if (i >= 0) return new InvalidKeyError(`${why} (the key of entry ${i})`, { cause: e });
  }
  return new InvalidValueError(why, { cause: e });
}

/**
 * Workers attached to one shared map (mt build) that run `getMany` / `setMany` / `load` for
 * the calling thread, split over the workers, results in input order; errors keep their class
 * and `code`. Create with `await WorkerPool.create(map, options)`; `close()` when done (or
 * `await using`): it frees the workers' attachments (their stacks go back to the memory) and
 * later calls throw ClosedError. A worker that ends during a call makes the memory unusable
 * (InstanceUnusableError, INSTANCE_POISONED; see markWorkerLost). docs/THREADS.md, "A pool of
 * workers".
 */
export class WorkerPool<K = string, V = unknown> {
  readonly #map: BTreeMap<K, V> | BTreeStore<K, V>;
  readonly #slots: Slot[];
  #seq = 1;
  #next = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Set when a worker ended during a call: every call rejects with it. */
  #broken: Error | undefined;

  private constructor(map: BTreeMap<K, V> | BTreeStore<K, V>, slots: Slot[]) {
    this.#map = map;
    this.#slots = slots;
  }

  /**
   * Starts `workers` workers, each attached to `map` (which must be on the mt build and use
   * named encodings, not custom codecs: a codec cannot be sent to a worker). `map` stays
   * yours and usable on this thread; free it only after `close()`.
   *
   * `map` may be a persistent store that can be shared (`BTreeStore#share`: node or deno
   * files, opfs in a worker, on the mt build): the workers attach to it and write into it;
   * `store.commit()` on this thread makes durable what they wrote before it, and the pool's
   * `close()` commits each worker's writes as it detaches. Other stores (memory, IndexedDB,
   * Durable Objects, an opfs store opened on a browser's main thread) reject with
   * ThreadsUnsupportedError; with `fallback: 'inline'` such a store, or any store on the st
   * build, runs the calls on this thread. Anything else is InvalidArgumentError.
   */
  static async create<K, V>(map: BTreeMap<K, V> | BTreeStore<K, V>, options: WorkerPoolOptions = {}): Promise<WorkerPool<K, V>> {
    knownFields(options, 'WorkerPool.create', ['workers', 'fallback', 'workerUrl', 'stackSize']);
    const n = options.workers ?? defaultWorkers();
    if (!Number.isInteger(n) || n < 1 || n > 64) throw new InvalidArgumentError('WorkerPool.create: workers must be an integer from 1 to 64');
    const fallback = options.fallback ?? 'throw';
    if (fallback !== 'throw' && fallback !== 'inline') throw new InvalidArgumentError(`WorkerPool.create: fallback must be 'throw' or 'inline'`);
    if (!(map instanceof BTreeMap) && !(map instanceof BTreeStore)) {
      throw new InvalidArgumentError(`WorkerPool.create: expects a BTreeMap or a BTreeStore, got ${describe(map)}`);
    }
    if (map.closed) throw new ClosedError('WorkerPool.create: the map is closed');
    if ((map as unknown) instanceof OpfsWorkerStore) {
      // An opfs store opened on a browser's main thread: its pages live in the package's
      // worker, which no other worker can reach. Its async methods serve an inline pool.
      if (fallback === 'inline') return new WorkerPool<K, V>(map, []);
      throw new ThreadsUnsupportedError(
        "WorkerPool.create: this opfs store was opened on the main thread and lives in the package's worker; open it in your own dedicated worker (mt build) and create the pool there, or pass { fallback: 'inline' }",
      );
    }
    if (map.keyEncoding === 'custom' || map.valueEncoding === 'custom') {
      throw new InvalidArgumentError('WorkerPool.create: a map with a custom codec cannot be sent to workers (attach it in your own workers: BTreeMap.attach(handle, { keys, values }))');
    }
    if (treeOfAny(map as BTreeMap<unknown, unknown> | BTreeStore<unknown, unknown>).wasm.build !== 'mt') {
      if (fallback === 'inline') return new WorkerPool(map, []);
      const what = map instanceof BTreeStore ? 'store is open on the single-threaded build; open it' : 'map is on the single-threaded build; create it';
      throw new ThreadsUnsupportedError(
        `WorkerPool.create: the ${what} after \`await init({ threads: true })\` where SharedArrayBuffer works (cross-origin isolated pages, Node, Deno), or pass { fallback: "inline" }`,
      );
    }
    const slots: Slot[] = [];
    const pool = new WorkerPool(map, slots);
    try {
      for (let i = 0; i < n; i++) {
        // share() throws typed for what cannot be shared (THREADS_UNSUPPORTED: a store on
        // IndexedDB, memory, ...).
        const handle = map.share(options.stackSize);
        const slot: Slot = { port: undefined as unknown as Port, handle, pending: new Map(), alive: true, started: false };
        slots.push(slot);
        slot.port = await spawn(options.workerUrl, `adaptree pool ${i}`, (r) => pool.#reply(slot, r), (why) => pool.#gone(slot, why));
      }
      await Promise.all(slots.map((s) => pool.#send(s, { op: 'attach', handle: s.handle })));
    } catch (e) {
      await pool.close().catch(() => {});
      // Stacks of workers that never attached go back (60 failed creates of 4 workers held
      // 226 MiB for good, session 22); an attached one's stack is its instance's.
      const { wasm } = treeOfAny(map as BTreeMap<unknown, unknown>);
      for (const s of slots) wasm.releaseHandle(s.handle.instance);
      throw e;
    }
    return pool;
  }

  /** Number of workers (0 for an inline pool: `fallback: 'inline'` on the st build). */
  get workers(): number {
    return this.#slots.length;
  }

  /** @internal */
  get [POOL_PORTS](): Port[] {
    return this.#slots.map((s) => s.port);
  }

  /** True after close(). */
  get closed(): boolean {
    return this.#closed;
  }

  #reply(slot: Slot, r: Reply): void {
    if (r.seq === 0) {
      slot.started = true;
      return;
    }
    const p = slot.pending.get(r.seq);
    if (p === undefined) return;
    slot.pending.delete(r.seq);
    if (slot.pending.size === 0) slot.port.busy(false);
    if (r.error !== undefined) p.reject(errorFromWire(r.error));
    else p.resolve(r.value);
  }

  /** A worker ended (Node 'exit') or failed (web 'error') without close(). */
  #gone(slot: Slot, why: string): void {
    if (!slot.alive) return;
    slot.alive = false;
    // (close() marks a worker not alive before it ends it: that exit does not get here.)
    if (!slot.started) {
      // Its script never ran (a wrong workerUrl, a blocked or failing module): it touched
      // nothing, and its handle's stack was never used.
      const e = new AdaptreeError(`a pool worker failed to start (${why}); check workerUrl (docs/THREADS.md, "A pool of workers")`, 'INTERNAL');
      for (const p of slot.pending.values()) p.reject(e);
      slot.pending.clear();
    } else if (slot.pending.size > 0) {
      // It ended during a call: it may have held the tree latch, left the tree half-modified
      // or held the allocator's lock. Wake the waiters and make the memory unusable.
      markWorkerLost(this.#map as BTreeMap<unknown, unknown> | BTreeStore<unknown, unknown>);
      this.#broken = new InstanceUnusableError(`a pool worker ended during a call (${why}): the shared map may be half-modified, so its wasm memory is unusable from now on (docs/THREADS.md)`);
      // The other workers can do nothing useful on that memory, and one that waits for the
      // allocator's lock would never answer: end them all, every call rejects.
      for (const s of this.#slots) {
        for (const p of s.pending.values()) p.reject(this.#broken);
        s.pending.clear();
        if (s !== slot && s.alive) {
          s.alive = false;
          void s.port.terminate().catch(() => {});
        }
      }
    }
    // An idle worker that ended holds nothing: the pool goes on without it. (Its instance's
    // stack is not given back: a web worker's 'error' does not always end it.)
    void slot.port.terminate().catch(() => {});
  }

  #send(slot: Slot, m: Record<string, unknown>): Promise<unknown> {
    if (!slot.alive) return Promise.reject(this.#broken ?? new ClosedError('the pool worker ended'));
    return new Promise((resolve, reject) => {
      const seq = this.#seq++;
      slot.pending.set(seq, { resolve, reject });
      if (slot.pending.size === 1) slot.port.busy(true);
      try {
        slot.port.post({ seq, ...m });
      } catch (e) {
        // A key or value that structured clone cannot copy (a function, a symbol, ...).
        slot.pending.delete(seq);
        if (slot.pending.size === 0) slot.port.busy(false);
        reject(uncloneable(m, e));
      }
    });
  }

  #check(): void {
    if (this.#closed) throw new ClosedError('the worker pool is closed');
    if (this.#broken !== undefined) throw this.#broken;
  }

  /** The live workers, starting from a rotating index so that concurrent calls spread. */
  #live(): Slot[] {
    const live = this.#slots.filter((s) => s.alive);
    if (live.length === 0) throw new ClosedError('every worker of the pool ended');
    const start = this.#next++ % live.length;
    return [...live.slice(start), ...live.slice(0, start)];
  }

  /** The values of `keys` (undefined where absent), in the order of `keys`: split over the
   * workers, each runs `map.getMany` on its part. */
  async getMany(keys: Iterable<K>): Promise<(V | undefined)[]> {
    this.#check();
    const list = listOf(keys, 'getMany: keys');
    if (this.#slots.length === 0) return this.#map instanceof BTreeStore ? this.#map.getManyAsync(list) : this.#map.getMany(list);
    if (list.length === 0) return [];
    const live = this.#live();
    const parts = chunks(list.length, live.length);
    const answers = await Promise.all(
      parts.map(([a, b], i) => this.#send(live[i]!, { op: 'getMany', keys: a === 0 && b === list.length ? list : list.slice(a, b) })),
    );
    if (answers.length === 1) return answers[0] as (V | undefined)[];
    return ([] as (V | undefined)[]).concat(...(answers as (V | undefined)[][]));
  }

  /**
   * Sets the entries (later duplicates win within a worker's part; across parts the order of
   * application is not defined: do not pass one key twice). Split over the workers, each runs
   * `map.setMany` on its part in sub-batches. Not atomic: when it rejects (a bad key, out of
   * memory), every part has settled, and the error's `applied` says how many entries, the first
   * ones in input order, are in; entries after them may be in too (other workers' parts, and
   * the failing part's sub-batches of 4096 before the one that failed).
   */
  async setMany(entries: Iterable<readonly [K, V]>): Promise<void> {
    this.#check();
    const list = listOf(entries, 'setMany: entries');
    if (this.#slots.length === 0) {
      await this.#setInline(list);
      return;
    }
    if (list.length === 0) return;
    const live = this.#live();
    const parts = chunks(list.length, live.length);
    // Every part settles before the call does: it rejected at the first failing part while the
    // other workers went on writing, so a commit() in the caller's catch missed their writes
    // (a probe, session 29: size 0 at the rejection, 100,000 two seconds later).
    const results = await Promise.allSettled(parts.map(([a, b], i) => this.#send(live[i]!, { op: 'setMany', entries: list.slice(a, b) })));
    const k = results.findIndex((r) => r.status === 'rejected');
    if (k < 0) return;
    // The first entries in input order that are in: the parts before the first failing one
    // and what that one applied (other parts after it may be in too).
    throw partFailed((results[k] as PromiseRejectedResult).reason, parts[k]!, list.length);
  }

  /**
   * Fills an empty map: like setMany, but the parts are applied in input order, one after the
   * other (the workers receive and decode theirs at the same time). Sorted entries are the
   * fast case: the first part is bulk loaded into the empty map and the others append.
   * Rejects with InvalidArgumentError if the map is not empty.
   */
  async load(entries: Iterable<readonly [K, V]>): Promise<void> {
    this.#check();
    if (this.#map.size !== 0) throw new InvalidArgumentError('load(): the map is not empty (use setMany)');
    const list = listOf(entries, 'load: entries');
    if (this.#slots.length === 0) {
      await this.#setInline(list);
      return;
    }
    if (list.length === 0) return;
    const live = this.#live();
    const parts = chunks(list.length, live.length);
    const turn = new Int32Array(new SharedArrayBuffer(4));
    // The failure that cancelled the load: the parts that were waiting for their turn then
    // fail too, with a "cancelled" error that is not the cause (a probe got that, untyped).
    let cause: { error: unknown; index: number } | undefined;
    const sent = parts.map(([a, b], i) =>
      this.#send(live[i]!, { op: 'load', entries: list.slice(a, b), turn, index: i }).catch((e: unknown) => {
        // Parts waiting for this one's turn must not wait for ever.
        if (Atomics.load(turn, 0) <= i) {
          cause ??= { error: e, index: i };
          Atomics.store(turn, 0, -1);
          Atomics.notify(turn, 0);
        }
        throw e;
      }),
    );
    const results = await Promise.allSettled(sent);
    const k = results.findIndex((r) => r.status === 'rejected');
    if (k < 0) return;
    // (the parts after a failed one are cancelled: the first failure in input order is the cause)
    const c = (cause as { error: unknown; index: number } | undefined) ?? { error: (results[k] as PromiseRejectedResult).reason, index: k };
    // The parts go in in input order: those before the failing one are in, and what it applied
    // (its error counted its own part only: "200 of 201 entries were applied" with 400 in the
    // map; a probe, session 33).
    throw partFailed(c.error, parts[c.index]!, list.length);
  }

  /**
   * Waits for the calls in flight, frees every worker's attached map (its stack goes back to
   * the shared memory), then ends the workers. Later calls throw ClosedError. Idempotent. The
   * map itself stays open.
   */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closed = true;
    this.#closing = (async () => {
      const inFlight = this.#slots.flatMap((s) => [...s.pending.values()].map((p) => new Promise<void>((res) => {
        const { resolve, reject } = p;
        p.resolve = (v) => { res(); resolve(v); };
        p.reject = (e) => { res(); reject(e); };
      })));
      await Promise.all(inFlight);
      await Promise.all(
        this.#slots.map(async (s) => {
          if (s.alive && this.#broken === undefined) await this.#send(s, { op: 'close' }).catch(() => {});
          s.alive = false;
          await s.port.terminate().catch(() => {});
        }),
      );
    })();
    return this.#closing;
  }

  /** The calling thread's own setMany (an inline pool): a store's may wait for pages. */
  async #setInline(list: (readonly [K, V])[]): Promise<void> {
    const m = this.#map;
    if (m instanceof BTreeStore) await m.setManyAsync(list);
    else m.setMany(list);
  }

  /** Same as close(): `await using pool = await WorkerPool.create(map)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

if (typeof Symbol.asyncDispose !== 'symbol') {
  delete (WorkerPool.prototype as unknown as Record<string, unknown>)['undefined'];
}
