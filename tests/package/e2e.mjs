// The package as users get it: `npm pack`, install the tarball into a fresh temporary
// project, and run one scenario there through the package's own names ('adaptree',
// 'adaptree/level') in plain ESM Node, then the same file in Deno (local node_modules).
// Needs dist/ built (scripts/build.sh wasm && scripts/build.sh ts).
//   node tests/package/e2e.mjs [--keep]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), 'adaptree-e2e-'));
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...opts });
let failed = 0;
function expect(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed++;
}

// The scenario, written into the temporary project: only package names, nothing relative.
const SCENARIO = `
import { init, BTreeMap, isAdaptreeError } from 'adaptree';
import { AdaptreeLevel } from 'adaptree/level';

const out = {};
const w = await init();
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
console.log(JSON.stringify(out));
`;

const EXPECTED = {
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

try {
  // 1. Pack (no prepack build: the caller built dist/).
  const [info] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root }));
  const tarball = join(dir, info.filename);
  expect(existsSync(tarball), `packed ${info.filename} (${info.files.length} files)`);

  // 2. A fresh project that depends on the tarball (abstract-level is the level's peer).
  const app = join(dir, 'app');
  run('mkdir', ['-p', app]);
  const lockedLevel = JSON.parse(readFileSync(join(root, 'node_modules/abstract-level/package.json'), 'utf8')).version;
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'e2e-app', private: true, type: 'module' }, null, 2));
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `abstract-level@${lockedLevel}`], { cwd: app });
  writeFileSync(join(app, 'main.mjs'), SCENARIO);
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/adaptree/package.json'), 'utf8'));
  expect(installed.version === info.version, `installed adaptree@${installed.version} from the tarball`);

  // 3. Plain ESM Node.
  const nodeOut = JSON.parse(run(process.execPath, ['main.mjs'], { cwd: app }));
  expect(JSON.stringify(nodeOut) === JSON.stringify(EXPECTED), `node: scenario from the installed package ${JSON.stringify(nodeOut)}`);

  // 4. Deno on the same project (its node_modules, package names resolved through package.json).
  const deno = join(root, 'node_modules/.bin/deno');
  if (existsSync(deno)) {
    const denoOut = JSON.parse(run(deno, ['run', '--quiet', '--allow-read', '--allow-env', '--no-prompt', 'main.mjs'], {
      cwd: app,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    }));
    expect(JSON.stringify(denoOut) === JSON.stringify(EXPECTED), `deno: scenario from the installed package ${JSON.stringify(denoOut)}`);
  } else {
    expect(false, 'deno: node_modules/.bin/deno is missing (npm devDependency deno)');
  }
} catch (e) {
  expect(false, `${e.message}\n${e.stderr ?? ''}`);
} finally {
  if (process.argv.includes('--keep')) console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
if (failed) process.exit(1);
