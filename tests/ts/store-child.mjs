// A child process for the store tests, on the built package (dist/):
//   node store-child.mjs hold <path>   opens the store, prints "held", waits to be killed
//   node store-child.mjs work <path>   commits forever from where the store is, printing
//                                      "C <n>" (synchronously) after commit n resolved
// The workload is a pure function of the commit number (storeKillModel in the kill test):
// commit n sets keys (n*7 % 1000)+t, t<5, to n, deletes key n*13 % 1000, and sets key -1 to n.
import { writeSync } from 'node:fs';
import { BTreeStore } from '../../dist/index.js';

const [mode, path] = process.argv.slice(2);
const s = await BTreeStore.open({ path, keys: 'number', values: 'json', poolSize: 1 << 20 });
if (mode === 'hold') {
  writeSync(1, 'held\n');
  setInterval(() => {}, 1000);
} else if (mode === 'work') {
  let n = s.get(-1) ?? 0;
  writeSync(1, `S ${n}\n`);
  for (;;) {
    n++;
    for (let t = 0; t < 5; t++) s.set(((n * 7) % 1000) + t, n);
    s.delete((n * 13) % 1000);
    s.set(-1, n);
    // two commits requested together share one flush (group commit); both must resolve
    await Promise.all([s.commit(), s.commit()]);
    writeSync(1, `C ${n}\n`);
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
