import * as api from '../../../../ts/src/index.ts';
import { scenario } from '../scenario.mjs';

scenario(api, { threads: true }).then(
  (r) => postMessage(r),
  (e) => postMessage({ error: String(e && e.stack ? e.stack : e) }),
);
