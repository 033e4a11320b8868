// An opfs store shared between dedicated workers (BTreeStore#share / attach, docs/THREADS.md,
// "Stores") in headless Chromium, with tabs of one profile: what happens to the store when
// its owner's worker goes away or closes it while another worker is attached.
// Needs the built package (dist/ with its wasm): scripts/build.sh wasm && scripts/build.sh ts.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { browserOnFixture, fixtureTab } from './browser-harness.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
type Answer = { done?: unknown; threw?: { name: string; code?: string; message: string } };
declare const mkWorker: () => Promise<number>;
declare const wrun: (i: number, code: string, data?: unknown) => Promise<Answer>;
declare const wkill: (i: number) => void;

describe('an opfs store shared between workers (Chromium)', () => {
  const browser = browserOnFixture(repo, '/tests/ts/runtimes/opfs-shared/', 'opfs-shared');
  const errors: string[] = [];

  const tab = (): Promise<Page> => fixtureTab(browser, errors);
  const worker = (page: Page) => page.evaluate(() => mkWorker());
  const run = (page: Page, i: number, code: string, data?: unknown) => page.evaluate(([i, code, data]) => wrun(i as number, code as string, data), [i, code, data] as const);
  /** Opens the store `path` in worker i on the mt build, writes 'base', shares it, and attaches
   * it in worker j, which writes 'b' and commits. */
  async function ownerAndPeer(page: Page, path: string): Promise<[number, number]> {
    const a = await worker(page), b = await worker(page);
    const opened = await run(page, a, `await A.init({ threads: true }); G.s = await A.BTreeStore.open({ path: data }); G.s.set('base', 1); await G.s.commit(); return 'opened'`, path);
    expect(opened.done).toBe('opened');
    const attached = await attachIn(page, a, b, `G.s = await A.BTreeStore.attach(data); G.s.set('b', 1); await G.s.commit(); return G.s.size`);
    expect(attached).toEqual({ done: 2 });
    return [a, b];
  }
  /** Worker a shares its store G.s (in the page: the handle holds a module and shared memory)
   * and worker b runs `code` with the handle as `data`, after init({ threads: true }).
   * 'keep': the handle is kept in the page (window[slot]) and b runs nothing; 'use': b gets
   * the kept handle. */
  function attachIn(page: Page, a: number, b: number, code: string, keep?: 'keep' | 'use', slot = 'kept'): Promise<Answer> {
    return page.evaluate(async ([a, b, code, keep, slot]) => {
      const kept = globalThis as unknown as Record<string, unknown>;
      const h = keep === 'use' ? kept[slot as string] : (await wrun(a as number, 'return G.s.share()')).done;
      if (keep === 'keep') {
        kept[slot as string] = h;
        return { done: 'kept' };
      }
      return wrun(b as number, `await A.init({ threads: true }); ${code as string}`, h);
    }, [a, b, code, keep, slot] as const);
  }

  // A new-user probe (session 25): the owner's Web Lock went with its terminated worker while
  // the attached worker's 'readwrite-unsafe' handles wrote on; a worker in another tab opened
  // the store as a second writer, both committed in turns, and every key the attached worker
  // committed was gone after a reopen. (Node keeps such a store locked: LockedError.)
  it('an owner worker terminated while another is attached: other opens are LOCKED until the attached worker closes; nothing it committed is lost', async () => {
    const t1 = await tab(), t2 = await tab();
    const [a, b] = await ownerAndPeer(t1, 'own/s');
    // A handle made before the owner ends, attached after: refused (its owner is gone).
    await attachIn(t1, a, -1, '', 'keep');
    await attachIn(t1, a, -1, '', 'keep', 'kept2');
    await t1.evaluate((a) => wkill(a), a);
    const c = await worker(t2);
    const open = await run(t2, c, `await A.init(); const t0 = Date.now(); try { await A.BTreeStore.open({ path: 'own/s' }); return ['opened a second writer'] } catch (e) { return [e.code, Date.now() - t0] }`);
    expect((open.done as unknown[])[0]).toBe('LOCKED');
    expect(await run(t2, c, `try { await A.BTreeStore.open({ path: 'own/s', readOnly: true }); return 'opened' } catch (e) { return e.code }`)).toEqual({ done: 'LOCKED' });
    const b2 = await worker(t1);
    expect((await attachIn(t1, a, b2, `await A.BTreeStore.attach(data); return 'attached'`, 'use')).threw?.code).toBe('CLOSED');
    // The same where the lock manager has no query() (it is optional): the check asks for the
    // owner's lock instead (it was skipped, and the attach went through).
    const b3 = await worker(t1);
    const noQuery = await attachIn(t1, a, b3, `delete LockManager.prototype.query; await A.BTreeStore.attach(data); return 'attached'`, 'use', 'kept2');
    expect(noQuery.threw?.code, noQuery.threw?.message).toBe('CLOSED');
    // The attached worker goes on alone; an open that waits gets the store once it closed.
    expect(await run(t1, b, `for (let i = 0; i < 2000; i++) G.s.set('k' + String(i).padStart(5, '0'), 'b'.repeat(200)); await G.s.commit(); return G.s.size`)).toEqual({ done: 2002 });
    const waiting = run(t2, c, `G.w = await A.BTreeStore.open({ path: 'own/s', wait: true }); return G.w.size`);
    let settled = false;
    void waiting.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    expect(await run(t1, b, `await G.s.close(); return 'closed'`)).toEqual({ done: 'closed' });
    expect(await waiting).toEqual({ done: 2002 });
    expect(await run(t2, c, `const r = [G.w.get('base'), G.w.get('b'), G.w.get('k01999')?.length]; await G.w.close(); return r`)).toEqual({ done: [1, 1, 200] });
    await t1.close();
    await t2.close();
    expect(errors).toEqual([]);
  }, 120_000);

  // The same probe: after the owner's close() the attached store said closed but kept its
  // access handles until its own close(): a reader in another tab failed after 1.3 s with
  // LockedError ("its file 's' has an open access handle").
  it("the owner closes while another worker is attached and idle: a reader in another tab opens at once", async () => {
    const t1 = await tab(), t2 = await tab();
    const [a, b] = await ownerAndPeer(t1, 'closes/s');
    expect(await run(t1, a, `await G.s.close(); return 'closed'`)).toEqual({ done: 'closed' });
    const c = await worker(t2);
    const read = await run(t2, c, `await A.init(); const t0 = Date.now(); const r = await A.BTreeStore.open({ path: 'closes/s', readOnly: true }); const got = [r.size, r.get('b'), Date.now() - t0]; await r.close(); return got`);
    expect(read.threw).toBeUndefined();
    const [size, value, ms] = read.done as number[];
    expect([size, value]).toEqual([2, 1]);
    expect(ms).toBeLessThan(1000);
    expect(await run(t1, b, `const s = G.s.closed; let e; try { G.s.set('x', 1) } catch (x) { e = x.code } await G.s.close(); return [s, e]`)).toEqual({ done: [true, 'CLOSED'] });
    await t1.close();
    await t2.close();
    expect(errors).toEqual([]);
  }, 120_000);

  // The opfsshared probe (session 37): a reader's share() said the files "cannot be reached from
  // other workers", where the docs said an attached store of a reader is a reader. An opfs
  // reader's 'read-only' handles are its own: share() says so, and a reader in another worker
  // opens beside it, as the message advises.
  it("an opfs reader cannot be shared, and says so; a reader in another worker opens beside it", async () => {
    const t1 = await tab();
    const a = await worker(t1), b = await worker(t1);
    expect(await run(t1, a, `await A.init({ threads: true }); const w = await A.BTreeStore.open({ path: 'reader/s' }); w.set('k', 1); await w.close(); G.r = await A.BTreeStore.open({ path: 'reader/s', readOnly: true }); try { G.r.share(); return 'shared' } catch (e) { return [e.name, e.code, e.message] }`)).toEqual({
      done: ['ThreadsUnsupportedError', 'THREADS_UNSUPPORTED', expect.stringMatching(/an 'opfs' reader cannot be shared .*open a reader \(readOnly: true\) in each worker/)],
    });
    expect(await run(t1, b, `await A.init({ threads: true }); const r = await A.BTreeStore.open({ path: 'reader/s', readOnly: true }); const got = r.get('k'); await r.close(); return got`)).toEqual({ done: 1 });
    expect(await run(t1, a, `const got = G.r.get('k'); await G.r.close(); return got`)).toEqual({ done: 1 });
    await t1.close();
    expect(errors).toEqual([]);
  }, 120_000);
});
