// A project with no host types at all: lib es2022, no DOM, no @types/node (a library, or
// code that runs in several runtimes). The shipped .d.ts files must name no host global:
// a new-user probe found web-locks.d.ts naming AbortSignal (TS2304 here).
import { BTreeMap, BTreeStore, WorkerPool, isAdaptreeError, type StoreOptions } from 'adaptree';

const m = new BTreeMap<string, string>();
m.set('a', 'b');
const options: StoreOptions<string, string> = { storage: 'opfs', path: 'db', wait: true };
const store = await BTreeStore.open<string, string>(options);
store.set('k', 'v');
await store.commit();
await store.close();
try {
  m.get('x'.repeat(5000));
} catch (e) {
  if (isAdaptreeError(e)) void e.code;
}
void WorkerPool;
