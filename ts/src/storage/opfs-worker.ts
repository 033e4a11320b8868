/**
 * The dedicated worker behind an 'opfs' store opened on a browser's main thread (where OPFS
 * sync access handles do not exist; opfs-remote.ts is the main-thread side). One worker per
 * store: it opens the store on the `opfs` backend and runs each message's method on it, in
 * message order; closing the store ends the worker.
 *
 * The main thread encodes keys, values and range bounds with the store's codecs and decodes
 * what comes back, as a BTreeMap would on its own thread: this worker sees bytes only. Its
 * store is opened with ENCODED_ELSEWHERE (bytes keys and values, the encodings the main thread
 * uses recorded), so the files are those of any opfs store with those encodings.
 *
 * Protocol: a message is `{ calls: [{ seq, op, args }, ...], packed }`, the calls run in
 * order, their keys and values Refs to the message's packed bytes (opfs-wire.ts). The answer
 * is `{ results: [{ seq, value } or { seq, error }, ...], size, packed }`, the keys and values
 * of the values Refs to its own packed bytes; `error` carries the name, code, message, pageId
 * and cause of the error the store threw (WireError) and `size` is the store's size when the
 * answer was sent. The synchronous calls of a message ('call', 'scan') are answered together
 * once it has run; 'open', 'commit' and 'close' each on their own when they settle. Ops:
 * 'open' (args: [options], `keys` and `values` the encodings' names), 'call' ([method,
 * ...args]: a sync method of the store; see `call` for the args and answers), 'commit',
 * 'close' ([options]), 'scan' ([kind, range, after, count] → { refs, done }: the keys (kind
 * 'keys') or the keys and values, in turn, of up to `count` entries of the range after the
 * key `after` (from its start without it); the worker keeps no iterator between scans).
 */
import { errorToWire, IoError } from '../errors.js';
import { BTreeStore, ENCODED_ELSEWHERE, type StoreOptions } from '../store.js';
import { opfsLocksReleased } from './opfs.js';
import { loadWasm } from '../wasm.js';
import { PackReader, PackWriter, type Packed, type Ref } from './opfs-wire.js';

interface Call {
  seq: number;
  op: string;
  args: unknown[];
}
interface Result {
  seq: number;
  value?: unknown;
  error?: ReturnType<typeof errorToWire>;
}
interface Scope {
  onmessage: ((e: { data: { calls: Call[]; packed?: Packed } }) => void) | null;
  postMessage(m: unknown, transfer?: Transferable[]): void;
  close(): void;
}
const scope = globalThis as unknown as Scope;

type Bytes = Uint8Array;
let store: BTreeStore<Bytes, Bytes> | undefined;
/** The keys and values of the answer being made (taken, and so emptied, by each answer). */
const out = new PackWriter();

function opened(): BTreeStore<Bytes, Bytes> {
  if (store === undefined) throw new Error('opfs worker: no store open');
  return store;
}

/** A range with Ref bounds as the store takes it (bytes bounds). */
function rangeOf(r: Record<string, unknown> | undefined, msg: PackReader): Record<string, unknown> {
  const b: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r ?? {})) b[k] = k === 'reverse' || k === 'limit' ? v : msg.view(v as Ref);
  return b;
}

/**
 * Runs `method` of the store with its args (Refs to the message's bytes) and puts the keys
 * and values of its answer in `out`: get → Ref or undefined; first, last, nextHigher,
 * nextLower → [Ref, Ref] or undefined; getMany ([Ref[]]) → (Ref or undefined)[]; setMany takes
 * [[k0, v0, k1, v1, ...]], deleteRange a range of Refs; the rest answer what the store does.
 */
function call(method: string, args: unknown[], msg: PackReader, out: PackWriter): unknown {
  const s = opened();
  const at = (r: unknown): Bytes => msg.view(r as Ref);
  const entry = (e: [Bytes, Bytes] | undefined) => (e === undefined ? undefined : [out.add(e[0]), out.add(e[1])]);
  switch (method) {
    case 'get': {
      const v = s.get(at(args[0]));
      return v === undefined ? undefined : out.add(v);
    }
    case 'has':
      return s.has(at(args[0]));
    case 'set':
      s.set(at(args[0]), at(args[1]));
      return undefined;
    case 'delete':
      return s.delete(at(args[0]));
    case 'clear':
      return s.clear();
    case 'first':
      return entry(s.first());
    case 'last':
      return entry(s.last());
    case 'nextHigher':
      return entry(s.nextHigher(at(args[0])));
    case 'nextLower':
      return entry(s.nextLower(at(args[0])));
    case 'getMany':
      return s.getMany((args[0] as Ref[]).map(at)).map((v) => (v === undefined ? undefined : out.add(v)));
    case 'setMany': {
      const flat = args[0] as Ref[];
      const entries: [Bytes, Bytes][] = [];
      for (let i = 0; i < flat.length; i += 2) entries.push([at(flat[i]), at(flat[i + 1])]);
      s.setMany(entries);
      return undefined;
    }
    case 'deleteRange':
      return s.deleteRange(rangeOf(args[0] as Record<string, unknown>, msg) as never);
    case 'checkInvariants':
      return s.checkInvariants();
    case 'treeStats':
      return s.treeStats();
    case 'stats':
      return s.stats();
    case 'compact':
      return s.compact();
    default:
      throw new Error(`opfs worker: no method ${method}`);
  }
}

/** The synchronous ops. */
function run(op: string, args: unknown[], msg: PackReader, out: PackWriter): unknown {
  switch (op) {
    case 'call': {
      const [method, ...rest] = args as [string, ...unknown[]];
      return call(method, rest, msg, out);
    }
    case 'scan': {
      const [kind, range, after, count] = args as ['entries' | 'keys' | 'values', Record<string, unknown>, Ref | undefined, number];
      // The range comes checked and normalised (bounds, reverse a boolean; the main thread counts the limit).
      let r = rangeOf(range, msg);
      r.limit = count;
      if (after !== undefined) {
        // On after the last key returned, in the range's direction; its other bound stays.
        const reverse = r.reverse === true;
        r = reverse ? { ...r, lt: msg.view(after) } : { ...r, gt: msg.view(after) };
        delete r[reverse ? 'lte' : 'gte'];
      }
      const refs: Ref[] = [];
      let n = 0;
      if (kind === 'keys') {
        for (const k of opened().keys(r as never)) {
          refs.push(out.add(k));
          n++;
        }
      } else {
        for (const [k, v] of opened().entries(r as never)) {
          refs.push(out.add(k), out.add(v));
          n++;
        }
      }
      return { refs, done: n < count };
    }
    default:
      throw new Error(`opfs worker: unknown op ${op}`);
  }
}

/** The asynchronous ops: open, commit, close. */
async function runAsync(op: string, args: unknown[]): Promise<unknown> {
  switch (op) {
    case 'open': {
      const { wasmModule, ...given } = args[0] as StoreOptions<unknown, unknown> & { wasmModule?: { module: WebAssembly.Module; threads: boolean } };
      const options: StoreOptions<unknown, unknown> & { [ENCODED_ELSEWHERE]: true } = { ...given, storage: 'opfs' as const, [ENCODED_ELSEWHERE]: true };
      // The module of the thread that opened the store (its init({ wasm }) may name a URL this
      // worker's own search beside its script would not find), in an instance of our own.
      if (wasmModule !== undefined) options.wasm = await loadWasm({ wasm: wasmModule.module, threads: wasmModule.threads });
      store = (await BTreeStore.open(options as StoreOptions<unknown, unknown>)) as unknown as BTreeStore<Bytes, Bytes>;
      return undefined;
    }
    case 'commit':
      return opened().commit();
    case 'close': {
      const s = opened();
      try {
        await s.close(args[0] as { commit?: boolean } | undefined);
      } finally {
        store = undefined;
        await opfsLocksReleased();
      }
      return undefined;
    }
    default:
      throw new Error(`opfs worker: unknown op ${op}`);
  }
}

const ASYNC_OPS = new Set(['open', 'commit', 'close']);
const size = (): number => (store !== undefined && !store.closed ? store.size : 0);

scope.onmessage = (e) => {
  const { calls, packed } = e.data;
  const msg = new PackReader(packed);
  const results: Result[] = [];
  for (const { seq, op, args } of calls) {
    if (!ASYNC_OPS.has(op)) {
      try {
        results.push({ seq, value: run(op, args, msg, out) });
      } catch (err) {
        results.push({ seq, error: errorToWire(err) });
      }
      continue;
    }
    const end = op === 'close' || op === 'open';
    void runAsync(op, args).then(
      (value) => {
        reply([{ seq, value }]);
        if (end && store === undefined) scope.close();
      },
      (err: unknown) => {
        reply([{ seq, error: errorToWire(err) }]);
        if (end && store === undefined) scope.close();
      },
    );
  }
  if (results.length > 0) reply(results, out);
};

/** Posts the answers (with their keys and values, in `out`); one that structured clone cannot
 * copy becomes its call's error. */
function reply(results: Result[], out?: PackWriter): void {
  const { packed, transfer } = out?.take() ?? { packed: undefined, transfer: [] };
  try {
    scope.postMessage({ results, size: size(), packed }, transfer);
  } catch {
    // (A clone that fails transfers nothing: `packed` is intact for the answers one by one.)
    for (const r of results) {
      try {
        scope.postMessage({ results: [r], size: size(), packed });
      } catch (err) {
        scope.postMessage({ results: [{ seq: r.seq, error: errorToWire(new IoError(`opfs worker: cannot send the answer: ${(err as Error).message}`)) }], size: size() });
      }
    }
  }
}
