// Deno entry for the Node/Deno lock test. `try PATH`: opens the store, prints
// {"result":"ok"|code,"message"} and closes. `hold PATH`: opens it, commits one entry,
// prints "open", and holds it until stdin ends (or the process is killed).
import { BTreeStore } from '../../dist/index.js';

const [mode, path] = Deno.args;
if (mode === 'try') {
  try {
    const s = await BTreeStore.open({ path, keys: 'utf8', values: 'json' });
    const seen = s.get('from');
    s.set('from', 'deno');
    await s.close();
    console.log(JSON.stringify({ result: 'ok', seen: seen ?? null }));
  } catch (e) {
    console.log(JSON.stringify({ result: e.code ?? String(e), message: e.message }));
  }
} else if (mode === 'hold') {
  const s = await BTreeStore.open({ path, keys: 'utf8', values: 'json' });
  s.set('from', 'deno-hold');
  await s.commit();
  console.log('open');
  for await (const _ of Deno.stdin.readable) {
    /* hold until stdin ends */
  }
  await s.close();
}
