// Checks the built wasm modules: both contain SIMD128 instructions, st imports
// exactly the five host file I/O functions of persistent stores (at_host_* from
// "env"), mt those plus one shared memory, and both export the whole C ABI (with the
// persistent-store functions of sync and async backends).
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { ABI_FUNCTIONS, ASYNC_STORE_FUNCTIONS, HOST_IMPORTS, STORE_FUNCTIONS } from '../dist/abi.js';

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
  const fns = imports.filter((i) => i.kind === 'function');
  const fnNames = fns.map((i) => i.name).sort();
  const hostOk = fns.every((i) => i.module === 'env') && JSON.stringify(fnNames) === JSON.stringify([...HOST_IMPORTS].sort());
  if (build === 'st') {
    expect(imports.length === HOST_IMPORTS.length && hostOk, `st: imports exactly the ${HOST_IMPORTS.length} host I/O functions (${JSON.stringify(imports)})`);
  } else {
    const memImport = /\(import "env" "memory" \(memory \S+ \(shared \d+ \d+\)\)\)/.test(text);
    const mems = imports.filter((i) => i.kind === 'memory');
    expect(imports.length === HOST_IMPORTS.length + 1 && hostOk && mems.length === 1 && memImport, `mt: imports the host I/O functions and one shared memory (${JSON.stringify(imports)})`);
    expect(exports.has('__stack_pointer'), 'mt: exports __stack_pointer for per-instance stacks');
  }
  const missing = [...ABI_FUNCTIONS, ...STORE_FUNCTIONS, ...ASYNC_STORE_FUNCTIONS].filter((f) => !exports.has(f));
  expect(missing.length === 0, `${build}: exports the C ABI (${missing.length ? 'missing ' + missing.join(',') : ABI_FUNCTIONS.length + ' functions'})`);
}
if (failed) {
  console.error(`${failed} check(s) failed`);
  process.exit(1);
}
