// Fixed vectors: native and wasm must agree (the TS suite asserts the same
// values through at_checksum; they are also listed in core/hash.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <set>
#include <vector>

#include "bindings/adaptree.h"
#include "core/buffer/page_trailer.h"
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

// The format: these values are on disk in every page trailer, log record and
// superblock. A faster kernel must give exactly these (issue 10).
static void pattern(uint8_t* b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) b[i] = static_cast<uint8_t>(i * 131 + 7);
}

// Bytes from a 64-bit LCG (the top byte of each step): the same for every run.
static void random_bytes(uint8_t* b, size_t n, uint64_t s) {
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b[i] = static_cast<uint8_t>(s >> 56);
  }
}

TEST(Hash, Crc32cPinnedPageSizedValues) {
  static uint8_t buf[12289];
  pattern(buf, sizeof buf);
  const struct {
    uint32_t len, crc;
  } pinned[] = {{2047, 0xBCC06929u}, {2048, 0x4FA26A4Du}, {3841, 0x035EFC8Bu}, {4092, 0xDF032110u},
                {4096, 0xE6ADC5B2u}, {4120, 0x02CA9320u}, {8192, 0xFD5BED27u}, {12289, 0xD0DD452Fu}};
  for (const auto& v : pinned) {
    EXPECT_EQ(checksum(buf, v.len), v.crc) << v.len;
    EXPECT_EQ(at_checksum(buf, v.len), v.crc) << v.len;
  }
  static uint8_t zeros[4092], ones[4096];
  memset(ones, 0xFF, sizeof ones);
  EXPECT_EQ(checksum(zeros, sizeof zeros), 0xA732586Eu);
  EXPECT_EQ(checksum(ones, sizeof ones), 0x25C1FE13u);
}

// Every kernel (slicing-by-8, the wasm SIMD algorithm on its scalar model, the
// hardware one where the CPU has it, and whichever checksum_extend uses) gives the
// bytewise definition's register, at every length around the kernels' thresholds
// (2048: padded partial chunks; 4096: whole chunks; 768: SSE4.2's 3 streams), at
// unaligned addresses and from any incoming register.
TEST(Hash, Crc32cKernelsAgreeWithBytewise) {
  static uint8_t buf[3 * 4096 + 64];
  random_bytes(buf, sizeof buf, 0x9E3779B97F4A7C15ull);
  std::vector<uint32_t> lens;
  for (uint32_t n = 0; n <= 300; n++) lens.push_back(n);
  for (uint32_t c : {760u, 768u, 1536u, 2048u, 2304u, 3840u, 4096u, 6144u, 8192u, 12288u})
    for (uint32_t n = c - 9; n <= c + 9; n++) lens.push_back(n);
  for (uint32_t n = 301; n < 3 * 4096; n += 97) lens.push_back(n);
  const detail::Crc32cKernel hw = detail::crc32c_hardware();
  std::printf("checksum kernel here: %s\n", detail::crc32c_kernel_name());
  uint32_t reg = 0x12345678u;
  for (uint32_t len : lens) {
    const uint32_t off = len % 13;
    const uint8_t* p = buf + off;
    reg = reg * 2654435761u + len;
    const uint32_t want = detail::crc32c_bytewise(reg, p, len);
    ASSERT_EQ(detail::crc32c_slice8(reg, p, len), want) << len;
    ASSERT_EQ(detail::crc32c_lanes_model(reg, p, len), want) << len;
    if (hw) {
      ASSERT_EQ(hw(reg, p, len), want) << len;
    }
    ASSERT_EQ(checksum_extend(~reg, p, len), ~want) << len;
    ASSERT_EQ(at_checksum(p, len), ~detail::crc32c_bytewise(0xFFFFFFFFu, p, len)) << len;
  }
}

TEST(Hash, Crc32cExtendAndShiftCompose) {
  static uint8_t buf[4096 + 24];
  pattern(buf, sizeof buf);
  const uint32_t whole = checksum(buf, sizeof buf);
  // how file_pager.cc checksums a log frame: its header, then the page image
  for (uint32_t cut : {0u, 1u, 24u, 2048u, 4096u, 4120u})
    EXPECT_EQ(checksum_extend(checksum(buf, cut), buf + cut, sizeof buf - cut), whole) << cut;
  static const uint8_t zeros[5000] = {};
  for (uint32_t n : {0u, 1u, 255u, 256u, 4096u, 5000u})
    EXPECT_EQ(detail::crc32c_shift(0xDEADBEEFu, n), detail::crc32c_bytewise(0xDEADBEEFu, zeros, n)) << n;
  // the table shift over zeros (seal_page_from), every length up to 5000, a few registers
  for (uint32_t reg : {0u, 1u, 0xDEADBEEFu, 0xFFFFFFFFu, 0x80000000u})
    for (uint32_t n = 0; n <= 5000; n += (n < 600 ? 1 : 37))
      ASSERT_EQ(detail::crc32c_skip_zeros(reg, n), detail::crc32c_bytewise(reg, zeros, n)) << reg << " " << n;
  EXPECT_EQ(detail::crc32c_raw(0x12345678u, buf, 777), detail::crc32c_bytewise(0x12345678u, buf, 777));
  // checksum_combine: the CRC of two parts from theirs (cut 24: a page's length, its own constant)
  for (uint32_t cut : {0u, 1u, 24u, 2048u, 4096u, 4120u})
    EXPECT_EQ(checksum_combine(checksum(buf, cut), checksum(buf + cut, sizeof buf - cut), sizeof buf - cut), whole) << cut;
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

// A sealed page's trailer, byte for byte (core/buffer/page_trailer.h): the page id, then the
// checksum of everything before it: CRC-32C in format version 1, page_hash in version 2.
TEST(Hash, SealedPageTrailerIsPinned) {
  for (PageSum sum : {PageSum::kCrc32c, PageSum::kHash}) {
    alignas(8) uint8_t image[kPageSize];
    pattern(image, kPageSize);
    seal_page(image, 7, sum);
    EXPECT_EQ(load32(image + kNodeSize), 7u);
    EXPECT_EQ(load32(image + kNodeSize + 4), sum == PageSum::kCrc32c ? 0xFC7B4FF8u : 0xE1F24374u);
    EXPECT_TRUE(page_intact(image, 7, sum));
    EXPECT_FALSE(page_intact(image, 8, sum));
    EXPECT_FALSE(page_intact(image, 7, sum == PageSum::kCrc32c ? PageSum::kHash : PageSum::kCrc32c));
    for (uint32_t at : {0u, 2047u, 2048u, 4000u, kNodeSize, kNodeSize + 4}) {
      image[at] ^= 0x10;
      EXPECT_FALSE(page_intact(image, 7, sum)) << at;
      image[at] ^= 0x10;
    }
  }
}

// page_hash (format version 2, core/util/hash.h): pinned values, so that a faster kernel
// cannot change the format unnoticed (the TS suite asserts the same through at_page_hash).
static const struct {
  uint32_t len, hash;
} kPageHashPins[] = {{0, 0xA4AB2EEAu},    {1, 0x9DDE71ADu},    {31, 0xF634D998u},   {32, 0x36B6F960u},
                     {33, 0x6049E960u},   {4092, 0xF41959A0u}, {4096, 0x3875C5CFu}, {4097, 0x39145D10u},
                     {8192, 0x977CA54Cu}, {12289, 0x924FAEE6u}};

TEST(Hash, PageHashPinnedValues) {
  static uint8_t buf[12289];
  pattern(buf, sizeof buf);
  for (const auto& v : kPageHashPins) {
    EXPECT_EQ(page_hash(buf, v.len), v.hash) << v.len;
    EXPECT_EQ(at_page_hash(buf, v.len), v.hash) << v.len;
  }
  EXPECT_EQ(page_hash(reinterpret_cast<const uint8_t*>("adaptree"), 8), 0x7D4FA4D9u);
}

// The SIMD kernel gives the reference's values (block by block, 64-bit arithmetic) at every
// length to two chunks and beyond, at unaligned addresses, over random bytes and over
// all-0xFF pages (the largest products: sums wrap mod 2^64).
TEST(Hash, PageHashKernelAgreesWithReference) {
  static uint8_t buf[3 * 4096 + 64];
  random_bytes(buf, sizeof buf, 0x9E3779B97F4A7C15ull);
  int checked = 0;
  for (uint32_t len = 0; len <= 2 * 4096 + 40; len += (len < 200 || (len > 4000 && len < 4200) || len > 8150) ? 1 : 37) {
    for (uint32_t at : {0u, 1u, 3u, 8u, 13u}) {
      ASSERT_EQ(page_hash(buf + at, len), detail::page_hash_reference(buf + at, len)) << len << " at " << at;
      checked++;
    }
  }
  EXPECT_GT(checked, 2500);
  static uint8_t ff[3 * 4096];
  memset(ff, 0xFF, sizeof ff);
  for (uint32_t len : {32u, 4092u, 4096u, 12288u}) EXPECT_EQ(page_hash(ff, len), detail::page_hash_reference(ff, len));
}

// Damage a checksum must catch, on a page-sized input: every single bit flipped, every pair of
// adjacent 32-bit words swapped, every 512-byte sector taken from another version of the page
// (a torn write), the page zeroed from any 512-byte boundary on, and the length changed.
TEST(Hash, PageHashDetectsFlipsSwapsAndTornSectors) {
  alignas(16) static uint8_t page[4092], other[4092];
  random_bytes(page, sizeof page, 12345);
  for (uint32_t i = 0; i < sizeof page; i++)
    other[i] = (i % 97 == 0) ? static_cast<uint8_t>(page[i] + 1) : page[i];  // a few bytes differ per sector
  const uint32_t h = page_hash(page, sizeof page);
  for (uint32_t bit = 0; bit < 8 * sizeof page; bit++) {
    page[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    ASSERT_NE(page_hash(page, sizeof page), h) << "bit " << bit;
    page[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
  for (uint32_t w = 0; w + 8 <= sizeof page; w += 4) {
    if (load32(page + w) == load32(page + w + 4)) continue;
    uint8_t t[4];
    memcpy(t, page + w, 4);
    memmove(page + w, page + w + 4, 4);
    memcpy(page + w + 4, t, 4);
    ASSERT_NE(page_hash(page, sizeof page), h) << "swap at " << w;
    memcpy(page + w + 4, page + w, 4);
    memcpy(page + w, t, 4);
  }
  ASSERT_EQ(page_hash(page, sizeof page), h);
  for (uint32_t sec = 0; sec < sizeof page; sec += 512) {
    alignas(16) uint8_t torn[4092];
    memcpy(torn, page, sizeof torn);
    memcpy(torn + sec, other + sec, std::min<size_t>(512, sizeof torn - sec));
    EXPECT_NE(page_hash(torn, sizeof torn), h) << "sector " << sec;
    memset(torn + sec, 0, sizeof torn - sec);
    EXPECT_NE(page_hash(torn, sizeof torn), h) << "zeroed from " << sec;
  }
  EXPECT_NE(page_hash(page, sizeof page - 1), h);
  alignas(16) static uint8_t zeros[4092];
  EXPECT_NE(page_hash(zeros, sizeof zeros), page_hash(zeros, sizeof zeros - 4));
}
