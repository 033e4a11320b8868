// Page deltas (core/buffer/page_delta.h): whatever differs between two page images, the runs
// encode_delta writes turn the base into the image, and apply_delta refuses malformed runs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/buffer/page_delta.h"
#include "core/buffer/page_trailer.h"
#include "core/config.h"
#include "core/page.h"

namespace adaptree::testing {
namespace {

using Page = std::vector<uint8_t>;

Page random_page(std::mt19937& rng) {
  Page p(kPageSize);
  for (auto& b : p) b = static_cast<uint8_t>(rng());
  return p;
}

// Changes of the kinds leaves see: single bytes (at the page's ends too), shifted slot
// ranges (an insert), rewritten stretches, and bytes set to the value they had.
void mutate(Page& p, std::mt19937& rng) {
  const unsigned kinds = 1 + rng() % 6;
  for (unsigned k = 0; k < kinds; k++) {
    switch (rng() % 5) {
      case 0: p[rng() % kPageSize] ^= static_cast<uint8_t>(1 + rng() % 255); break;
      case 1: p[rng() % 2 ? 0 : kPageSize - 1] ^= 0x5A; break;
      case 2: {
        uint32_t at = rng() % kPageSize, len = rng() % (kPageSize - at), by = 1 + rng() % 16;
        if (at + by + len <= kPageSize) memmove(p.data() + at + by, p.data() + at, len);
        break;
      }
      case 3: {
        uint32_t at = rng() % kPageSize, len = 1 + rng() % std::min<uint32_t>(64, kPageSize - at);
        for (uint32_t i = 0; i < len; i++) p[at + i] = static_cast<uint8_t>(rng());
        break;
      }
      default: {  // equal gaps of every length between changed bytes
        uint32_t at = rng() % (kPageSize - 40), gap = rng() % 20;
        p[at] ^= 1;
        p[at + 1 + gap] ^= 1;
        break;
      }
    }
  }
}

// Byte runs (the file log's) start and end on changed bytes; word runs (IndexedDB's frames,
// encoded by the async pager: encode_delta(..., words)) start and end on 4-byte boundaries and
// stay apart. Both turn the base into the image.
// With copies (log version 4), copy runs too: (offset, length | kCopyRun, source), whose bytes
// come from the base as it was before any run (the mutations below move stretches of the page,
// so most deltas hold some); the runs still start in order and never overlap.
TEST(PageDelta, RoundTripsRandomChanges) {
  for (bool copies : {false, true}) {
    for (bool words : {false, true}) {
      std::mt19937 rng((words ? 23 : 17) + (copies ? 100 : 0));
      Page out(kPageSize * 3);
      int with_copies = 0;
      for (int iter = 0; iter < 20000; iter++) {
        Page base = random_page(rng), img = base;
        mutate(img, rng);
        uint32_t n = encode_delta(base.data(), img.data(), out.data(), static_cast<uint32_t>(out.size()), words, copies);
        ASSERT_NE(n, ~0u);
        Page got = base;
        ASSERT_TRUE(apply_delta(out.data(), n, got.data(), copies)) << iter;
        ASSERT_EQ(got, img) << iter;
        uint32_t prev_end = 0;
        bool copied = false;
        for (uint32_t at = 0; at < n;) {
          uint32_t off = load16(out.data() + at), word = load16(out.data() + at + 2), len = word & ~uint32_t{kCopyRun};
          ASSERT_GT(len, 0u);
          ASSERT_GE(off, prev_end);
          prev_end = off + len;
          if (words) {
            ASSERT_EQ(off % 4, 0u);
            ASSERT_EQ(len % 4, 0u);
          }
          if (word & kCopyRun) {
            ASSERT_TRUE(copies);
            ASSERT_GE(len, kMinCopy);
            const uint32_t src = load16(out.data() + at + 4);
            ASSERT_NE(src, off);
            ASSERT_EQ(memcmp(base.data() + src, img.data() + off, len), 0);
            ASSERT_EQ(load16(out.data() + at + 6), 0u);
            copied = true;
            at += kCopyRunSize;
            continue;
          }
          if (!words) {  // nothing of the image's equal edges is carried (before a copy run, may be)
            EXPECT_NE(base[off], img[off]);
            if (!copies) EXPECT_NE(base[off + len - 1], img[off + len - 1]);
          }
          at += 4 + len;
        }
        with_copies += copied;
      }
      if (copies) EXPECT_GT(with_copies, 2000) << (words ? "words" : "bytes");
    }
  }
}

// What copy runs are for: a leaf's slot array shifted by an insert, and its records moved by a
// compaction, take a few runs instead of their bytes. A copy run reads the base, not what an
// earlier run of the delta wrote.
TEST(PageDelta, CopyRunsTakeShiftsAndMovedRecordsInAFewBytes) {
  std::mt19937 rng(41);
  Page out(kPageSize * 2);
  for (bool words : {false, true}) {
    // an insert: 40 slots of 8 bytes from offset 64, a new one at slot 10 (the rest move up 8),
    // and a record of 120 new bytes at the heap's start
    Page base = random_page(rng), img = base;
    memmove(img.data() + 64 + 11 * 8, base.data() + 64 + 10 * 8, 30 * 8);
    for (int i = 0; i < 8; i++) img[64 + 10 * 8 + i] = static_cast<uint8_t>(rng());
    for (int i = 0; i < 120; i++) img[2000 + i] = static_cast<uint8_t>(rng());
    uint32_t plain = encode_delta(base.data(), img.data(), out.data(), static_cast<uint32_t>(out.size()), words, false);
    uint32_t n = encode_delta(base.data(), img.data(), out.data(), static_cast<uint32_t>(out.size()), words, true);
    EXPECT_GT(plain, 30u * 8 + 120);
    EXPECT_LT(n, 8u + 120 + 40) << (words ? "words" : "bytes");
    Page got = base;
    ASSERT_TRUE(apply_delta(out.data(), n, got.data(), true));
    EXPECT_EQ(got, img);
    EXPECT_FALSE(apply_delta(out.data(), n, got.data()));  // (the file log takes no copy runs)
    // a compaction: 25 records of 100 bytes, moved to other offsets in another order
    Page c = base;
    for (int r = 0; r < 25; r++) memcpy(c.data() + 1000 + r * 100, base.data() + 1000 + ((r * 7) % 25) * 100 + 3, 100);
    plain = encode_delta(base.data(), c.data(), out.data(), static_cast<uint32_t>(out.size()), words, false);
    n = encode_delta(base.data(), c.data(), out.data(), static_cast<uint32_t>(out.size()), words, true);
    EXPECT_GT(plain, 2400u);
    EXPECT_LT(n, 25u * 16) << (words ? "words" : "bytes");
    got = base;
    ASSERT_TRUE(apply_delta(out.data(), n, got.data(), true));
    EXPECT_EQ(got, c);
  }
  // (offset 0, 8 literal bytes) then a copy of [0, 16) to 100: the copy reads the base's bytes
  Page base = random_page(rng), page = base;
  uint8_t d[12 + 8];
  store16(d, 0);
  store16(d + 2, 8);
  memset(d + 4, 0xAB, 8);
  store16(d + 12, 100);
  store16(d + 14, 16 | kCopyRun);
  store16(d + 16, 0);
  store16(d + 18, 0);
  ASSERT_TRUE(apply_delta(d, sizeof d, page.data(), true));
  EXPECT_EQ(memcmp(page.data() + 100, base.data(), 16), 0);
  EXPECT_EQ(page[0], 0xAB);
}

// A page sealed from its base (page_trailer.h) gets the trailer a full pass gives, whatever
// changed (the CRC from the changed words and table shifts over the equal ones).
TEST(PageDelta, SealFromBaseEqualsAFullSeal) {
  std::mt19937 rng(23);
  for (int iter = 0; iter < 20000; iter++) {
    const PageId id = 1 + rng() % 100000;
    Page base = random_page(rng);
    seal_page(base.data(), id, PageSum::kCrc32c);
    Page img = base;
    if (iter % 50 != 0) mutate(img, rng);  // sometimes nothing changed
    if (iter % 97 == 0) for (auto& b : img) b = static_cast<uint8_t>(~b);  // everything did
    Page want = img, got = img;
    seal_page(want.data(), id, PageSum::kCrc32c);
    seal_page_from(got.data(), id, base.data());
    ASSERT_EQ(got, want) << iter;
    ASSERT_TRUE(page_intact(got.data(), id, PageSum::kCrc32c));
  }
  // A base of another page: a full seal, not a wrong shortcut.
  Page base = random_page(rng), img = base;
  seal_page(base.data(), 7, PageSum::kCrc32c);
  img[5] ^= 1;
  Page want = img;
  seal_page(want.data(), 8, PageSum::kCrc32c);
  seal_page_from(img.data(), 8, base.data());
  EXPECT_EQ(img, want);
}

TEST(PageDelta, EqualPagesAndLimits) {
  std::mt19937 rng(5);
  Page base = random_page(rng), out(kPageSize * 2);
  EXPECT_EQ(encode_delta(base.data(), base.data(), out.data(), 0), 0u);  // nothing differs
  Page img = base;
  img[100] ^= 1;
  img[kPageSize - 1] ^= 1;
  EXPECT_EQ(encode_delta(base.data(), img.data(), out.data(), 9), ~0u);  // two runs: 10 bytes
  EXPECT_EQ(encode_delta(base.data(), img.data(), out.data(), 5), ~0u);
  uint32_t n = encode_delta(base.data(), img.data(), out.data(), 10);  // the limit is inclusive
  EXPECT_EQ(n, 10u);
  Page all = base;
  for (auto& b : all) b = static_cast<uint8_t>(~b);
  n = encode_delta(base.data(), all.data(), out.data(), static_cast<uint32_t>(out.size()));
  EXPECT_EQ(n, 4 + kPageSize);  // one run, the whole page
  Page got = base;
  ASSERT_TRUE(apply_delta(out.data(), n, got.data()));
  EXPECT_EQ(got, all);
}

TEST(PageDelta, MalformedRunsAreRefused) {
  Page page(kPageSize, 0);
  uint8_t run[8];
  store16(run, 10);
  store16(run + 2, 0);  // zero length
  EXPECT_FALSE(apply_delta(run, 4, page.data()));
  store16(run, kPageSize - 2);
  store16(run + 2, 4);  // past the page
  EXPECT_FALSE(apply_delta(run, 8, page.data()));
  store16(run, 0);
  store16(run + 2, 4);  // cut: 4 bytes announced, 2 present
  EXPECT_FALSE(apply_delta(run, 6, page.data()));
  EXPECT_FALSE(apply_delta(run, 3, page.data()));  // a cut header
  EXPECT_TRUE(apply_delta(run, 0, page.data()));   // no runs: unchanged
  // copy runs: from past the page, to past the page, of zero bytes, cut short; and a malformed
  // run after a good one changes nothing
  uint8_t copy[8 + 8];
  const uint16_t bad[][4] = {{0, 8, kPageSize - 4, 0}, {kPageSize - 4, 8, 0, 0}, {0, 0, 0, 0}, {0, 8, 100, 1}};
  for (const auto& b : bad) {
    store16(copy, b[0]);
    store16(copy + 2, b[1] | kCopyRun);
    store16(copy + 4, b[2]);
    store16(copy + 6, b[3]);  // (the pad word is zero)
    EXPECT_FALSE(apply_delta(copy, 8, page.data(), true)) << b[0] << " " << b[1] << " " << b[2] << " " << b[3];
  }
  store16(copy, 0);
  store16(copy + 2, 8 | kCopyRun);
  store16(copy + 4, 100);
  store16(copy + 6, 0);
  EXPECT_FALSE(apply_delta(copy, 6, page.data(), true));  // cut
  EXPECT_TRUE(apply_delta(copy, 8, page.data(), true));
  EXPECT_FALSE(apply_delta(copy, 8, page.data()));  // a copy run where none may be
  page[100] = 7;
  Page before = page;
  store16(copy + 8, kPageSize - 2);
  store16(copy + 10, 4 | kCopyRun);
  store16(copy + 12, 0);
  store16(copy + 14, 0);
  EXPECT_FALSE(apply_delta(copy, 16, page.data(), true));
  EXPECT_EQ(page, before);
}

}  // namespace
}  // namespace adaptree::testing
