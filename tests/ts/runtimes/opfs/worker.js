// The dedicated worker of the OPFS test page: opens stores on the 'opfs' backend and runs
// what the test asks (see the ops below). Each store gets an id; replies carry results or
// the error's name, code and message (and the name of its cause).
import { BTreeStore, init, opfsStorage } from '/dist/index.js';
import { batch } from '../shared/workload.js';

const stores = new Map();
const held = new Map();
let nextId = 1;

/** A sync backend over opfs whose writes fail once a byte budget is spent, with the
 * DOMException a browser throws when its quota is exhausted. `state.budget` undefined: no limit. */
function quotaBackend(state) {
  const wrap = (f) => ({
    read: (dst, off) => f.read(dst, off),
    write(src, off) {
      if (state.budget !== undefined) {
        if (src.length > state.budget) throw new DOMException('test byte budget exhausted', 'QuotaExceededError');
        state.budget -= src.length;
      }
      f.write(src, off);
    },
    sync: () => f.sync(),
    size: () => f.size(),
    truncate: (n) => f.truncate(n),
  });
  return {
    kind: 'sync',
    name: 'opfs-quota',
    async open(path, options) {
      const files = await opfsStorage.open(path, options);
      return { data: wrap(files.data), log: wrap(files.log), close: () => files.close() };
    },
  };
}

/** The other way to run out of quota: the real access handles' write throws the browser's
 * DOMException past a byte budget (so the opfs backend's own mapping is what is tested). */
let handleBudget;
const realWrite = FileSystemSyncAccessHandle.prototype.write;
FileSystemSyncAccessHandle.prototype.write = function write(buffer, options) {
  if (handleBudget !== undefined) {
    if (buffer.byteLength > handleBudget) throw new DOMException('test quota exhausted', 'QuotaExceededError');
    handleBudget -= buffer.byteLength;
  }
  return realWrite.call(this, buffer, options);
};

function store(id) {
  const s = stores.get(id);
  if (s === undefined) throw new Error(`no store ${id}`);
  return s;
}

function apply(s, ops) {
  for (const [k, v] of ops) {
    if (v === null) s.delete(k);
    else s.set(k, v);
  }
}

const sameEntries = (a, b) => a.length === b.length && a.every(([k, v], i) => k === b[i][0] && JSON.stringify(v) === JSON.stringify(b[i][1]));

async function run(cmd) {
  switch (cmd.op) {
    case 'ping':
      return 'pong';
    case 'init': {
      // The default wasm instance for the stores opened after: threads → the mt build, whose
      // memory is a SharedArrayBuffer (the backend copies through private buffers then).
      const w = await init({ threads: cmd.threads });
      return { build: w.build };
    }
    case 'open': {
      const options = { path: cmd.path, storage: 'opfs' };
      if (cmd.wait !== undefined) options.wait = cmd.wait;
      if (cmd.poolSize !== undefined) options.poolSize = cmd.poolSize;
      if (cmd.create !== undefined) options.create = cmd.create;
      if (cmd.readOnly !== undefined) options.readOnly = cmd.readOnly;
      if (cmd.salvage !== undefined) options.salvage = cmd.salvage;
      if (cmd.defaultStorage) delete options.storage;
      let quota;
      if (cmd.quota) {
        quota = { budget: undefined };
        options.storage = quotaBackend(quota);
      }
      const s = await BTreeStore.open(options);
      const id = nextId++;
      stores.set(id, { s, quota });
      return { id, storage: s.storage, size: s.size };
    }
    case 'apply': {
      const { s } = store(cmd.id);
      apply(s, cmd.ops);
      return { size: s.size };
    }
    case 'set': {
      const { s } = store(cmd.id);
      s.set(cmd.key, cmd.value);
      return { size: s.size };
    }
    case 'budget':
      if (cmd.handles) handleBudget = cmd.bytes;
      else store(cmd.id).quota.budget = cmd.bytes;
      return {};
    case 'commit':
      await store(cmd.id).s.commit();
      return {};
    case 'close': {
      const { s } = store(cmd.id);
      stores.delete(cmd.id);
      await s.close(cmd.commit === undefined ? undefined : { commit: cmd.commit });
      return {};
    }
    case 'dump': {
      const { s } = store(cmd.id);
      s.checkInvariants();
      return [...s.entries()];
    }
    case 'stats': {
      const st = store(cmd.id).s.stats();
      return { storage: st.storage, commits: st.commits, spills: st.spills, fileBytes: st.fileBytes };
    }
    case 'remove': {
      // Removes the top directory (or file) of a store path, and its log.
      const root = await navigator.storage.getDirectory();
      for (const name of cmd.names) {
        try {
          await root.removeEntry(name, { recursive: true });
        } catch (e) {
          if (e.name !== 'NotFoundError') throw e;
        }
      }
      return {};
    }
    case 'hold': {
      // A sync access handle on a file, taken without the store's lock (code that does not
      // play by the rules), held until 'unhold'.
      let dir = await navigator.storage.getDirectory();
      const parts = cmd.path.split('/');
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create: true });
      const fh = await dir.getFileHandle(parts[parts.length - 1], { create: true });
      held.set(cmd.path, await fh.createSyncAccessHandle());
      return {};
    }
    case 'unhold':
      held.get(cmd.path)?.close();
      held.delete(cmd.path);
      return {};
    case 'digest': {
      // SHA-256 of a store's two files (through getFile(): works beside any handle), to show
      // that a reader wrote nothing.
      let dir = await navigator.storage.getDirectory();
      const parts = cmd.path.split('/');
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
      const out = {};
      for (const name of [parts[parts.length - 1], parts[parts.length - 1] + '-log']) {
        const bytes = await (await (await dir.getFileHandle(name)).getFile()).arrayBuffer();
        out[name] = [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('') + `:${bytes.byteLength}`;
      }
      return out;
    }
    case 'flip': {
      // Flips the byte at `at` (a fraction of the file's size when below 1) of an OPFS file;
      // `undo` flips it back. Returns the offset and the file's size.
      let dir = await navigator.storage.getDirectory();
      const parts = cmd.file.split('/');
      const name = parts.pop();
      for (const p of parts) dir = await dir.getDirectoryHandle(p);
      const h = await (await dir.getFileHandle(name)).createSyncAccessHandle();
      try {
        const size = h.getSize();
        const at = cmd.at < 1 ? Math.floor(size * cmd.at) : cmd.at;
        const b = new Uint8Array(1);
        h.read(b, { at });
        b[0] ^= 0x5a;
        h.write(b, { at });
        h.flush();
        return { at, size };
      } finally {
        h.close();
      }
    }
    case 'files': {
      // Names and sizes of the files in a directory of OPFS (to check where a store lives).
      let dir = await navigator.storage.getDirectory();
      for (const p of cmd.dir.split('/').filter(Boolean)) dir = await dir.getDirectoryHandle(p);
      const out = {};
      for await (const [name, h] of dir.entries()) out[name] = h.kind === 'file' ? (await h.getFile()).size : 'dir';
      return out;
    }
    case 'workload': {
      // Commits batch after batch until told to stop (or killed); reports every resolved commit.
      const s = await BTreeStore.open({ path: cmd.path, storage: 'opfs', poolSize: cmd.poolSize ?? 1 << 20 });
      postMessage({ event: { opened: true } });
      for (let i = cmd.from ?? 0; i < cmd.batches; i++) {
        apply(s, batch(cmd.seed, i, cmd.batchSize));
        s.set('~batch', i); // which batch the state is after (verify reads it)
        await s.commit();
        postMessage({ event: { committed: i } });
      }
      await s.close();
      return { batches: cmd.batches };
    }
    case 'verify': {
      // Which prefix of the workload's batches the store holds (-1: none; -2: not exactly the
      // state after the batch its marker names: a mix, or a lost write).
      const s = await BTreeStore.open({ path: cmd.path, storage: 'opfs', wait: true });
      try {
        s.checkInvariants();
        const got = [...s.entries()];
        // The state after batch `at` (its marker), and nothing else: exactly that batch's model.
        const at = got.length === 0 ? -1 : Number(got.find(([k]) => k === '~batch')?.[1] ?? -2);
        const model = new Map();
        for (let i = 0; i <= at; i++) {
          for (const [k, v] of batch(cmd.seed, i, cmd.batchSize)) {
            if (v === null) model.delete(k);
            else model.set(k, v);
          }
        }
        if (at >= 0) model.set('~batch', at);
        const sorted = [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        const prefix = at === -1 || (at >= 0 && sameEntries(got, sorted)) ? at : -2;
        return { prefix, size: got.length };
      } finally {
        await s.close({ commit: false });
      }
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

onmessage = async (e) => {
  const { seq, cmd } = e.data;
  try {
    postMessage({ seq, result: await run(cmd) });
  } catch (err) {
    postMessage({ seq, error: { name: err?.name, code: err?.code, message: String(err?.message ?? err), causeName: err?.cause?.name, causeCode: err?.cause?.code, domCause: [err?.cause, err?.cause?.cause].some((c) => c instanceof DOMException) } });
  }
};
