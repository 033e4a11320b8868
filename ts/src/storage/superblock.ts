/**
 * What an asynchronous backend reads of page 0 (the superblock the core writes with every
 * commit, docs/FORMAT.md): the store's page count. Pages past it were freed at the store's end
 * (the core cuts them, BufferPool::trim_free_tail), so a backend may drop their records.
 */

/** The page count in page 0's first superblock slot (magic `ADAPTREE`, the meta at 24, its
 * page count at 16 of it, little-endian), or undefined when page 0 is not a superblock. */
export function pageCountOf(page0: Uint8Array): number | undefined {
  const magic = 'ADAPTREE';
  if (page0.length < 44) return undefined;
  for (let i = 0; i < 8; i++) if (page0[i] !== magic.charCodeAt(i)) return undefined;
  const n = (page0[40]! | (page0[41]! << 8) | (page0[42]! << 16) | (page0[43]! << 24)) >>> 0;
  return n > 0 ? n : undefined;
}
