// The package as users get it: `npm pack`, install the tarball into a fresh temporary
// project, and run one scenario there through the package's own names ('adaptree',
// 'adaptree/level') in plain ESM Node, then the same file in Deno (local node_modules).
// The scenario and the packing are in common.mjs (shared with e2e-vite.mjs, e2e-workerd.mjs).
// Needs dist/ built (scripts/build.sh wasm && scripts/build.sh ts).
//   node tests/package/e2e.mjs [--keep]
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXPECTED, cleanup, expect, failures, packAndInstall, root, run, same } from './common.mjs';

const MAIN = `import { scenario } from './scenario.mjs';\nconsole.log(JSON.stringify(await scenario()));\n`;
// adaptree/level on files: the first run writes and closes, the second reopens and reads.
const PERSIST = `
import { AdaptreeLevel } from 'adaptree/level';
const db = new AdaptreeLevel('data/db', { valueEncoding: 'json' });
if (process.argv[2] === 'write') await db.batch([{ type: 'put', key: 'a', value: { n: 1 } }, { type: 'put', key: 'b', value: [2] }]);
const out = { permanence: db.supports.permanence, entries: await db.iterator().all() };
await db.close();
console.log(JSON.stringify(out));
`;
let dir = '';
try {
  // 1. Pack, and a fresh project that depends on the tarball (abstract-level is the level's peer).
  const p = packAndInstall([], 'e2e');
  dir = p.dir;
  writeFileSync(join(p.app, 'main.mjs'), MAIN);

  // 2. Plain ESM Node.
  const nodeOut = JSON.parse(run(process.execPath, ['main.mjs'], { cwd: p.app }));
  expect(same(nodeOut, EXPECTED), `node: scenario from the installed package ${JSON.stringify(nodeOut)}`);
  writeFileSync(join(p.app, 'persist.mjs'), PERSIST);
  run(process.execPath, ['persist.mjs', 'write'], { cwd: p.app });
  const reopened = JSON.parse(run(process.execPath, ['persist.mjs'], { cwd: p.app }));
  expect(same(reopened, { permanence: true, entries: [['a', { n: 1 }], ['b', [2]]] }),
    `node: adaptree/level at a location keeps its data across processes ${JSON.stringify(reopened)}`);

  // 3. Deno on the same project (its node_modules, package names resolved through package.json).
  const deno = join(root, 'node_modules/.bin/deno');
  if (existsSync(deno)) {
    const denoOut = JSON.parse(run(deno, ['run', '--quiet', '--allow-read', '--allow-env', '--no-prompt', 'main.mjs'], {
      cwd: p.app,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
    }));
    expect(same(denoOut, EXPECTED), `deno: scenario from the installed package ${JSON.stringify(denoOut)}`);
  } else {
    expect(false, 'deno: node_modules/.bin/deno is missing (npm devDependency deno)');
  }
} catch (e) {
  expect(false, `${e.message}\n${e.stderr ?? ''}`);
} finally {
  cleanup(dir);
}
if (failures()) process.exit(1);
