// Where `npm run bench:report` writes (issue 16): a report of any other input than the
// committed bench/results.json goes to bench/out/, never over the committed bench/REPORT.md.
// Runs a copy of report.mjs in a temporary bench/ so that a failure cannot touch the repo.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SCHEMA } from '../lib/schema.mjs';

const BENCH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const row = { suite: 'inmem', dataset: 'dense', workload: 'insert', impl: 'js-map', config: '-', keys: 10, ops: 100, seconds: 0.5, ops_per_sec: 200 };

test('a scratch run is reported in bench/out/; only bench/results.json replaces bench/REPORT.md', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-report-out-'));
  const bench = path.join(root, 'bench');
  fs.mkdirSync(bench);
  fs.copyFileSync(path.join(BENCH, 'report.mjs'), path.join(bench, 'report.mjs'));
  fs.cpSync(path.join(BENCH, 'lib'), path.join(bench, 'lib'), { recursive: true });
  const result = (machine) => JSON.stringify({ schema: SCHEMA, machine, results: [row] });
  fs.writeFileSync(path.join(bench, 'results.json'), result({ cpu: 'committed' }));
  fs.mkdirSync(path.join(bench, 'report'));
  fs.writeFileSync(path.join(bench, 'REPORT.md'), 'committed report\n');
  fs.writeFileSync(path.join(bench, 'report', 'committed.svg'), '<svg/>\n');
  const scratch = path.join(root, 'showcase.json');
  fs.writeFileSync(scratch, result({ cpu: 'scratch', run: { quick: true } }));
  const report = (...args) => execFileSync(process.execPath, [path.join(bench, 'report.mjs'), ...args], { cwd: root, stdio: 'pipe' });

  report(scratch);
  assert.equal(fs.readFileSync(path.join(bench, 'REPORT.md'), 'utf8'), 'committed report\n');
  assert.ok(fs.existsSync(path.join(bench, 'report', 'committed.svg')), 'the committed plots stay');
  assert.match(fs.readFileSync(path.join(bench, 'out', 'REPORT.md'), 'utf8'), /showcase\.json/);
  assert.ok(fs.readdirSync(path.join(bench, 'out', 'report')).some((f) => f.endsWith('.svg')));

  report(scratch, '--out', path.join(bench, 'REPORT.md')); // asked for: replaced
  assert.match(fs.readFileSync(path.join(bench, 'REPORT.md'), 'utf8'), /showcase\.json/);

  report(); // the committed results regenerate the committed report
  assert.match(fs.readFileSync(path.join(bench, 'REPORT.md'), 'utf8'), /bench\/results\.json/);
  fs.rmSync(root, { recursive: true });
});
