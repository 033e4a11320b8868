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
TEST(PageDelta, RoundTripsRandomChanges) {
  for (bool words : {false, true}) {
    std::mt19937 rng(words ? 23 : 17);
    Page out(kPageSize * 3);
    for (int iter = 0; iter < 20000; iter++) {
      Page base = random_page(rng), img = base;
      mutate(img, rng);
      uint32_t n = encode_delta(base.data(), img.data(), out.data(), static_cast<uint32_t>(out.size()), words);
      ASSERT_NE(n, ~0u);
      Page got = base;
      ASSERT_TRUE(apply_delta(out.data(), n, got.data())) << iter;
      ASSERT_EQ(got, img) << iter;
      uint32_t prev_end = 0;
      for (uint32_t at = 0; at < n;) {
        uint32_t off = load16(out.data() + at), len = load16(out.data() + at + 2);
        ASSERT_GT(len, 0u);
        ASSERT_GE(off, prev_end);
        prev_end = off + len;
        if (words) {
          ASSERT_EQ(off % 4, 0u);
          ASSERT_EQ(len % 4, 0u);
        } else {  // nothing of the image's equal edges is carried
          EXPECT_NE(base[off], img[off]);
          EXPECT_NE(base[off + len - 1], img[off + len - 1]);
        }
        at += 4 + len;
      }
    }
  }
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
}

}  // namespace
}  // namespace adaptree::testing
