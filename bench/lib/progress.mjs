// Progress goes to stderr, results to the JSON file (and, from child runners, NDJSON on stdout).
// Children inherit the parent's start time so timestamps line up in one log.
const t0 = Number(process.env.ADAPTREE_BENCH_T0) || Date.now();
process.env.ADAPTREE_BENCH_T0 = String(t0);
export function log(...parts) {
  const s = ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${s}s] ${parts.join(' ')}\n`);
}
export function warn(...parts) {
  log('WARN', ...parts);
}
export function fmtOps(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x >= 1e6) return (x / 1e6).toFixed(2) + 'M';
  if (x >= 1e3) return (x / 1e3).toFixed(1) + 'k';
  return x.toFixed(0);
}
export function fmtBytes(x) {
  if (x >= 1 << 30) return (x / (1 << 30)).toFixed(2) + ' GiB';
  if (x >= 1 << 20) return (x / (1 << 20)).toFixed(1) + ' MiB';
  if (x >= 1 << 10) return (x / (1 << 10)).toFixed(1) + ' KiB';
  return x + ' B';
}
