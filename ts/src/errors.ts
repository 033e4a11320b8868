/**
 * Typed errors. Every error adaptree throws carries a stable string `code`.
 *
 * Hierarchy (why it looks like this): a bad key must still be a `TypeError` and an
 * oversized key a `RangeError`, as JavaScript users expect from built-ins, so those
 * classes extend the built-in error they stand for. The rest extend `AdaptreeError`.
 * All of them carry a shared brand, so one check works for every adaptree error:
 *
 * ```ts
 * try { map.set(k, v) } catch (e) {
 *   if (isAdaptreeError(e)) console.log(e.code)   // 'KEY_TOO_LARGE', 'INVALID_KEY', ...
 *   e instanceof AdaptreeError                   // also true for KeyTooLargeError & co
 *   e instanceof RangeError                      // true for KeyTooLargeError
 * }
 * ```
 *
 * | class                 | extends        | code              | thrown when                                      |
 * |-----------------------|----------------|-------------------|--------------------------------------------------|
 * | InvalidKeyError       | TypeError      | INVALID_KEY       | key of the wrong type, NaN, lone surrogate        |
 * | InvalidValueError     | TypeError      | INVALID_VALUE     | value the value encoding cannot encode            |
 * | InvalidArgumentError  | TypeError      | INVALID_ARGUMENT  | bad options or range (e.g. both gt and gte)       |
 * | KeyTooLargeError      | RangeError     | KEY_TOO_LARGE     | encoded key longer than 1024 bytes (a set under   |
 * |                       |                |                   | the `baseline` layout: 1011 bytes)                |
 * | ValueTooLargeError    | RangeError     | VALUE_TOO_LARGE   | value longer than the core accepts (1 GiB)        |
 * | ClosedError           | AdaptreeError  | CLOSED            | map used after free() / [Symbol.dispose]         |
 * | CorruptionError       | AdaptreeError  | CORRUPT           | checksum or structural invariant broken; stored  |
 * |                       |                |                   | bytes a custom codec's decode cannot read         |
 * | OutOfMemoryError      | AdaptreeError  | OUT_OF_MEMORY     | wasm memory cannot grow (the 2 GiB ceiling or the  |
 * |                       |                |                   | `maxMemory` budget); the map is as it was         |
 * | InstanceUnusableError | AdaptreeError  | INSTANCE_POISONED | the wasm instance trapped (a bug): every map and   |
 * |                       |                |                   | store on it refuses calls; committed store data is |
 * |                       |                |                   | safe: reopen on a new instance (`loadWasm()`)      |
 * | QuotaExceededError    | AdaptreeError  | QUOTA_EXCEEDED    | storage quota exhausted (persistent maps)         |
 * | LockedError           | AdaptreeError  | LOCKED            | store open in another process or handle           |
 * | IoError               | AdaptreeError  | IO_ERROR          | the storage failed a read, write or flush         |
 * | ReadOnlyError         | AdaptreeError  | READ_ONLY         | store refuses writes after a failed commit: reopen |
 * | PageFaultError        | AdaptreeError  | NEED_PAGE         | sync call on an async store touched a page that is |
 * |                       |                |                   | not in memory (use the `...Async` method)         |
 * | NotInitializedError   | AdaptreeError  | NOT_INITIALIZED   | BTreeMap constructed before `await init()`        |
 * | ReentrancyError       | AdaptreeError  | REENTRANT         | a codec, toJSON or a key's getter or Proxy trap   |
 * |                       |                |                   | called into adaptree mid-call;                    |
 * |                       |                |                   | a sync write while an async commit is written     |
 * | AbortedError          | AdaptreeError  | ABORTED           | an `onProgress` callback threw: the work stopped,  |
 * |                       |                |                   | nothing changed (the callback's error is `cause`) |
 * | ThreadsUnsupportedError | AdaptreeError | THREADS_UNSUPPORTED | share() where workers cannot share it: the st |
 * |                       |                |                   | build, a store not on node/deno/opfs files      |
 * | AdaptreeError         | Error          | INTERNAL          | unexpected core status                            |
 */
import { Status } from './abi.js';

export type AdaptreeErrorCode =
  | 'INVALID_KEY'
  | 'INVALID_VALUE'
  | 'INVALID_ARGUMENT'
  | 'KEY_TOO_LARGE'
  | 'VALUE_TOO_LARGE'
  | 'CLOSED'
  | 'CORRUPT'
  | 'OUT_OF_MEMORY'
  | 'INSTANCE_POISONED'
  | 'QUOTA_EXCEEDED'
  | 'LOCKED'
  | 'IO_ERROR'
  | 'READ_ONLY'
  | 'NEED_PAGE'
  | 'NOT_INITIALIZED'
  | 'REENTRANT'
  | 'ABORTED'
  | 'THREADS_UNSUPPORTED'
  | 'INTERNAL';

/** The brand every adaptree error carries; `Symbol.for` so that copies of the library agree. */
export const ADAPTREE_ERROR: unique symbol = Symbol.for('adaptree.error') as never;

/** True for every error thrown by adaptree, whatever built-in class it extends. */
export function isAdaptreeError(e: unknown): e is AdaptreeErrorLike {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[ADAPTREE_ERROR] === true;
}

/** What every adaptree error has in common. */
export interface AdaptreeErrorLike extends Error {
  readonly code: AdaptreeErrorCode;
  readonly [ADAPTREE_ERROR]: true;
  /** On an error from `setMany` or `setManyAsync` (of a map or a store): how many entries, the
   * first ones in input order, were applied before it stopped (0: the map is unchanged). */
  readonly applied?: number;
}

/** Gives an adaptree error from setMany its `applied` count (a PageFaultError has its own). */
export function withApplied(e: unknown, applied: number): unknown {
  if (isAdaptreeError(e) && !(e instanceof PageFaultError)) {
    Object.defineProperty(e, 'applied', { value: applied, configurable: true, enumerable: true, writable: false });
  }
  return e;
}

function brand(e: Error, name: string): void {
  Object.defineProperty(e, 'name', { value: name, configurable: true, writable: true, enumerable: false });
}

/** The name of the AdaptreeError subclass of each code (one subclass per code). */
const NAME_OF_CODE: Partial<Record<string, string>> = {
  CLOSED: 'ClosedError',
  CORRUPT: 'CorruptionError',
  OUT_OF_MEMORY: 'OutOfMemoryError',
  INSTANCE_POISONED: 'InstanceUnusableError',
  QUOTA_EXCEEDED: 'QuotaExceededError',
  LOCKED: 'LockedError',
  IO_ERROR: 'IoError',
  READ_ONLY: 'ReadOnlyError',
  NEED_PAGE: 'PageFaultError',
  NOT_INITIALIZED: 'NotInitializedError',
  REENTRANT: 'ReentrancyError',
  ABORTED: 'AbortedError',
  THREADS_UNSUPPORTED: 'ThreadsUnsupportedError',
};

/** Base class of the errors that have no natural built-in parent. `instanceof AdaptreeError`
 * is true for every adaptree error (also KeyTooLargeError, InvalidKeyError, ...). */
export class AdaptreeError extends Error implements AdaptreeErrorLike {
  /** Stable machine-readable code ('KEY_TOO_LARGE', 'LOCKED', ...): match on this, not on the message. */
  readonly code: AdaptreeErrorCode;
  /** Brand that `isAdaptreeError` checks (works across realms and for the TypeError/RangeError subclasses). */
  readonly [ADAPTREE_ERROR] = true as const;
  /** On an error from `setMany` or `setManyAsync`: how many entries, the first ones in input
   * order, were applied before it stopped (0: unchanged). Absent on errors of other calls. */
  declare readonly applied?: number;
  constructor(message: string, code: AdaptreeErrorCode = 'INTERNAL', options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    // The class's name by its code, not `new.target.name`: a minifier renames classes, and
    // errors then said `N: the map has been freed` (a new-user probe, session 23).
    brand(this, new.target === AdaptreeError ? 'AdaptreeError' : (NAME_OF_CODE[code] ?? 'AdaptreeError'));
  }
  /** `x instanceof AdaptreeError` accepts every branded error; subclasses keep the normal check. */
  static override [Symbol.hasInstance](x: unknown): boolean {
    if (this === AdaptreeError) return isAdaptreeError(x);
    return Function.prototype[Symbol.hasInstance].call(this, x);
  }
}

export class InvalidKeyError extends TypeError implements AdaptreeErrorLike {
  readonly code = 'INVALID_KEY' as const;
  readonly [ADAPTREE_ERROR] = true as const;
  /** As {@link AdaptreeError.applied}. */
  declare readonly applied?: number;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'InvalidKeyError');
  }
}

export class InvalidValueError extends TypeError implements AdaptreeErrorLike {
  readonly code = 'INVALID_VALUE' as const;
  readonly [ADAPTREE_ERROR] = true as const;
  /** As {@link AdaptreeError.applied}. */
  declare readonly applied?: number;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'InvalidValueError');
  }
}

export class InvalidArgumentError extends TypeError implements AdaptreeErrorLike {
  readonly code = 'INVALID_ARGUMENT' as const;
  readonly [ADAPTREE_ERROR] = true as const;
  /** As {@link AdaptreeError.applied}. */
  declare readonly applied?: number;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'InvalidArgumentError');
  }
}

export class KeyTooLargeError extends RangeError implements AdaptreeErrorLike {
  readonly code = 'KEY_TOO_LARGE' as const;
  readonly [ADAPTREE_ERROR] = true as const;
  /** As {@link AdaptreeError.applied}. */
  declare readonly applied?: number;
  constructor(message = 'key is longer than the maximum key size (1024 bytes encoded)', options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'KeyTooLargeError');
  }
}

export class ValueTooLargeError extends RangeError implements AdaptreeErrorLike {
  readonly code = 'VALUE_TOO_LARGE' as const;
  readonly [ADAPTREE_ERROR] = true as const;
  /** As {@link AdaptreeError.applied}. */
  declare readonly applied?: number;
  constructor(message = 'value is longer than the maximum value size', options?: { cause?: unknown }) {
    super(message, options);
    brand(this, 'ValueTooLargeError');
  }
}

export class ClosedError extends AdaptreeError {
  declare readonly code: 'CLOSED';
  constructor(message = 'the map has been freed', options?: { cause?: unknown }) {
    super(message, 'CLOSED', options);
  }
}

export class CorruptionError extends AdaptreeError {
  declare readonly code: 'CORRUPT';
  constructor(message = 'corrupt data', options?: { cause?: unknown }) {
    super(message, 'CORRUPT', options);
  }
}

export class OutOfMemoryError extends AdaptreeError {
  declare readonly code: 'OUT_OF_MEMORY';
  constructor(message = 'out of wasm memory', options?: { cause?: unknown }) {
    super(message, 'OUT_OF_MEMORY', options);
  }
}

/** The wasm instance trapped (`WebAssembly.RuntimeError`: a bug in adaptree, never a normal
 * condition) and its memory may be half-updated, so every map and store on that instance
 * refuses further calls with this error (freeing them still works). What a store committed is
 * in its files: reopen it on a fresh instance (`loadWasm()` or `init()` with other options).
 * `cause` is the original trap. */
export class InstanceUnusableError extends AdaptreeError {
  declare readonly code: 'INSTANCE_POISONED';
  constructor(message = 'the wasm instance trapped earlier and is unusable: load a new one (loadWasm)', options?: { cause?: unknown }) {
    super(message, 'INSTANCE_POISONED', options);
  }
}

export class QuotaExceededError extends AdaptreeError {
  declare readonly code: 'QUOTA_EXCEEDED';
  constructor(message = 'storage quota exceeded', options?: { cause?: unknown }) {
    super(message, 'QUOTA_EXCEEDED', options);
  }
}

export class LockedError extends AdaptreeError {
  declare readonly code: 'LOCKED';
  constructor(message = 'the store is locked by another handle', options?: { cause?: unknown }) {
    super(message, 'LOCKED', options);
  }
}

export class IoError extends AdaptreeError {
  declare readonly code: 'IO_ERROR';
  constructor(message = 'the storage failed a read, write or flush', options?: { cause?: unknown }) {
    super(message, 'IO_ERROR', options);
  }
}

export class ReadOnlyError extends AdaptreeError {
  declare readonly code: 'READ_ONLY';
  constructor(message = 'the store refuses writes after a failed commit: close and reopen it', options?: { cause?: unknown }) {
    super(message, 'READ_ONLY', options);
  }
}

/** A synchronous call on a store with an asynchronous backend needed a page that is not in
 * the buffer pool. Nothing changed; the `...Async` variant of the method fetches and retries. */
export class PageFaultError extends AdaptreeError {
  declare readonly code: 'NEED_PAGE';
  /** The page the core asked for. */
  readonly pageId: number;
  /** setMany/getMany: how many entries or keys (from the first) were done before the fault. */
  declare readonly applied?: number;
  /** getMany: the values of those first `applied` keys. */
  readonly values?: readonly unknown[];
  constructor(pageId: number, message?: string, options?: { cause?: unknown; applied?: number; values?: readonly unknown[] }) {
    super(message ?? `page ${pageId} is not in memory (async backend: use the ...Async method)`, 'NEED_PAGE', options);
    this.pageId = pageId;
    if (options?.applied !== undefined) this.applied = options.applied;
    if (options?.values !== undefined) this.values = options.values;
  }
}

export class NotInitializedError extends AdaptreeError {
  declare readonly code: 'NOT_INITIALIZED';
  constructor(message = 'call `await init()` before creating a BTreeMap (or pass options.wasm)', options?: { cause?: unknown }) {
    super(message, 'NOT_INITIALIZED', options);
  }
}

export class ReentrancyError extends AdaptreeError {
  declare readonly code: 'REENTRANT';
  constructor(message = 'a codec (or toJSON) called into adaptree during an adaptree call', options?: { cause?: unknown }) {
    super(message, 'REENTRANT', options);
  }
}

/** An `onProgress` callback threw: the long operation it reported on stopped, and what it was
 * changing is as it was before (the callback's exception is the `cause`). */
export class AbortedError extends AdaptreeError {
  declare readonly code: 'ABORTED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'ABORTED', options);
  }
}

/** `share()` of something workers cannot share (docs/THREADS.md): a persistent store (its
 * page I/O belongs to the thread that opened it), or a map on the single-threaded build. */
export class ThreadsUnsupportedError extends AdaptreeError {
  declare readonly code: 'THREADS_UNSUPPORTED';
  constructor(message = 'this cannot be shared with workers', options?: { cause?: unknown }) {
    super(message, 'THREADS_UNSUPPORTED', options);
  }
}

/** Core status codes (core/status.h), defined once in abi.ts. */
export { Status };

/** The typed error for a negative core status. `what` names the operation for the message. */
export function errorFromStatus(status: number, what: string, detail?: string): Error {
  const d = detail ? `: ${detail}` : '';
  switch (status) {
    case Status.KEY_TOO_LARGE: return new KeyTooLargeError(`${what}: key too large${d}`);
    case Status.VALUE_TOO_LARGE: return new ValueTooLargeError(`${what}: value too large${d}`);
    case Status.OUT_OF_MEMORY: return new OutOfMemoryError(`${what}: out of wasm memory${d}`);
    case Status.CORRUPT: return new CorruptionError(`${what}: corrupt${d}`);
    case Status.INVALID_ARGUMENT: return new InvalidArgumentError(`${what}: invalid argument${d}`);
    case Status.CLOSED: return new ClosedError(`${what}: closed${d}`);
    case Status.IO_ERROR: return new IoError(`${what}: storage I/O failed${d}`);
    case Status.QUOTA_EXCEEDED: return new QuotaExceededError(`${what}: storage full or quota exceeded${d}`);
    case Status.LOCKED: return new LockedError(`${what}: the store is open elsewhere${d}`);
    case Status.READ_ONLY: return new ReadOnlyError(`${what}: the store refuses writes (it was opened read-only, or a commit failed: reopen it)${d}`);
    case Status.BUSY: return new ReentrancyError(`${what}: a commit is being written: use the ...Async write methods on asynchronous backends${d}`);
    default: return new AdaptreeError(`${what}: unexpected core status ${status}${d}`, 'INTERNAL');
  }
}

/** The items of an argument that must be iterable (getMany's keys, setMany's entries), as an
 * array; anything else is InvalidArgumentError (a TypeError, as Map's constructor throws). */
export function listOf<T>(items: Iterable<T>, what: string): T[] {
  if (Array.isArray(items)) return items as T[];
  if (items === null || items === undefined || typeof (items as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') {
    throw new InvalidArgumentError(`${what} must be iterable, not ${items === null ? 'null' : typeof items}`);
  }
  return Array.from(items);
}

/** An error as it crosses a thread boundary (postMessage): structured clone keeps neither the
 * class nor the `code`, so workers send this and the caller's side rebuilds the typed error. */
export interface WireError {
  name: string;
  code?: AdaptreeErrorCode | string;
  message: string;
  pageId?: number;
  /** The error's `cause`, in the same form (a few levels deep). */
  cause?: WireError;
  /** It was a DOMException (a cause from the browser: QuotaExceededError, ...). */
  dom?: boolean;
  /** A setMany error's `applied` (it was dropped on the way: a probe, session 29). */
  applied?: number;
}

/** What a worker posts for a thrown value (errorFromWire rebuilds it). */
export function errorToWire(e: unknown, depth = 0): WireError {
  if (e !== null && typeof e === 'object') {
    const x = e as { name?: unknown; code?: unknown; message?: unknown; pageId?: unknown; cause?: unknown; applied?: unknown };
    const w: WireError = {
      name: typeof x.name === 'string' ? x.name : 'Error',
      message: typeof x.message === 'string' ? x.message : String(e),
    };
    if (typeof x.code === 'string') w.code = x.code;
    if (typeof x.pageId === 'number') w.pageId = x.pageId;
    if (typeof x.applied === 'number') w.applied = x.applied;
    if (typeof DOMException === 'function' && e instanceof DOMException) w.dom = true;
    // (The cause was dropped: a LockedError from a worker lost the NoModificationAllowedError
    // that said why, a new-user probe, session 24.)
    if (x.cause !== undefined && depth < 4) w.cause = errorToWire(x.cause, depth + 1);
    return w;
  }
  return { name: 'Error', message: String(e) };
}

/** The typed error (same class and code as on the worker's side) for one a worker reported,
 * with its cause rebuilt the same way (a DOMException as a DOMException). */
export function errorFromWire(e: WireError): Error {
  const err = errorOfWire(e);
  return typeof e.applied === 'number' ? (withApplied(err, e.applied) as Error) : err;
}

function errorOfWire(e: WireError): Error {
  const m = e.message;
  const o = e.cause !== undefined ? { cause: errorFromWire(e.cause) } : undefined;
  if (e.dom === true && typeof DOMException === 'function') {
    const d = new DOMException(m, e.name);
    if (o !== undefined) Object.defineProperty(d, 'cause', { value: o.cause, configurable: true, writable: true });
    return d;
  }
  switch (e.code) {
    case 'INVALID_KEY': return new InvalidKeyError(m, o);
    case 'INVALID_VALUE': return new InvalidValueError(m, o);
    case 'INVALID_ARGUMENT': return new InvalidArgumentError(m, o);
    case 'KEY_TOO_LARGE': return new KeyTooLargeError(m, o);
    case 'VALUE_TOO_LARGE': return new ValueTooLargeError(m, o);
    case 'CLOSED': return new ClosedError(m, o);
    case 'CORRUPT': return new CorruptionError(m, o);
    case 'OUT_OF_MEMORY': return new OutOfMemoryError(m, o);
    case 'INSTANCE_POISONED': return new InstanceUnusableError(m, o);
    case 'QUOTA_EXCEEDED': return new QuotaExceededError(m, o);
    case 'LOCKED': return new LockedError(m, o);
    case 'IO_ERROR': return new IoError(m, o);
    case 'READ_ONLY': return new ReadOnlyError(m, o);
    case 'NEED_PAGE': return new PageFaultError(e.pageId ?? -1, m, o);
    case 'NOT_INITIALIZED': return new NotInitializedError(m, o);
    case 'REENTRANT': return new ReentrancyError(m, o);
    case 'ABORTED': return new AbortedError(m, o);
    case 'THREADS_UNSUPPORTED': return new ThreadsUnsupportedError(m, o);
    case undefined: {
      const err = e.name === 'TypeError' ? new TypeError(m, o) : e.name === 'RangeError' ? new RangeError(m, o) : new Error(m, o);
      if (err.name !== e.name) Object.defineProperty(err, 'name', { value: e.name, configurable: true, writable: true });
      return err;
    }
    default: return new AdaptreeError(m, e.code as AdaptreeErrorCode, o);
  }
}
