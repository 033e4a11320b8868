#!/usr/bin/env node
// adaptree benchmarks.  npm run bench -- --suite NAME [--quick] --out FILE.json
//   --suite     inmem | ablation | ycsb | density | persist-node | browser | threads | all (comma list ok)
//   --quick     small key counts and op counts (each suite < 3 min, all < 5 min here)
//   --out       result JSON (schema adaptree-bench/1); default bench-results.json
//   --dataset   override the suite's data sets: urls,wiki,names,dense,sparse,partitioned,dense-dNN,file:PATH
//   --keys N    override the key count       --impl LIST  only these impls
//   --seed S    workload/data seed (default 1)  --budget SEC  time cap per timed workload
// Progress on stderr. Data sets are cached in ~/.cache/adaptree-bench (ADAPTREE_BENCH_CACHE).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { plan, SUITES, THREADS_IMPLS } from './lib/suites.mjs';
import { prepareDataset, inputs, CACHE_DIR, datasetKind } from './lib/datasets.mjs';
import { describeMachine, writeResult, checkRow, makeResult } from './lib/schema.mjs';
import { log, warn } from './lib/progress.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
export const NATIVE_BIN = path.join(ROOT, 'build', 'native', 'adaptree-bench-native');

/** A bad command line: its message, exit code 2, no stack. */
class UsageError extends Error {}
/** The result file could not be written after the run: its message, exit code 1, no stack. */
class WriteError extends Error {}

function parseArgs(argv) {
  const o = { suite: null, quick: false, out: 'bench-results.json', seed: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    // (not the next flag: `--out --quick` wrote a file named --quick, and ran the full suite)
    const val = () => { if (i + 1 >= argv.length || /^--[a-z]/.test(argv[i + 1])) throw new UsageError(`${a} needs a value`); return argv[++i]; };
    if (a === '--suite') o.suite = val();
    else if (a === '--quick') o.quick = true;
    else if (a === '--out') o.out = val();
    else if (a === '--dataset' || a === '--datasets') o.datasets = val().split(',');
    else if (a === '--keys') o.keys = Number(val());
    else if (a === '--impl' || a === '--impls') o.impls = val().split(',');
    else if (a === '--seed') o.seed = Number(val());
    else if (a === '--budget') o.budget = Number(val());
    else if (a === '-h' || a === '--help') o.help = true;
    else throw new UsageError(`unknown argument ${a}`);
  }
  return o;
}

/**
 * What would otherwise fail late or not at all (a new-user probe, session 22): an unknown suite
 * after the others had run, an --out in a directory that cannot exist after every suite (the
 * results lost), --keys abc as 0 rows and NaN-named cache files, an --impl no suite has as an
 * empty result with exit 0.
 */
async function checkArgs(o, suites) {
  const bad = (m) => { throw new UsageError(m); };
  for (const s of suites) if (!SUITES.includes(s)) bad(`unknown suite '${s}' (${SUITES.join(', ')}, all)`);
  if (o.keys !== undefined && !(Number.isInteger(o.keys) && o.keys > 0)) bad('--keys must be a positive integer');
  if (!(Number.isSafeInteger(o.seed) && o.seed >= 0)) bad('--seed must be a non-negative integer');
  if (o.budget !== undefined && !(o.budget > 0)) bad('--budget must be a positive number of seconds');
  // Data sets up front: an unknown one was found when its suite reached it, after the others
  // had run, and no result file was written (session 23).
  for (const d of o.datasets ?? []) {
    try {
      datasetKind(d);
    } catch (e) {
      bad(`--dataset: ${e.message}`);
    }
    const m = /^dense-d(\d+)$/.exec(d);
    if (m && !(Number(m[1]) >= 1 && Number(m[1]) <= 99)) bad(`--dataset ${d}: the density must be 1..99 (percent)`);
    if (d.startsWith('file:') && !fs.existsSync(d.slice(5))) bad(`--dataset ${d}: no such file`);
  }
  const dir = path.dirname(path.resolve(o.out));
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (e) {
    bad(`--out ${o.out}: cannot write in ${dir} (${e.code ?? e.message})`);
  }
  // The file itself: a directory, or a file that cannot be replaced, was found after every
  // suite had run (a probe, session 33).
  let st;
  try {
    st = fs.statSync(o.out);
  } catch {}
  if (st?.isDirectory()) bad(`--out ${o.out} is a directory`);
  if (st !== undefined) {
    try {
      fs.accessSync(o.out, fs.constants.W_OK);
    } catch (e) {
      bad(`--out ${o.out}: cannot replace it (${e.code ?? e.message})`);
    }
  }
  if (o.impls) {
    const known = new Set(suites.filter((s) => s !== 'browser').flatMap((s) => plan(s, { ...o, impls: undefined, quick: true }).map((j) => j.impl)));
    // (the browser suite's: an unknown one launched Chromium for 0 rows and exit 0, a probe,
    // session 33)
    if (suites.includes('browser')) {
      const { IMPLS, OPTIONAL_IMPLS } = await import('./browser/run-browser.mjs');
      for (const i of [...IMPLS, ...OPTIONAL_IMPLS]) known.add(i);
    }
    if (suites.includes('threads')) for (const i of THREADS_IMPLS) known.add(i);
    for (const i of o.impls) if (!known.has(i)) bad(`--impl ${i}: no such impl in ${suites.join(', ')} (${[...known].join(', ')})`);
  }
}

function runProcess(cmd, args, onLine) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: ROOT });
    let buf = '';
    p.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) { const line = buf.slice(0, nl).trim(); buf = buf.slice(nl + 1); if (line) onLine(line); }
    });
    p.on('close', (code, signal) => { if (buf.trim()) onLine(buf.trim()); resolve({ code, signal }); });
    p.on('error', (e) => { warn(`${cmd}: ${e.message}`); resolve({ code: -1 }); });
  });
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.help || !o.suite) {
    const lines = fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
    const usage = lines.slice(0, lines.findIndex((l) => !l.startsWith('//')));
    process.stderr.write(usage.map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
    process.exit(o.help ? 0 : 2);
  }
  // ('all' inside a list too: `--suite all,inmem` said "unknown suite 'all'"; each suite once)
  const suites = [...new Set(o.suite.split(',').flatMap((s) => (s === 'all' ? SUITES : [s])))];
  await checkArgs(o, suites);
  const started = new Date();
  const t0 = performance.now();
  const results = [];
  const notRun = [];
  const machine = describeMachine();
  const skip = (j, reason) => {
    const key = `${j.suite}|${j.impl}|${reason}`;
    if (!notRun.some((s) => `${s.suite}|${s.impl}|${s.reason}` === key)) {
      notRun.push({ suite: j.suite, impl: j.impl, dataset: j.dataset, reason });
      warn(`${j.suite}: ${j.impl} not run: ${reason}`);
    }
  };
  const accept = (j, line) => {
    let r;
    try { r = JSON.parse(line); } catch { warn(`${j.impl}: not JSON: ${line.slice(0, 200)}`); return; }
    if (r.skip) { skip(j, r.reason); return; }
    r.suite = j.suite;
    if (j.kind !== 'browser' && j.kind !== 'persist') r.dataset = j.dataset;
    if (j.extra) Object.assign(r, j.extra);
    if (r.bytes_per_record != null && !(r.bytes_per_record > 0)) delete r.bytes_per_record;
    // the 1-minute load average when the row arrived: other work on this 2-vCPU machine shows here
    r.load1 = +os.loadavg()[0].toFixed(2);
    const bad = checkRow(r);
    if (bad.length) { warn(`${j.impl}: dropped an invalid row (${bad.join('; ')}): ${line.slice(0, 200)}`); return; }
    results.push(r);
  };
  const extras = {};
  for (const suite of suites) {
    const st = performance.now();
    log(`=== suite ${suite}${o.quick ? ' (quick)' : ''}`);
    const jobs = plan(suite, o);
    for (const j of jobs) {
      if (j.kind === 'note') { skip(j, j.reason); continue; }
      if (j.kind === 'child' || j.kind === 'native') {
        const ds = await prepareDataset(j.dataset, j.keys, o.seed);
        if (ds.note) warn(`${j.dataset}: ${ds.note}`);
        if (j.kind === 'native') {
          if (!fs.existsSync(NATIVE_BIN)) {
            skip(j, `native binary ${path.relative(ROOT, NATIVE_BIN)} not built (cmake -S . -B build/native -G Ninja -DADAPTREE_WASM=OFF -DADAPTREE_NATIVE_MARCH=ON && cmake --build build/native --target adaptree-bench-native)`);
            continue;
          }
          log(`${suite} ${j.dataset}: adaptree-native ${j.configs.join(',')}`);
          const args = ['--keys', ds.path, '--dataset', j.dataset, '--config', j.configs.join(','), '--seed', String(o.seed), '--suite', suite];
          if (j.mode === 'ycsb') args.push('--ops', String(j.ycsbOps));
          else args.push('--lookups', String(j.lookups), '--scans', String(j.scans));
          const before = results.length;
          const { code, signal } = await runProcess(NATIVE_BIN, args, (line) => accept(j, line));
          if (code !== 0) warn(`adaptree-native exited with ${code ?? signal} on ${j.dataset}`);
          if (results.length === before) skip(j, `adaptree-native printed no rows for suite ${suite} (exit ${code ?? signal})`);
          continue;
        }
        const params = { ...j, keysPath: ds.path, kind: ds.kind, seed: o.seed };
        const { code, signal } = await runProcess(process.execPath, ['--expose-gc', '--max-old-space-size=12000', path.join(HERE, 'lib', 'child.mjs'), JSON.stringify(params)], (line) => accept(j, line));
        if (code !== 0) warn(`${j.impl} on ${j.dataset} exited with ${code ?? signal}`);
      } else if (j.kind === 'persist') {
        const { code } = await runProcess(process.execPath, [path.join(HERE, 'lib', 'persist-node.mjs'), JSON.stringify({ ...j, seed: o.seed })], (line) => accept(j, line));
        if (code !== 0) warn(`${j.impl} exited with ${code}`);
      } else if (j.kind === 'threads') {
        const { code } = await runProcess(process.execPath, [path.join(HERE, 'lib', 'threads.mjs'), JSON.stringify({ ...j, seed: o.seed })], (line) => accept(j, line));
        if (code !== 0) warn(`threads bench exited with ${code}`);
      } else if (j.kind === 'browser') {
        const { runBrowser } = await import('./browser/run-browser.mjs');
        const info = await runBrowser({ ...j, seed: o.seed }, (line) => accept(j, line), (impl, reason) => skip({ ...j, impl }, reason));
        if (info) Object.assign(extras, info);
      }
    }
    log(`=== suite ${suite} done in ${((performance.now() - st) / 1000).toFixed(0)} s`);
  }
  const seconds = (performance.now() - t0) / 1000;
  Object.assign(machine, extras);
  machine.inputs = inputs;
  machine.run = {
    suites, quick: o.quick, seed: o.seed, started: started.toISOString(), duration_sec: +seconds.toFixed(1),
    command: 'npm run bench -- ' + process.argv.slice(2).join(' '), cache_dir: CACHE_DIR,
  };
  machine.not_run = notRun;
  const loads = results.map((r) => r.load1).sort((a, b) => a - b);
  if (loads.length) machine.run.load1 = { min: loads[0], median: loads[loads.length >> 1], max: loads[loads.length - 1] };
  fs.mkdirSync(path.dirname(path.resolve(o.out)), { recursive: true }); // e.g. bench/out/, which git ignores and a fresh checkout lacks
  try {
    writeResult(o.out, machine, results);
  } catch (e) {
    // (the rows are not lost: they go to stderr as the file would have held them)
    if (!(e instanceof Error && /^invalid rows/.test(e.message))) {
      process.stderr.write(JSON.stringify(makeResult(machine, results)) + '\n');
      throw new WriteError(`--out ${o.out}: the results could not be written (${e.code ?? e.message}); the previous file, if any, is as it was; the rows are on stderr above`);
    }
    throw e;
  }
  log(`wrote ${results.length} rows to ${o.out} in ${seconds.toFixed(0)} s; not run: ${notRun.length ? notRun.map((s) => `${s.impl} (${s.suite})`).join(', ') : 'none'}`);
}

main().catch((e) => {
  process.stderr.write(e instanceof UsageError ? `bench: ${e.message} (--help for usage)\n` : e instanceof WriteError ? `bench: ${e.message}\n` : `bench: ${e.stack || e.message}\n`);
  process.exit(e instanceof UsageError ? 2 : 1);
});
