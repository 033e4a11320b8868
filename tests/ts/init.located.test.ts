// Where the package looks for its own files (the wasm module, the pool worker) and what a user
// hears when they are not there. A new-user probe (session 27) found:
// - a CommonJS bundle (esbuild --format=cjs: `import.meta` becomes `{}`) and a Worker bundle
//   that called init() without `wasm` got an untyped "TypeError: Invalid URL";
// - WorkerPool.create there said "workerUrl: Invalid URL", an option the user never gave;
// - a static host that answers every path with its index.html made init() say "the wasm given
//   is not a valid module" (INVALID_ARGUMENT), though nothing was given.
// Each case runs the built package (dist/) copied to a temporary directory and changed the way
// the bundle or the host changes it, in a child Node process.
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './store-helpers.js';

const repo = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const dirs: { cleanup(): void }[] = [];
afterAll(() => dirs.forEach((d) => d.cleanup()));

/** A copy of dist/ with `change` applied; runs `code` (an ES module importing ./dist/index.js)
 * there and returns what it printed, parsed. */
function runIn(change: (dist: string) => void, code: string): Record<string, unknown> {
  const t = tempDir('located');
  dirs.push(t);
  const dist = join(t.dir, 'dist');
  cpSync(join(repo, 'dist'), dist, { recursive: true, dereference: true });
  writeFileSync(join(t.dir, 'package.json'), '{"type":"module"}');
  change(dist);
  writeFileSync(join(t.dir, 'main.mjs'), code);
  return JSON.parse(execFileSync(process.execPath, ['main.mjs'], { cwd: t.dir, encoding: 'utf8' })) as Record<string, unknown>;
}

/** What esbuild's CommonJS output does to `import.meta.url` in a file. */
function noImportMeta(file: string): void {
  const text = readFileSync(file, 'utf8');
  expect(text).toContain('import.meta.url');
  writeFileSync(file, text.replaceAll('import.meta.url', '({}).url'));
}

const caught = `const caught = async (f) => { try { await f(); return { ok: true }; } catch (e) { return { name: e.name, code: e.code ?? null, message: e.message }; } };`;

describe('the package locating its own files', () => {
  it('no import.meta.url (a CommonJS or Worker bundle): init() and BTreeStore.open are IoError saying to pass { wasm }; WorkerPool is IoError saying to pass workerUrl', () => {
    const r = runIn(
      (dist) => {
        noImportMeta(join(dist, 'wasm.js'));
        noImportMeta(join(dist, 'pool.js'));
      },
      `import fs from 'node:fs';
      import { init, BTreeMap, BTreeStore, WorkerPool, loadWasm } from './dist/index.js';
      ${caught}
      const out = {};
      out.init = await caught(() => init());
      out.open = await caught(() => BTreeStore.open({ path: 'x', storage: 'memory' }));
      const wasm = await loadWasm({ wasm: fs.readFileSync('./dist/wasm/adaptree-st.wasm') });
      out.given = (await caught(() => BTreeStore.open({ path: 'y', storage: 'memory', wasm }).then((s) => s.close()))).ok;
      const mt = await loadWasm({ threads: true, wasm: fs.readFileSync('./dist/wasm/adaptree-mt.wasm') });
      const map = new BTreeMap(null, { wasm: mt });
      out.pool = await caught(() => WorkerPool.create(map, { workers: 1 }));
      map.free();
      console.log(JSON.stringify(out));`,
    );
    for (const k of ['init', 'open']) {
      expect(r[k], k).toMatchObject({ name: 'IoError', code: 'IO_ERROR' });
      expect((r[k] as { message: string }).message, k).toMatch(/cannot locate the package's wasm module .*pass the module as init\(\{ wasm \}\)/);
    }
    expect(r.given).toBe(true); // the module given works as before
    expect(r.pool).toMatchObject({ name: 'IoError', code: 'IO_ERROR' });
    expect((r.pool as { message: string }).message).toMatch(/pool worker.*pass its URL as workerUrl/);
    expect((r.pool as { message: string }).message).not.toMatch(/^workerUrl:/);
  }, 60_000);

  it("a host that serves an HTML page for the wasm file: IoError naming the package's URL, not INVALID_ARGUMENT", () => {
    const r = runIn(
      (dist) => writeFileSync(join(dist, 'wasm', 'adaptree-st.wasm'), '<!doctype html><html><body>app</body></html>'),
      `import { init } from './dist/index.js';
      ${caught}
      console.log(JSON.stringify({ init: await caught(() => init()) }));`,
    );
    expect(r.init).toMatchObject({ name: 'IoError', code: 'IO_ERROR' });
    expect((r.init as { message: string }).message).toMatch(/cannot load the package's wasm module from file:.*adaptree-st\.wasm: what it got is not a wasm module/);
  }, 60_000);
});
