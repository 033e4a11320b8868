// Deno entry for the Node/Deno lock test. `try PATH`: opens the store, prints
// {"result":"ok"|code,"message"} and closes. `hold PATH`: opens it, commits one entry,
// prints "open", and holds it until stdin ends (or the process is killed). `read PATH`: opens
// it read-only, prints {"result":"ok","seen","size"} (or the error's code and message).
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
} else if (mode === 'read') {
  try {
    const s = await BTreeStore.open({ path, keys: 'utf8', values: 'json', readOnly: true });
    const out = { result: 'ok', seen: s.get('from') ?? null, size: s.size };
    await s.close();
    console.log(JSON.stringify(out));
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
