// Names, colours and one-line explanations of the node layouts, shared by every view.

export const LEAF_LAYOUTS = ['basic_leaf', 'fingerprint_leaf', 'semi_dense_leaf', 'fully_dense_leaf'] as const;
export type LeafLayout = (typeof LEAF_LAYOUTS)[number];

export const COLORS: Record<string, string> = {
  inner: '#64748b',
  basic_leaf: '#3b82f6',
  fingerprint_leaf: '#f59e0b',
  semi_dense_leaf: '#10b981',
  fully_dense_leaf: '#a855f7',
};

export const NAMES: Record<string, string> = {
  inner: 'inner node',
  basic_leaf: 'sorted leaf (basic: heads, hints)',
  fingerprint_leaf: 'fingerprint leaf',
  semi_dense_leaf: 'semi-dense leaf',
  fully_dense_leaf: 'fully dense leaf',
};

export const SHORT: Record<string, string> = {
  inner: 'inner',
  basic_leaf: 'sorted',
  fingerprint_leaf: 'fingerprint',
  semi_dense_leaf: 'semi-dense',
  fully_dense_leaf: 'fully dense',
};

export const ABOUT: Record<string, string> = {
  inner:
    'Separator keys and child page ids in a sorted slotted page; a lookup binary-searches it to pick the child. ' +
    'Keys are stored without the prefix all of them share (prefix truncation).',
  basic_leaf:
    'Records in key order in a slotted page. Each slot keeps the first 4 bytes of its key as an integer ("head") and ' +
    '16 sampled heads ("hints") narrow the binary search; few full-key comparisons. Best for range scans (already sorted).',
  fingerprint_leaf:
    'One 1-byte hash ("fingerprint") per record, compared 16 at a time with SIMD: a point lookup finds its record ' +
    'without binary search, which helps when many keys share their first bytes (heads do not tell them apart). ' +
    'Inserts append unsorted; the leaf is sorted lazily before a scan.',
  semi_dense_leaf:
    'Integer-like keys (same length, differing only in the last 4 bytes): one 2-byte slot per possible key between the ' +
    'fences, so the key is not stored at all; a slot points to its value on the heap (0 = absent).',
  fully_dense_leaf:
    'Integer-like keys with equal-size values: a bitmap says which keys exist and the values form an array indexed by ' +
    '(key − base). No keys, no slots, no search: a lookup is one subtraction.',
};

/** Layout configurations of the map (the paper's ablation steps and adaptive). */
export const CONFIGS: { id: string; label: string; about: string }[] = [
  { id: 'adaptive', label: 'adaptive (default)', about: 'picks each leaf’s layout from its keys (dense → dense leaves) and its workload (lookups → fingerprint, scans → sorted)' },
  { id: 'baseline', label: 'baseline', about: 'plain slotted pages, binary search on full keys' },
  { id: 'prefix', label: '+ prefix truncation', about: 'keys stored without the prefix their node shares' },
  { id: 'heads', label: '+ heads', about: '4-byte key heads in the slots' },
  { id: 'hints', label: '+ hints', about: '16 sampled heads narrow the search' },
  { id: 'fingerprint', label: 'fingerprint leaves', about: 'every leaf a fingerprint leaf' },
  { id: 'semi-dense', label: 'semi-dense leaves', about: 'semi-dense leaves where keys allow' },
  { id: 'fully-dense', label: 'fully dense leaves', about: 'fully dense leaves where keys allow' },
];
