// Serves the built demo (demo/dist) statically on 127.0.0.1 with COOP/COEP, so the
// page is cross-origin isolated (threads: the mt build). `npm start` runs it.
//   node demo/serve.mjs [--port 5173] [--no-isolation] [--dir demo/dist]
import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const root = normalize(opt('--dir', fileURLToPath(new URL('./dist/', import.meta.url))));
const isolate = !args.includes('--no-isolation');
let port = Number(opt('--port', process.env.PORT ?? 5173));
// (a bad port was Node's ERR_SOCKET_BAD_PORT stack, session 23)
if (!(Number.isInteger(port) && port >= 0 && port <= 65535)) {
  process.stderr.write(`demo/serve.mjs: --port must be a port number (0..65535), got ${JSON.stringify(opt('--port', process.env.PORT))}\n`);
  process.exit(2);
}
for (const a of args) {
  if (a.startsWith('--') && !['--port', '--dir', '--no-isolation'].includes(a)) {
    process.stderr.write(`demo/serve.mjs: unknown argument ${a} (usage: node demo/serve.mjs [--port 5173] [--no-isolation] [--dir demo/dist])\n`);
    process.exit(2);
  }
}

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.css': 'text/css',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
};

if (!existsSync(join(root, 'index.html'))) {
  console.error(`serve: ${root} has no index.html; build the demo first (npm run demo:build)`);
  process.exit(1);
}

const server = createServer((req, res) => {
  // A malformed escape (/%E0%A4%A) threw URIError out of the handler and ended the server; a
  // file must lie under root itself, not merely start with its name (root 'site' served
  // 'site-secret/...' to /%2e%2e/site-secret/...).
  let path;
  try {
    path = decodeURIComponent((req.url ?? '/').split('?')[0]);
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request');
    return;
  }
  if (path.endsWith('/')) path += 'index.html';
  const file = normalize(join(root, path));
  const under = file.startsWith(root.endsWith(sep) ? root : root + sep);
  if (!under || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    return;
  }
  const headers = { 'content-type': MIME[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' };
  if (isolate) {
    headers['cross-origin-opener-policy'] = 'same-origin';
    headers['cross-origin-embedder-policy'] = 'require-corp';
  }
  res.writeHead(200, headers).end(readFileSync(file));
});

// Take the next port when this one is busy.
server.on('error', (e) => {
  if (e.code === 'EADDRINUSE' && port < 65535) {
    port++;
    server.listen(port, '127.0.0.1');
  } else {
    // (one line, as for a bad --port: a raw stack, a probe, session 33)
    console.error(`demo/serve.mjs: cannot listen on 127.0.0.1:${port} (${e.code ?? e.message})${e.code === 'EADDRINUSE' ? ': no free port up to 65535' : ''}`);
    process.exit(1);
  }
});
server.on('listening', () => {
  const { port: p } = server.address();
  console.log(`adaptree demo: http://127.0.0.1:${p}/  (${isolate ? 'cross-origin isolated: threads on' : 'not isolated: single-threaded build'}; Ctrl-C stops)`);
});
server.listen(port, '127.0.0.1');
