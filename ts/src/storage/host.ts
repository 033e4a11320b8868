// The host side of the core's file I/O: the five `at_host_*` functions every wasm build
// imports from "env" (bindings/adaptree.h). A store on a synchronous backend registers its
// two files here under an integer `io`, passes `io` to at_store_open, and from then on the
// core reads and writes them from inside its calls. The functions never throw into wasm:
// a failure becomes a status (QUOTA_EXCEEDED for a full disk, IO_ERROR otherwise) and the
// backend's error is kept so the API can throw a typed error with it as `cause`.
//
// Entries are kept per wasm memory, and `io` is the address of a small block the store
// allocates in that memory: unique among the stores on the memory in every thread, so a
// worker that attaches a shared store (BTreeStore.attach, docs/THREADS.md) registers its own
// handles on the same files under the same `io`, beside stores of its own.
import { Status, StoreFile } from '../abi.js';
import { isAdaptreeError } from '../errors.js';
import type { SyncFile, SyncStoreFiles } from './types.js';
import type { WasmMemory } from '../wasm.js';

export interface HostEntry {
  readonly files: SyncStoreFiles;
  /** The last error a backend call threw (for the message and cause of the typed error). */
  lastError: unknown;
  /** Called with the bytes read while set (open/recovery progress). */
  onRead: ((bytes: number) => void) | undefined;
  /** Stores in this thread using the entry (an owner and stores attached in its thread). */
  refs: number;
}

type Registry = Map<number, HostEntry>;
const registries = new WeakMap<object, Registry>();

/** Registers the files of a store on `memory` under `io` (an address allocated in it). A
 * store attached in the thread that already has `io` on this memory (its owner's, or another
 * attach) shares that entry: counted, and gone at the last unregisterHost. */
export function registerHost(memory: object, io: number, files: SyncStoreFiles): HostEntry {
  let reg = registries.get(memory);
  if (reg === undefined) registries.set(memory, (reg = new Map()));
  const had = reg.get(io);
  if (had !== undefined) {
    had.refs++;
    return had;
  }
  const entry: HostEntry = { files, lastError: undefined, onRead: undefined, refs: 1 };
  reg.set(io, entry);
  return entry;
}

export function unregisterHost(memory: object, io: number): void {
  const reg = registries.get(memory);
  const entry = reg?.get(io);
  if (entry !== undefined && --entry.refs === 0) reg!.delete(io);
}

/** The status for an error a backend threw. */
export function statusOfError(e: unknown): number {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'QUOTA_EXCEEDED') return Status.QUOTA_EXCEEDED;
  if ((e as { name?: unknown } | null)?.name === 'QuotaExceededError') return Status.QUOTA_EXCEEDED;
  if (isAdaptreeError(e) && e.code === 'LOCKED') return Status.LOCKED;
  return Status.IO_ERROR;
}

function fileOf(reg: Registry | undefined, io: number, file: number): { entry: HostEntry; f: SyncFile } | undefined {
  const entry = reg?.get(io);
  if (entry === undefined) return undefined;
  const f = file === StoreFile.DATA ? entry.files.data : file === StoreFile.LOG ? entry.files.log : undefined;
  return f === undefined ? undefined : { entry, f };
}

function failed(entry: HostEntry, e: unknown): number {
  entry.lastError = e;
  return statusOfError(e);
}

/** The "env" functions for one wasm instance; `memory()` gives its memory (known only after
 * instantiation for the st build, which exports its memory). */
/** Host calls under way, per memory: a thread that ends inside one (process.exit() in a storage
 * callback) ended inside a wasm call on that memory (threads.ts, at the worker's 'exit'). */
const depthOf = new WeakMap<object, () => number>();

/** Whether this thread is inside a host call of a wasm call on `memory`. */
export function inHostCall(memory: object): boolean {
  return (depthOf.get(memory)?.() ?? 0) > 0;
}

export function hostImports(memory: () => WasmMemory): Record<string, (...args: number[]) => number> {
  const fns = hostFunctions(memory);
  // One counter per instance (its memory is known at the first call): every page read and write
  // passes here, so two integer steps, no map lookup.
  let depth = 0, registered = false;
  const out: Record<string, (...args: number[]) => number> = {};
  for (const [name, f] of Object.entries(fns)) {
    out[name] = (a?: number, b?: number, c?: number, d?: number, e?: number): number => {
      if (!registered) {
        registered = true;
        depthOf.set(memory(), () => depth);
      }
      depth++;
      try {
        return (f as (a?: number, b?: number, c?: number, d?: number, e?: number) => number)(a, b, c, d, e);
      } finally {
        depth--;
      }
    };
  }
  return out;
}

function hostFunctions(memory: () => WasmMemory): Record<string, (...args: number[]) => number> {
  const view = (ptr: number, len: number) => new Uint8Array(memory().buffer, ptr, len);
  // This instance's registry (its memory's), once a store has registered on it.
  let registry: Registry | undefined;
  const reg = () => (registry ??= registries.get(memory()));
  // The whole memory, for SyncFile.readInto (a new view when the memory grew).
  let whole: Uint8Array | undefined;
  const wholeMemory = () => {
    const b = memory().buffer;
    if (whole === undefined || whole.buffer !== b) whole = new Uint8Array(b);
    return whole;
  };
  return {
    at_host_read(io: number, file: number, offset: number, dst: number, len: number): number {
      const entry = reg()?.get(io);
      const f = entry === undefined ? undefined : file === StoreFile.DATA ? entry.files.data : file === StoreFile.LOG ? entry.files.log : undefined;
      if (f === undefined) return Status.IO_ERROR;
      try {
        const n = f.readInto !== undefined ? f.readInto(wholeMemory(), dst >>> 0, len >>> 0, offset) : f.read(view(dst >>> 0, len >>> 0), offset);
        if (entry!.onRead !== undefined) entry!.onRead(n);
        return n;
      } catch (e) {
        return failed(entry!, e);
      }
    },
    at_host_write(io: number, file: number, offset: number, src: number, len: number): number {
      const t = fileOf(reg(), io, file);
      if (t === undefined) return Status.IO_ERROR;
      try {
        t.f.write(view(src >>> 0, len >>> 0), offset);
        return Status.OK;
      } catch (e) {
        return failed(t.entry, e);
      }
    },
    at_host_sync(io: number, file: number): number {
      const t = fileOf(reg(), io, file);
      if (t === undefined) return Status.IO_ERROR;
      try {
        t.f.sync();
        return Status.OK;
      } catch (e) {
        return failed(t.entry, e);
      }
    },
    at_host_size(io: number, file: number): number {
      const t = fileOf(reg(), io, file);
      if (t === undefined) return Status.IO_ERROR;
      try {
        return t.f.size();
      } catch (e) {
        return failed(t.entry, e);
      }
    },
    at_host_truncate(io: number, file: number, size: number): number {
      const t = fileOf(reg(), io, file);
      if (t === undefined) return Status.IO_ERROR;
      try {
        t.f.truncate(size);
        return Status.OK;
      } catch (e) {
        return failed(t.entry, e);
      }
    },
  };
}
