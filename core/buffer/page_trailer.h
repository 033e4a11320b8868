// The last kPageTrailerSize bytes of every page as stored (core/config.h):
//
//   off              size field
//   kNodeSize        4    page id the image belongs to (catches misplaced writes)
//   kNodeSize + 4    4    checksum of bytes [0, kNodeSize + 4): CRC-32C (util/hash.h checksum)
//                         in stores of format version 1, page_hash in version 2 (PageSum)
//
// Written by storage when a page leaves a frame, verified when one enters a
// frame; node layouts never touch these bytes.
#pragma once
#include "core/page.h"
#include "core/util/hash.h"

namespace adaptree {

// The checksum a store's page trailers carry: its format version (superblock.h). Version 2
// (page_hash) is new stores'; version 1 stores keep CRC-32C for good.
enum class PageSum : uint32_t { kCrc32c = 1, kHash = 2 };

inline uint32_t page_sum(const uint8_t* image, PageSum sum) {
  return sum == PageSum::kHash ? page_hash(image, kNodeSize + 4) : checksum(image, kNodeSize + 4);
}

inline void seal_page(uint8_t* image, PageId id, PageSum sum) {
  store32(image + kNodeSize, id);
  store32(image + kNodeSize + 4, page_sum(image, sum));
}

inline bool page_intact(const uint8_t* image, PageId id, PageSum sum) {
  return load32(image + kNodeSize) == id && load32(image + kNodeSize + 4) == page_sum(image, sum);
}

// seal_page(image, id, PageSum::kCrc32c) from base, a sealed image of the same page whose trailer is right (a
// delta base: the stored version): CRC-32C is affine in the message, so crc(image) =
// crc(base) ^ R(base ^ image), R the register run from zero, and R needs only the 8-byte
// words where the two differ plus table shifts over the equal stretches. Cheaper than a full
// pass by what stayed equal (random inserts change much of a leaf's slot array: about a fifth
// of the sealing time saved there). A base whose bytes are not what its trailer says gives a
// wrong CRC: the page then reads as corrupt (Debug builds assert every such seal).
void seal_page_from(uint8_t* image, PageId id, const uint8_t* base);

}  // namespace adaptree
