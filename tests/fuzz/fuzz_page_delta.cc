// libFuzzer target: page deltas (core/buffer/page_delta.h), the copy runs of IndexedDB's
// 'ATL3' frames above all. A base page and an image edited from it as B-tree pages change
// (bytes written, stretches moved as an insert shifts slots or a compaction moves records,
// stretches filled); every encoding (plain, words, copies, both) under a limit from the input
// is ~0u or applies back to the image exactly, and a delta with copy runs is refused where
// copies are not allowed, the page unchanged. The input itself is applied as a delta too:
// malformed runs are refused with the page unchanged, and nothing reads or writes outside.
//
// Input: [limit byte][seed byte] then edits of 6 bytes: [kind][at: 2][from or value: 2][len].
#include <cstring>
#include <vector>

#include "core/buffer/page_delta.h"
#include "tests/fuzz/fuzz_ops.h"

using namespace adaptree;
using namespace adaptree::fuzz;

namespace {
uint32_t u16(Input& in) { return in.byte() | (uint32_t{in.byte()} << 8); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint32_t limit = 64 + uint32_t{in.byte()} * 64;  // 64 .. 16 KiB
  const uint8_t seed = in.byte();
  alignas(16) uint8_t base[kPageSize], img[kPageSize], page[kPageSize];
  // A page-like base: runs of equal bytes and short repeating records.
  for (uint32_t i = 0; i < kPageSize; i++) base[i] = static_cast<uint8_t>(((i / 24) * seed) ^ (i % 24 < 4 ? 0 : i % 7));
  memcpy(img, base, kPageSize);
  while (in.n >= 6) {
    const uint8_t kind = in.byte() % 3;
    const uint32_t at = u16(in) % kPageSize, from = u16(in);
    uint32_t len = 1 + in.byte() * 8;
    switch (kind) {
      case 0:  // a stretch written
        if (len > kPageSize - at) len = kPageSize - at;
        for (uint32_t i = 0; i < len; i++) img[at + i] = static_cast<uint8_t>(from + i * 13);
        break;
      case 1: {  // a stretch moved (slots shifted, records compacted)
        const uint32_t src = from % kPageSize;
        if (len > kPageSize - at) len = kPageSize - at;
        if (len > kPageSize - src) len = kPageSize - src;
        memmove(img + at, img + src, len);
        break;
      }
      default:  // a stretch filled (a freed heap, zeroed)
        if (len > kPageSize - at) len = kPageSize - at;
        memset(img + at, from & 0xff, len);
        break;
    }
  }
  std::vector<uint8_t> out(limit + 64);
  for (int mode = 0; mode < 4; mode++) {
    const bool words = mode & 1, copies = mode & 2;
    const uint32_t n = encode_delta(base, img, out.data(), limit, words, copies);
    if (n == ~0u) continue;
    require(n <= limit);
    memcpy(page, base, kPageSize);
    require(apply_delta(out.data(), n, page, copies));
    require(memcmp(page, img, kPageSize) == 0);
    if (copies) {
      // Where copies are not allowed (the file log): refused unless the delta has none, the
      // page as it was.
      memcpy(page, base, kPageSize);
      if (!apply_delta(out.data(), n, page, false)) require(memcmp(page, base, kPageSize) == 0);
      else require(memcmp(page, img, kPageSize) == 0);
    }
  }
  // The raw input as runs, with and without copies allowed.
  for (bool copies : {false, true}) {
    memcpy(page, base, kPageSize);
    if (!apply_delta(data, static_cast<uint32_t>(size), page, copies)) require(memcmp(page, base, kPageSize) == 0);
  }
  return 0;
}
