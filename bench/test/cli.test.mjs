// The benchmark CLI refuses a bad command line at once, with exit code 2 and a message (a
// new-user probe, session 22: an unknown suite after the others had run, an --out that could
// not be written after every suite, --keys abc as an empty result with exit 0).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const RUN = fileURLToPath(new URL('../run.mjs', import.meta.url));
const run = (...args) => spawnSync(process.execPath, [RUN, ...args], { encoding: 'utf8', timeout: 30_000 });

test('bad arguments: exit 2 before any suite runs, a message naming the argument', () => {
  for (const [args, says] of [
    [['--suite', 'density,bogus'], /unknown suite 'bogus'/],
    [['--suite', 'inmem', '--keys', 'abc'], /--keys must be a positive integer/],
    [['--suite', 'inmem', '--keys', '-5'], /--keys must be a positive integer/],
    [['--suite', 'inmem', '--seed', 'abc'], /--seed must be/],
    [['--suite', 'inmem', '--out', '/proc/version/r.json'], /--out .*cannot write/],
    [['--suite', 'inmem', '--impl', 'bogus'], /--impl bogus: no such impl/],
    [['--suite', 'inmem', '--frob'], /unknown argument --frob/],
  ]) {
    const r = run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, says);
    assert.doesNotMatch(r.stderr, /=== suite|\n\s+at /); // nothing ran; no stack
  }
  const help = run('--help');
  assert.equal(help.status, 0);
  assert.doesNotMatch(help.stderr, /^import /m);
});

// Session 23 (a probe): an unknown --dataset was found when its suite reached it, after the
// others had run, and no result file was written; bench:report and the demo server answered a
// bad command line or input with a Node stack.
test('an unknown --impl of the browser suite is refused before Chromium starts (0 rows and exit 0 before)', () => {
  const r = run('--suite', 'browser', '--quick', '--impl', 'adaptree-opfss', '--out', path.join(os.tmpdir(), 'bench-cli-never.json'));
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--impl adaptree-opfss: no such impl in browser/);
});

test('--out: a following flag is no value, a directory is refused up front (both were found late or not at all)', () => {
  const a = run('--suite', 'ycsb', '--out', '--quick');
  assert.equal(a.status, 2);
  assert.match(a.stderr, /--out needs a value/);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cli-'));
  const b = run('--suite', 'ycsb', '--quick', '--out', dir);
  assert.equal(b.status, 2);
  assert.match(b.stderr, /is a directory/);
  assert.doesNotMatch(b.stderr, /ycsb_/);  // no suite ran
  fs.rmSync(dir, { recursive: true });
});

test('bad data sets: exit 2 before any suite runs', () => {
  for (const [d, says] of [['dense,nope', /unknown data set 'nope'/], ['file:/nonexistent', /no such file/], ['dense-d0', /density must be 1\.\.99/], ['dense-dxx', /unknown data set/]]) {
    const r = run('--suite', 'inmem', '--quick', '--dataset', d, '--out', '/tmp/adaptree-cli-test.json');
    assert.equal(r.status, 2, `${d}: ${r.stderr}`);
    assert.match(r.stderr, says);
    assert.doesNotMatch(r.stderr, /=== suite|\n\s+at /);
  }
});

test('bench:report and demo/serve.mjs: bad arguments and input are one line and exit 2', () => {
  const report = (...a) => spawnSync(process.execPath, [fileURLToPath(new URL('../report.mjs', import.meta.url)), ...a], { encoding: 'utf8', timeout: 30_000 });
  const serve = (...a) => spawnSync(process.execPath, [fileURLToPath(new URL('../../demo/serve.mjs', import.meta.url)), ...a], { encoding: 'utf8', timeout: 30_000 });
  for (const [r, says] of [
    [report('/nonexistent-results.json'), /no such file/],
    [report('--bogus'), /unknown argument --bogus/],
    [report('x.json', '--out'), /--out needs a file name/],
    [report(fileURLToPath(new URL('../../package.json', import.meta.url))), /schema undefined/],
    [serve('--port', 'abc'), /--port must be a port number/],
    [serve('--port', '70000'), /--port must be a port number/],
    [serve('--frob'), /unknown argument --frob/],
  ]) {
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, says);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});
