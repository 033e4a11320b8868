#!/usr/bin/env node
// The page checksum alone (issue 10): CRC-32C of a 4 KiB page, per kernel, in one process.
//   node bench/checksum.mjs [--base DIST_WASM_DIR] [--rounds N] [--out bench/out/checksum.json]
// wasm: at_checksum of this checkout's dist/wasm modules (st, mt) under Node, and with
//   --base those of another build (say main's dist/wasm) as rows '<flavour>-base', measured
//   in alternating rounds (the machine's load moves; only same-run ratios mean much).
// native: a helper compiled on the fly from core/util/crc32c.cc (c++ -O3, with and without
//   -march=native), timing each kernel: bytewise, slicing-by-8, SSE4.2 where present, and
//   checksum_extend (what the store uses).
// Lengths: 4092 (a page trailer's CRC: kNodeSize + 4) and 4096 (a log frame's image).
// Each figure is the least of its rounds (noise only adds); the median is printed beside it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const BASE = opt('--base', null);
const ROUNDS = Number(opt('--rounds', 30));
const OUT = opt('--out', null);
const LENS = [4092, 4096];
const DATA_AT = 8 << 20; // inside the modules' 16 MiB initial memory, past stack and data

/** Instantiates a project module with stub imports: at_checksum needs none of them. */
async function loadModule(file, flavour) {
  const mod = new WebAssembly.Module(fs.readFileSync(file));
  const imports = {};
  let memory = null;
  for (const imp of WebAssembly.Module.imports(mod)) {
    imports[imp.module] ??= {};
    if (imp.kind === 'function') imports[imp.module][imp.name] = () => { throw new Error(`stub import ${imp.name} called`); };
    else if (imp.kind === 'memory') imports[imp.module][imp.name] = memory = new WebAssembly.Memory({ initial: 256, maximum: 32768, shared: flavour === 'mt' });
    else throw new Error(`unexpected import kind ${imp.kind} (${imp.name})`);
  }
  const inst = new WebAssembly.Instance(mod, imports);
  memory ??= inst.exports.memory;
  const u8 = new Uint8Array(memory.buffer, DATA_AT, 8192);
  let s = 12345;
  for (let i = 0; i < u8.length; i++) { s = (Math.imul(s, 1103515245) + 12345) >>> 0; u8[i] = s >>> 24; }
  return { run: (len, n) => { let x = 0; for (let i = 0; i < n; i++) x ^= inst.exports.at_checksum(DATA_AT, len); return x >>> 0; } };
}

const rows = [];
const stat = (xs) => { const v = [...xs].sort((a, b) => a - b); return { min: v[0], median: v[v.length >> 1] }; };

// ---- wasm under Node
const mods = [];
for (const flavour of ['st', 'mt']) {
  mods.push({ name: `wasm-${flavour}`, m: await loadModule(path.join(ROOT, 'dist/wasm', `adaptree-${flavour}.wasm`), flavour) });
  if (BASE) mods.push({ name: `wasm-${flavour}-base`, m: await loadModule(path.join(BASE, `adaptree-${flavour}.wasm`), flavour) });
}
for (const len of LENS) {
  const values = new Set(mods.map(({ m }) => m.run(len, 1)));
  if (values.size !== 1) throw new Error(`the builds disagree on the checksum of ${len} bytes: ${[...values]}`);
  for (const { m } of mods) m.run(len, 3000); // tier up (V8 starts wasm in Liftoff)
  const times = mods.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    mods.forEach(({ m }, i) => { const n = 2000, a = performance.now(); m.run(len, n); times[i].push(((performance.now() - a) / n) * 1000); });
  }
  mods.forEach(({ name }, i) => rows.push({ where: 'node ' + process.version, kernel: name, len, us: stat(times[i]) }));
}

// ---- native
const cxx = ['c++', 'g++', 'clang++'].find((c) => { try { execFileSync(c, ['--version'], { stdio: 'ignore' }); return true; } catch { return false; } });
if (!cxx) {
  process.stderr.write('checksum: no C++ compiler, no native rows\n');
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adaptree-checksum-'));
  const src = path.join(dir, 'main.cc');
  fs.writeFileSync(src, `#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "core/util/hash.h"
using namespace adaptree;
static uint8_t buf[8192];
static uint32_t ext(uint32_t r, const uint8_t* p, uint32_t n) { return ~checksum_extend(~r, p, n); }
int main(int argc, char** argv) {
  const uint32_t len = atoi(argv[1]);
  const int rounds = atoi(argv[2]);
  for (uint32_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 2654435761u >> 13);
  struct K { const char* name; detail::Crc32cKernel f; } ks[] = {
    {"bytewise", detail::crc32c_bytewise}, {"slicing-by-8", detail::crc32c_slice8},
    {"sse4.2-3-streams", detail::crc32c_hardware()}, {"checksum_extend", ext}};
  for (auto& k : ks) {
    if (!k.f) continue;
    double best = 1e30, all[1000];
    int n = rounds > 1000 ? 1000 : rounds;
    volatile uint32_t sink = 0;
    for (int r = 0; r < n; r++) {
      int it = 2000;
      auto a = std::chrono::steady_clock::now();
      for (int i = 0; i < it; i++) sink = sink ^ k.f(0xFFFFFFFFu, buf + (i & 1), len);
      all[r] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count() / it;
      if (all[r] < best) best = all[r];
    }
    std::sort(all, all + n);
    printf("%s %.4f %.4f\\n", k.name, best, all[n / 2]);
  }
}
`.replace('#include <chrono>', '#include <algorithm>\n#include <chrono>'));
  for (const march of [false, true]) {
    const exe = path.join(dir, march ? 'native-march' : 'native');
    execFileSync(cxx, ['-O3', '-std=c++20', ...(march ? ['-march=native'] : []), '-I', ROOT, src, path.join(ROOT, 'core/util/crc32c.cc'), '-o', exe]);
    for (const len of LENS) {
      for (const line of execFileSync(exe, [String(len), String(ROUNDS)], { encoding: 'utf8' }).trim().split('\n')) {
        const [kernel, min, median] = line.split(' ');
        rows.push({ where: `native ${cxx} -O3${march ? ' -march=native' : ''}`, kernel, len, us: { min: Number(min), median: Number(median) } });
      }
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

for (const r of rows) {
  process.stdout.write(`${r.where.padEnd(34)} ${r.kernel.padEnd(18)} ${String(r.len).padStart(5)} B: ${r.us.min.toFixed(2)} us ` +
    `(median ${r.us.median.toFixed(2)}; ${Math.round(r.len / r.us.min)} MB/s)\n`);
}
const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
process.stdout.write(`load average ${load}\n`);
if (OUT) {
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  fs.writeFileSync(OUT, JSON.stringify({ schema: 'adaptree-checksum/1', node: process.version, load, base: BASE, rows }, null, 1));
}
