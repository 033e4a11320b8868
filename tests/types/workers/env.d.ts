// What wrangler's generated types declare for wasm imports.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
