// The in-process impls a child runner can load, by row `impl` name.
export async function getImpl(name) {
  switch (name) {
    case 'js-map': return (await import('./js-map.mjs')).default;
    case 'sorted-btree': return (await import('./sorted-btree.mjs')).default;
    case 'adaptree-wasm': return (await import('./adaptree-wasm.mjs')).adaptreeWasm;
    case 'adaptree-wasm-mt': return (await import('./adaptree-wasm.mjs')).adaptreeWasmMt;
    case 'adaptree-wasm-base': return (await import('./adaptree-wasm.mjs')).adaptreeWasmBase;
    default: throw new Error('unknown impl ' + name);
  }
}
