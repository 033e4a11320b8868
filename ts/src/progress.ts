/**
 * Progress of long work, reported through an `onProgress` callback:
 *
 * - `'bulk-load'`: `BTreeMap.setMany(entries, { onProgress })` (and `BTreeStore.setMany`,
 *   `setManyAsync`): `done` of `total` entries encoded; the call with `done === total` comes
 *   just before the batch goes into wasm in one call (a sorted batch into an empty tree is
 *   bulk loaded there, which takes a fraction of the encoding time). `setManyAsync` on an
 *   asynchronous backend re-runs the batch after a page fault, reporting from 0 again.
 * - `'open'`: `BTreeStore.open({ onProgress })` on a synchronous backend: `done` bytes read
 *   (superblock, log replay, pages recovery touches) of `total`, the log's size and the
 *   superblock's as the open starts. `total` is the same in every call of one open and `done`
 *   never passes it; the last call, when the store is open, has `done === total` (recovery
 *   reads a little less or more than that). A store with nothing to read (a new one) reports
 *   nothing, as `setMany` of no entries does, so `done / total` is never 0 / 0.
 *
 * The callback runs every `PROGRESS_EVERY` entries or `PROGRESS_BYTES` bytes, not per item, so
 * it costs nothing measurable. It must not call into adaptree (that throws ReentrancyError).
 * If it throws, the work stops with an `AbortedError` whose `cause` is the callback's error,
 * and nothing has changed: setMany writes nothing (the map or store is as it was), an open
 * leaves the store closed and unlocked and its files as they were (recovery is redone at the
 * next open). Throwing is thus also the way to cancel.
 */
import { AbortedError, InvalidArgumentError } from './errors.js';

export type ProgressPhase = 'bulk-load' | 'open';

export interface Progress {
  readonly phase: ProgressPhase;
  /** Units done: entries (bulk-load) or bytes (open). */
  readonly done: number;
  /** Units in all: the same in every call of one piece of work, and never 0 (work with nothing
   * to do reports nothing). The last call has done === total. */
  readonly total: number;
}

export type ProgressCallback = (p: Progress) => void;

/** Entries between two reports of a bulk load. */
export const PROGRESS_EVERY = 1 << 16;
/** Bytes between two reports of an open. */
export const PROGRESS_BYTES = 1 << 20;

/** Calls `cb`; an exception from it becomes an AbortedError (the callback's error as cause). */
export function report(cb: ProgressCallback, phase: ProgressPhase, done: number, total: number): void {
  try {
    cb({ phase, done, total });
  } catch (e) {
    throw new AbortedError(`${phase}: stopped by the onProgress callback (${e instanceof Error ? e.message : String(e)})`, { cause: e });
  }
}

/** Checks an `onProgress` option: undefined or a function. */
/** A batch call's options object (`{ onProgress? }`): its callback. Another field (a misspelt
 * `onprogress`) is InvalidArgumentError: it was taken silently, and no progress came. */
export function batchOptions(options: unknown, what: string): ProgressCallback | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`${what}: options must be an object { onProgress? }`);
  for (const k of Object.keys(options)) {
    if (k !== 'onProgress') throw new InvalidArgumentError(`${what}: unknown option '${k}' (onProgress)`);
  }
  return progressOption((options as { onProgress?: unknown }).onProgress, what);
}

export function progressOption(v: unknown, what: string): ProgressCallback | undefined {
  if (v === undefined || typeof v === 'function') return v as ProgressCallback | undefined;
  throw new InvalidArgumentError(`${what}: onProgress must be a function`);
}
