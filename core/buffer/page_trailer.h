// The last kPageTrailerSize bytes of every page as stored (core/config.h):
//
//   off              size field
//   kNodeSize        4    page id the image belongs to (catches misplaced writes)
//   kNodeSize + 4    4    CRC-32C (util/hash.h checksum) of bytes [0, kNodeSize + 4)
//
// Written by storage when a page leaves a frame, verified when one enters a
// frame; node layouts never touch these bytes.
#pragma once
#include "core/page.h"
#include "core/util/hash.h"

namespace adaptree {

inline void seal_page(uint8_t* image, PageId id) {
  store32(image + kNodeSize, id);
  store32(image + kNodeSize + 4, checksum(image, kNodeSize + 4));
}

inline bool page_intact(const uint8_t* image, PageId id) {
  return load32(image + kNodeSize) == id && load32(image + kNodeSize + 4) == checksum(image, kNodeSize + 4);
}

}  // namespace adaptree
