/**
 * The names of a store's files on file systems (node, deno, opfs): the data file `path`, the
 * log `path-log`, and (node, deno) the lock `path-lock`.
 */
import { InvalidArgumentError } from '../errors.js';
import type { SyncFile } from './types.js';

/**
 * A store's log is `path-log` and (Node, Deno) its lock `path-lock`: names another store's data
 * file can have. Opening `a` beside a store `a-log` wrote a's log over a-log's data (a new-user
 * probe, session 23: its 2000 entries gone); beside a store `a-lock`, its data file was taken
 * for a stale lock and removed. A store `X` has its log `X-log` beside it, so `a-log-log`
 * (or `a-lock-log`) means `a-log` (`a-lock`) is a store: refused, nothing touched.
 */
export function refuseNamesOfAnotherStore(abs: string, stat: (path: string) => unknown): void {
  const exists = (p: string): boolean => {
    try {
      stat(p); // (throws when there is no such file, or it cannot be looked at)
      return true;
    } catch {
      return false;
    }
  };
  for (const suffix of ['-log', '-lock']) {
    if (exists(`${abs}${suffix}-log`)) {
      throw new InvalidArgumentError(
        `cannot open the store '${abs}': '${abs}${suffix}', which it would use as its ${suffix === '-log' ? 'log' : 'lock file'}, is the data file of another store (its log '${abs}${suffix}-log' is beside it); give one of the two stores another name`,
      );
    }
  }
}

/**
 * A reader's log where the store has none: a store closed cleanly keeps only a log header, so a
 * copy of its data file alone (a typical backup) is the whole store, and the writer opens it
 * (creating a new log). The reader, which creates nothing, reads it with this empty log (it
 * said "no store at ... (create: false)", session 25). The core writes nothing through a
 * reader's files; these throw if it ever did.
 */
export function absentLog(): SyncFile {
  const refuse = (): never => {
    throw new Error('a reader has no log file to write');
  };
  return { read: () => 0, write: refuse, sync: () => {}, size: () => 0, truncate: refuse };
}

/** Errors of a store whose files lost their names while it was open (node, deno): a commit or
 * a checkpoint that meets one fails, and close() rejects with it rather than only telling
 * onError (a checkpoint's failure otherwise loses nothing: here what the log held is gone). */
const gone = new WeakSet<object>();

export function filesGone<E extends object>(e: E): E {
  gone.add(e);
  return e;
}

export function isFilesGone(e: unknown): boolean {
  return typeof e === 'object' && e !== null && gone.has(e);
}
