// adaptree through its TypeScript API (compiled to dist/ by `npm run build`), single-threaded
// (`st`) or multi-threaded (`mt`) wasm. Everything that depends on the API's exact names is in
// API below: a rename there is a one-line fix.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const DIST = path.join(ROOT, 'dist', 'index.js');
// ADAPTREE_BENCH_BASE=DIR: another build of the API (say a copy of main's dist/) runs beside this
// one as `adaptree-wasm-base`, for before/after figures from one run.
const BASE_DIST = process.env.ADAPTREE_BENCH_BASE ? path.resolve(process.env.ADAPTREE_BENCH_BASE, 'index.js') : null;

const API = {
  init: (mod, threads) => mod.init({ threads }),
  create: (mod, opts) => new mod.BTreeMap(undefined, opts),
  // options: key encoding, value codec, layout configuration (docs/ARCHITECTURE.md, decision 10)
  options: (keyEncoding, layout) => ({ keys: keyEncoding, values: 'bytes', layout }),
  range: (m, k, n) => m.entries({ gte: k, limit: n }),
  // a full pass: forEach (a callback per entry, as sorted-btree's row is timed)
  each: (m, f) => m.forEach(f),
  stats: (m) => (typeof m.stats === 'function' ? m.stats() : null),
  free: (m) => (typeof m.free === 'function' ? m.free() : typeof m.close === 'function' ? m.close() : undefined),
};

function make(name, threads, dist = DIST) {
  let mod = null;
  return {
    name,
    ordered: true,
    keyForm: 'adaptree', // strings (utf8 encoding) or the key file's bytes / numbers, see child.mjs
    configs: ['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense', 'adaptive'],
    async unavailable() {
      if (dist === null) return 'ADAPTREE_BENCH_BASE is not set';
      if (!fs.existsSync(dist)) return `adaptree's TypeScript API is not built (${path.relative(ROOT, dist)} missing: run \`npm run build\`)`;
      try {
        mod = await import(pathToFileURL(dist).href);
      } catch (e) {
        return `importing dist/index.js failed: ${e.message}`;
      }
      if (typeof mod.BTreeMap !== 'function' || typeof mod.init !== 'function') return 'dist/index.js exports no init/BTreeMap yet';
      let w;
      try {
        w = await API.init(mod, threads);
      } catch (e) {
        return `init({threads: ${threads}}) failed: ${e.message}`;
      }
      const build = w?.build;
      if (threads && build !== 'mt') return `init({threads: true}) gave the '${build}' build, not mt`;
      if (!threads && build && build !== 'st') return `init() gave the '${build}' build, not st`;
      return null;
    },
    async open({ config = 'adaptive', keyEncoding = 'utf8' } = {}) {
      const m = API.create(mod, API.options(keyEncoding, config));
      return {
        config,
        keyEncoding,
        set: (k, v) => { m.set(k, v); },
        get: (k) => m.get(k),
        delete: (k) => m.delete(k),
        scan(k, n) { let c = 0; for (const e of API.range(m, k, n)) if (e) c++; return c; },
        iterate() { let c = 0; API.each(m, (v) => { if (v) c++; }); return c; },
        stats: () => API.stats(m),
        close() { API.free(m); },
      };
    },
  };
}

export const adaptreeWasm = make('adaptree-wasm', false);
export const adaptreeWasmMt = make('adaptree-wasm-mt', true);
export const adaptreeWasmBase = make('adaptree-wasm-base', false, BASE_DIST);
