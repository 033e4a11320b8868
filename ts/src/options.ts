/**
 * Option objects: a field the call does not know is InvalidArgumentError. A misspelt one
 * (`close({ comit: false })`, `indexedDBStorage({ durabilty: 'relaxed' })`) was taken silently
 * as the defaults, which for close() committed what was meant to be dropped (a probe, session 31).
 */
import { InvalidArgumentError } from './errors.js';

/** `o` (an options object, or undefined) has only fields named in `known`. */
export function knownFields(o: unknown, what: string, known: readonly string[]): void {
  if (o === undefined) return;
  if (o === null || typeof o !== 'object') throw new InvalidArgumentError(`${what}: options must be an object { ${known.join(', ')} }`);
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new InvalidArgumentError(`${what}: unknown option '${k}' (${known.join(', ')})`);
  }
}

/** A plain object's own boolean fields among `known` (inherited ones are not read: a map read
 * `Object.create({ edges: 1 })`'s, a store did not; an array was taken as no fields). */
export function booleanFields<F extends string>(o: unknown, what: string, known: readonly F[], hint = ''): Partial<Record<F, boolean>> {
  const shape = `{ ${known.map((k) => `${k}?: boolean`).join(', ')} }`;
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new InvalidArgumentError(`${what} must be an object ${shape}`);
  const out: Partial<Record<F, boolean>> = {};
  for (const [k, v] of Object.entries(o)) {
    if (!(known as readonly string[]).includes(k)) throw new InvalidArgumentError(`${what}: unknown field '${k}' (${known.join(', ')})${hint}`);
    if (v !== undefined && typeof v !== 'boolean') throw new InvalidArgumentError(`${what}.${k} must be a boolean`);
    if (v !== undefined) out[k as F] = v as boolean;
  }
  return out;
}
