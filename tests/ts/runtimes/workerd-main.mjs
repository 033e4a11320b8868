// Cloudflare Workers entry (bundled into one module by runtimes.test.ts): the
// wasm arrives as a precompiled WebAssembly.Module, the only form Workers allow.
import wasmModule from './adaptree-st.wasm';
import * as api from '../../../dist/index.js';
import { scenario } from './scenario.mjs';

export default {
  async fetch() {
    try {
      const result = await scenario(api, { wasm: wasmModule });
      return new Response(JSON.stringify(result), { headers: { 'content-type': 'application/json' } });
    } catch (e) {
      return new Response(String(e && e.stack ? e.stack : e), { status: 500 });
    }
  },
};
