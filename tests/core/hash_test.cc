// Fixed vectors: native and wasm must agree (the TS suite asserts the same
// values through at_checksum; they are also listed in core/hash.h).
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "bindings/adaptree.h"
#include "core/util/hash.h"

using namespace adaptree;

TEST(Hash, Crc32cVectors) {
  const uint8_t* empty = reinterpret_cast<const uint8_t*>("");
  EXPECT_EQ(checksum(empty, 0), 0x00000000u);
  EXPECT_EQ(checksum(reinterpret_cast<const uint8_t*>("123456789"), 9), 0xE3069283u);
  EXPECT_EQ(checksum(reinterpret_cast<const uint8_t*>("adaptree"), 8), 0x89A97C7Eu);
  uint8_t all[256];
  for (int i = 0; i < 256; i++) all[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(checksum(all, 256), 0x9C44184Bu);
  EXPECT_EQ(at_checksum(all, 256), 0x9C44184Bu);
  EXPECT_EQ(at_checksum(reinterpret_cast<const uint8_t*>("adaptree"), 8), 0x89A97C7Eu);
}

TEST(Hash, Crc32cSlicingMatchesBytewise) {
  uint8_t buf[1000];
  for (int i = 0; i < 1000; i++) buf[i] = static_cast<uint8_t>(i * 131 + 7);
  for (uint32_t len = 0; len < 1000; len += 37) {
    uint32_t c = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < len; i++) c = (c >> 8) ^ detail::kCrc32c.t[0][(c ^ buf[i]) & 0xff];
    EXPECT_EQ(checksum(buf, len), c ^ 0xFFFFFFFFu) << len;
  }
}

TEST(Hash, FingerprintIsStableAndSpreads) {
  // Stable values (a change here breaks every stored fingerprint leaf).
  const uint8_t* a = reinterpret_cast<const uint8_t*>("adaptree");
  EXPECT_EQ(fingerprint(a, 8), 91);
  EXPECT_EQ(fingerprint(a, 0), 62);
  EXPECT_EQ(fingerprint(a, 3), 8);
  std::set<uint8_t> seen;
  for (uint32_t i = 0; i < 4096; i++) {
    uint8_t k[4] = {static_cast<uint8_t>(i >> 24), static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8),
                    static_cast<uint8_t>(i)};
    seen.insert(fingerprint(k, 4));
  }
  EXPECT_GT(seen.size(), 250u);
}
