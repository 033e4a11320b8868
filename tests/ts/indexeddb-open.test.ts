// The indexeddb backend's open against a stub IDBFactory (no browser needed): an open that another
// connection blocks rejects, and when that connection lets go later its request goes on; what it
// then opens must be undone (the upgrade aborted, or the connection closed), or the database keeps
// a connection nobody owns and a later deleteDatabase of it waits for good (the tabs probe,
// session 34; in Chromium the leak showed only until that connection was garbage-collected, so
// the real-browser test in runtimes/indexeddb.test.ts cannot always tell).
import { afterEach, describe, expect, it } from 'vitest';
import { indexedDBStorage } from '../../ts/src/storage/indexeddb.js';

interface StubRequest {
  result: unknown;
  error: unknown;
  transaction: { abort(): void } | null;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
  onblocked: (() => void) | null;
  onupgradeneeded: ((ev: { oldVersion: number }) => void) | null;
}

const g = globalThis as { indexedDB?: unknown };
afterEach(() => {
  delete g.indexedDB;
});

function stubFactory() {
  const requests: StubRequest[] = [];
  g.indexedDB = {
    open(): StubRequest {
      const r: StubRequest = { result: undefined, error: undefined, transaction: null, onsuccess: null, onerror: null, onblocked: null, onupgradeneeded: null };
      requests.push(r);
      return r;
    },
  };
  return requests;
}

describe('indexeddb open blocked by another connection', () => {
  it('rejects with IoError, and the connection the request opens once unblocked is closed', async () => {
    const requests = stubFactory();
    const opening = indexedDBStorage().open('p', { create: true });
    await new Promise((r) => setTimeout(r, 0));
    const req = requests[0]!;
    req.onblocked!();
    await expect(opening).rejects.toMatchObject({ code: 'IO_ERROR', message: expect.stringMatching(/blocks the upgrade/) });
    // The other connection lets go: the upgrade runs, then the request succeeds.
    let aborted = false, closed = false;
    req.transaction = { abort: () => (aborted = true) };
    req.result = { close: () => (closed = true), objectStoreNames: { contains: () => false }, createObjectStore: () => { throw new Error('no upgrade after giving up'); } };
    req.onupgradeneeded!({ oldVersion: 1 });
    expect(aborted).toBe(true);
    req.onsuccess!(); // (had the abort not taken)
    expect(closed).toBe(true);
  });
});
