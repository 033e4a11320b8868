// Checks what `npm pack` would publish: both wasm modules, the JS and the .d.ts
// files, and nothing from the source tree a user does not need.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
const [info] = JSON.parse(out);
const files = new Set(info.files.map((f) => f.path));
let failed = 0;
function expect(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed++;
}
for (const f of ['dist/wasm/adaptree-st.wasm', 'dist/wasm/adaptree-mt.wasm', 'dist/index.js', 'dist/index.d.ts', 'dist/wasm.js', 'dist/wasm.d.ts',
  'dist/level/index.js', 'dist/level/index.d.ts', 'dist/level/store.js', 'dist/level/snapshot.js', 'package.json', 'README.md']) {
  expect(files.has(f), `tarball contains ${f}`);
}
const stray = [...files].filter((f) => /^(core|bindings|tests|bench|build|node_modules)\//.test(f));
expect(stray.length === 0, `no sources or build trees in the tarball ${stray.slice(0, 5).join(' ')}`);
const testish = [...files].filter((f) => /(^|\/)(test|tests|bench|fixtures)\/|\.(test|spec)\.[cm]?[jt]s$/.test(f));
expect(testish.length === 0, `nothing from tests or benchmarks in the tarball ${testish.slice(0, 5).join(' ')}`);
// Every path the exports map names is in the tarball.
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const targets = [];
(function walk(x) {
  if (typeof x === 'string') targets.push(x.replace(/^\.\//, ''));
  else if (x && typeof x === 'object') Object.values(x).forEach(walk);
})(pkg.exports);
const missing = targets.filter((t) => !files.has(t));
expect(missing.length === 0, `every exports target is packed (${targets.length})${missing.length ? ': missing ' + missing.join(' ') : ''}`);
console.log(`${info.filename}: ${files.size} files, ${(info.size / 1024).toFixed(0)} KiB packed`);
if (failed) process.exit(1);
