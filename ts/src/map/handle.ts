/**
 * The tree handle the map, its iterators and the finalizer share; its cursors (pool,
 * finalizer) and the errors for a failed status or a closed/busy map.
 */
import { Result } from '../abi.js';
import { ClosedError, OutOfMemoryError, PageFaultError, ReentrancyError, Status, errorFromStatus } from '../errors.js';
import type { KeyEncoder, ValueEncoder } from '../encoding/codec.js';
import type { Runtime } from './runtime.js';

/** What the map, its iterators and the finalizer share; holds no reference to the map. */
export interface Handle<K, V> {
  readonly rt: Runtime;
  tree: number;
  /** Bumped by every successful modification; iterators compare it to re-seek. */
  mod: number;
  /** Live core cursors of this tree, freed with it. */
  readonly cursors: Set<number>;
  /** Idle cursors (also in `cursors`), reused by the next iterator. */
  readonly pool: number[];
  /** A cursor for first/last/nextHigher/nextLower, made on first use. */
  util: number;
  readonly kenc: KeyEncoder<K>;
  readonly venc: ValueEncoder<V>;
  /** Strings from this value encoding need no lone-surrogate check (JSON.stringify output). */
  readonly wellFormedValues: boolean;
  /** utf8 keys on non-shared memory: long keys go into key area A with TextEncoder.encodeInto. */
  readonly encodeIntoKeys: boolean;
  /** `number` keys: point calls pass a number key as a double (at_get_num and co.). */
  readonly numKeys: boolean;
  /** Keys that are objects a user may have built with getters or as a Proxy (`tuple`, `bytes`):
   * their encoding can run user code, so it runs under the re-entrancy guard (put.ts). */
  readonly guardKeys: boolean;
  /** `bytes` keys: a real typed array (ArrayBuffer.isView, which no Proxy passes) is copied
   * without running user code, so only other objects take the guard. */
  readonly bytesKeys: boolean;
  /** Called once after the tree is freed (stores release their backend); `collected`: by the
   * finalizer, for a map dropped without free() (a store dropped without close()). */
  onFree: ((collected: boolean) => void) | undefined;
  /** AttachTree.borrowed: the tree is not this map's to free. */
  readonly borrowed: boolean;
  /** AttachTree.closed: the ClosedError's message once the tree is gone (else the map's). */
  readonly closedMessage: string | undefined;
  /** AttachTree.hooks. */
  readonly hooks: { onFault?: () => void; where?: string; cause?: () => unknown } | undefined;
}

export function freeHandle(h: Handle<unknown, unknown>, collected = false): void {
  if (h.tree === 0) return;
  const ex = h.rt.ex;
  for (const c of h.cursors) ex.at_cursor_free(c);
  h.cursors.clear();
  h.pool.length = 0;
  h.util = 0;
  if (!h.borrowed) ex.at_tree_free(h.tree);
  h.tree = 0;
  h.mod++; // live iterators must notice (they throw ClosedError)
  const onFree = h.onFree;
  if (onFree !== undefined) {
    h.onFree = undefined;
    onFree(collected);
  }
}

/** The error for a failed status. NEED_PAGE (a store on an async backend) becomes a
 * PageFaultError naming the page (result.aux), which the store's async methods catch,
 * answer and retry; every other status maps through errorFromStatus. */
export function fail(h: Handle<unknown, unknown>, st: number, what: string, detail?: string): Error {
  if (st === Status.NEED_PAGE) {
    h.hooks?.onFault?.();
    const rt = h.rt;
    rt.refresh();
    return new PageFaultError(rt.dv.getUint32(rt.res + Result.AUX, true));
  }
  // A store's map: its errors name the store ("get of 'data/x.db': corrupt").
  const where = h.hooks?.where;
  // A store's storage failed inside the call: the backend's own error (its message, as cause).
  // Point calls gave "storage I/O failed" with no cause; commit and open said what failed (a
  // probe, session 31).
  const cause = st === Status.IO_ERROR || st === Status.QUOTA_EXCEEDED ? h.hooks?.cause?.() : undefined;
  // Keys the encoders pass are at most maxKey bytes: the core refuses one only under `baseline`.
  if (st === Status.KEY_TOO_LARGE) {
    const rt = h.rt;
    const why = `the 'baseline' layout takes keys up to ${rt.maxKeyUntruncated} bytes (without prefix truncation its inner nodes keep keys whole); every other layout takes up to ${rt.maxKey}`;
    detail = detail === undefined ? why : `${why}; ${detail}`;
  }
  const e = errorFromStatus(st, where === undefined ? what : `${what} of '${where}'`, detail ?? (cause instanceof Error ? cause.message : cause !== undefined ? String(cause) : undefined));
  if (cause !== undefined && (e as { cause?: unknown }).cause === undefined) {
    Object.defineProperty(e, 'cause', { value: cause, configurable: true, writable: true, enumerable: false });
  }
  return e;
}

/** Safety net only: maps and iterators that are dropped without free()/return() release
 * their wasm memory when garbage-collected. Do not rely on it; call free(). */
export const treeRegistry: FinalizationRegistry<Handle<unknown, unknown>> | undefined =
  typeof FinalizationRegistry === 'function' ? new FinalizationRegistry((h) => freeHandle(h, true)) : undefined;

export function newCursor(h: Handle<unknown, unknown>): number {
  const c = h.rt.ex.at_cursor_new(h.tree);
  if (c === 0) {
    // A shared map's owner freed the tree (threads.ts): that, not memory.
    if (h.rt.ex.at_count(h.tree) < 0) throw new ClosedError('the shared map was freed by its owner');
    throw new OutOfMemoryError('out of wasm memory creating a cursor');
  }
  h.cursors.add(c);
  return c;
}

/** Idle cursors kept per map for the next iterator. */
const CURSOR_POOL = 8;

export function borrowCursor(h: Handle<unknown, unknown>): number {
  return h.pool.length > 0 ? h.pool.pop()! : newCursor(h);
}

export function returnCursor(h: Handle<unknown, unknown>, c: number): void {
  if (h.tree === 0 || !h.cursors.has(c)) return; // freed with the tree
  if (h.pool.length < CURSOR_POOL) {
    h.pool.push(c);
  } else {
    h.cursors.delete(c);
    h.rt.ex.at_cursor_free(c);
  }
}

export function stateError(h: Handle<unknown, unknown>): Error {
  return h.tree === 0 ? new ClosedError(h.closedMessage) : new ReentrancyError();
}

