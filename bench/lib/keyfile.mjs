// The key file shared by every runner (and by bench/native's adaptree-bench-native --keys):
// keys in insertion order, each as [u32 little-endian length][bytes]. Integer data sets hold
// 4-byte (u32) or 8-byte (u64: partition ‖ counter) big-endian keys, so byte order = numeric order.
import fs from 'node:fs';

export function writeKeyFile(path, keys /* array of Buffer|Uint8Array */) {
  let total = 0;
  for (const k of keys) total += 4 + k.length;
  const buf = Buffer.allocUnsafe(total);
  let o = 0;
  for (const k of keys) {
    buf.writeUInt32LE(k.length, o); o += 4;
    buf.set(k, o); o += k.length;
  }
  const tmp = path + '.tmp' + process.pid;
  fs.writeFileSync(tmp, buf);
  fs.renameSync(tmp, path);
  return total;
}

/** Reads a key file: { buf, offsets: Uint32Array(n+1) of key starts (after the length word), lens }. */
export function readKeyFile(path) {
  const buf = fs.readFileSync(path);
  let n = 0;
  for (let o = 0; o < buf.length; o += 4 + buf.readUInt32LE(o)) n++;
  const starts = new Uint32Array(n), lens = new Uint32Array(n);
  let o = 0;
  for (let i = 0; i < n; i++) {
    const len = buf.readUInt32LE(o);
    starts[i] = o + 4; lens[i] = len; o += 4 + len;
  }
  return { buf, starts, lens, n };
}

/** Keys as JS values: strings (utf8) for string data sets, numbers for u32/u64 ones. */
export function decodeKeys(kf, kind) {
  const { buf, starts, lens, n } = kf;
  const out = new Array(n);
  if (kind === 'string') {
    for (let i = 0; i < n; i++) out[i] = buf.toString('utf8', starts[i], starts[i] + lens[i]);
  } else if (kind === 'u32') {
    for (let i = 0; i < n; i++) out[i] = buf.readUInt32BE(starts[i]);
  } else if (kind === 'u64') {
    // partition (< 2^21) * 2^32 + counter stays an exact JS number
    for (let i = 0; i < n; i++) out[i] = buf.readUInt32BE(starts[i]) * 4294967296 + buf.readUInt32BE(starts[i] + 4);
  } else throw new Error('unknown key kind ' + kind);
  return out;
}

/** Keys as Uint8Array views into the file buffer (for byte-key encodings). */
export function keyViews(kf) {
  const { buf, starts, lens, n } = kf;
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = buf.subarray(starts[i], starts[i] + lens[i]);
  return out;
}
