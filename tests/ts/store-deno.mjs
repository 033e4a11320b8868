// Deno entry for the store test: opens a store on Deno files (dist/), writes, commits,
// reopens, checks locking, and prints JSON.
import { BTreeStore, LockedError } from '../../dist/index.js';

const dir = Deno.args[0];
const path = `${dir}/deno.db`;
const out = {};
let s = await BTreeStore.open({ path, keys: 'number', values: 'json' });
out.storage = s.storage;
for (let i = 0; i < 5000; i++) s.set(i, { i });
await s.commit();
s.set(99999, 'uncommitted');
try {
  await BTreeStore.open({ path, keys: 'number' });
  out.secondOpen = 'opened';
} catch (e) {
  out.secondOpen = e instanceof LockedError ? e.code : String(e);
}
// The 'node' storage in this Deno process: it took the deno backend's lock of this pid for
// stale, and both wrote (a new-user probe, session 22).
try {
  await BTreeStore.open({ path, keys: 'number', storage: 'node' });
  out.nodeBackendOpen = 'opened';
} catch (e) {
  out.nodeBackendOpen = e instanceof LockedError ? e.code : String(e);
}
await s.close({ commit: false });
s = await BTreeStore.open({ path, keys: 'number', values: 'json', create: false });
out.size = s.size;
out.get4999 = s.get(4999);
out.uncommitted = s.get(99999) ?? null;
const keys = [];
for await (const k of s.keysAsync({ gte: 10, limit: 3 })) keys.push(k);
out.keys = keys;
s.set(-1, 'after reopen');
await s.close();
s = await BTreeStore.open({ path, keys: 'number', values: 'json' });
out.afterClose = s.get(-1);
out.fileBytes = s.stats().fileBytes > 0;
await s.close();
// A missing directory: it said "no store at ... (create: false)" with create left true.
try {
  await BTreeStore.open({ path: `${dir}/no/such/x.db` });
  out.missingDir = 'opened';
} catch (e) {
  out.missingDir = `${e.code}: ${e.message}`;
}
// A short foreign file: CORRUPT, the file as it was, and no log file left beside it.
const foreign = `${dir}/notes.json`;
Deno.writeTextFileSync(foreign, '{"a":1}');
try {
  await BTreeStore.open({ path: foreign });
  out.foreign = 'opened';
} catch (e) {
  out.foreign = e.code;
}
out.foreignAfter = Deno.readTextFileSync(foreign);
out.foreignSiblings = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith('notes.json')).sort();
// Files deleted while the store is open: the next commit is IO_ERROR (it resolved, and all was
// lost at the next open; session 27).
{
  const gonePath = `${dir}/gone.db`;
  const g = await BTreeStore.open({ path: gonePath, keys: 'number' });
  g.set(1, 'one');
  await g.commit();
  Deno.removeSync(gonePath);
  Deno.removeSync(gonePath + '-log');
  g.set(2, 'two');
  try {
    await g.commit();
    out.deleted = 'committed';
  } catch (e) {
    out.deleted = `${e.code}: ${/was deleted while the store was open/.test(e.message)}`;
  }
  await g.close().catch(() => {});
}
// The log deleted after a commit: close() rejects, and its checkpoint wrote nothing into the data
// file (it did, and the store was CORRUPT at the next open; session 30).
{
  const logPath = `${dir}/log-gone.db`;
  const opts = { path: logPath, values: 'utf8', logDeltas: false };
  let g = await BTreeStore.open(opts);
  for (let i = 0; i < 3000; i++) g.set('k' + String(i).padStart(5, '0'), 'A' + i);
  await g.close();
  const before = Deno.readFileSync(logPath);
  g = await BTreeStore.open(opts);
  for (let i = 0; i < 5000; i++) g.set('k' + String(i).padStart(5, '0'), 'B' + i);
  await g.commit();
  Deno.removeSync(logPath + '-log');
  out.logGoneClose = await g.close().then(() => 'resolved', (e) => e.code);
  const after = Deno.readFileSync(logPath);
  out.logGoneData = before.length === after.length && before.every((b, i) => b === after[i]);
  g = await BTreeStore.open(opts);
  out.logGoneReopen = [g.size, g.get('k00000')];
  await g.close();
}
console.log(JSON.stringify(out));
