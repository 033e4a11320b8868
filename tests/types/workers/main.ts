// A Cloudflare Workers project: lib es2022 + @cloudflare/workers-types, no DOM, no @types/node.
import { init, BTreeMap, type AdaptreeWasm, type WasmMemory, type WasmModule, type WasmResponse } from 'adaptree';
// Workers forbid compiling wasm at run time; wrangler hands out a precompiled module.
import wasm from 'adaptree/wasm/adaptree-st.wasm';

export default {
  async fetch(request: Request): Promise<Response> {
    const w: AdaptreeWasm = await init({ wasm });
    const mod: WebAssembly.Module = w.module;
    const m = new BTreeMap<bigint, Uint8Array>(undefined, { keys: 'bigint', values: 'bytes' });
    m.set(1n, new Uint8Array(await request.arrayBuffer()));
    const keys: bigint[] = [...m.keys({ reverse: true })];
    m[Symbol.dispose]();
    // @ts-expect-error threads is a boolean
    await init({ threads: 'yes' });
    return new Response(`${keys.length} ${WebAssembly.Module.exports(mod).length}`);
  },
} satisfies ExportedHandler;

// The aliases are the platform's own types where it declares them.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const exact: [Same<WasmModule, WebAssembly.Module>, Same<WasmMemory, WebAssembly.Memory>, Same<WasmResponse, Response>] = [true, true, true];
console.log(exact);
