// Adds the other platforms' optional packages (deno, workerd, msgpackr-extract binaries for
// macOS, Windows, other Linux CPUs) to package-lock.json when they are missing.
//
// Why: the registry this project's machines reach does not serve those packages, so npm
// leaves them out of the lock it writes here, and `npm ci` then rejects the lock as out of
// sync with package.json ("Missing: @deno/darwin-arm64@ from lock file"). An entry with the
// version, `optional` and its os/cpu (read from the package name) is all `npm ci` needs: on
// this machine it skips them as the wrong platform; elsewhere npm fetches them by version.
// `npm install` keeps such entries. Run this after regenerating the lock from scratch:
//   node scripts/lock-platforms.mjs [--check]
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const pk = lock.packages;

function platform(name) {
  const n = name.split('/').pop();
  const os = /darwin/.test(n) ? 'darwin' : /win32|windows/.test(n) ? 'win32' : /linux/.test(n) ? 'linux' : null;
  const cpu = /arm64($|-)/.test(n) ? 'arm64' : /-arm$/.test(n) ? 'arm' : /x64|-64$/.test(n) ? 'x64' : null;
  const libc = /glibc/.test(n) ? 'glibc' : /musl/.test(n) ? 'musl' : null;
  return { os, cpu, libc };
}

const added = [];
for (const [at, entry] of Object.entries(pk)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const where = `node_modules/${dep}`;
    if (pk[where] !== undefined) continue;
    const { os, cpu, libc } = platform(dep);
    if (os === null || cpu === null) throw new Error(`${at}: cannot tell the platform of optional ${dep}`);
    pk[where] = { version, cpu: [cpu], ...(entry.dev ? { dev: true } : {}), ...(libc ? { libc: [libc] } : {}), optional: true, os: [os] };
    added.push(`${dep}@${version} (${os}/${cpu}${libc ? '/' + libc : ''})`);
  }
}
if (process.argv.includes('--check')) {
  if (added.length > 0) {
    console.log(`FAIL package-lock.json lacks ${added.length} optional platform packages (run node scripts/lock-platforms.mjs): ${added.join(', ')}`);
    process.exit(1);
  }
  console.log('ok   package-lock.json lists every optional platform package (npm ci accepts it)');
} else if (added.length > 0) {
  const sorted = { '': pk[''] };
  for (const k of Object.keys(pk).filter((k) => k !== '').sort()) sorted[k] = pk[k];
  lock.packages = sorted;
  writeFileSync(path, JSON.stringify(lock, null, 2) + '\n');
  console.log(`added ${added.length}: ${added.join(', ')}`);
} else {
  console.log('nothing to add');
}
