// The result file's shape (fixed project-wide; other tools read it):
// {"schema":"adaptree-bench/1","machine":{...},"results":[ROW,...]}
// ROW: suite, dataset, workload, impl, config, keys, ops, seconds, ops_per_sec
//      [, bytes_per_record] [, extras such as key_encoding, layouts, density, records]
import os from 'node:os';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

export const SCHEMA = 'adaptree-bench/1';
export const REQUIRED = ['suite', 'dataset', 'workload', 'impl', 'config', 'keys', 'ops', 'seconds', 'ops_per_sec'];

/** Returns a list of problems with a row (empty when it is valid). */
export function checkRow(r) {
  const bad = [];
  if (!r || typeof r !== 'object') return ['not an object'];
  for (const f of ['suite', 'dataset', 'workload', 'impl', 'config']) if (typeof r[f] !== 'string' || !r[f]) bad.push(`${f} must be a non-empty string`);
  for (const f of ['keys', 'ops', 'ops_per_sec']) if (typeof r[f] !== 'number' || !Number.isFinite(r[f]) || r[f] < 0) bad.push(`${f} must be a finite number >= 0`);
  // (a reader divides ops by seconds: 0 gave Infinity; a probe, session 33)
  if (typeof r.seconds !== 'number' || !Number.isFinite(r.seconds) || !(r.seconds > 0)) bad.push('seconds must be a finite number > 0');
  // only where the printed decimals cannot matter
  if (r.ops > 0 && r.seconds >= 1e-5 && Math.abs(r.ops / r.seconds - r.ops_per_sec) > 0.01 * r.ops_per_sec + 1) bad.push('ops_per_sec != ops / seconds');
  if ('bytes_per_record' in r && (typeof r.bytes_per_record !== 'number' || !(r.bytes_per_record > 0))) bad.push('bytes_per_record must be a number > 0');
  return bad;
}

function tryRun(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; }
}

export function describeMachine() {
  const cpus = os.cpus();
  let model = cpus[0]?.model ?? 'unknown';
  let governor = null;
  try { governor = fs.readFileSync('/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor', 'utf8').trim(); } catch {}
  let osName = `${os.type()} ${os.release()}`;
  try {
    const rel = fs.readFileSync('/etc/os-release', 'utf8');
    const m = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(rel);
    if (m) osName = `${m[1]} (${os.type()} ${os.release()})`;
  } catch {}
  const commit = tryRun('git', ['rev-parse', 'HEAD']);
  const dirty = tryRun('git', ['status', '--porcelain', '--untracked-files=no']);
  return {
    cpu: model,
    cpus: cpus.length,
    memory_bytes: os.totalmem(),
    os: osName,
    arch: process.arch,
    node: process.version,
    v8: process.versions.v8,
    governor,
    git_commit: commit,
    git_dirty: dirty == null ? null : dirty.length > 0,
    note: 'shared 2-vCPU VM: absolute numbers move ±20–60% between runs; compare ratios within one run',
  };
}

export function makeResult(machine, results) {
  return { schema: SCHEMA, machine, results };
}

export function writeResult(file, machine, results) {
  const bad = [];
  results.forEach((r, i) => { for (const p of checkRow(r)) bad.push(`row ${i}: ${p}`); });
  if (bad.length) throw new Error('invalid rows:\n' + bad.join('\n'));
  // one row per line: small enough to commit beside the report, easy to diff and grep
  const head = JSON.stringify({ schema: SCHEMA, machine }, null, 1).replace(/\n}$/, '');
  writeWhole(file, `${head},\n "results": [\n${results.map((r) => '  ' + JSON.stringify(r)).join(',\n')}\n ]\n}\n`);
}

/** Writes `text` to `file` whole or not at all: into a temporary file beside it, then renamed
 * over it. A write that failed part way (a full disk, a file size limit) left a truncated,
 * unparseable file where the previous good one had been (a probe, session 33). */
export function writeWhole(file, text) {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  } catch (e) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {}
    throw e;
  }
}
