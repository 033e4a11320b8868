// The benchmark CLI refuses a bad command line at once, with exit code 2 and a message (a
// new-user probe, session 22: an unknown suite after the others had run, an --out that could
// not be written after every suite, --keys abc as an empty result with exit 0).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
