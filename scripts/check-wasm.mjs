// Checks the built wasm modules: both contain SIMD128 instructions, st imports
// only the host file I/O (at_host_*), mt those and one shared memory, and both export the whole C ABI.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { ABI_FUNCTIONS } from '../dist/abi.js';
const HOST_IMPORTS = ['at_host_read', 'at_host_size', 'at_host_sync', 'at_host_truncate', 'at_host_write'];

let failed = 0;
function expect(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed++;
}

for (const build of ['st', 'mt']) {
  const path = new URL(`../dist/wasm/adaptree-${build}.wasm`, import.meta.url);
  const bytes = readFileSync(path);
  const mod = new WebAssembly.Module(bytes);
  const imports = WebAssembly.Module.imports(mod);
  const exports = new Set(WebAssembly.Module.exports(mod).map((e) => e.name));
  const text = execFileSync('wasm-dis', [path.pathname], { maxBuffer: 1 << 30 }).toString();
  const simd = (text.match(/\bi8x16\.[a-z_]+/g) ?? []).length;
  expect(simd > 0, `${build}: ${simd} i8x16.* instructions (${(bytes.length / 1024).toFixed(0)} KiB)`);
  if (build === 'st') {
    const fns = imports.filter((i) => i.kind === 'function').map((i) => i.name).sort().join(',');
    expect(imports.length === HOST_IMPORTS.length && fns === HOST_IMPORTS.join(','), `st: imports only the host file I/O (${JSON.stringify(imports)})`);
  } else {
    const memImport = /\(import "env" "memory" \(memory \S+ \(shared \d+ \d+\)\)\)/.test(text);
    const fns = imports.filter((i) => i.kind === 'function').map((i) => i.name).sort().join(',');
    const mems = imports.filter((i) => i.kind === 'memory');
    expect(imports.length === HOST_IMPORTS.length + 1 && mems.length === 1 && memImport && fns === HOST_IMPORTS.join(','), `mt: imports a shared memory and the host file I/O (${JSON.stringify(imports)})`);
    expect(exports.has('__stack_pointer'), 'mt: exports __stack_pointer for per-instance stacks');
  }
  const missing = ABI_FUNCTIONS.filter((f) => !exports.has(f));
  expect(missing.length === 0, `${build}: exports the C ABI (${missing.length ? 'missing ' + missing.join(',') : ABI_FUNCTIONS.length + ' functions'})`);
}
if (failed) {
  console.error(`${failed} check(s) failed`);
  process.exit(1);
}
