// The packed tarball in a Cloudflare Worker under workerd (the npm `workerd` binary): a fresh
// project installs the tarball and `events` (abstract-level's one Node dependency), a worker
// imports the package by name, with the wasm as a module the way Workers require
// (`import mod from 'adaptree/wasm/adaptree-st.wasm'`, then `init({ wasm: mod })`), is bundled
// the way wrangler does it (conditions workerd/worker/browser; `.wasm` imports resolved through
// the package's exports map, then left as modules of their own beside the bundle), and answers
// a request with the scenario's results (common.mjs): the same as in Node.
// Then a SQLite-backed Durable Object (enableSql, storage in a local directory) of the same
// worker opens a BTreeStore and an adaptree/level on its storage (durableObjectStorage, from
// the package's exports), writes and commits; workerd is stopped (SIGTERM, then SIGKILL) and
// restarted on the same directory, and the object reopens both with the data in place.
// Needs dist/ built.   node tests/package/e2e-workerd.mjs [--keep]
import { copyFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { EXPECTED, cleanup, expect, failures, freePort, lockedVersion, packAndInstall, same } from './common.mjs';
import { startWorkerd, writeWorkerdConfig } from '../ts/runtimes/workerd.mjs';

const WORKER = `import { DurableObject } from 'cloudflare:workers';
import { BTreeStore, durableObjectStorage, init } from 'adaptree';
import { AdaptreeLevel } from 'adaptree/level';
import { scenario } from './scenario.mjs';
import mod from 'adaptree/wasm/adaptree-st.wasm';

const N = 3000;
const key = (i) => 'k' + String(i).padStart(5, '0');

// One object of the namespace: a BTreeStore at 'main' and a level at 'level', both in the
// object's SQLite storage. POST /do/write writes and commits them (no close: the next
// start replays the log); GET /do/read reopens and reads them back.
export class StoreObject extends DurableObject {
  async fetch(request) {
    try {
      const wasm = await init({ wasm: mod });
      const storage = durableObjectStorage(this.ctx.storage);
      const write = new URL(request.url).pathname === '/do/write';
      const out = {};
      const store = await this.ctx.blockConcurrencyWhile(() => (this.store ??= BTreeStore.open({ path: 'main', storage, wasm, poolSize: 1 << 20 })));
      if (write) {
        for (let i = 0; i < N; i++) store.set(key(i), { i });
        store.delete(key(7));
        await store.commit();
        store.set('uncommitted', true);
      }
      store.checkInvariants();
      out.size = store.size;
      out.first = store.first();
      out.last = store.last();
      out.deleted = store.has(key(7));
      out.uncommitted = store.has('uncommitted');
      out.storage = store.stats().storage;
      const db = (this.db ??= new AdaptreeLevel({ location: 'level', storage, valueEncoding: 'json' }));
      if (write) await db.batch([{ type: 'put', key: 'a', value: { n: 1 } }, { type: 'put', key: 'b', value: [2] }]);
      out.level = await db.iterator().all();
      out.levelPermanence = db.supports.permanence;
      return Response.json(out);
    } catch (e) {
      return new Response(String(e && e.stack ? e.stack : e), { status: 500 });
    }
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/do/')) return env.STORE.get(env.STORE.idFromName('one')).fetch(request);
    if (url.pathname !== '/') return new Response('not found', { status: 404 });
    try {
      const result = await scenario({ wasm: mod });
      result.wasmIsModule = mod instanceof WebAssembly.Module;
      return Response.json(result);
    } catch (e) {
      return new Response(String(e && e.stack ? e.stack : e), { status: 500 });
    }
  },
};
`;

/** What /do/write answers, and /do/read after a restart (the uncommitted key gone). */
const durable = (uncommitted) => ({
  size: 2999 + (uncommitted ? 1 : 0),
  first: ['k00000', { i: 0 }],
  last: uncommitted ? ['uncommitted', true] : ['k02999', { i: 2999 }],
  deleted: false,
  uncommitted,
  storage: 'durable-object',
  level: [['a', { n: 1 }], ['b', [2]]],
  levelPermanence: true,
});

let dir = '';
let workerd;
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
try {
  const p = packAndInstall([`events@${lockedVersion('events')}`], 'e2e-workerd');
  dir = p.dir;
  console.log(`     (packed and installed in ${secs()} s)`);
  writeFileSync(join(p.app, 'worker.mjs'), WORKER);

  // Bundle as wrangler would (one ES module; wasm modules stay separate, named relative to it).
  const out = join(p.dir, 'out');
  const wasmModules = [];
  const { rolldown } = await import('rolldown');
  const bundle = await rolldown({
    input: join(p.app, 'worker.mjs'),
    platform: 'neutral',
    external: [/^cloudflare:/],
    resolve: { conditionNames: ['workerd', 'worker', 'browser', 'import', 'default'], mainFields: ['browser', 'module', 'main'] },
    logLevel: 'silent',
    plugins: [{
      name: 'wasm-modules',
      async resolveId(source, importer) {
        if (!source.endsWith('.wasm')) return null;
        const r = await this.resolve(source, importer, { skipSelf: true });
        if (!r) throw new Error(`cannot resolve ${source} from ${importer}`);
        const name = basename(r.id);
        wasmModules.push({ name, from: r.id, source });
        return { id: `./${name}`, external: true };
      },
    }],
  });
  await bundle.write({ file: join(out, 'worker.mjs'), format: 'es' });
  await bundle.close();
  for (const m of wasmModules) copyFileSync(m.from, join(out, m.name));
  expect(wasmModules.length === 1 && wasmModules[0].from.includes(join('node_modules', 'adaptree', 'dist', 'wasm')),
    `'adaptree/wasm/adaptree-st.wasm' resolves through the exports map to the installed file (${wasmModules.map((m) => m.from).join(' ')})`);

  const port = await freePort();
  const config = {
    port,
    modules: ['worker.mjs', ...wasmModules.map((m) => m.name)],
    durableObject: { className: 'StoreObject', binding: 'STORE', uniqueKey: 'adaptree-e2e-workerd', storage: join(out, 'do-storage') },
  };
  writeWorkerdConfig(out, config);
  const url = `http://127.0.0.1:${port}/`;
  workerd = await startWorkerd(out, port, { probe: '/nothing' });
  console.log(`     (workerd up in ${secs()} s)`);

  const res = await fetch(url);
  const text = await res.text();
  expect(res.status === 200, `workerd answered ${res.status}${res.status === 200 ? '' : ': ' + text}`);
  const { wasmIsModule, ...result } = JSON.parse(text);
  expect(wasmIsModule === true, 'the wasm import arrived as a precompiled WebAssembly.Module');
  expect(same(result, EXPECTED), `workerd: scenario from the installed package ${JSON.stringify(result)}`);

  // The Durable Object: write and commit, restart workerd on the same storage directory, read.
  const call = async (path, init) => {
    const r = await fetch(url + path, init);
    const t = await r.text();
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${t}\n${workerd.log()}`);
    return JSON.parse(t);
  };
  const written = await call('do/write', { method: 'POST' });
  expect(same(written, durable(true)), `durable object: BTreeStore and adaptree/level on its SQLite storage, written and committed ${JSON.stringify(written)}`);
  for (const signal of ['SIGTERM', 'SIGKILL']) {
    await workerd.stop(signal);
    workerd = await startWorkerd(out, port, { probe: '/nothing' });
    const read = await call('do/read');
    expect(same(read, durable(false)), `durable object after ${signal} and a restart of workerd: the committed data, the uncommitted write gone ${JSON.stringify(read)}`);
  }
} catch (e) {
  expect(false, `${e.message}\n${e.stderr ?? ''}\n${workerd?.log() ?? ''}`);
} finally {
  await workerd?.stop('SIGKILL');
  cleanup(dir);
}
console.log(`     (${secs()} s)`);
if (failures()) process.exit(1);
