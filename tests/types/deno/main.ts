// A Deno program using the package from node_modules (package.json next to it).
import { init, BTreeMap, type AdaptreeWasm, type WasmMemory, type WasmModule, type WasmResponse } from 'adaptree';

const bytes = await Deno.readFile(new URL(import.meta.resolve('adaptree/wasm/adaptree-st.wasm')));
const w: AdaptreeWasm = await init({ wasm: bytes });
const mod: WebAssembly.Module = w.module;
using m = new BTreeMap<[string, number], string>(undefined, { keys: 'tuple' });
m.set(['a', 1], 'x');
const e: [[string, number], string][] = [...m.entries()];
// @ts-expect-error threads is a boolean
await init({ threads: 'yes' });
console.log(WebAssembly.Module.imports(mod).length, e.length);

// The aliases are the platform's own types where it declares them.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const exact: [Same<WasmModule, WebAssembly.Module>, Same<WasmMemory, WebAssembly.Memory>, Same<WasmResponse, Response>] = [true, true, true];
console.log(exact);
