// Page deltas of the log (docs/FORMAT.md, "Delta frame"): the runs that turn a base
// page image into a new one.
#include "core/buffer/page_delta.h"

#include <cstring>

#include "core/page.h"

namespace adaptree {

uint32_t encode_delta(const uint8_t* base, const uint8_t* img, uint8_t* out, uint32_t limit, bool words) {
  // 8 bytes at a time (a byte loop over an insert's shifted slots cost 12% of a batched load):
  // a run is a stretch of differing 8-byte words, trimmed to its first and last differing
  // byte, and ends at the next equal word (so it may hold up to 14 equal bytes inside, where
  // a new run's 4-byte header would save at most 10). Page images are little-endian: the
  // lowest set byte of x = a ^ b is the first differing one.
  static_assert(kPageSize % 8 == 0 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  uint32_t n = 0, i = 0;
  while ((i = next_diff_word(base, img, i, kPageSize)) < kPageSize) {
    uint64_t x = load64(base + i) ^ load64(img + i);
    uint32_t start = i + (static_cast<uint32_t>(__builtin_ctzll(x)) >> 3);
    uint64_t last = x;
    uint32_t last_at = i;
    for (i += 8; i < kPageSize; i += 8) {
      uint64_t y = load64(base + i) ^ load64(img + i);
      if (y == 0) break;
      last = y;
      last_at = i;
    }
    uint32_t end = last_at + 8 - (static_cast<uint32_t>(__builtin_clzll(last)) >> 3);
    if (words) {  // (within the 8-byte words the run began and ended in: runs never meet)
      start &= ~3u;
      end = (end + 3) & ~3u;
    }
    const uint32_t len = end - start;
    if (n + 4 + len > limit) return ~0u;
    store16(out + n, start);
    store16(out + n + 2, len);
    memcpy(out + n + 4, img + start, len);
    n += 4 + len;
  }
  return n;
}

bool apply_delta(const uint8_t* p, uint32_t n, uint8_t* page) {
  const uint8_t* end = p + n;
  while (p < end) {
    if (end - p < 4) return false;
    uint32_t at = load16(p), len = load16(p + 2);
    if (len == 0 || at + len > kPageSize || static_cast<uint32_t>(end - p - 4) < len) return false;
    memcpy(page + at, p + 4, len);
    p += 4 + len;
  }
  return true;
}

}  // namespace adaptree
