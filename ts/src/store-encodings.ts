/**
 * The key and value encodings a store records (docs/FORMAT.md, StoreMeta bytes 29 and 30):
 * a store opened with other encodings than it was written with is refused at open with
 * InvalidArgumentError naming both, instead of failing later on the first read (a JSON
 * SyntaxError, a "corrupt number key") or silently mixing two encodings in one tree.
 *
 * The core keeps the two bytes without reading them. 0 means "not recorded": a store from
 * before they were, or one no commit has recorded them in yet; such a store takes the
 * encodings it is opened with, and its next commit records them. Custom codecs record only
 * that they are custom: two custom codecs cannot be told apart.
 */
import type { AbiExports } from './abi.js';
import { errorFromStatus, InvalidArgumentError } from './errors.js';

const KEY_TAGS: Readonly<Record<string, number>> = { utf8: 1, bytes: 2, number: 3, bigint: 4, tuple: 5, custom: 15 };
const VALUE_TAGS: Readonly<Record<string, number>> = { json: 1, utf8: 2, bytes: 3, custom: 15 };

/** The tag of an encoding option (a name, an encoder object, a codec); 0 for a name this
 * build does not know (the map's constructor rejects it with its own message). */
function tagOf(opt: unknown, dflt: string, tags: Readonly<Record<string, number>>): number {
  if (opt === undefined) return tags[dflt]!;
  if (typeof opt === 'string') return Object.prototype.hasOwnProperty.call(tags, opt) ? tags[opt]! : 0;
  if (opt !== null && typeof opt === 'object') {
    const name = (opt as { name?: unknown }).name;
    // A built-in encoder object passed as is (they carry their name and decodeFrom).
    if (typeof name === 'string' && typeof (opt as { decodeFrom?: unknown }).decodeFrom === 'function' && Object.prototype.hasOwnProperty.call(tags, name)) {
      return tags[name]!;
    }
    return tags.custom!;
  }
  return 0;
}

function nameOf(tag: number, tags: Readonly<Record<string, number>>): string {
  for (const [name, t] of Object.entries(tags)) if (t === tag) return name === 'custom' ? 'a custom codec' : `'${name}'`;
  return `an encoding this version does not know (${tag})`;
}

/**
 * Compares the encodings `options` ask for with those the store at `tree` recorded, and
 * records them when it recorded none (unless read-only). Throws InvalidArgumentError on a
 * mismatch; the store is then closed by the caller, unchanged. A wasm build without the two
 * functions skips the check.
 */
export function checkStoreEncodings(ex: AbiExports, tree: number, options: { keys?: unknown; values?: unknown }, path: string, readOnly: boolean): boolean {
  if (typeof ex.at_store_encodings !== 'function' || typeof ex.at_store_set_encodings !== 'function') return false;
  const key = tagOf(options.keys, 'utf8', KEY_TAGS);
  const value = tagOf(options.values, 'json', VALUE_TAGS);
  if (key === 0 || value === 0) return false;
  const rec = ex.at_store_encodings(tree);
  if (rec < 0) throw errorFromStatus(rec, 'reading the store\'s encodings');
  const rk = rec & 0xff, rv = (rec >>> 8) & 0xff;
  const wrong: string[] = [];
  if (rk !== 0 && rk !== key) wrong.push(`keys: ${nameOf(rk, KEY_TAGS)} (opened with ${nameOf(key, KEY_TAGS)})`);
  if (rv !== 0 && rv !== value) wrong.push(`values: ${nameOf(rv, VALUE_TAGS)} (opened with ${nameOf(value, VALUE_TAGS)})`);
  if (wrong.length > 0) {
    throw new InvalidArgumentError(`the store '${path}' was written with ${wrong.join(' and ')}: open it with the encodings it was written with`);
  }
  if ((rk === 0 || rv === 0) && !readOnly) {
    const st = ex.at_store_set_encodings(tree, rk || key, rv || value);
    if (st < 0) throw errorFromStatus(st, 'recording the store\'s encodings');
    return true;
  }
  return false;
}
