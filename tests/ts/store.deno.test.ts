// The store on Deno files: open, write, commit, a second open (LockedError through
// FsFile.tryLockSync), reopen without the uncommitted write, close commits. Needs dist/.
import { afterAll, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from './store-helpers.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../..');
const tmp = tempDir('deno');
afterAll(() => tmp.cleanup());

it('Deno: writes, commits, locks and reopens a store on Deno.FsFile', async () => {
  expect(existsSync(join(repo, 'dist/index.js')), 'run `bash scripts/build.sh ts` first').toBe(true);
  const args = ['run', '--quiet', `--allow-read=${repo},${tmp.dir}`, `--allow-write=${tmp.dir}`, join(here, 'store-deno.mjs'), tmp.dir];
  const { stdout } = await promisify(execFile)(join(repo, 'node_modules/.bin/deno'), args, {
    cwd: repo,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' },
  });
  expect(JSON.parse(stdout)).toEqual({
    storage: 'deno',
    secondOpen: 'LOCKED',
    size: 5000,
    get4999: { i: 4999 },
    uncommitted: null,
    keys: [10, 11, 12],
    afterClose: 'after reopen',
    fileBytes: true,
  });
  expect(existsSync(join(tmp.dir, 'deno.db-log'))).toBe(true);
});
