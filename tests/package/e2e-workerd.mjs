// The packed tarball in a Cloudflare Worker under workerd (the npm `workerd` binary): a fresh
// project installs the tarball and `events` (abstract-level's one Node dependency), a worker
// imports the package by name, with the wasm as a module the way Workers require
// (`import mod from 'adaptree/wasm/adaptree-st.wasm'`, then `init({ wasm: mod })`), is bundled
// the way wrangler does it (conditions workerd/worker/browser; `.wasm` imports resolved through
// the package's exports map, then left as modules of their own beside the bundle), and answers
// a request with the scenario's results (common.mjs): the same as in Node.
// Needs dist/ built.   node tests/package/e2e-workerd.mjs [--keep]
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { EXPECTED, cleanup, expect, failures, freePort, lockedVersion, packAndInstall, root, same, waitForServer } from './common.mjs';

const WORKER = `import { scenario } from './scenario.mjs';
import mod from 'adaptree/wasm/adaptree-st.wasm';

export default {
  async fetch() {
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

let dir = '';
let proc;
let log = '';
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
try {
  const workerd = join(root, 'node_modules/.bin/workerd');
  if (!existsSync(workerd)) throw new Error('node_modules/.bin/workerd is missing (npm devDependency workerd)');
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
  writeFileSync(join(out, 'config.capnp'), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "worker.mjs"),
${wasmModules.map((m) => `    (name = "${m.name}", wasm = embed "${m.name}"),`).join('\n')}
  ],
  compatibilityDate = "2025-06-01",
);
`);
  proc = spawn(workerd, ['serve', join(out, 'config.capnp')], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d) => (log += d));
  proc.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}/`;
  await waitForServer(url, proc, () => log);
  console.log(`     (workerd up in ${secs()} s)`);

  const res = await fetch(url);
  const text = await res.text();
  expect(res.status === 200, `workerd answered ${res.status}${res.status === 200 ? '' : ': ' + text}`);
  const { wasmIsModule, ...result } = JSON.parse(text);
  expect(wasmIsModule === true, 'the wasm import arrived as a precompiled WebAssembly.Module');
  expect(same(result, EXPECTED), `workerd: scenario from the installed package ${JSON.stringify(result)}`);
} catch (e) {
  expect(false, `${e.message}\n${e.stderr ?? ''}\n${log}`);
} finally {
  if (proc && proc.exitCode === null) proc.kill();
  cleanup(dir);
}
console.log(`     (${secs()} s)`);
if (failures()) process.exit(1);
