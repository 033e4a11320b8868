// Shared by the package end-to-end tests (e2e.mjs: Node and Deno; e2e-vite.mjs: a vite app in
// headless Chromium; e2e-workerd.mjs: a Cloudflare Worker under workerd): pack the package,
// install the tarball into a fresh temporary project, and the one scenario they all run.
// The scenario only names the package ('adaptree', 'adaptree/level'), nothing relative.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export const run = (cmd, args, opts = {}) =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });

let failed = 0;
export function expect(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed++;
}
export const failures = () => failed;

/** `scenario.mjs` in the temporary project: `scenario(initOptions)` resolves to the results. */
export const SCENARIO_MODULE = `
import { init, BTreeMap, isAdaptreeError } from 'adaptree';
import { AdaptreeLevel } from 'adaptree/level';

export async function scenario(initOptions) {
  const out = {};
  const w = await init(initOptions);
  out.build = w.build;
  const m = new BTreeMap();
  for (let i = 0; i < 1000; i++) m.set('k' + String(i).padStart(4, '0'), { i });
  out.size = m.size;
  out.range = [...m.keys({ gte: 'k0010', lt: 'k0013' })];
  out.last = m.last();
  try { m.set('x'.repeat(2000), 1); } catch (e) { out.error = isAdaptreeError(e) && e.code; }
  m.free();

  const db = new AdaptreeLevel({ valueEncoding: 'json' });
  await db.batch([{ type: 'put', key: 'b', value: { n: 2 } }, { type: 'put', key: 'a', value: { n: 1 } }]);
  const snap = db.snapshot();
  await db.put('c', { n: 3 });
  await db.del('a');
  out.level = await db.iterator().all();
  out.levelSnapshot = await db.iterator({ snapshot: snap }).all();
  out.levelReverse = await db.keys({ reverse: true, limit: 2 }).all();
  out.levelSupports = { snapshots: db.supports.explicitSnapshots, seek: db.supports.seek, permanence: db.supports.permanence };
  await snap.close();
  await db.close();
  return out;
}
`;

export const EXPECTED = {
  build: 'st',
  size: 1000,
  range: ['k0010', 'k0011', 'k0012'],
  last: ['k0999', { i: 999 }],
  error: 'KEY_TOO_LARGE',
  level: [['b', { n: 2 }], ['c', { n: 3 }]],
  levelSnapshot: [['a', { n: 1 }], ['b', { n: 2 }]],
  levelReverse: ['c', 'b'],
  levelSupports: { snapshots: true, seek: true, permanence: false },
};

/** EXPECTED for another build. */
export const expectedFor = (build) => ({ ...EXPECTED, build });

export const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The version of a dependency locked in this repository (the temporary project installs the same). */
export function lockedVersion(name) {
  return JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/**
 * Packs the package (no prepack build: the caller built dist/) into a temporary directory and
 * installs the tarball, abstract-level (the level's peer) and `deps` into a fresh project there.
 * Returns { dir, app, tarball, info }.
 */
export function packAndInstall(deps = [], name = 'e2e') {
  const dir = mkdtempSync(join(tmpdir(), `adaptree-${name}-`));
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root }));
  const tarball = join(dir, info.filename);
  expect(existsSync(tarball), `packed ${info.filename} (${info.files.length} files)`);
  const app = join(dir, 'app');
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: `${name}-app`, private: true, type: 'module' }, null, 2));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `abstract-level@${lockedVersion('abstract-level')}`, ...deps], { cwd: app });
  writeFileSync(join(app, 'scenario.mjs'), SCENARIO_MODULE);
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/adaptree/package.json'), 'utf8'));
  expect(installed.version === info.version, `installed adaptree@${installed.version} from the tarball`);
  return { dir, app, tarball, info };
}

/** Removes the temporary directory unless --keep was given. */
export function cleanup(dir) {
  if (!dir) return;
  if (process.argv.includes('--keep')) console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

export async function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

/** Polls `url` until it answers (any status) or `child` exits; throws with its output then. */
export async function waitForServer(url, child, log, seconds = 30) {
  for (let i = 0; i < seconds * 10; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`server did not answer at ${url}: ${log()}`);
}
