// The demo page (npm run demo = dev server, npm run demo:build, npm start = build + serve).
// The dev and preview servers send COOP/COEP, so the page is cross-origin isolated and
// loads the multi-threaded (shared memory) build; served without them it uses st.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const isolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: {
    // The demo uses the package's public API, from source (vite compiles the TypeScript).
    alias: { adaptree: fileURLToPath(new URL('../ts/src/index.ts', import.meta.url)) },
  },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1024 },
  server: { host: '127.0.0.1', port: 5173, headers: isolation, fs: { allow: ['..'] } },
  preview: { host: '127.0.0.1', port: 5173, headers: isolation },
});
