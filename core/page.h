// Facts every page shares, whatever it holds and wherever it lives
// (ARCHITECTURE decision 1): byte 0 is the page's tag, multi-byte fields are
// little-endian. The buffer manager needs nothing else of a node.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/config.h"

namespace adaptree {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "page images are little-endian; add byte swaps to the load/store helpers");

enum class PageTag : uint8_t {
  kFree = 0,
  kBasicInner = 1,
  kBasicLeaf = 2,
  kFingerprintLeaf = 3,
  kSemiDenseLeaf = 4,
  kFullyDenseLeaf = 5,
  kOverflow = 6,
};

// A basic node's tag (inner or leaf: BasicNode's layout).
inline bool is_basic_tag(uint8_t t) {
  return t == static_cast<uint8_t>(PageTag::kBasicInner) || t == static_cast<uint8_t>(PageTag::kBasicLeaf);
}

// A leaf layout's tag (what a descent may end on).
inline bool is_leaf_tag(uint8_t t) {
  return t >= static_cast<uint8_t>(PageTag::kBasicLeaf) && t <= static_cast<uint8_t>(PageTag::kFullyDenseLeaf);
}

inline uint16_t load16(const uint8_t* p) { uint16_t v; memcpy(&v, p, 2); return v; }
inline uint32_t load32(const uint8_t* p) { uint32_t v; memcpy(&v, p, 4); return v; }
inline uint64_t load64(const uint8_t* p) { uint64_t v; memcpy(&v, p, 8); return v; }
inline void store16(uint8_t* p, uint32_t v) { uint16_t x = static_cast<uint16_t>(v); memcpy(p, &x, 2); }
inline void store32(uint8_t* p, uint32_t v) { memcpy(p, &v, 4); }
inline void store64(uint8_t* p, uint64_t v) { memcpy(p, &v, 8); }
inline uint32_t load_be32(const uint8_t* p) { return __builtin_bswap32(load32(p)); }
inline void store_be32(uint8_t* p, uint32_t v) { store32(p, __builtin_bswap32(v)); }


}  // namespace adaptree
