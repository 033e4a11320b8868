#!/usr/bin/env node
// Replaces one suite's rows of a result file by those of another run, so a suite can be re-run
// without re-running all (31 min here):
//   node bench/splice.mjs bench/results.json NEW.json --suite browser
// The suite's rows and not_run entries are replaced; the new run's command, start, duration,
// commit and load are recorded in machine.run.spliced (REPORT.md lists them under "Runs and
// machine"), and its machine facts for that suite (Chromium, SQLite wasm) are taken over.
import fs from 'node:fs';
import { SCHEMA, writeResult } from './lib/schema.mjs';

const [target, source, flag, suite] = process.argv.slice(2);
if (!target || !source || flag !== '--suite' || !suite) {
  process.stderr.write('usage: node bench/splice.mjs RESULT.json NEW.json --suite NAME\n');
  process.exit(2);
}
const read = (f) => {
  const j = JSON.parse(fs.readFileSync(f, 'utf8'));
  if (j.schema !== SCHEMA) throw new Error(`${f}: schema ${j.schema}, expected ${SCHEMA}`);
  return j;
};
const t = read(target), s = read(source);
const rows = s.results.filter((r) => r.suite === suite);
if (!rows.length) throw new Error(`${source} has no rows of suite '${suite}'`);
const m = t.machine, sm = s.machine;
const results = [...t.results.filter((r) => r.suite !== suite), ...rows];
m.not_run = [...(m.not_run ?? []).filter((n) => n.suite !== suite), ...(sm.not_run ?? []).filter((n) => n.suite === suite)];
const SUITE_FACTS = { browser: ['chromium', 'browser_cross_origin_isolated', 'browser_user_agent', 'sqlite_wasm', 'browser_gc_between_slices'] };
for (const k of SUITE_FACTS[suite] ?? []) if (sm[k] !== undefined) m[k] = sm[k];
const loads = rows.map((r) => r.load1).filter((x) => x != null).sort((a, b) => a - b);
m.run ??= {};
m.run.spliced = [...(m.run.spliced ?? []).filter((x) => x.suite !== suite), {
  suite, command: sm.run?.command, started: sm.run?.started, duration_sec: sm.run?.duration_sec, quick: sm.run?.quick,
  git_commit: sm.git_commit, git_dirty: sm.git_dirty, rows: rows.length,
  ...(loads.length ? { load1: { min: loads[0], median: loads[loads.length >> 1], max: loads[loads.length - 1] } } : {}),
}];
writeResult(target, m, results);
process.stderr.write(`${target}: ${rows.length} rows of suite ${suite} from ${source}\n`);
