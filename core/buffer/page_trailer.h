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

// seal_page(image, id) from base, a sealed image of the same page whose trailer is right (a
// delta base: the stored version): CRC-32C is affine in the message, so crc(image) =
// crc(base) ^ R(base ^ image), R the register run from zero, and R needs only the 8-byte
// words where the two differ plus table shifts over the equal stretches. Cheaper than a full
// pass by what stayed equal (random inserts change much of a leaf's slot array: about a fifth
// of the sealing time saved there). A base whose bytes are not what its trailer says gives a
// wrong CRC: the page then reads as corrupt (Debug builds assert every such seal).
void seal_page_from(uint8_t* image, PageId id, const uint8_t* base);

}  // namespace adaptree
