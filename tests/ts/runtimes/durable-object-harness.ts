// Shared by the Durable Object tests in workerd (durable-object.test.ts: SQLite storage;
// durable-object-kv.test.ts: key-value storage): a workerd started on a bundled Worker, JSON
// calls to it, random set/delete ops kept in a model, and the model check.
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { SplitMix } from '../store-rng.js';
import { freePort } from '../../package/common.mjs';
import { startWorkerd, writeWorkerdConfig } from './workerd.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = resolve(here, '../../..');

export type Op = [string, number | string | null];
export type Model = Map<string, number | string>;

/** A workerd serving `main` (a Worker module in this folder, bundled with the package) with
 * one Durable Object namespace (`durableObject` as workerdConfig takes it, minus `storage`). */
export function workerdHarness(main: string, durableObject: { className: string; binding: string; uniqueKey: string; sql?: boolean }, experimental = false) {
  let dir = '';
  let port = 0;
  let workerd: Awaited<ReturnType<typeof startWorkerd>> | undefined;
  const h = {
    get dir() {
      return dir;
    },
    get port() {
      return port;
    },
    /** The running workerd's output. */
    log: () => workerd?.log() ?? '',
    /** Bundles `main`, writes the config, starts workerd. */
    async setUp(): Promise<void> {
      dir = mkdtempSync(join(tmpdir(), 'adaptree-do-'));
      const { rolldown } = await import('rolldown');
      const bundle = await rolldown({ input: join(here, main), external: [/\.wasm$/, /^cloudflare:/], platform: 'neutral', logLevel: 'silent' });
      await bundle.write({ file: join(dir, 'worker.mjs'), format: 'es' });
      copyFileSync(join(repo, 'dist/wasm/adaptree-st.wasm'), join(dir, 'adaptree-st.wasm'));
      port = await freePort();
      writeWorkerdConfig(dir, { port, modules: ['worker.mjs', 'adaptree-st.wasm'], experimental, durableObject: { ...durableObject, storage: join(dir, 'do-storage') } });
      await h.start();
    },
    async start(): Promise<void> {
      workerd = await startWorkerd(dir, port, { experimental, probe: '/nothing' });
    },
    async stop(signal: NodeJS.Signals): Promise<void> {
      const w = workerd;
      workerd = undefined;
      await w?.stop(signal);
    },
    /** GET (or POST with a JSON body) `path`; expects 200 and returns the JSON. */
    async call<T = unknown>(path: string, body?: unknown): Promise<T> {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
      const text = await res.text();
      expect(res.status, `${path}: ${text.slice(0, 2000)}\n${h.log().slice(-2000)}`).toBe(200);
      return JSON.parse(text) as T;
    },
    /** The store's entries (GET /entries?`query`) equal the model. */
    async expectModel(what: string, m: Model, query: string): Promise<void> {
      const entries = await h.call<[string, number | string][]>(`/entries?${query}`);
      expect(entries.length, what).toBe(m.size);
      expect(entries, what).toEqual(sorted(m));
    },
  };
  return h;
}

/** A source of random ops: n sets (4 in 5) and deletes over a key space of `space`, applied to
 * `m` if given; values are numbers, or strings of about `text` bytes. */
export function opsFrom(seed: number) {
  const rng = new SplitMix(seed);
  return (n: number, space: number, m?: Model, text = 0): Op[] => {
    const ops: Op[] = [];
    for (let i = 0; i < n; i++) {
      const k = `key:${String(rng.int(space)).padStart(6, '0')}`;
      const v = text > 0 ? `${rng.next().toString(36)}:`.padEnd(text - 20 + rng.int(40), 'x') : rng.next();
      const op: Op = rng.int(5) === 0 ? [k, null] : [k, v];
      ops.push(op);
      if (m !== undefined) {
        if (op[1] === null) m.delete(k);
        else m.set(k, op[1]);
      }
    }
    return ops;
  };
}

export const sorted = (m: Model) => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** The checksum the Workers' /value route computes of bigString(n) (durable-object-common.mjs). */
export function bigStringSum(n: number): number {
  const unit = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(32);
  let sum = 0;
  for (let i = 0; i < n; i++) sum = (sum * 31 + unit.charCodeAt(i % unit.length) * (i % 97 + 1)) % 1000000007;
  return sum;
}
