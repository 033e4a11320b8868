// Showing keys: the dumps give bytes (hex); the page decodes them with the map's key
// encoding where that works (a separator may be a cut-off key) and shows bytes otherwise.
import { hexToBytes, numberKey, utf8Key } from 'adaptree';
import type { KeyKind } from './datasets';

const printable = (b: number) => b >= 0x20 && b < 0x7f;

/** Bytes as text: printable ASCII as is, the rest as \xNN. */
export function bytesText(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += printable(c) ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return s;
}

/** A key (full key bytes as hex) in the map's encoding, or as escaped bytes when it does not decode. */
export function showKey(hex: string | null | undefined, kind: KeyKind, max = 60): string {
  if (hex === null || hex === undefined) return '∞';
  const b = hexToBytes(hex);
  let s: string;
  try {
    if (kind === 'number') {
      s = String(numberKey.decode(b));
    } else {
      const t = utf8Key.decode(b);
      s = /[\x00-\x1f\x7f]/.test(t) ? bytesText(b) : t;
    }
  } catch {
    s = bytesText(b);
  }
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

export function hex2(n: number): string {
  return n.toString(16).padStart(2, '0');
}
