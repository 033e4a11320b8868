// A Node-only project: lib es2022 + @types/node, no DOM, no WebAssembly lib.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import {
  init,
  loadWasm,
  BTreeMap,
  isAdaptreeError,
  KeyTooLargeError,
  OutOfMemoryError,
  InvalidValueError,
  type AdaptreeWasm,
  type WasmModule,
  type WasmResponse,
  type LoadOptions,
  type WasmSource,
} from 'adaptree';

const require = createRequire(import.meta.url);
const bytes: WasmSource = await readFile(require.resolve('adaptree/wasm/adaptree-st.wasm'));
const w: AdaptreeWasm = await init({ wasm: bytes });
const build: 'st' | 'mt' = w.build;
const heap: number = w.memory.buffer.byteLength;

const m = new BTreeMap<string, { n: number }>([['a', { n: 1 }]], { layout: 'adaptive' });
m.set('b', { n: 2 });
const v: { n: number } | undefined = m.get('a');
for (const [k, x] of m.entries({ gte: 'a', lt: 'c', limit: 10 })) console.log(k.toUpperCase(), x.n);
const asMap: Map<string, { n: number }> = m;
try {
  m.set('x'.repeat(2000), { n: 0 });
} catch (e) {
  if (e instanceof KeyTooLargeError || isAdaptreeError(e)) console.log(e.code);
}
m[Symbol.dispose]();

const threaded: LoadOptions = { threads: true, wasm: new URL('file:///tmp/adaptree-mt.wasm') };
const worker = await loadWasm(threaded);
const handle = worker.attachHandle();
await loadWasm({ attach: handle });
// @ts-expect-error threads is a boolean
await loadWasm({ threads: 'yes' });
console.log(build, heap, v, asMap.size);

// Without WebAssembly declarations a module is any object; Response is @types/node's.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const fallback: [Same<WasmModule, object>, Same<WasmResponse, Response>] = [true, true];
console.log(fallback);

// The key and value encodings must fit the map's types (a new-user probe: `keys: 'number'`
// left K = string, so every set(1, ...) was the type error, and BTreeMap<string> with
// keys: 'number' type-checked and threw InvalidKeyError at every call).
const byNumber = new BTreeMap<number, string>(null, { keys: 'number', values: 'utf8' });
byNumber.set(1, 'one');
const byBytes = new BTreeMap<Uint8Array, Uint8Array>(undefined, { keys: 'bytes', values: 'bytes' });
byBytes.set(new Uint8Array(1), new Uint8Array(1));
// @ts-expect-error 'bytes' keys come back as plain Uint8Arrays, not Buffers (a probe, session 29)
const byBuffer = new BTreeMap<Buffer, unknown>(null, { keys: 'bytes' });
// @ts-expect-error the same for values
const bufferV = new BTreeMap<string, Buffer>(null, { values: 'bytes' });
// @ts-expect-error a value type wider than the encoding's: numbers cannot be stored as utf8
const unionV = new BTreeMap<string, string | number>(null, { values: 'utf8' });
// @ts-expect-error null is not a bytes value
const nullV = new BTreeMap<string, Uint8Array | null>(null, { values: 'bytes' });
const literalV = new BTreeMap<string, 'on' | 'off'>(null, { values: 'utf8' });
const jsonV = new BTreeMap<string, { n: number } | null>(null, { values: 'json' });
const byTuple = new BTreeMap<[string, number], boolean>(null, { keys: 'tuple' });
const literal = new BTreeMap<'a' | 'b', number>(null, { keys: 'utf8' });
const anyKey = new BTreeMap<unknown, unknown>(null, { keys: 'bigint' as 'utf8' | 'bigint' });
// @ts-expect-error K defaults to string: 'number' keys need BTreeMap<number, ...>
const noK = new BTreeMap(null, { keys: 'number' });
// @ts-expect-error a key type wider than the encoding's: numbers cannot be stored as utf8 keys
const unionK = new BTreeMap<string | number, number>(null, { keys: 'utf8' });
// @ts-expect-error string keys cannot be stored with the number encoding
const wrongK = new BTreeMap<string, number>(null, { keys: 'number' });
// @ts-expect-error number values cannot be stored as utf8
const wrongV = new BTreeMap<string, number>(null, { values: 'utf8' });
// A tuple map's bounds may be prefixes of its keys (README: `gte: [a], lt: [a + '\0']`).
for (const [k, v] of byTuple.entries({ gte: ['a'], lt: ['a\0'] })) console.log(k[0], k[1], v);
byTuple.deleteRange({ gt: [] });
// @ts-expect-error a bound that is no prefix of the key type
byTuple.entries({ gte: [1] });
// Every adaptree error may say how much of a setMany was applied (README, "Memory").
try {
  byNumber.setMany([[2, 'two']]);
} catch (e) {
  if (e instanceof OutOfMemoryError) console.log(e.applied ?? 0);
  if (e instanceof InvalidValueError) console.log(e.applied ?? 0);
}
void [byBuffer, bufferV, unionV, nullV, literalV, jsonV, byTuple, literal, anyKey, noK, unionK, wrongK, wrongV];
