// Data sets: downloaded from package registries at bench time (pinned versions, SHA-256
// checked, cached outside the repository), or generated from a seed, or brought by the user
// (--dataset file:PATH). Every data set becomes a key file (lib/keyfile.mjs) of exactly the
// requested number of unique keys in insertion order, which all runners read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import readline from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { SplitMix64, shuffle } from './rng.mjs';
import { writeKeyFile } from './keyfile.mjs';
import { log, fmtBytes } from './progress.mjs';

export const CACHE_DIR = process.env.ADAPTREE_BENCH_CACHE || path.join(os.homedir(), '.cache', 'adaptree-bench');
export const MAX_KEY_BYTES = 1024; // core/config.h kMaxKeySize: longer keys are dropped (counted)

// Pinned downloads. sha256 is checked after download and on every reuse of the cached file.
export const DOWNLOADS = {
  'all-the-package-repos@2.0.3148': {
    url: 'https://registry.npmjs.org/all-the-package-repos/-/all-the-package-repos-2.0.3148.tgz',
    sha256: 'fc769ee85fecc362e37807bb5fd045c0fada3c25ddcb2cf86356d39949281602',
    file: 'all-the-package-repos-2.0.3148.tgz',
    license: 'MIT (npm package); values are repository URLs',
  },
  'all-the-package-names@2.0.2578': {
    url: 'https://registry.npmjs.org/all-the-package-names/-/all-the-package-names-2.0.2578.tgz',
    sha256: '89cccbb8825c8b60fa65a69aa558facd9dcebff951024d321478ed720adf1b85',
    file: 'all-the-package-names-2.0.2578.tgz',
    license: 'MIT',
  },
  'edu.stanford.nlp:stanford-corenlp:4.5.7:models-english-kbp': {
    // The URL Maven itself resolves the artifact to (Maven Central's default repository layout).
    url: 'https://repo.maven.apache.org/maven2/edu/stanford/nlp/stanford-corenlp/4.5.7/stanford-corenlp-4.5.7-models-english-kbp.jar',
    sha256: 'e51c106bd5ce2094a65a5d9c898b3151b9355b78fd4dbc3a0020551eb00d7e36',
    sha1: '47d491020ed29e7395957773cb8536512d4f5747', // as published beside the jar (.sha1)
    file: 'stanford-corenlp-4.5.7-models-english-kbp.jar',
    license: 'GPL-3.0-or-later: downloaded at bench time, never committed',
  },
};

// kind: 'string' (utf8 keys), 'u32' (4-byte big-endian), 'u64' (8-byte big-endian)
export const DATASETS = {
  urls: { kind: 'string', source: 'all-the-package-repos@2.0.3148', desc: 'npm package repository URLs (package/data/packages.json values, unique)' },
  wiki: { kind: 'string', source: 'edu.stanford.nlp:stanford-corenlp:4.5.7:models-english-kbp', desc: 'Wikipedia titles (wikidict.tab.gz column 2, unique)' },
  names: { kind: 'string', source: 'all-the-package-names@2.0.2578', desc: 'npm package names (package/names.json)' },
  dense: { kind: 'u32', desc: 'u32 keys 0..N-1 in random order' },
  sparse: { kind: 'u32', desc: 'N unique random u32 keys' },
  partitioned: { kind: 'u64', desc: '32-bit partition ‖ 32-bit counter, ~2000 keys per partition, generation order' },
  // density sweep: 'dense-dXX' = N keys drawn uniformly without replacement from [0, N/0.XX)
};

export function datasetKind(name) {
  if (name.startsWith('file:')) return 'string';
  if (/^dense-d\d+$/.test(name)) return 'u32';
  const d = DATASETS[name];
  if (!d) throw new Error(`unknown data set '${name}' (known: ${Object.keys(DATASETS).join(', ')}, dense-dNN, file:PATH)`);
  return d.kind;
}

function sha256File(file) {
  const h = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.allocUnsafe(1 << 22);
  let n;
  while ((n = fs.readSync(fd, buf, 0, buf.length, null)) > 0) h.update(buf.subarray(0, n));
  fs.closeSync(fd);
  return h.digest('hex');
}

/** Records every input's SHA-256: it ends up in the result JSON (machine.inputs). */
export const inputs = {};

async function download(id) {
  const d = DOWNLOADS[id];
  const dir = path.join(CACHE_DIR, 'downloads');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, d.file);
  if (fs.existsSync(file)) {
    const sha = sha256File(file);
    if (sha === d.sha256) {
      inputs[id] = { url: d.url, sha256: sha, bytes: fs.statSync(file).size, cached: true };
      return file;
    }
    log(`cached ${d.file} has SHA-256 ${sha}, expected ${d.sha256}: downloading again`);
    fs.unlinkSync(file);
  }
  log(`downloading ${id} from ${d.url}`);
  const res = await fetch(d.url);
  if (!res.ok) throw new Error(`download ${d.url}: HTTP ${res.status}`);
  const total = Number(res.headers.get('content-length')) || 0;
  const tmp = file + '.part';
  const out = fs.createWriteStream(tmp);
  const h = crypto.createHash('sha256');
  let got = 0, nextReport = 0.1;
  for await (const chunk of res.body) {
    h.update(chunk);
    got += chunk.length;
    if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
    if (total && got / total >= nextReport) {
      log(`  ${id}: ${Math.round((got / total) * 100)}% of ${fmtBytes(total)}`);
      nextReport += 0.1;
    }
  }
  await new Promise((r, j) => out.end((e) => (e ? j(e) : r())));
  const sha = h.digest('hex');
  if (sha !== d.sha256) {
    fs.unlinkSync(tmp);
    throw new Error(`SHA-256 mismatch for ${d.url}: got ${sha}, pinned ${d.sha256}`);
  }
  fs.renameSync(tmp, file);
  inputs[id] = { url: d.url, sha256: sha, bytes: got, cached: false };
  return file;
}

// ---- archive members (no dependencies: a small ustar reader and a small zip reader)

function tarMember(tgzFile, member) {
  const tar = zlib.gunzipSync(fs.readFileSync(tgzFile));
  for (let o = 0; o + 512 <= tar.length; ) {
    const name = tar.toString('utf8', o, o + 100).replace(/\0.*$/s, '');
    if (!name) break;
    const prefix = tar.toString('utf8', o + 345, o + 500).replace(/\0.*$/s, '');
    const size = parseInt(tar.toString('ascii', o + 124, o + 136).replace(/\0.*$/s, '').trim(), 8) || 0;
    const full = prefix ? prefix + '/' + name : name;
    if (full === member) return tar.subarray(o + 512, o + 512 + size);
    o += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${member} not found in ${tgzFile}`);
}

/** A readable stream of one (deflated or stored) zip member, read from the file's central directory. */
function zipMemberStream(zipFile, member) {
  const fd = fs.openSync(zipFile, 'r');
  const size = fs.fstatSync(fd).size;
  const tailLen = Math.min(size, 65557);
  const tail = Buffer.alloc(tailLen);
  fs.readSync(fd, tail, 0, tailLen, size - tailLen);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) if (tail.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  if (eocd < 0) throw new Error('not a zip file: ' + zipFile);
  const cdSize = tail.readUInt32LE(eocd + 12), cdOff = tail.readUInt32LE(eocd + 16);
  const cd = Buffer.alloc(cdSize);
  fs.readSync(fd, cd, 0, cdSize, cdOff);
  for (let o = 0; o < cdSize; ) {
    const method = cd.readUInt16LE(o + 10), csize = cd.readUInt32LE(o + 20);
    const nlen = cd.readUInt16LE(o + 28), elen = cd.readUInt16LE(o + 30), clen = cd.readUInt16LE(o + 32);
    const lho = cd.readUInt32LE(o + 42);
    const name = cd.toString('utf8', o + 46, o + 46 + nlen);
    if (name === member) {
      const lh = Buffer.alloc(30);
      fs.readSync(fd, lh, 0, 30, lho);
      const start = lho + 30 + lh.readUInt16LE(26) + lh.readUInt16LE(28);
      fs.closeSync(fd);
      const raw = fs.createReadStream(zipFile, { start, end: start + csize - 1 });
      if (method === 0) return raw;
      if (method === 8) return raw.pipe(zlib.createInflateRaw());
      throw new Error(`zip method ${method} unsupported`);
    }
    o += 46 + nlen + elen + clen;
  }
  fs.closeSync(fd);
  throw new Error(`${member} not found in ${zipFile}`);
}

// ---- derived key lists: unique keys in source order, one per line, cached with their SHA-256

function derivedPath(name) {
  return path.join(CACHE_DIR, 'derived', name + '.txt');
}

function keepKey(k) {
  return k.length > 0 && !k.includes('\n') && Buffer.byteLength(k) <= MAX_KEY_BYTES;
}

async function deriveKeys(name) {
  const file = derivedPath(name);
  const manifest = file + '.json';
  const d = DATASETS[name];
  const src = await download(d.source);
  if (fs.existsSync(file) && fs.existsSync(manifest)) {
    const m = JSON.parse(fs.readFileSync(manifest, 'utf8'));
    if (m.source_sha256 === DOWNLOADS[d.source].sha256 && sha256File(file) === m.sha256) {
      inputs[`derived:${name}`] = m;
      return file;
    }
    log(`derived ${name} keys do not match their manifest: extracting again`);
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  log(`extracting ${name} keys from ${path.basename(src)} (once; cached in ${path.dirname(file)})`);
  const seen = new Set();
  let dropped = 0, total = 0;
  const add = (k) => {
    if (typeof k !== 'string') return;
    total++;
    if (!keepKey(k)) { dropped++; return; }
    seen.add(k);
  };
  if (name === 'urls') {
    const obj = JSON.parse(tarMember(src, 'package/data/packages.json').toString('utf8'));
    for (const v of Object.values(obj)) add(v);
  } else if (name === 'names') {
    for (const v of JSON.parse(tarMember(src, 'package/names.json').toString('utf8'))) add(v);
  } else if (name === 'wiki') {
    const gz = zipMemberStream(src, 'edu/stanford/nlp/models/kbp/english/wikidict.tab.gz').pipe(zlib.createGunzip());
    const rl = readline.createInterface({ input: gz, crlfDelay: Infinity });
    let lines = 0;
    for await (const line of rl) {
      const a = line.indexOf('\t');
      if (a < 0) continue;
      const b = line.indexOf('\t', a + 1);
      add(b < 0 ? line.slice(a + 1) : line.slice(a + 1, b));
      if (++lines % 10_000_000 === 0) log(`  wiki: ${lines / 1e6}M lines, ${(seen.size / 1e6).toFixed(2)}M unique titles`);
    }
  } else throw new Error('no extractor for ' + name);
  const keys = [...seen];
  const tmp = file + '.tmp';
  fs.writeFileSync(tmp, keys.join('\n') + '\n');
  fs.renameSync(tmp, file);
  let bytes = 0;
  for (const k of keys) bytes += Buffer.byteLength(k);
  const m = {
    source: d.source, source_sha256: DOWNLOADS[d.source].sha256, sha256: sha256File(file),
    unique_keys: keys.length, dropped_keys: dropped, total_values: total, avg_key_bytes: +(bytes / keys.length).toFixed(2),
  };
  fs.writeFileSync(manifest, JSON.stringify(m, null, 1));
  log(`  ${name}: ${keys.length} unique keys (avg ${m.avg_key_bytes} B), ${dropped} dropped (empty or > ${MAX_KEY_BYTES} B)`);
  inputs[`derived:${name}`] = m;
  return file;
}

function readLines(file) {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// ---- generated integer keys

function u32be(x) {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(x >>> 0);
  return b;
}

function generate(name, n, seed) {
  const rng = new SplitMix64(BigInt(seed) * 0x1000193n + 7n);
  if (name === 'dense') {
    const a = new Uint32Array(n);
    for (let i = 0; i < n; i++) a[i] = i;
    return Array.from(shuffle(a, rng), u32be);
  }
  const dm = /^dense-d(\d+)$/.exec(name);
  if (dm) {
    // density d: n keys uniformly without replacement from [0, m), m = round(n / d)
    const d = Number(dm[1]) / 100;
    if (!(d > 0 && d <= 1)) throw new Error('density must be in (0, 100]: ' + name);
    const m = Math.round(n / d);
    const a = new Uint32Array(m);
    for (let i = 0; i < m; i++) a[i] = i;
    // partial Fisher-Yates: the first n slots become a uniform random n-subset in random order
    for (let i = 0; i < n; i++) {
      const j = i + rng.nextBelow(m - i);
      const t = a[i]; a[i] = a[j]; a[j] = t;
    }
    return Array.from(a.subarray(0, n), u32be);
  }
  if (name === 'sparse') {
    const seen = new Set();
    const out = [];
    while (out.length < n) {
      const x = rng.nextU32();
      if (!seen.has(x)) { seen.add(x); out.push(u32be(x)); }
    }
    return out;
  }
  if (name === 'partitioned') {
    const parts = Math.max(1, Math.round(n / 2000));
    const counters = new Uint32Array(parts);
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      const p = rng.nextBelow(parts);
      const b = Buffer.allocUnsafe(8);
      b.writeUInt32BE(p, 0);
      b.writeUInt32BE(counters[p]++, 4);
      out[i] = b;
    }
    return out; // generation order: sequential within a partition, partitions interleaved
  }
  throw new Error('cannot generate ' + name);
}

/**
 * Makes (or reuses) the key file for `name` with `n` keys.
 * @returns {{ path: string, kind: string, n: number, avgKeyBytes: number, note?: string }}
 */
export async function prepareDataset(name, n, seed) {
  const kind = datasetKind(name);
  const dir = path.join(CACHE_DIR, 'prepared');
  fs.mkdirSync(dir, { recursive: true });
  let tag = name;
  let userFile = null;
  if (name.startsWith('file:')) {
    userFile = path.resolve(name.slice(5));
    const sha = sha256File(userFile);
    inputs[name] = { path: userFile, sha256: sha, bytes: fs.statSync(userFile).size };
    tag = 'file-' + sha.slice(0, 16);
  } else if (DATASETS[name]?.source) {
    await deriveKeys(name); // checks download + derived list, records SHA-256s
  }
  const out = path.join(dir, `${tag}-n${n}-s${seed}.keys`);
  const metaFile = out + '.json';
  if (fs.existsSync(out) && fs.existsSync(metaFile)) {
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8'));
    if (meta.version === 1) return { ...meta, path: out };
  }
  let keys; // Buffers in insertion order
  let note;
  if (userFile || DATASETS[name]?.source) {
    const all = readLines(userFile || derivedPath(name));
    const uniq = userFile ? [...new Set(all.filter(keepKey))] : all;
    // Sub-sample: a seeded shuffle of every unique key, first n taken, in that (random) order.
    shuffle(uniq, new SplitMix64(BigInt(seed) * 0x9e3779b1n + 11n));
    if (uniq.length < n) note = `only ${uniq.length} unique keys available (asked for ${n})`;
    keys = uniq.slice(0, n).map((s) => Buffer.from(s, 'utf8'));
  } else {
    keys = generate(name, n, seed);
  }
  log(`prepared ${name}: ${keys.length} keys${note ? ' (' + note + ')' : ''}`);
  const bytes = writeKeyFile(out, keys);
  const meta = { version: 1, dataset: name, kind, n: keys.length, seed, avgKeyBytes: +((bytes - 4 * keys.length) / keys.length).toFixed(2), note };
  fs.writeFileSync(metaFile, JSON.stringify(meta));
  return { ...meta, path: out };
}
