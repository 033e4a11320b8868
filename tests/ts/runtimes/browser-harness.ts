// Shared by the Chromium tests (runtimes, opfs, indexeddb): the browser binary and flags, a
// static server that makes pages cross-origin isolated, and the random workload with its model.
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { extname, join } from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';
export const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

const MIME: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.css': 'text/css',
};

/** Serves files below `root` (only under the given URL prefixes; a directory means its
 * index.html) with COOP + COEP, so pages are cross-origin isolated (SharedArrayBuffer, mt). */
export function isolatedServer(root: string, prefixes: string[]): Server {
  return createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').split('?')[0]!).replace(/\/$/, '/index.html');
    const path = join(root, url);
    if (!path.startsWith(root) || !prefixes.some((p) => url.startsWith(p)) || !existsSync(path)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      'content-type': MIME[extname(path)] ?? 'application/octet-stream',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
    });
    res.end(readFileSync(path));
  });
}

/** Starts `server` on a free local port; resolves with the port. */
export function listen(server: Server): Promise<number> {
  return new Promise<number>((res) => server.listen(0, '127.0.0.1', () => res((server.address() as { port: number }).port)));
}

export type Op = [key: string, value: { n: number; s: string } | null];

/** n random sets (80%) and deletes over ~n/3 keys, values of random length. */
export function randomOps(n: number, seed: number): Op[] {
  let x = seed >>> 0 || 1;
  const rnd = () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
  const ops: Op[] = [];
  for (let i = 0; i < n; i++) {
    const k = `key:${Math.floor(rnd() * (n / 3)).toString(36).padStart(5, '0')}`;
    ops.push(rnd() < 0.2 ? [k, null] : [k, { n: i, s: 'v'.repeat(Math.floor(rnd() * 300)) }]);
  }
  return ops;
}

export function applyModel(model: Map<string, unknown>, ops: Op[]): void {
  for (const [k, v] of ops) {
    if (v === null) model.delete(k);
    else model.set(k, v);
  }
}

/** The model's entries in key order (the store's order for ASCII utf8 keys). */
export const sorted = (model: Map<string, unknown>) => [...model.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
