// One file format for every build: a store written by the native core opens in both wasm
// builds through the Node backend and vice versa, both after a clean close (checkpointed into
// the data file) and with the last commits only in the log (what a crash leaves, so the other
// build's recovery replays them). The native side is build/native/adaptree-store-tool
// (tests/tools/store_tool.cc), built by `scripts/build.sh native`.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BTreeStore, LockedError } from '../../ts/src/index.js';
import { REAL_BUILDS, wasmFor } from './builds.js';
import { tempDir } from './store-helpers.js';
import { SplitMix as Rng } from './store-rng.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const tool = join(repo, 'build/native/adaptree-store-tool');
const tmp = tempDir('compat');
afterAll(() => tmp.cleanup());

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const unhex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));

function native(args: string[], input = ''): string {
  if (!existsSync(tool)) throw new Error(`${tool} is missing: run scripts/build.sh native`);
  const r = spawnSync(tool, args, { input, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`adaptree-store-tool ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** Random operations: keys of 1..24 bytes from a small alphabet (so deletes hit), values of
 * 0..64 bytes and now and then 5..20 KiB (overflow pages), and commits. */
function workload(rng: Rng, n: number): { lines: string[]; ops: ['set' | 'del' | 'commit', string, string][] } {
  const ops: ['set' | 'del' | 'commit', string, string][] = [];
  for (let i = 0; i < n; i++) {
    const r = rng.int(100);
    if (r < 3) {
      ops.push(['commit', '', '']);
      continue;
    }
    const key = new Uint8Array(1 + rng.int(24)).map(() => 97 + rng.int(4));
    if (r < 25) {
      ops.push(['del', hex(key), '']);
      continue;
    }
    const len = rng.int(20) === 0 ? 5000 + rng.int(15000) : rng.int(65);
    ops.push(['set', hex(key), hex(new Uint8Array(len).map(() => rng.int(256)))]);
  }
  const lines = ops.map(([op, k, v]) => (op === 'commit' ? 'commit' : op === 'set' ? `+ ${k} .${v}` : `- ${k}`));
  return { lines, ops };
}

function applyModel(model: Map<string, string>, ops: ['set' | 'del' | 'commit', string, string][]): void {
  for (const [op, k, v] of ops) {
    if (op === 'set') model.set(k, v);
    else if (op === 'del') model.delete(k);
  }
}

const sorted = (m: Map<string, string>) => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

function nativeDump(path: string): [string, string][] {
  return native(['dump', path])
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split(' ') as [string, string]);
}

describe.each(REAL_BUILDS)('native <-> wasm (%s) store files', (build) => {
  for (const closed of [true, false]) {
    it(`${closed ? 'after a clean close' : 'with the last commits only in the log'}`, async () => {
      const wasm = await wasmFor(build);
      const rng = new Rng(closed ? 11 : 12);
      const path = join(tmp.dir, `${build}-${closed ? 'closed' : 'log'}.db`);
      const model = new Map<string, string>();

      // 1. Native writes.
      const first = workload(rng, 1500);
      native(['apply', path, ...(closed ? [] : ['--no-close'])], first.lines.join('\n') + '\n');
      applyModel(model, first.ops);

      // 2. wasm reads it, checks it, writes more.
      const s = await BTreeStore.open<Uint8Array, Uint8Array>({ path, storage: 'node', keys: 'bytes', values: 'bytes', wasm });
      const got: [string, string][] = [];
      for (const [k, v] of s.entries()) got.push([hex(k), hex(v)]);
      expect(got).toEqual(sorted(model));
      s.checkInvariants();
      const second = workload(rng, 1500);
      for (const [op, k, v] of second.ops) {
        if (op === 'set') s.set(unhex(k), unhex(v));
        else if (op === 'del') s.delete(unhex(k));
        else await s.commit();
      }
      await s.commit();
      applyModel(model, second.ops);

      // 3. Native reads what wasm wrote: after close (checkpointed), or a copy of the files
      // taken while the wasm store is still open with its commits only in the log (what a
      // crash leaves: native recovery replays them). The open store itself is locked.
      if (closed) {
        await s.close();
        expect(nativeDump(path)).toEqual(sorted(model));
      } else {
        const copy = path + '-copy';
        copyFileSync(path, copy);
        copyFileSync(path + '-log', copy + '-log');
        expect(nativeDump(copy)).toEqual(sorted(model));
        await s.close();
      }
    }, 120_000);
  }
});

// A new-user probe (session 22): dump of a missing path made a store there (and a lock file),
// dump of a store with a torn log tail cut the tail, bad apply input aborted the tool (exit 134)
// or stored junk.
describe('the native tool on bad input', () => {
  it('exits 2 with a message, makes no store where there was none, and dump writes nothing', () => {
    const run = (args: string[], input = '') => spawnSync(tool, args, { input, encoding: 'utf8' });
    const missing = join(tmp.dir, 'tool-missing.db');
    for (const args of [['dump', missing], ['hold', missing], ['frob', missing], ['dump', missing, '--layout', 'abc'], ['apply', missing, '--what']]) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/adaptree-store-tool: /);
    }
    expect(readdirSync(tmp.dir).filter((n) => n.startsWith('tool-missing'))).toEqual([]);
    for (const input of ['+ zz .00\n', '+ 61\n', '+ 616 .6\n', '+ 61 62\n', '-\n']) {
      const r = run(['apply', join(tmp.dir, 'tool-bad.db')], input);
      expect(r.status, input).toBe(2);
      expect(r.stderr).toMatch(/hex|takes/);
    }
    // a store whose log ends in a torn frame: dump reads it and leaves every byte
    const torn = join(tmp.dir, 'tool-torn.db');
    native(['apply', torn, '--no-close'], '+ 61 .62\ncommit\n+ 63 .64\ncommit\n');
    appendFileSync(torn + '-log', new Uint8Array(3000).fill(7));
    const before = [readFileSync(torn), readFileSync(torn + '-log')];
    expect(native(['dump', torn])).toBe('61 62\n63 64\n');
    expect([readFileSync(torn), readFileSync(torn + '-log')]).toEqual(before);
  });
});

describe.each(REAL_BUILDS)('native and Node exclude each other (%s)', (build) => {
  it('the native tool holds the lock file a Node process takes, and the other way round', async () => {
    const wasm = await wasmFor(build);
    const path = join(tmp.dir, `${build}-locks.db`);
    native(['apply', path], '+ 61 .62\ncommit\n');
    // The native tool holds the store: Node gets LOCKED at once and changes nothing.
    if (!existsSync(tool)) throw new Error(`${tool} is missing: run scripts/build.sh native`);
    const child = spawn(tool, ['hold', path], { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    await new Promise<void>((res, rej) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('open')) res();
      });
      child.once('exit', (c) => rej(new Error(`adaptree-store-tool hold exited ${c}`)));
    });
    expect(readFileSync(path + '-lock', 'utf8')).toBe(`${child.pid} flock`);
    await expect(BTreeStore.open({ path, storage: 'node', keys: 'bytes', values: 'bytes', wasm })).rejects.toBeInstanceOf(LockedError);
    child.stdin!.end();
    expect(await exited).toBe(0);
    expect(existsSync(path + '-lock')).toBe(false);
    // Node holds it: the native tool is refused with LOCKED (status -9) and changes nothing.
    const s = await BTreeStore.open<Uint8Array, Uint8Array>({ path, storage: 'node', keys: 'bytes', values: 'bytes', wasm });
    s.set(unhex('63'), unhex('64'));
    await s.commit();
    const r = spawnSync(tool, ['apply', path], { input: '+ 65 .66\ncommit\n', encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('status -9');
    const d = spawnSync(tool, ['dump', path], { encoding: 'utf8' });
    expect(d.status).toBe(2);
    await s.close();
    expect(nativeDump(path)).toEqual([['61', '62'], ['63', '64']]);
  }, 60_000);
});

// Stores written before format version 2 (pages checksummed with CRC-32C, format version 1):
// fixtures made by the native tool of a build from then (tests/ts/fixtures/format1/make.mjs),
// one checkpointed by a clean close (superblock version 1), one whose commits are only in its
// log (log version 2, no superblock). Both builds and the native tool read them; writes and
// commits keep them format version 1 (a store never changes its page checksum).
describe.each(REAL_BUILDS)('format version 1 stores (%s)', (build) => {
  const fixtures = join(repo, 'tests/ts/fixtures/format1');
  const want = JSON.parse(readFileSync(join(fixtures, 'model.json'), 'utf8')) as [string, string][];
  for (const name of ['closed.db', 'log.db']) {
    it(`${name}: reads, writes, commits and reopens as version 1`, async () => {
      const wasm = await wasmFor(build);
      const path = join(tmp.dir, `${build}-v1-${name}`);
      copyFileSync(join(fixtures, name), path);
      copyFileSync(join(fixtures, name + '-log'), path + '-log');
      const open = () => BTreeStore.open<Uint8Array, Uint8Array>({ path, storage: 'node', keys: 'bytes', values: 'bytes', wasm });
      let s = await open();
      const got: [string, string][] = [];
      for (const [k, v] of s.entries()) got.push([hex(k), hex(v)]);
      expect(got).toEqual(want);
      s.checkInvariants();
      const model = new Map(want);
      for (let i = 0; i < 300; i++) {
        const k = `7a${(i % 97).toString(16).padStart(2, '0')}`;
        const v = (i * 7919).toString(16).padStart(8, '0').repeat(1 + (i % 5));
        s.set(unhex(k), unhex(v));
        model.set(k, v);
        if (i % 60 === 59) await s.commit();
      }
      await s.commit();
      const sorted2 = [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      await s.close();
      // Still format version 1: the superblock (written by the close's checkpoint) and the log header.
      const sb = readFileSync(path);
      expect(sb.subarray(0, 8).toString('latin1')).toBe('ADAPTREE');
      expect(sb.readUInt32LE(8)).toBe(1);
      expect(readFileSync(path + '-log').readUInt32LE(8)).toBe(2);
      s = await open();
      const again: [string, string][] = [];
      for (const [k, v] of s.entries()) again.push([hex(k), hex(v)]);
      expect(again).toEqual(sorted2);
      await s.close();
      expect(nativeDump(path)).toEqual(sorted2);
    }, 60_000);
  }
});
