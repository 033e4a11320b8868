// seal_page_from (page_trailer.h).
#include "core/buffer/page_trailer.h"

#include <algorithm>

#include "core/buffer/page_delta.h"

namespace adaptree {

void seal_page_from(uint8_t* image, PageId id, const uint8_t* base) {
  static_assert(kNodeSize % 8 == 0);
  if (load32(base + kNodeSize) != id) {  // not this page's image: no shortcut
    seal_page(image, id, PageSum::kCrc32c);
    return;
  }
  store32(image + kNodeSize, id);
  uint32_t reg = 0, at = 0;  // R of (base ^ image)[0, at)
  uint8_t x[256];
  for (uint32_t i = 0; (i = next_diff_word(base, image, i, kNodeSize)) < kNodeSize;) {
    const uint32_t start = i;
    for (i += 8; i < kNodeSize && load64(base + i) != load64(image + i); i += 8) {
    }
    reg = detail::crc32c_skip_zeros(reg, start - at);
    for (uint32_t j = start; j < i;) {
      const uint32_t n = std::min<uint32_t>(sizeof x, i - j);
      for (uint32_t k = 0; k < n; k += 8) store64(x + k, load64(base + j + k) ^ load64(image + j + k));  // (runs are whole words)
      reg = detail::crc32c_raw(reg, x, n);
      j += n;
    }
    at = i;
  }
  reg = detail::crc32c_skip_zeros(reg, kNodeSize + 4 - at);  // (the page ids are equal)
  store32(image + kNodeSize + 4, load32(base + kNodeSize + 4) ^ reg);
}

}  // namespace adaptree
