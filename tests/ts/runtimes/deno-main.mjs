// Deno entry: runs the scenario against the built package and prints JSON.
import * as api from '../../../dist/index.js';
import { scenario } from './scenario.mjs';

const threads = Deno.args.includes('--threads');
console.log(JSON.stringify(await scenario(api, { threads })));
