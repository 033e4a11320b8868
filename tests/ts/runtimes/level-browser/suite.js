// abstract-level's own compliance suite (abstract-level/test, with tape, including its re-run
// of everything on a sublevel) against adaptree/level on a persistent browser backend: a fresh
// store location for every db the suite makes, 1 MiB pools (the suite keeps several open).
// Returns tape's TAP output (for Node to check) and the manifest one db reports.
import { installShims } from './shims.js';
import { init } from '../../../../ts/src/index.ts';
import { AdaptreeLevel } from '../../../../ts/src/level/index.ts';

/** Runs the suite on `storage` ('opfs' or 'indexeddb') under locations `prefix`/dbN. */
export async function runSuite(storage, prefix) {
  installShims();
  const { default: tape } = await import('tape');
  const { default: suite } = await import('abstract-level/test');
  await init();
  let n = 0;
  const factory = (opts) => new AdaptreeLevel({ ...opts, location: `${prefix}/db${++n}`, storage, poolSize: 1 << 20 });
  const probe = factory();
  await probe.open();
  const supports = JSON.parse(JSON.stringify(probe.supports));
  await probe.close();
  const tap = await new Promise((resolve) => {
    const harness = tape.createHarness();
    let out = '';
    harness.createStream().on('data', (chunk) => (out += chunk)).on('end', () => resolve(out));
    suite({ test: harness, factory });
  });
  return { tap, supports, databases: n };
}
