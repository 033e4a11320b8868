// Suites: what runs where, at full size and with --quick. A suite plans jobs; run.mjs runs them.
// Job kinds: 'child' (bench/lib/child.mjs: JS anchors and adaptree through its TS API),
// 'native' (build/native/adaptree-bench-native), 'persist' (bench/lib/persist-node.mjs),
// 'browser' (bench/browser/run-browser.mjs, headless Chromium).

export const ALL_CONFIGS = ['baseline', 'prefix', 'heads', 'hints', 'fingerprint', 'semi-dense', 'fully-dense', 'adaptive'];
export const PAPER_WORKLOADS = ['insert', 'lookup_zipf', 'lookup_uniform', 'scan', 'iterate'];
export const SUITES = ['inmem', 'ablation', 'ycsb', 'density', 'persist-node', 'browser', 'threads'];
/** The impls of the threads suite's rows (lib/threads.mjs; the -base ones need ADAPTREE_BENCH_BASELINE). */
export const THREADS_IMPLS = ['adaptree-wasm', 'adaptree-wasm-mt', 'adaptree-file', 'adaptree-file-mt', 'adaptree-wasm-mt-pool', 'adaptree-wasm-mt-base', 'adaptree-file-mt-base'];

export const DESCRIPTIONS = {
  inmem: 'adaptree (wasm st and mt, through the TS API; native) vs js-map and sorted-btree: the paper\'s workloads on urls, wiki, dense, sparse',
  ablation: 'every layout configuration (Figure 7, 8, 13) on dense, sparse, urls, wiki; native and wasm',
  ycsb: 'YCSB A–F (8-byte values) on wiki and sparse keys',
  density: 'dense-leaf sweep: N keys drawn from [0, N/density) (Figure 9)',
  'persist-node': 'persistent embedded stores in Node: adaptree on node files, lmdb, classic-level (and raw 4 KiB pread)',
  browser: 'headless Chromium, one module worker: adaptree on OPFS and on IndexedDB (+ raw OPFS 4 KiB reads and write+flush), raw IndexedDB, idb-keyval, browser-level, sqlite-wasm opfs-sahpool',
  threads: 'one BTreeMap shared by 1 and 2 worker_threads (mt build) vs one thread (st, mt): lookups, inserts, 50/50 mix, hot keys (Contention Split on/off), skewed inserts into a small-pool store (XMerge on/off)',
};

export function plan(suite, o) {
  const q = o.quick;
  const ds = (def) => o.datasets ?? def;
  const jobs = [];
  const child = (dataset, impl, p) => jobs.push({ kind: 'child', suite, dataset, impl, ...p });
  const native = (dataset, p) => jobs.push({ kind: 'native', suite, dataset, impl: 'adaptree-native', ...p });
  switch (suite) {
    case 'inmem': {
      const p = { keys: o.keys ?? (q ? 100_000 : 1_000_000), lookups: q ? 200_000 : 5_000_000, scans: q ? 100_000 : 5_000_000,
        budgetSec: o.budget ?? (q ? 1.5 : 10), workloads: PAPER_WORKLOADS, configs: ['adaptive'] };
      for (const d of ds(['urls', 'wiki', 'dense', 'sparse'])) {
        native(d, p);
        child(d, 'adaptree-wasm', p);
        // before/after: another dist/ beside this one (bench/README.md, ADAPTREE_BENCH_BASE)
        if (process.env.ADAPTREE_BENCH_BASE) child(d, 'adaptree-wasm-base', p);
        // integer keys: the headline uses 4-byte big-endian `bytes` keys (the native binary's
        // keys); the `number` key encoding is measured beside it.
        if (!d.startsWith('file:') && ['dense', 'sparse'].includes(d)) child(d, 'adaptree-wasm', { ...p, keyEncoding: 'number' });
        child(d, 'adaptree-wasm-mt', p);
        child(d, 'js-map', p);
        child(d, 'sorted-btree', p);
      }
      break;
    }
    case 'ablation': {
      const p = { keys: o.keys ?? (q ? 100_000 : 1_000_000), lookups: q ? 100_000 : 2_000_000, scans: q ? 50_000 : 1_000_000,
        budgetSec: o.budget ?? (q ? 0.7 : 6), workloads: ['insert', 'lookup_zipf', 'scan'], configs: ALL_CONFIGS };
      for (const d of ds(q ? ['dense', 'sparse', 'urls', 'wiki'] : ['dense', 'sparse', 'urls', 'wiki', 'partitioned'])) {
        native(d, p);
        child(d, 'adaptree-wasm', p);
      }
      break;
    }
    case 'ycsb': {
      const p = { mode: 'ycsb', keys: o.keys ?? (q ? 100_000 : 1_000_000), ycsbOps: q ? 100_000 : 1_000_000, budgetSec: o.budget ?? (q ? 1.5 : 8),
        workloads: ['ycsb_a', 'ycsb_b', 'ycsb_c', 'ycsb_d', 'ycsb_e', 'ycsb_f'], configs: ['adaptive'] };
      for (const d of ds(q ? ['wiki'] : ['wiki', 'sparse'])) {
        native(d, p);
        for (const impl of ['adaptree-wasm', 'js-map', 'sorted-btree']) child(d, impl, p);
      }
      break;
    }
    case 'density': {
      const densities = q ? [10, 40, 70, 100] : [4, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
      const p = { keys: o.keys ?? (q ? 100_000 : 1_000_000), lookups: q ? 100_000 : 2_000_000, scans: q ? 50_000 : 1_000_000,
        budgetSec: o.budget ?? (q ? 0.5 : 4), workloads: ['insert', 'lookup_zipf', 'scan'], configs: ['hints', 'semi-dense', 'fully-dense', 'adaptive'] };
      for (const pct of densities) {
        const d = `dense-d${String(pct).padStart(2, '0')}`;
        const extra = { density: pct / 100 };
        native(d, { ...p, extra });
        child(d, 'adaptree-wasm', { ...p, extra });
      }
      break;
    }
    case 'threads': {
      jobs.push({ kind: 'threads', suite, dataset: 'hex-keys', impl: 'adaptree-wasm-mt', keys: o.keys ?? (q ? 100_000 : 1_000_000),
        ops: q ? 400_000 : 2_000_000, rounds: q ? 3 : 5, xmergeKeys: o.keys ?? (q ? 50_000 : 200_000), ...(o.impls ? { impls: o.impls } : {}) });
      break;
    }
    case 'persist-node': {
      for (const impl of ['adaptree-file', 'lmdb', 'classic-level'])
        jobs.push({ kind: 'persist', suite, dataset: 'k10-100B', impl, records: o.keys ?? 100_000, autocommit: q ? 500 : 3000,
          gets: q ? 50_000 : 100_000, scans: q ? 5_000 : 20_000, budgetSec: o.budget ?? (q ? 3 : 10) });
      // Documents of 1.5 KB (a value between a quarter page and half of one).
      for (const impl of ['adaptree-file', 'lmdb', 'classic-level'])
        jobs.push({ kind: 'persist', suite, dataset: 'k10-1500B', impl, valueBytes: 1500, records: o.keys ? Math.ceil(o.keys / 5) : q ? 5_000 : 20_000,
          autocommit: q ? 200 : 1000, gets: q ? 20_000 : 50_000, scans: q ? 2_000 : 10_000, budgetSec: o.budget ?? (q ? 2 : 6) });
      break;
    }
    case 'browser': {
      // get_cold reopens the adaptree stores with a pool a tenth of their files: 10x holds from
      // 60k records up (the smallest pool is 1 MiB); quick's 20k records give 3.4x (see the
      // rows' data_to_pool), since loading 60k into the IndexedDB stores alone takes > 2 min here
      jobs.push({ kind: 'browser', suite, dataset: 'k10-100B', records: o.keys ?? (q ? 20_000 : 100_000), gets: q ? 20_000 : 50_000,
        autocommit: q ? 300 : 1000, scans: q ? 1_000 : 5_000, budgetSec: o.budget ?? (q ? 3 : 12), ...(o.impls ? { impls: o.impls } : {}) });
      break;
    }
    default:
      throw new Error(`unknown suite '${suite}' (one of: ${SUITES.join(', ')}, all)`);
  }
  // (the browser and threads jobs run several impls each and take the list along: the threads
  // suite ran all of them whatever --impl said, a probe, session 33)
  if (o.impls) return jobs.filter((j) => o.impls.includes(j.impl) || j.kind === 'browser' || (j.kind === 'threads' && j.impls.some((i) => THREADS_IMPLS.includes(i))));
  return jobs;
}
