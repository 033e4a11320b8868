// Loads one of the two adaptree wasm builds without any emscripten glue.
//
//   st: single-threaded, the module owns its memory, so it runs anywhere,
//       including Cloudflare Workers and pages that are not cross-origin isolated.
//   mt: imports a shared WebAssembly.Memory; any number of instances (one per
//       worker) can run on the same memory, each on its own stack region
//       (docs/ARCHITECTURE.md, decision 8: workers attach, they do not proxy).
// Both import the host file I/O of persistent stores (at_host_read/write/sync/size/
// truncate from "env", storage/host.ts); they are supplied on every instantiation,
// also where no store is ever opened (a module that lacks them ignores them).
//
// The source may be a precompiled WebAssembly.Module (required by Cloudflare
// Workers, which forbid compiling wasm from bytes), bytes, a URL, a path or a
// Response. Without one, the module next to this file in the package is used.
import { ABI_FUNCTIONS, ABI_VERSION, Result, type AbiExports } from './abi.js';
import { hostImports } from './storage/host.js';
import { InstanceUnusableError, InvalidArgumentError, IoError, OutOfMemoryError, ThreadsUnsupportedError, isAdaptreeError } from './errors.js';

// The public types name WebAssembly and fetch types through the aliases below, never the
// global `WebAssembly` namespace directly: a Node-only project (lib es20xx + @types/node)
// declares no WebAssembly types, and the shipped .d.ts files must compile there as well as
// with DOM, Deno and @cloudflare/workers-types (tests/types/ checks all four). Where the
// project's libs declare the real type, an alias is exactly that type; elsewhere it is the
// part of it that adaptree uses.
type Globals = typeof globalThis;

/** `WebAssembly.Module` where the project's libs declare it, else any object. */
export type WasmModule = Globals extends { WebAssembly: { Module: { prototype: infer M } } } ? M : object;

/** `WebAssembly.Memory` where the project's libs declare it, else its buffer and grow(). */
export type WasmMemory = Globals extends { WebAssembly: { Memory: { prototype: infer M } } }
  ? M
  : { readonly buffer: ArrayBuffer | SharedArrayBuffer; grow(delta: number): number };

/** The fetch API's `Response` where declared (DOM, @types/node, Deno, Workers), else what adaptree reads of one. */
export type WasmResponse = Globals extends { Response: { prototype: infer R } }
  ? R
  : {
      readonly ok: boolean;
      readonly status: number;
      readonly url: string;
      readonly headers: { get(name: string): string | null };
      arrayBuffer(): Promise<ArrayBuffer>;
    };

/** `URL` where declared, else what adaptree reads of one. */
export type WasmUrl = Globals extends { URL: { prototype: infer U } } ? U : { readonly href: string; readonly protocol: string };

export type WasmBuild = 'st' | 'mt';
export type WasmSource =
  | WasmModule
  | ArrayBuffer
  | ArrayBufferView
  | WasmUrl
  | string
  | WasmResponse
  | PromiseLike<WasmResponse>;

/** What a worker needs to attach to an mt instance created elsewhere; structured-cloneable. */
export interface AttachHandle {
  readonly module: WasmModule;
  readonly memory: WasmMemory;
  /** A stack region reserved for the attaching instance: [stackBase, stackBase + stackSize). */
  readonly stackBase: number;
  readonly stackSize: number;
  /** The token share() wrote at stackBase: the one attach that swaps it out owns the stack
   * (a second attach of the same handle would run a second instance on the same stack). */
  readonly claim: number;
}

export interface LoadOptions {
  /** The wasm to load; defaults to the module shipped in the package. It must be the build
   * loaded: adaptree-mt.wasm with `threads` where they are available, else adaptree-st.wasm
   * (another module, or the other build, is InvalidArgumentError). */
  wasm?: WasmSource;
  /** Ask for the multi-threaded build. Granted only where SharedArrayBuffer works. */
  threads?: boolean;
  /** Attach to an existing mt instance (in a worker): see AdaptreeWasm.attachHandle(). */
  attach?: AttachHandle;
  /**
   * Memory budget in bytes: wasm memory grows no further than this (below the modules'
   * 2 GiB ceiling), so adaptree stays inside a Cloudflare Worker's 128 MB or a page's
   * budget. Past it, calls throw OutOfMemoryError and leave maps as they were. Every map,
   * value, store pool and the scratch areas count against it (README, "Memory"). The
   * instance starts with 16 MiB; a budget below what is already in use stops all growth.
   * Change it later with `setMaxMemory()`. Default: the ceiling. With `attach`, the budget
   * is the one set on the memory (mt instances on one memory share it).
   */
  maxMemory?: number;
}

/** Wasm pages (64 KiB) of the mt module's imported memory: 16 MiB initial, 2 GiB maximum. */
const MT_INITIAL_PAGES = 256;
const MT_MAXIMUM_PAGES = 32768;
const DEFAULT_STACK_SIZE = 1 << 20;
/** A worker's stack: at least 64 KiB (the core's deepest calls), at most 64 MiB. */
const MIN_STACK_SIZE = 64 << 10;
const MAX_STACK_SIZE = 64 << 20;
const SCRATCH_MIN = 64 * 1024;

export interface AdaptreeWasm {
  readonly build: WasmBuild;
  readonly module: WasmModule;
  readonly exports: AbiExports;
  readonly memory: WasmMemory;
  /** This instance's context (result block and output buffer). */
  readonly ctx: number;
  /** Address of this context's result block (five u32, see abi.ts Result). */
  readonly result: number;
  /** Byte view of the whole memory; re-fetch after any call that may allocate. */
  u8(): Uint8Array;
  /** DataView of the whole memory; re-fetch after any call that may allocate. */
  dv(): DataView;
  /** Address of this instance's scratch buffer, at least `size` bytes (grown as needed). */
  scratch(size: number): number;
  /** mt only: reserves a stack for a worker and returns what it needs to attach. */
  attachHandle(stackSize?: number): AttachHandle;
  /** The memory budget in bytes (the 2 GiB ceiling when none was set). */
  readonly maxMemory: number;
  /** Sets the memory budget (LoadOptions.maxMemory); raising it lets failed operations succeed. */
  setMaxMemory(bytes: number): void;
  /** True once a call into this instance trapped: every call now throws InstanceUnusableError. */
  readonly poisoned: boolean;
  /**
   * @internal mt: a worker ended during a call on `tree` (threads.ts, pool.ts): marks the tree's
   * latch abandoned (its waiters wake) and the memory unusable for every instance on it.
   */
  markLost(tree: number): void;
  /**
   * @internal mt: gives back the stack of a handle from attachHandle() that no instance
   * attached (a pool worker that never started); false, touching nothing, if one did.
   */
  releaseHandle(handle: AttachHandle): boolean;
  /**
   * @internal mt, an attached instance (loadWasm({ attach })): gives back its context, scratch
   * and the stack share() reserved for it. The instance must not be called again.
   */
  release(): void;
  /** @internal True after release(). */
  readonly released: boolean;
}

// ----------------------------------------------------------------------------- traps
//
// A trap (WebAssembly.RuntimeError: `unreachable`, an out-of-bounds access) means a bug in
// adaptree and leaves the memory in whatever state the call had reached. Every call into
// wasm goes through the exports object below, whose functions catch what escapes the call,
// mark the instance (in the mt build: the memory, which all its instances share in this
// thread) unusable, and throw InstanceUnusableError; from then on they throw it at once. The
// freeing functions become no-ops instead, so that free() and a store's close() still
// release what lives outside wasm (a store's files and lock). The wrappers have the arity of
// the function they wrap and a try/catch, which V8 optimises and inlines: the hot path pays
// one flag test (bench: map get/set within noise).

interface Poison {
  dead: boolean;
  cause: unknown;
  /** mt: the poison word in the shared memory (at_poison_word), which instances of other
   * workers set and read; null for st (one instance per memory: `dead` says it all). */
  word: Int32Array | null;
}

const poisons = new WeakMap<object, Poison>();

/** Calls that release memory: on a poisoned instance they do nothing rather than throw. */
const RELEASES: ReadonlySet<string> = new Set(['at_free', 'at_tree_free', 'at_cursor_free', 'at_ctx_free']);

/** Poison word values (mt): a call trapped, or a worker ended during a call (markLost). */
const POISON_TRAP = 1;
const POISON_LOST = 2;

function unusable(p: Poison): InstanceUnusableError {
  const c = p.cause as { message?: unknown } | undefined;
  const why = c !== null && typeof c === 'object' && typeof c.message === 'string' ? `: ${c.message}` : '';
  if (p.word !== null && Atomics.load(p.word, 0) === POISON_LOST && !p.dead) {
    return new InstanceUnusableError(
      'a worker ended during a call on this shared wasm memory (docs/THREADS.md): a tree may be half-modified and the allocator locked, so every map on it refuses calls; load a new instance (loadWasm)',
    );
  }
  return new InstanceUnusableError(`the wasm instance trapped earlier${why}; load a new one (loadWasm) and reopen stores`, { cause: p.cause });
}

function trapped(p: Poison, e: unknown): InstanceUnusableError {
  if (!p.dead) {
    p.dead = true;
    p.cause = e;
  }
  if (p.word !== null) Atomics.compareExchange(p.word, 0, 0, POISON_TRAP);
  const m = e !== null && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string' ? (e as Error).message : String(e);
  return new InstanceUnusableError(`the wasm instance trapped (${m}) and is unusable from now on; load a new one (loadWasm) and reopen stores`, { cause: e });
}

type Fn = (...args: number[]) => unknown;

function wrap(f: Fn, p: Poison, release: boolean): Fn {
  const dead = (): undefined => {
    if (release) return undefined;
    throw unusable(p);
  };
  if (p.word !== null) return wrapShared(f, p, p.word, dead);
  switch (f.length) {
    case 0: return function () { if (p.dead) return dead(); try { return f(); } catch (e) { throw trapped(p, e); } };
    case 1: return function (a: number) { if (p.dead) return dead(); try { return f(a); } catch (e) { throw trapped(p, e); } };
    case 2: return function (a: number, b: number) { if (p.dead) return dead(); try { return f(a, b); } catch (e) { throw trapped(p, e); } };
    case 3: return function (a: number, b: number, c: number) { if (p.dead) return dead(); try { return f(a, b, c); } catch (e) { throw trapped(p, e); } };
    case 4: return function (a: number, b: number, c: number, d: number) { if (p.dead) return dead(); try { return f(a, b, c, d); } catch (e) { throw trapped(p, e); } };
    case 5: return function (a: number, b: number, c: number, d: number, g: number) { if (p.dead) return dead(); try { return f(a, b, c, d, g); } catch (e) { throw trapped(p, e); } };
    case 6: return function (a: number, b: number, c: number, d: number, g: number, h: number) { if (p.dead) return dead(); try { return f(a, b, c, d, g, h); } catch (e) { throw trapped(p, e); } };
    default: return function (...args: number[]) { if (p.dead) return dead(); try { return f(...args); } catch (e) { throw trapped(p, e); } };
  }
}

/** mt: the same, testing the shared poison word (set by a trap in any worker, or when a worker
 * ended mid-call) before each call and after it: a call that waited for a tree latch wakes with
 * CLOSED when the latch was abandoned (at_tree_abandon), and must throw what the memory is. */
function wrapShared(f: Fn, p: Poison, w: Int32Array, dead: () => undefined): Fn {
  switch (f.length) {
    case 0: return function () { if (w[0] !== 0) return dead(); let r; try { r = f(); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 1: return function (a: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 2: return function (a: number, b: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a, b); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 3: return function (a: number, b: number, c: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a, b, c); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 4: return function (a: number, b: number, c: number, d: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a, b, c, d); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 5: return function (a: number, b: number, c: number, d: number, g: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a, b, c, d, g); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    case 6: return function (a: number, b: number, c: number, d: number, g: number, h: number) { if (w[0] !== 0) return dead(); let r; try { r = f(a, b, c, d, g, h); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
    default: return function (...args: number[]) { if (w[0] !== 0) return dead(); let r; try { r = f(...args); } catch (e) { throw trapped(p, e); } return w[0] !== 0 ? dead() : r; };
  }
}

/** The exports with every function guarded (see above). */
function guard(raw: AbiExports, p: Poison): AbiExports {
  const out: Record<string, unknown> = {};
  for (const [name, v] of Object.entries(raw as unknown as Record<string, unknown>)) {
    out[name] = typeof v === 'function' ? wrap(v as Fn, p, RELEASES.has(name)) : v;
  }
  return out as unknown as AbiExports;
}

function poisonOf(memory: WebAssembly.Memory, raw: AbiExports, shared: boolean): Poison {
  let p = poisons.get(memory);
  if (p === undefined) {
    // A shared memory's buffer never detaches, and the word lies in the data segment: this
    // view stays valid as the memory grows.
    const word = shared ? new Int32Array(memory.buffer, raw.at_poison_word(), 1) : null;
    p = { dead: false, cause: undefined, word };
    poisons.set(memory, p);
  }
  return p;
}

function checkBudget(bytes: unknown): number {
  if (typeof bytes !== 'number' || !(bytes > 0) || Number.isNaN(bytes)) {
    throw new InvalidArgumentError('maxMemory must be a positive number of bytes (Infinity: the 2 GiB ceiling)');
  }
  return bytes === Infinity ? 0 : bytes;
}

/** True where this thread may block in Atomics.wait (workers, Node's main thread); the
 * browser's main thread throws. */
export function mayBlock(): boolean {
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

/** True where shared wasm memory can be created and posted (mt possible). */
export function threadsAvailable(): boolean {
  if (typeof SharedArrayBuffer === 'undefined') return false;
  // Browsers expose SharedArrayBuffer only when cross-origin isolated.
  const g = globalThis as { crossOriginIsolated?: boolean };
  if (g.crossOriginIsolated === false) return false;
  try {
    new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true } as WebAssembly.MemoryDescriptor);
    return true;
  } catch {
    return false;
  }
}

function defaultUrl(build: WasmBuild): URL {
  // `new URL(literal, import.meta.url)` is the pattern bundlers (vite, webpack,
  // esbuild with plugins) recognise and emit as an asset.
  return build === 'mt'
    ? new URL('./wasm/adaptree-mt.wasm', import.meta.url)
    : new URL('./wasm/adaptree-st.wasm', import.meta.url);
}

async function readFileUrl(url: URL): Promise<Uint8Array> {
  // Node's fetch has no file: support. The specifier is hidden from bundlers.
  const fsName = 'node:fs/promises';
  const fs = (await import(/* @vite-ignore */ /* webpackIgnore: true */ fsName)) as {
    readFile(p: URL): Promise<Uint8Array>;
  };
  return fs.readFile(url);
}

/** compileSource, its failures typed: bytes that are no wasm module are InvalidArgumentError,
 * a fetch that fails is IoError (they were a bare CompileError, TypeError or Error). */
async function compile(source: WasmSource): Promise<WebAssembly.Module> {
  try {
    return await compileSource(source);
  } catch (e) {
    if (isAdaptreeError(e)) throw e;
    if (e instanceof WebAssembly.CompileError) throw new InvalidArgumentError(`adaptree: the wasm given is not a valid module (${e.message})`, { cause: e });
    throw new IoError(`adaptree: cannot load the wasm module (${(e as Error)?.message ?? String(e)})`, { cause: e });
  }
}

/** The package's own module, beside this file. Its failures are IoError naming where it was
 * looked for: a new-user probe got an untyped "TypeError: Invalid URL" from a CommonJS bundle
 * and a Worker bundle (no import.meta.url to resolve against), and InvalidArgumentError ("the
 * wasm given is not a valid module") for the HTML page a static host served in its place,
 * though the user had given nothing. */
async function compileDefault(build: WasmBuild): Promise<WebAssembly.Module> {
  let url: URL;
  try {
    url = defaultUrl(build);
  } catch (e) {
    throw new IoError(
      `adaptree: cannot locate the package's wasm module (adaptree-${build}.wasm): this module's import.meta.url ` +
        `(${String((import.meta as { url?: unknown }).url)}) is no URL to resolve it against, as in a CommonJS bundle or a ` +
        'Worker bundle; pass the module as init({ wasm }) (or loadWasm, or the wasm option of a store)',
      { cause: e },
    );
  }
  try {
    return await compileSource(url);
  } catch (e) {
    // (a 404 said only "cannot load wasm (404 url)", without the way out; a probe, session 30)
    if (isAdaptreeError(e)) {
      if (e.code !== 'IO_ERROR') throw e;
      throw new IoError(`${e.message}: the package's wasm module is not served there; deploy dist/wasm/ beside the bundle, or pass the module as init({ wasm })`, { cause: e });
    }
    const why = e instanceof WebAssembly.CompileError
      ? `what it got is not a wasm module (${e.message}): serve the file at that URL`
      : (e as Error)?.message ?? String(e);
    throw new IoError(`adaptree: cannot load the package's wasm module from ${url.href}: ${why}, or pass the module as init({ wasm })`, { cause: e });
  }
}

async function compileSource(source: WasmSource): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    return WebAssembly.compile(source as BufferSource);
  }
  if (typeof source === 'string' || source instanceof URL) {
    const url = typeof source === 'string' ? toUrl(source) : source;
    if (url.protocol === 'file:' && !fetchSupportsFile()) {
      return WebAssembly.compile((await readFileUrl(url)) as BufferSource);
    }
    return compileSource(fetch(url));
  }
  const response = await source;
  if (!response.ok) throw new IoError(`adaptree: cannot load wasm (${response.status} ${response.url})`);
  const type = response.headers.get('content-type') ?? '';
  if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm')) {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

function toUrl(s: string): URL {
  try {
    return new URL(s);
  } catch {
    // A plain path: relative to the current directory where there is one (Node, Deno).
    const g = globalThis as { process?: { cwd(): string }; Deno?: { cwd(): string } };
    const cwd = g.process?.cwd?.() ?? g.Deno?.cwd?.();
    if (cwd === undefined) return new URL(s, (globalThis as { location?: { href: string } }).location?.href);
    return new URL(s, `file://${cwd.endsWith('/') ? cwd : cwd + '/'}`);
  }
}

function fetchSupportsFile(): boolean {
  return typeof (globalThis as { Deno?: unknown }).Deno !== 'undefined';
}

class Loaded implements AdaptreeWasm {
  readonly ctx: number;
  readonly result: number;
  private view: Uint8Array;
  private data: DataView;
  private scratchPtr = 0;
  private scratchSize = 0;

  released = false;

  constructor(
    readonly build: WasmBuild,
    readonly module: WebAssembly.Module,
    readonly exports: AbiExports,
    readonly memory: WebAssembly.Memory,
    private readonly poison: Poison,
    private readonly raw: AbiExports,
    private readonly attached: AttachHandle | undefined,
  ) {
    this.view = new Uint8Array(memory.buffer);
    this.data = new DataView(memory.buffer);
    this.ctx = exports.at_ctx_new();
    if (this.ctx === 0) throw new OutOfMemoryError('adaptree: out of wasm memory creating a context');
    this.result = exports.at_ctx_result(this.ctx);
    // Waiting for a tree latch another worker holds (docs/THREADS.md): sleep where this
    // thread may block, spin on the browser's main thread (waiting traps there).
    if (build === 'mt') exports.at_ctx_set_wait(this.ctx, mayBlock() ? 1 : 0);
  }

  get maxMemory(): number {
    return this.exports.at_memory_limit();
  }

  setMaxMemory(bytes: number): void {
    if (this.exports.at_set_memory_limit(checkBudget(bytes)) !== 0) throw new InvalidArgumentError(`maxMemory: ${bytes} bytes refused`);
  }

  get poisoned(): boolean {
    return this.poison.dead || (this.poison.word !== null && Atomics.load(this.poison.word, 0) !== 0);
  }

  // Growth detaches a plain buffer (a DataView of it then throws on every access, even
  // byteLength) and gives a shared memory a new, longer SharedArrayBuffer object: either way
  // memory.buffer is another object than the one the views were made on.
  u8(): Uint8Array {
    if (this.view.buffer !== this.memory.buffer) this.refresh();
    return this.view;
  }

  dv(): DataView {
    if (this.data.buffer !== this.memory.buffer) this.refresh();
    return this.data;
  }

  private refresh(): void {
    this.view = new Uint8Array(this.memory.buffer);
    this.data = new DataView(this.memory.buffer);
  }

  scratch(size: number): number {
    if (size > this.scratchSize) {
      let n = Math.max(SCRATCH_MIN, this.scratchSize);
      while (n < size) n *= 2;
      const p = this.exports.at_alloc(n);
      if (p === 0) throw new OutOfMemoryError(`adaptree: out of wasm memory (scratch of ${n} bytes)`);
      if (this.scratchPtr !== 0) this.exports.at_free(this.scratchPtr);
      this.scratchPtr = p;
      this.scratchSize = n;
    }
    return this.scratchPtr;
  }

  releaseHandle(handle: AttachHandle): boolean {
    // The claim token still at the stack's bottom: no instance attached, none can now.
    const words = new Int32Array(this.memory.buffer);
    if (handle.claim === 0 || handle.memory !== this.memory || Atomics.compareExchange(words, handle.stackBase >> 2, handle.claim, 0) !== handle.claim) return false;
    this.exports.at_free(handle.stackBase);
    return true;
  }

  markLost(tree: number): void {
    if (this.poison.word === null) return;
    // Raw: the guarded export refuses once the memory is poisoned. at_tree_abandon only sets
    // a bit and notifies: it takes no lock and allocates nothing.
    // The poison first: a waiter that wakes tests it after its call returns.
    Atomics.compareExchange(this.poison.word, 0, 0, POISON_LOST);
    if (tree !== 0) this.raw.at_tree_abandon(tree);
  }

  release(): void {
    if (this.released || this.attached === undefined) return;
    this.released = true;
    if (this.scratchPtr !== 0) this.exports.at_free(this.scratchPtr);
    this.scratchPtr = 0;
    this.scratchSize = 0;
    this.exports.at_ctx_free(this.ctx);
    // Last, from this instance itself, which runs on that stack: emmalloc's free writes the
    // block's header below it and free-list links at its low end, while this call's frames sit
    // at its top; after free() returns no code reads this stack again (wasm keeps the stack
    // pointer in a global, not in memory).
    this.exports.at_free(this.attached.stackBase);
  }

  attachHandle(stackSize: number = DEFAULT_STACK_SIZE): AttachHandle {
    if (this.build !== 'mt') throw new ThreadsUnsupportedError('adaptree: only the mt build can be shared with workers');
    // A stack the attached instance can use: NaN, a string, 1 byte or 1 TiB gave a handle whose
    // attach trapped (poisoning the owner too), hung it, or wrote over the owner's tree.
    if (typeof stackSize !== 'number' || !Number.isInteger(stackSize) || stackSize < MIN_STACK_SIZE || stackSize > MAX_STACK_SIZE || stackSize % 16 !== 0) {
      throw new InvalidArgumentError(`stackSize must be a multiple of 16 bytes from ${MIN_STACK_SIZE} to ${MAX_STACK_SIZE} (default ${DEFAULT_STACK_SIZE}), not ${String(stackSize)}`);
    }
    const base = this.exports.at_alloc(stackSize);
    if (base === 0) throw new OutOfMemoryError('adaptree: out of wasm memory reserving a worker stack');
    // The stack's lowest word (touched only by a stack overflow) holds a random token until an
    // attach claims it; after free() of the attached map the region is reused and the token is
    // gone, so a stale handle is refused too (but for a 2^-32 chance).
    const claim = (Math.random() * 0xffffffff) | 0 || 1;
    Atomics.store(new Int32Array(this.memory.buffer), base >> 2, claim);
    return { module: this.module, memory: this.memory, stackBase: base, stackSize, claim };
  }
}

/**
 * A module that is valid wasm but not the adaptree build `build` is InvalidArgumentError, told
 * before anything of it runs: the mt build given without `threads` (or the st build with them)
 * was a bare Error, and a module without the exports (an empty one) failed with `TypeError:
 * raw._initialize is not a function` from inside the loader, since the exports were checked
 * only after `_initialize` ran. The imports and exports a compiled module declares are known
 * without instantiating it.
 */
function checkModule(module: WebAssembly.Module, build: WasmBuild, what: string, options: LoadOptions): void {
  const importsMemory = WebAssembly.Module.imports(module).some((i) => i.kind === 'memory');
  if (build === 'st' && importsMemory) {
    throw new InvalidArgumentError(
      options.threads
        ? `adaptree: ${what} is the mt build (it imports a shared memory), but threads are not available here (no SharedArrayBuffer, or not cross-origin isolated): give the st build (adaptree-st.wasm)`
        : `adaptree: ${what} is the mt build (it imports a shared memory): load it with threads: true, or give the st build (adaptree-st.wasm)`,
    );
  }
  if (build === 'mt' && !importsMemory) {
    throw new InvalidArgumentError(`adaptree: ${what} is not the mt build that threads: true asks for (it imports no shared memory): give adaptree-mt.wasm, or leave threads out for the st build`);
  }
  const kinds = new Map(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind] as const));
  const needed: [string, string][] = ABI_FUNCTIONS.map((name) => [name, 'function']);
  // What load() uses besides the ABI: an attached instance's stack pointer, the constructors
  // the first instance on a memory runs, and the memory an st module owns.
  if (build === 'mt' && options.attach) needed.push(['__stack_pointer', 'global']);
  else needed.push(['_initialize', 'function']);
  if (build === 'st') needed.push(['memory', 'memory']);
  for (const [name, kind] of needed) {
    if (kinds.get(name) !== kind) throw new InvalidArgumentError(`adaptree: ${what} is not an adaptree module: it has no ${kind} export ${name}`);
  }
}

function checkVersion(abi: AbiExports, what: string): void {
  const version = abi.at_abi_version();
  if (version !== ABI_VERSION) {
    throw new InvalidArgumentError(`adaptree: ${what} has wasm ABI version ${version}, this library expects ${ABI_VERSION} (a module of another adaptree version)`);
  }
}

/**
 * The engine refuses a new memory or instance when the process has reserved too much address
 * space (Chromium: `RangeError: WebAssembly.instantiate(): Out of memory`, seen at about 80
 * instances in one page): that is an OutOfMemoryError to the caller, with the engine's error as
 * cause, not an untyped RangeError.
 */
function instantiateError(e: unknown, what: string): unknown {
  // A module whose imports are not what adaptree supplies (another module's, or functions of
  // other signatures) is the wrong module, as in checkModule.
  if (e instanceof WebAssembly.LinkError) return new InvalidArgumentError(`adaptree: ${what} is not an adaptree module (${e.message})`, { cause: e });
  if (e instanceof RangeError && /out of memory|could not allocate|cannot allocate/i.test(e.message)) {
    return new OutOfMemoryError(`adaptree: the engine refused a new wasm instance (${e.message})`, { cause: e });
  }
  return e;
}

/** Loads and instantiates an adaptree wasm module. */
export async function loadWasm(options: LoadOptions = {}): Promise<AdaptreeWasm> {
  checkLoadOptions(options);
  const attach = options.attach;
  if (attach !== undefined) claimStack(attach);
  try {
    return await load(options);
  } catch (e) {
    // Not attached after all: the handle may be used again.
    if (attach !== undefined) Atomics.compareExchange(new Int32Array(attach.memory.buffer), attach.stackBase >> 2, 0, attach.claim);
    throw e;
  }
}

const LOAD_OPTIONS = new Set(['wasm', 'threads', 'attach', 'maxMemory']);

/** Bad options are InvalidArgumentError (a null, a number as `wasm`, `threads: 'yes'` were a
 * TypeError from deep inside, or taken silently). */
function checkLoadOptions(options: unknown): asserts options is LoadOptions {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`loadWasm(options): options must be an object, not ${options === null ? 'null' : typeof options}`);
  for (const k of Object.keys(options)) {
    if (!LOAD_OPTIONS.has(k)) throw new InvalidArgumentError(`loadWasm: unknown option '${k}' (${[...LOAD_OPTIONS].join(', ')})`);
  }
  const o = options as LoadOptions;
  if (o.threads !== undefined && typeof o.threads !== 'boolean') throw new InvalidArgumentError(`loadWasm: threads must be a boolean, not ${typeof o.threads}`);
  const w: unknown = o.wasm;
  const ok =
    w === undefined ||
    typeof w === 'string' ||
    w instanceof WebAssembly.Module ||
    w instanceof ArrayBuffer ||
    ArrayBuffer.isView(w) ||
    (typeof URL === 'function' && w instanceof URL) ||
    (typeof Response === 'function' && w instanceof Response) ||
    (typeof w === 'object' && w !== null && typeof (w as { then?: unknown }).then === 'function');
  if (!ok) throw new InvalidArgumentError('loadWasm: wasm must be a WebAssembly.Module, the module bytes, a URL or path, or a Response (or a promise of one)');
}

/** The `wasm` option of a map or store: an instance from loadWasm()/init(). */
export function checkWasmOption(w: unknown, where: string): AdaptreeWasm {
  const x = w as Partial<AdaptreeWasm> | null;
  if (x === null || typeof x !== 'object' || typeof x.exports !== 'object' || x.exports === null || typeof x.memory !== 'object') {
    throw new InvalidArgumentError(`${where}: the wasm option must be an instance from loadWasm() or init(), not ${x === null ? 'null' : typeof x}`);
  }
  return x as AdaptreeWasm;
}

/**
 * One attach per handle: two instances on one stack overwrite each other's frames (a worker
 * that reused another's handle hung or trapped both, or wrote garbage into the tree). The
 * token share() left at the bottom of the stack is swapped for 0 by exactly one attach.
 */
function claimStack(attach: AttachHandle): void {
  const ok =
    attach !== null && typeof attach === 'object' && typeof attach.stackBase === 'number' && typeof attach.claim === 'number' &&
    typeof attach.memory === 'object' && attach.memory !== null && typeof attach.memory.buffer?.byteLength === 'number' &&
    attach.stackBase > 0 && attach.stackBase % 4 === 0 && attach.stackBase + 4 <= attach.memory.buffer.byteLength;
  if (!ok) throw new InvalidArgumentError('attach(): not a handle from share()');
  if (attach.claim === 0 || Atomics.compareExchange(new Int32Array(attach.memory.buffer), attach.stackBase >> 2, attach.claim, 0) !== attach.claim) {
    throw new InvalidArgumentError(
      'attach(): this handle was already attached (or its map was freed): each share() gives one handle for one attach, so call share() once per worker',
    );
  }
}

async function load(options: LoadOptions): Promise<AdaptreeWasm> {
  const attach = options.attach;
  const budget = options.maxMemory === undefined ? undefined : checkBudget(options.maxMemory);
  const build: WasmBuild = attach || (options.threads && threadsAvailable()) ? 'mt' : 'st';
  if (options.threads && build !== 'mt') {
    // Asked for threads where they are impossible: fall back, as documented.
  }
  const module = attach?.module ?? (options.wasm !== undefined ? await compile(options.wasm) : await compileDefault(build));
  const what = attach ? "the attach handle's wasm module" : options.wasm !== undefined ? 'the wasm module given' : `the package's ${build} wasm module`;
  checkModule(module, build, what, options);
  let memory: WebAssembly.Memory | undefined;
  const env: Record<string, WebAssembly.ImportValue> = hostImports(() => memory!);
  const importObject: WebAssembly.Imports = { env };
  let instance: WebAssembly.Instance;
  try {
    if (build === 'mt') {
      memory =
        attach?.memory ??
        new WebAssembly.Memory({
          initial: MT_INITIAL_PAGES,
          maximum: MT_MAXIMUM_PAGES,
          shared: true,
        } as WebAssembly.MemoryDescriptor);
      env.memory = memory;
    }
    instance = await WebAssembly.instantiate(module, importObject);
  } catch (e) {
    throw instantiateError(e, what);
  }
  const raw = instance.exports;
  const abi = raw as unknown as AbiExports;
  if (build === 'mt' && attach) {
    // A new instance starts with the linked stack, which the first instance
    // uses: give it its own region before it runs any code that uses a stack.
    (raw.__stack_pointer as WebAssembly.Global).value = attach.stackBase + attach.stackSize;
    checkVersion(abi, what);
  } else {
    // The version before anything else of a module runs (at_abi_version returns a constant).
    checkVersion(abi, what);
    // The first instance on a memory runs the static constructors, once.
    (raw._initialize as () => void)();
  }
  if (build === 'st') memory = raw.memory as WebAssembly.Memory;
  const poison = poisonOf(memory!, abi, build === 'mt');
  const exports = guard(abi, poison);
  if (budget !== undefined) exports.at_set_memory_limit(budget);
  return new Loaded(build, module, exports, memory!, poison, abi, build === 'mt' ? attach : undefined);
}

export { Result };
