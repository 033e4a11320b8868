// Which wasm builds the map tests run against, and how to load each.
//   st, mt     : the real modules in dist/wasm (the acceptance criterion)
//   reference  : reference-abi.ts, the ABI in plain TypeScript; a failure on st/mt that does
//                not show here points at the core, not at ts/src
// ADAPTREE_TEST_BUILDS=st,mt,reference (default) selects them.
import { loadWasm, type AdaptreeWasm } from '../../ts/src/wasm.js';
import { referenceWasm } from './reference-abi.js';

export type Build = 'st' | 'mt' | 'reference';

export const BUILDS: Build[] = ((globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env
  .ADAPTREE_TEST_BUILDS ?? 'st,mt,reference').split(',').filter((b): b is Build => b === 'st' || b === 'mt' || b === 'reference');

/** The real builds only (for the long property runs). */
export const REAL_BUILDS: Build[] = BUILDS.filter((b) => b !== 'reference');

export async function wasmFor(build: Build): Promise<AdaptreeWasm> {
  if (build === 'reference') return referenceWasm();
  const w = await loadWasm({ threads: build === 'mt' });
  if (w.build !== build) throw new Error(`asked for the ${build} build, got ${w.build}`);
  return w;
}
