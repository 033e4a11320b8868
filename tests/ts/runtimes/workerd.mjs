// Shared by the workerd tests (runtimes.test.ts, durable-object.test.ts and the tarball's
// tests/package/e2e-workerd.mjs): the capnp config of a one-Worker server, and starting and
// stopping the npm `workerd` binary on it.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The npm devDependency's binary. */
export const WORKERD = join(repo, 'node_modules/.bin/workerd');

/**
 * The capnp config of a server with one Worker (service "main") listening on 127.0.0.1:port.
 * `modules`: file names beside the config, the first the entry; `.wasm` files become wasm
 * modules, the rest ES modules. `durableObject` ({ className, binding, uniqueKey, storage, sql }):
 * a SQLite-backed namespace (enableSql; `sql: false`: a key-value-backed one) bound as
 * `binding`, stored in the directory `storage` (localDisk). `experimental`: the `experimental` compatibility flag (workerd then needs
 * `serve --experimental`).
 */
export function workerdConfig({ port, modules, durableObject, experimental = false }) {
  const mods = modules.map((m) => `    (name = "${m}", ${m.endsWith('.wasm') ? 'wasm' : 'esModule'} = embed "${m}"),`);
  const disk = durableObject ? `\n    (name = "do-storage", disk = (path = "${durableObject.storage}", writable = true)),` : '';
  const flags = experimental ? '\n  compatibilityFlags = ["experimental"],' : '';
  const dobj = durableObject
    ? `
  durableObjectNamespaces = [ (className = "${durableObject.className}", uniqueKey = "${durableObject.uniqueKey}", enableSql = ${durableObject.sql !== false}) ],
  durableObjectStorage = (localDisk = "do-storage"),
  bindings = [ (name = "${durableObject.binding}", durableObjectNamespace = "${durableObject.className}") ],`
    : '';
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),${disk}
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [
${mods.join('\n')}
  ],
  compatibilityDate = "2025-06-01",${flags}${dobj}
);
`;
}

/** Writes `workerdConfig(options)` to `dir`/config.capnp (making the storage directory). */
export function writeWorkerdConfig(dir, options) {
  if (options.durableObject) mkdirSync(options.durableObject.storage, { recursive: true });
  const path = join(dir, 'config.capnp');
  writeFileSync(path, workerdConfig(options));
  return path;
}

/**
 * Starts workerd on `dir`/config.capnp and waits until 127.0.0.1:port`probe` answers (any status).
 * Returns { proc, log(), stop(signal) }; stop resolves once the process has exited.
 */
export async function startWorkerd(dir, port, { experimental = false, seconds = 30, probe = '/' } = {}) {
  if (!existsSync(WORKERD)) throw new Error(`${WORKERD} is missing (npm devDependency workerd)`);
  const args = ['serve', ...(experimental ? ['--experimental'] : []), join(dir, 'config.capnp')];
  const proc = spawn(WORKERD, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const handle = {
    proc,
    log: () => out,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill(signal);
      await exited;
    },
  };
  for (let i = 0; i < seconds * 10; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}${probe}`);
      return handle;
    } catch {
      if (proc.exitCode !== null) throw new Error(`workerd exited (${proc.exitCode}): ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await handle.stop('SIGKILL');
  throw new Error(`workerd did not answer on port ${port}: ${out}`);
}
