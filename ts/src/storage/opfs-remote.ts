/**
 * An 'opfs' store opened on a browser's main thread. OPFS sync access handles exist only in
 * dedicated workers, so the store lives in a worker the package ships (opfs-worker.ts, one
 * per store) and this object forwards calls to it. It is a BTreeStore (store.ts links the
 * prototypes) with `isAsync: true`: the async twins (`getAsync`, `setAsync`, ...,
 * `entriesAsync`), `commit`, `close`, `statsAsync`, `treeStatsAsync` work, and so do `size`
 * (the worker sends it with every reply), `path`, `storage` and `closed`. The sync methods
 * throw PageFaultError (NEED_PAGE, pageId -1): no page is ever on this thread.
 *
 * Keys and values cross the thread boundary by structured clone, so only named encodings
 * (`keys: 'utf8'`, `values: 'json'`, ...) can be used, not codec objects, and `wasm` is
 * ignored (the worker loads its own module).
 *
 * Calls go in batches: the calls made in one turn of the event loop (say the getAsync of a
 * `Promise.all`, or setAsync calls not awaited one by one) are sent as one message at the end
 * of the turn (a microtask), up to BATCH_MAX calls a message, and the worker answers all the
 * synchronous ones of a batch in one message. The order of the calls is kept. An awaited
 * call alone still costs a round trip to the worker.
 */
import {
  ClosedError,
  errorFromWire,
  InvalidArgumentError,
  InvalidValueError,
  IoError,
  listOf,
  PageFaultError,
  ThreadsUnsupportedError,
  type WireError,
} from '../errors.js';

interface WorkerLike {
  postMessage(m: unknown): void;
  terminate(): void;
  onmessage: ((e: { data: Reply }) => void) | null;
  onerror: ((e: { message?: string; preventDefault?(): void }) => void) | null;
}
/** A call as sent to the worker (opfs-worker.ts); a message is an array of them. */
interface Call {
  seq: number;
  op: string;
  args: unknown[];
}
/** The worker's answer to some calls; `size` is the store's size when it was sent. */
interface Reply {
  results: { seq: number; value?: unknown; error?: WireError }[];
  size: number;
}

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

export class OpfsWorkerStore {
  readonly #worker: WorkerLike;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  readonly #path: string;
  readonly #keyEncoding: string;
  #readOnly: boolean;
  readonly #valueEncoding: string;
  #seq = 1;
  /** Writes sent so far: an iterator whose buffered batch is older drops it and reads on after
   * the last key it returned (as a BTreeMap iterator re-seeks after a change). */
  #mod = 0;
  /** Calls made this turn, not sent yet (#flush sends them). */
  #queue: Call[] = [];
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

  private constructor(worker: WorkerLike, url: string | undefined, path: string, keys: string, values: string) {
    this.#worker = worker;
    this.#path = path;
    this.#keyEncoding = keys;
    this.#readOnly = false;
    this.#valueEncoding = values;
    worker.onmessage = (e) => {
      this.#heard = true;
      const { results, size } = e.data;
      this.#size = size;
      for (const r of results) {
        const p = this.#pending.get(r.seq);
        if (p === undefined) continue;
        this.#pending.delete(r.seq);
        if (r.error !== undefined) p.reject(errorFromWire(r.error));
        else p.resolve(r.value);
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
  static async open(options: Record<string, unknown> & { path: string }): Promise<OpfsWorkerStore> {
    for (const k of ['keys', 'values'] as const) {
      if (options[k] !== undefined && typeof options[k] !== 'string') {
        throw new InvalidArgumentError(`an opfs store opened on the main thread runs in a worker: '${k}' must be an encoding name, not a codec object (or open the store in your own worker)`);
      }
    }
    const forwarded: Record<string, unknown> = {};
    for (const k of ['path', 'layout', 'keys', 'values', 'poolSize', 'checkpointBytes', 'logDeltas', 'fill', 'autoCommit', 'create', 'wait', 'readOnly']) {
      if (options[k] !== undefined) forwarded[k] = options[k];
    }
    // Written as bundlers recognise it (vite, webpack 5, ...): they bundle the worker with it.
    const { worker, url } = recordingWorkerUrl(
      () => new Worker(new URL('./opfs-worker.js', import.meta.url), { type: 'module', name: `adaptree opfs ${options.path}` }) as unknown as WorkerLike,
    );
    const s = new OpfsWorkerStore(worker, url, options.path, (options.keys as string) ?? 'utf8', (options.values as string) ?? 'json');
    s.#readOnly = options.readOnly === true;
    try {
      await s.#send('open', [forwarded]);
    } catch (e) {
      worker.terminate();
      throw e;
    }
    return s;
  }

  #send(op: string, args: unknown[]): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(this.#dead);
    return new Promise((resolve, reject) => {
      const seq = this.#seq++;
      this.#pending.set(seq, { resolve, reject });
      const n = this.#queue.push({ seq, op, args });
      if (n === 1) queueMicrotask(() => this.#flush());
      else if (n >= BATCH_MAX) this.#flush();
    });
  }

  /** Sends the calls queued this turn as one message. */
  #flush(): void {
    const calls = this.#queue;
    if (calls.length === 0) return;
    this.#queue = [];
    if (this.#dead !== undefined) {
      for (const c of calls) this.#settle(c.seq, this.#dead);
      return;
    }
    this.#post(calls);
  }

  /** Posts calls as one message. Where structured clone cannot copy a key or value of them (a
   * function, a symbol, ...), the two halves in turn, down to the calls that cannot be sent:
   * those fail, as if sent alone, and the others go in order. */
  #post(calls: Call[]): void {
    try {
      this.#worker.postMessage(calls);
    } catch (e) {
      if (calls.length === 1) {
        this.#settle(calls[0]!.seq, new InvalidValueError(`cannot send to the store's worker: ${(e as Error).message}`, { cause: e }));
        return;
      }
      const half = calls.length >> 1;
      this.#post(calls.slice(0, half));
      this.#post(calls.slice(half));
    }
  }

  /** Rejects call `seq` without an answer from the worker. */
  #settle(seq: number, error: Error): void {
    const p = this.#pending.get(seq);
    this.#pending.delete(seq);
    p?.reject(error);
  }

  #call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.#closed) return Promise.reject(new ClosedError('the store is closed'));
    return this.#send('call', [method, ...args]) as Promise<T>;
  }

  /** A call that changes the store (iterators then read on afresh, see #mod). */
  #write<T>(method: string, ...args: unknown[]): Promise<T> {
    this.#mod++;
    return this.#call<T>(method, ...args);
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
    return this.#keyEncoding;
  }
  get valueEncoding(): string {
    return this.#valueEncoding;
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
    if (this.#closing !== undefined) return this.#closing;
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
    return this.#call('get', key);
  }
  hasAsync(key: unknown): Promise<boolean> {
    return this.#call('has', key);
  }
  async setAsync(key: unknown, value: unknown): Promise<this> {
    await this.#write('set', key, value);
    return this;
  }
  deleteAsync(key: unknown): Promise<boolean> {
    return this.#write('delete', key);
  }
  clearAsync(): Promise<void> {
    return this.#write('clear');
  }
  firstAsync(): Promise<unknown> {
    return this.#call('first');
  }
  lastAsync(): Promise<unknown> {
    return this.#call('last');
  }
  nextHigherAsync(key: unknown): Promise<unknown> {
    return this.#call('nextHigher', key);
  }
  nextLowerAsync(key: unknown): Promise<unknown> {
    return this.#call('nextLower', key);
  }
  // (Checked here, as BTreeStore checks them: Array.from(5) was [], and of null a TypeError
  // thrown, not a rejection.)
  async getManyAsync(keys: Iterable<unknown>): Promise<unknown[]> {
    return this.#call('getMany', listOf(keys, 'getManyAsync: keys'));
  }
  async setManyAsync(entries: Iterable<readonly [unknown, unknown]>): Promise<this> {
    await this.#write('setMany', listOf(entries, 'setManyAsync: entries'));
    return this;
  }
  deleteRangeAsync(range: object): Promise<number> {
    return this.#write('deleteRange', range);
  }
  checkInvariantsAsync(): Promise<void> {
    return this.#call('checkInvariants');
  }
  treeStatsAsync(): Promise<unknown> {
    return this.#call('treeStats');
  }
  statsAsync(): Promise<unknown> {
    return this.#call('stats');
  }
  /** BTreeStore.compact, in the worker: the pages freed. */
  compactAsync(): Promise<number> {
    return this.#write('compact');
  }

  entriesAsync(range?: object): AsyncIterableIterator<unknown> {
    return this.#iter('entries', range);
  }
  keysAsync(range?: object): AsyncIterableIterator<unknown> {
    return this.#iter('keys', range);
  }
  valuesAsync(range?: object): AsyncIterableIterator<unknown> {
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
   * re-seeks (it handed out a batch read before a delete, deleted entries included). The
   * worker sends each key a second time, as an object of its own (`keys`): the one handed out
   * is the caller's to change.
   */
  #iter(kind: 'entries' | 'keys' | 'values', range: object | undefined): AsyncIterableIterator<unknown> {
    const limit = (range as { limit?: unknown } | undefined)?.limit;
    let left = typeof limit === 'number' ? limit : Infinity;
    let items: unknown[] = [];
    let keys: unknown[] = [];
    let at = 0;
    let after: { key: unknown } | undefined; // the last key returned
    let mod = -1;
    let ended = false; // the worker's last batch held the rest (as of `mod`)
    let finished = false;
    const done = { done: true, value: undefined } as IteratorReturnResult<undefined>;
    const ai: AsyncIterableIterator<unknown> = {
      next: async () => {
        if (finished) return done;
        if (this.#closed) throw new ClosedError('the store is closed');
        if (mod !== this.#mod) {
          items = keys = [];
          at = 0;
          ended = false;
        }
        if (at === items.length) {
          if (ended || left === 0) {
            finished = true;
            items = keys = [];
            return done;
          }
          mod = this.#mod;
          const r = (await this.#send('scan', [kind, range, after, Math.min(ITER_BATCH, left)])) as { items: unknown[]; keys: unknown[]; done: boolean };
          items = r.items;
          keys = r.keys;
          at = 0;
          ended = r.done;
          if (items.length === 0) {
            finished = true;
            return done;
          }
        }
        after = { key: keys[at] };
        left--;
        return { done: false, value: items[at++] };
      },
      return: async () => {
        finished = true;
        items = keys = [];
        return done;
      },
      [Symbol.asyncIterator]() {
        return ai;
      },
    };
    return ai;
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
