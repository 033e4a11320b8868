// A browser project (vite's template settings): lib es2022 + DOM, no @types/node.
import {
  init,
  BTreeMap,
  threadsAvailable,
  type AdaptreeWasm,
  type AttachHandle,
  type WasmMemory,
  type WasmModule,
  type WasmResponse,
} from 'adaptree';
import wasmUrl from 'adaptree/wasm/adaptree-st.wasm?url';

const w: AdaptreeWasm = await init({ wasm: fetch(wasmUrl) });
const mod: WebAssembly.Module = w.module;
const mem: WebAssembly.Memory = w.memory;
await init({ wasm: await WebAssembly.compileStreaming(fetch(wasmUrl)) });
await init({ wasm: new URL('./x.wasm', import.meta.url), threads: threadsAvailable() });

const m = new BTreeMap<number, string>(undefined, { keys: 'number', values: 'utf8' });
m.set(1, 'one').set(2, 'two');
const first: [number, string] | undefined = m.first();
const n: number = m.deleteRange({ gte: 1, lt: 2 });
m[Symbol.dispose]();

// A worker attaches with a handle posted to it.
const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
const handle: AttachHandle = w.attachHandle();
worker.postMessage(handle);
new WebAssembly.Instance(handle.module, { env: { memory: handle.memory } });
// @ts-expect-error threads is a boolean
await init({ threads: 'yes' });
document.body.textContent = `${mod} ${mem.buffer.byteLength} ${first} ${n}`;

// The aliases are the platform's own types where it declares them.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const exact: [Same<WasmModule, WebAssembly.Module>, Same<WasmMemory, WebAssembly.Memory>, Same<WasmResponse, Response>] = [true, true, true];
console.log(exact);
