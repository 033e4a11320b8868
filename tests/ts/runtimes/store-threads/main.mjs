// Workers sharing one opfs store in a cross-origin isolated page (docs/THREADS.md, "Stores"):
// the owner worker opens a store on OPFS on the mt build and shares it; the page relays the
// handle to a second worker, which attaches (its own 'readwrite-unsafe' access handles on the
// same files); both run the stress of threads-stress.mjs in rounds with a commit after each,
// with a pool far smaller than the data. The owner then checks content against both models,
// closes, reopens on the st build and checks again.
function worker() {
  const w = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
  const inbox = [];
  let waiting = null;
  w.onmessage = (e) => {
    if (waiting) { const f = waiting; waiting = null; f(e.data); } else inbox.push(e.data);
  };
  w.onerror = (e) => { const f = waiting; waiting = null; if (f) f({ error: e.message }); else inbox.push({ error: e.message }); };
  const next = () => (inbox.length ? Promise.resolve(inbox.shift()) : new Promise((r) => (waiting = r)));
  return { w, next };
}

async function run() {
  const q = new URLSearchParams(location.search);
  const ops = Number(q.get('ops') ?? 4000);
  const path = `store-threads/${Date.now()}`;
  const owner = worker();
  owner.w.postMessage({ mode: 'owner', path, ops });
  const first = await owner.next(); // { handle } or { error }
  if (first.error) return first;
  const peer = worker();
  peer.w.postMessage({ mode: 'peer', handle: first.handle, ops });
  const peerResult = await peer.next();
  owner.w.postMessage({ peer: peerResult });
  const result = await owner.next();
  owner.w.terminate();
  peer.w.terminate();
  return { crossOriginIsolated: globalThis.crossOriginIsolated === true, peer: { failure: peerResult.failure ?? peerResult.error ?? '', commits: peerResult.commits }, ...result };
}

run().then(
  (r) => { window.__result = r; document.getElementById('out').textContent = JSON.stringify(r, null, 1); },
  (e) => { window.__result = { error: String(e && e.stack ? e.stack : e) }; },
);
