// A Cloudflare Workers project: lib es2022 + @cloudflare/workers-types, no DOM, no @types/node.
import {
  init,
  BTreeMap,
  BTreeStore,
  durableObjectStorage,
  durableObjectKvStorage,
  type AdaptreeWasm,
  type DurableObjectBackend,
  type DurableObjectKvBackend,
  type WasmMemory,
  type WasmModule,
  type WasmResponse,
} from 'adaptree';
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

// A SQLite-backed Durable Object holding a store: the platform's DurableObjectStorage fits
// the backend's structural interface without adaptree depending on workers-types.
export class Index implements DurableObject {
  readonly store: Promise<BTreeStore<string, number>>;
  constructor(readonly ctx: DurableObjectState) {
    const backend: DurableObjectBackend = durableObjectStorage(ctx.storage, { chunkSize: 65536 });
    this.store = ctx.blockConcurrencyWhile(async () =>
      BTreeStore.open<string, number>({ path: 'main', storage: backend, wasm: await init({ wasm }), poolSize: 16 << 20 }));
  }
  async fetch(): Promise<Response> {
    const s = await this.store;
    s.set('hits', (s.get('hits') ?? 0) + 1);
    await s.commit();
    await this.ctx.storage.sync();
    const paths: string[] = durableObjectStorage(this.ctx.storage).list();
    // @ts-expect-error the backend takes the storage, not the state
    durableObjectStorage(this.ctx);
    return new Response(`${s.size} ${paths.length}`);
  }
}

// A key-value-backed Durable Object: the asynchronous backend, the same platform type.
export class KvIndex implements DurableObject {
  readonly store: Promise<BTreeStore<string, number>>;
  constructor(readonly ctx: DurableObjectState) {
    const backend: DurableObjectKvBackend = durableObjectKvStorage(ctx.storage);
    this.store = ctx.blockConcurrencyWhile(async () =>
      BTreeStore.open<string, number>({ path: 'main', storage: backend, wasm: await init({ wasm }) }));
  }
  async fetch(): Promise<Response> {
    const s = await this.store;
    await s.setAsync('hits', ((await s.getAsync('hits')) ?? 0) + 1);
    await s.commit();
    const paths: string[] = await durableObjectKvStorage(this.ctx.storage).list();
    // @ts-expect-error the backend takes the storage, not the state
    durableObjectKvStorage(this.ctx);
    return new Response(`${s.size} ${paths.length}`);
  }
}
