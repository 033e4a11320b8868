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
