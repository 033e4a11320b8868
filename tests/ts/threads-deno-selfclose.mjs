// Deno: workers that attach a shared map and end with self.close() give its stack back
// (tests/ts/fixtures/selfclose.mjs; tests/ts/store.deno.test.ts). Prints JSON.
import { BTreeMap, loadWasm } from '../../dist/index.js';
import { selfClose } from './fixtures/selfclose.mjs';

console.log(JSON.stringify(await selfClose(BTreeMap, loadWasm, 40)));
