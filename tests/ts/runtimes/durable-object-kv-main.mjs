// A Worker with a key-value-backed Durable Object (no SQLite) that holds a BTreeStore on the
// asynchronous durableObjectKvStorage backend (bundled into one module by
// durable-object-kv.test.ts). The Worker routes every request to the object named by ?obj=
// (default 'a'); ?path= names the store in it (default 'main').
// Object routes (JSON in, JSON out):
//   POST /apply   { ops: [[key, value | null], ...], commit: boolean }  set/delete (async twins), then commit if asked
//   GET  /entries                all entries of the store, in key order (after checkInvariantsAsync)
//   GET  /second-open            opens the same path again: { name, code } of the error
//   GET  /read-only              opens the store readOnly: { entries, write: the code of a write } or { code }
//   GET  /sql-backend            durableObjectStorage (the SQLite backend) on this object: { name, code, message }
//   GET  /stats                  store stats
//   POST /close                  closes the store (the next request reopens it)
//   GET  /stores                 the backend's list()
//   POST /remove                 closes the store and removes it (backend remove())
//   POST /big     { key, n, commit } sets key to a string of n characters (a pattern), commits if asked
//   GET  /value?key=K            { length, sum } of K's string value (null when absent)
//   GET  /page-keys              how many keys the store's pages take in the object's storage
//   POST /delete-all             ctx.storage.deleteAll() under the open store, then a write and a
//                 commit: { commit: the commit's code or 'resolved' }
import { DurableObject } from 'cloudflare:workers';
import wasmModule from './adaptree-st.wasm';
import { BTreeStore, durableObjectKvStorage, durableObjectStorage, init } from '../../../dist/index.js';
import { bigString, stringSum } from './durable-object-common.mjs';

let wasmReady;
const wasm = () => (wasmReady ??= init({ wasm: wasmModule }));

export class KvIndexObject extends DurableObject {
  /** Open stores by path. */
  stores = new Map();

  open(path) {
    let s = this.stores.get(path);
    if (s === undefined) {
      // blockConcurrencyWhile: no other request runs in the object until the store is open.
      s = this.ctx.blockConcurrencyWhile(async () =>
        BTreeStore.open({ path, storage: durableObjectKvStorage(this.ctx.storage), wasm: await wasm(), poolSize: 1 << 20 }),
      );
      this.stores.set(path, s);
    }
    return s;
  }

  async fetch(request) {
    try {
      const url = new URL(request.url);
      const path = url.searchParams.get('path') ?? 'main';
      if (url.pathname === '/page-keys') {
        // (the backend's keys: 'adaptree:' + the path + ':' + the page id)
        const prefix = `adaptree:${encodeURIComponent(path)}:`;
        let n = 0, start;
        for (;;) {
          const got = await this.ctx.storage.list({ prefix, limit: 1000, ...(start !== undefined ? { start } : {}) });
          const keys = [...got.keys()].filter((k) => k !== start);
          n += keys.length;
          if (keys.length === 0) break;
          start = keys[keys.length - 1];
        }
        return Response.json(n);
      }
      if (url.pathname === '/stores') return Response.json((await durableObjectKvStorage(this.ctx.storage).list()).sort());
      if (url.pathname === '/sql-backend') {
        try {
          await BTreeStore.open({ path: 'sql', storage: durableObjectStorage(this.ctx.storage), wasm: await wasm() });
          return Response.json({ opened: true });
        } catch (e) {
          return Response.json({ name: e?.name, code: e?.code, message: String(e?.message) });
        }
      }
      if (url.pathname === '/read-only') {
        // A reader of the store (the writer, if open here, holds the lock: LOCKED).
        try {
          const r = await BTreeStore.open({ path, storage: durableObjectKvStorage(this.ctx.storage), wasm: await wasm(), readOnly: true, poolSize: 1 << 20 });
          const out = [];
          for await (const e of r.entriesAsync()) out.push(e);
          let write = '';
          await r.setAsync('x', 1).catch((e) => (write = e?.code));
          await r.close();
          return Response.json({ entries: out, write });
        } catch (e) {
          return Response.json({ code: e?.code });
        }
      }
      const s = await this.open(path);
      switch (url.pathname) {
        case '/apply': {
          const { ops, commit } = await request.json();
          for (const [k, v] of ops) {
            if (v === null) await s.deleteAsync(k);
            else await s.setAsync(k, v);
          }
          if (commit) await s.commit();
          return Response.json({ size: s.size, uncommittedWrites: s.stats().uncommittedWrites });
        }
        case '/entries': {
          await s.checkInvariantsAsync();
          const out = [];
          for await (const e of s.entriesAsync()) out.push(e);
          return Response.json(out);
        }
        case '/second-open':
          try {
            await BTreeStore.open({ path, storage: durableObjectKvStorage(this.ctx.storage), wasm: await wasm() });
            return Response.json({ opened: true });
          } catch (e) {
            return Response.json({ name: e?.name, code: e?.code, message: String(e?.message) });
          }
        case '/stats':
          return Response.json(s.stats());
        case '/big': {
          const { key, n, commit } = await request.json();
          await s.setAsync(key, bigString(n));
          if (commit) await s.commit();
          return Response.json({ size: s.size });
        }
        case '/value': {
          await s.checkInvariantsAsync();
          const v = await s.getAsync(url.searchParams.get('key'));
          return Response.json(typeof v === 'string' ? { length: v.length, sum: stringSum(v) } : null);
        }
        case '/delete-all': {
          await s.setAsync('before', 1);
          await s.commit();
          await this.ctx.storage.deleteAll();
          await s.setAsync('x', 1);
          let commit = 'resolved';
          try {
            await s.commit();
          } catch (e) {
            commit = e?.code;
          }
          return Response.json({ commit });
        }
        case '/close':
        case '/remove':
          this.stores.delete(path);
          await s.close();
          if (url.pathname === '/remove') await durableObjectKvStorage(this.ctx.storage).remove(path);
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
