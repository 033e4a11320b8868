// Key arithmetic shared by the two dense leaf layouts (paper, section 3.5),
// written once. All keys of a dense leaf have the same length n and share
// their non-numeric part N (the first n - 4 bytes, or nothing when n <= 4),
// which the lower fence contains. The numeric part is the last min(n, 4)
// bytes read as a big-endian integer; a key is located by its offset from
// the numeric part of the reference key, the smallest length-n key above the
// lower fence.
#pragma once
#include <cstdint>

#include "core/layouts/node_common.h"

namespace adaptree {
namespace dense {

inline uint32_t nonnumeric_len(uint32_t n) { return n > 4 ? n - 4 : 0; }
inline uint32_t width(uint32_t n) { return n < 4 ? n : 4; }
inline uint64_t max_numeric(uint32_t n) { return (uint64_t{1} << (8 * width(n))) - 1; }

// Big-endian value of bytes [0, w) of t, zero padded on the right to w bytes.
inline uint64_t value_padded(const uint8_t* t, uint32_t tlen, uint32_t w) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < w; i++) v = (v << 8) | (i < tlen ? t[i] : 0);
  return v;
}

inline uint32_t numeric(const uint8_t* key, uint32_t n) {
  if (n >= 4) return load_be32(key + n - 4);
  return static_cast<uint32_t>(value_padded(key, n, n));
}

inline void encode(const uint8_t* nonnum, uint32_t n, uint32_t v, uint8_t* out) {
  if (n >= 4) {
    memcpy(out, nonnum, n - 4);
    store_be32(out + n - 4, v);
    return;
  }
  uint32_t m = nonnumeric_len(n), w = width(n);
  memcpy(out, nonnum, m);
  for (uint32_t i = 0; i < w; i++) out[m + i] = static_cast<uint8_t>(v >> (8 * (w - 1 - i)));
}

// Does key have length n and the non-numeric part N?
inline bool key_matches(Slice key, uint32_t n, const uint8_t* nonnum) {
  return key.len == n && (n <= 4 || equal_bytes(key.data, nonnum, n - 4));
}

// Numeric part of the reference key for length-n keys above the lower fence.
// False if the lower fence does not hold the non-numeric part, or no such key exists.
inline bool reference(const Fences& f, uint32_t n, uint32_t* ref) {
  uint32_t m = nonnumeric_len(n), w = width(n);
  if (n == 0) return false;
  if (f.lower_inf) {
    if (m) return false;
    *ref = 0;
    return true;
  }
  if (f.lower.len < m) return false;
  const uint8_t* t = f.lower.data + m;
  uint32_t tl = f.lower.len - m;
  uint64_t v;
  if (tl < w) v = value_padded(t, tl, w);
  else v = value_padded(t, w, w) + 1;
  if (v > max_numeric(n)) return false;
  *ref = static_cast<uint32_t>(v);
  return true;
}

// Largest numeric part v with N ++ E(v) <= upper fence. False if there is none.
inline bool maximum(const Fences& f, uint32_t n, uint64_t* max) {
  uint32_t m = nonnumeric_len(n), w = width(n);
  if (f.upper_inf) {
    *max = max_numeric(n);
    return true;
  }
  const uint8_t* nonnum = f.lower.data;  // caller checked reference() first
  uint32_t cl = f.upper.len < m ? f.upper.len : m;
  int c = cl ? memcmp(f.upper.data, nonnum, cl) : 0;
  if (c > 0) {
    *max = max_numeric(n);
    return true;
  }
  if (c < 0 || f.upper.len < m) return false;
  const uint8_t* t = f.upper.data + m;
  uint32_t tl = f.upper.len - m;
  if (tl >= w) {
    *max = value_padded(t, w, w);
    return true;
  }
  uint64_t v = value_padded(t, tl, w);
  if (v == 0) return false;
  *max = v - 1;
  return true;
}

// Index (numeric offset from ref) of the first length-n key with N that is
// >= key; `limit` when all are smaller; sets *exact when that key equals key.
inline uint64_t lower_index(Slice key, uint32_t n, const uint8_t* nonnum, uint32_t ref, uint64_t limit,
                            bool* exact) {
  uint32_t m = nonnumeric_len(n), w = width(n);
  *exact = false;
  uint32_t cl = key.len < m ? key.len : m;
  int c = cl ? memcmp(key.data, nonnum, cl) : 0;
  if (c < 0 || (c == 0 && key.len < m)) return 0;
  if (c > 0) return limit;
  const uint8_t* t = key.data + m;
  uint32_t tl = key.len - m;
  uint64_t v;
  if (tl <= w) {
    v = value_padded(t, tl, w);
    *exact = tl == w;
  } else {
    v = value_padded(t, w, w) + 1;
  }
  if (v < ref) {
    *exact = false;
    return 0;
  }
  uint64_t idx = v - ref;
  if (idx >= limit) {
    *exact = false;
    return limit;
  }
  return idx;
}

}  // namespace dense
}  // namespace adaptree
