// A Worker with a SQLite-backed Durable Object that holds a BTreeStore on the
// durable-object backend (bundled into one module by durable-object.test.ts).
// The Worker routes every request to the object named by ?obj= (default 'a').
// Object routes (JSON in, JSON out):
//   POST /apply   { ops: [[key, value | null], ...], commit: boolean }  set/delete, then commit if asked
//   GET  /entries                all entries of the store, in key order
//   GET  /second-open            opens the same path again: { name, code } of the error
//   GET  /stats                  store stats and the object's SQLite database size
//   POST /close                  closes the store (the next request reopens it)
//   POST /big     { key, n, commit } sets key to a string of n characters (a pattern), commits if asked
//   GET  /value?key=K            { length, sum } of K's string value (null when absent), after checkInvariants
//   POST /quota                  caps the database just above its size, writes until a commit
//                 fails, reports the errors (if the runtime has not reset the object by then)
//   POST /delete-all             ctx.storage.deleteAll() under the open store, then another
//                 store opened in the object (it makes the tables anew), then a write and a
//                 commit of the first: { commit: the commit's code or 'resolved', size }
import { DurableObject } from 'cloudflare:workers';
import wasmModule from './adaptree-st.wasm';
import { BTreeStore, durableObjectStorage, init } from '../../../dist/index.js';
import { bigString, stringSum } from './durable-object-common.mjs';

const PATH = 'main';
let wasmReady;
const wasm = () => (wasmReady ??= init({ wasm: wasmModule }));

export class IndexObject extends DurableObject {
  /** @type {Promise<import('../../../dist/index.js').BTreeStore<string, number>> | undefined} */
  store;

  open() {
    // blockConcurrencyWhile: no other request runs in the object until the store is open.
    this.store ??= this.ctx.blockConcurrencyWhile(async () => {
      return BTreeStore.open({ path: PATH, storage: durableObjectStorage(this.ctx.storage), wasm: await wasm(), poolSize: 1 << 20 });
    });
    return this.store;
  }

  async fetch(request) {
    try {
      const url = new URL(request.url);
      const s = await this.open();
      switch (url.pathname) {
        case '/apply': {
          const { ops, commit } = await request.json();
          for (const [k, v] of ops) {
            if (v === null) s.delete(k);
            else s.set(k, v);
          }
          if (commit) await s.commit();
          return Response.json({ size: s.size, uncommittedWrites: s.stats().uncommittedWrites });
        }
        case '/entries':
          s.checkInvariants();
          return Response.json([...s.entries()]);
        case '/second-open':
          try {
            await BTreeStore.open({ path: PATH, storage: durableObjectStorage(this.ctx.storage), wasm: await wasm() });
            return Response.json({ opened: true });
          } catch (e) {
            return Response.json({ name: e?.name, code: e?.code, message: String(e?.message) });
          }
        case '/stats': {
          const st = s.stats();
          return Response.json({ ...st, databaseSize: this.ctx.storage.sql.databaseSize });
        }
        case '/quota': {
          // Caps the database just above its size (sql.setMaxPageCountForTest: the
          // `experimental` flag) and writes until a commit fails.
          const sql = this.ctx.storage.sql;
          if (typeof sql.setMaxPageCountForTest !== 'function') return Response.json({ unsupported: true });
          sql.setMaxPageCountForTest(Math.ceil(sql.databaseSize / 4096) + 8);
          const out = {};
          try {
            for (let i = 0; i < 20000; i++) s.set(`z${String(i).padStart(6, '0')}`, 'x'.repeat(200));
            await s.commit();
            out.committed = true;
          } catch (e) {
            out.commitError = { name: e?.name, code: e?.code, message: String(e?.message) };
            // workerd resets an object whose SQL hit SQLITE_FULL, so this response may never
            // leave: the log line is how the test sees what the commit threw.
            console.log(`adaptree-quota-error ${JSON.stringify({ name: e?.name, code: e?.code, cause: String(e?.cause?.message ?? '') })}`);
          }
          try {
            s.set('after', 1);
          } catch (e) {
            out.writeError = { name: e?.name, code: e?.code };
          }
          sql.setMaxPageCountForTest(1 << 30);
          return Response.json(out);
        }
        case '/big': {
          const { key, n, commit } = await request.json();
          s.set(key, bigString(n));
          if (commit) await s.commit();
          return Response.json({ size: s.size });
        }
        case '/value': {
          s.checkInvariants();
          const v = s.get(url.searchParams.get('key'));
          return Response.json(typeof v === 'string' ? { length: v.length, sum: stringSum(v) } : null);
        }
        case '/delete-all': {
          s.set('before', 1);
          await s.commit();
          await this.ctx.storage.deleteAll();
          const other = await BTreeStore.open({ path: 'other', storage: durableObjectStorage(this.ctx.storage), wasm: await wasm() });
          other.set('o', 1);
          await other.close();
          s.set('x', 1);
          let commit = 'resolved';
          try {
            await s.commit();
          } catch (e) {
            commit = e?.code;
          }
          return Response.json({ commit, size: s.size });
        }
        case '/close':
          this.store = undefined;
          await s.close();
          return Response.json({ closed: true });
        default:
          return new Response('not found', { status: 404 });
      }
    } catch (e) {
      return new Response(String(e && e.stack ? e.stack : e), { status: 500 });
    }
  }
}

export { router as default } from './durable-object-common.mjs';
