#!/usr/bin/env node
// What a user of the published package sees: packs the tarball as `npm pack` would publish it,
// installs it into a fresh project per environment and type-checks a small program there
// against the shipped .d.ts files (strict, no skipLibCheck). adaptree/level (level.ts, with
// its optional peer abstract-level) is checked in node and deno only: abstract-level's own
// types need @types/node (Buffer, events) and AsyncDisposable, so DOM and Workers projects
// that use it add @types/node anyway.
//   node     lib es2022 + @types/node, no DOM          tsc --noEmit
//   node10   the same with moduleResolution node10      tsc --noEmit
//   dom      lib es2022 + DOM, no @types/node           tsc --noEmit
//   bare     lib es2022 only: no DOM, no @types/node     tsc --noEmit
//   workers  lib es2022 + @cloudflare/workers-types     tsc --noEmit
//   deno     Deno's own libs, package from node_modules deno check
// It also checks the tarball's source maps: each one must carry the text of every source it
// names, since the TypeScript sources are not shipped.
// Needs a built dist/ (scripts/build.sh wasm && scripts/build.sh ts). Projects live in
// build/types/; npm installs there from the registry once, then from its cache.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const WORK = path.join(ROOT, 'build/types');
const WORKERS_TYPES = '5.20261117.1'; // the release that goes with the pinned workerd
const only = process.argv.slice(2);

const version = (pkg) => JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

let failed = 0;
function report(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) {
    failed++;
    if (detail) console.log(detail.replace(/^/gm, '     '));
  }
}

fs.rmSync(WORK, { recursive: true, force: true });
fs.mkdirSync(WORK, { recursive: true });
const [packed] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', WORK], ROOT));
const tarball = path.join(WORK, packed.filename);
console.log(`packed ${path.relative(ROOT, tarball)} (${packed.files.length} files)`);

// Source maps: every map names sources whose text it carries, or a file in the tarball.
const shipped = new Set(packed.files.map((f) => f.path));
const maps = [...shipped].filter((f) => f.endsWith('.map'));
const unpacked = path.join(WORK, 'unpacked');
fs.mkdirSync(unpacked);
run('tar', ['-xzf', tarball, '-C', unpacked], ROOT);
const broken = [];
for (const m of maps) {
  const map = JSON.parse(fs.readFileSync(path.join(unpacked, 'package', m), 'utf8'));
  map.sources.forEach((s, i) => {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(m), map.sourceRoot ?? '', s));
    const text = map.sourcesContent?.[i];
    if (!(typeof text === 'string' && text.length > 0) && !shipped.has(target)) broken.push(`${m} -> ${s}`);
  });
}
report(broken.length === 0, `${maps.length} source maps, each with its sources' text or the sources shipped`, broken.slice(0, 10).join('\n'));

const envs = {
  node: { devDependencies: { typescript: version('typescript'), '@types/node': version('@types/node') }, check: ['npx', ['tsc', '-p', '.']] },
  // moduleResolution node10 (older projects): subpaths through typesVersions (TS2307 for
  // adaptree/level before session 23)
  node10: { from: 'node', devDependencies: { typescript: version('typescript'), '@types/node': version('@types/node') }, check: ['npx', ['tsc', '-p', 'tsconfig.node10.json']] },
  dom: { devDependencies: { typescript: version('typescript') }, check: ['npx', ['tsc', '-p', '.']] },
  bare: { devDependencies: { typescript: version('typescript') }, check: ['npx', ['tsc', '-p', '.']] },
  workers: {
    devDependencies: { typescript: version('typescript'), '@cloudflare/workers-types': WORKERS_TYPES },
    check: ['npx', ['tsc', '-p', '.']],
  },
  deno: { devDependencies: {}, check: [path.join(ROOT, 'node_modules/.bin/deno'), ['check', '--all', '--quiet', 'main.ts', 'level.ts']] },
};

for (const [name, env] of Object.entries(envs)) {
  if (only.length && !only.includes(name)) continue;
  const dir = path.join(WORK, name);
  fs.cpSync(path.join(HERE, env.from ?? name), dir, { recursive: true });
  // abstract-level: the optional peer that adaptree/level's types import.
  const dependencies = { adaptree: `file:${tarball}`, 'abstract-level': version('abstract-level') };
  const pkg = { name: `adaptree-types-${name}`, private: true, type: 'module', dependencies, devDependencies: env.devDependencies };
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  try {
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], dir);
  } catch (e) {
    report(false, `${name}: npm install`, `${e.stdout}${e.stderr}`);
    continue;
  }
  const [cmd, args] = env.check;
  try {
    run(cmd, args, dir);
    report(true, `${name}: ${path.basename(cmd)} ${args.join(' ')}`);
  } catch (e) {
    report(false, `${name}: ${path.basename(cmd)} ${args.join(' ')}`, `${e.stdout}${e.stderr}`.trim());
  }
}
if (failed) {
  console.log(`${failed} failed; the projects are in ${path.relative(process.cwd(), WORK)}`);
  process.exit(1);
}
