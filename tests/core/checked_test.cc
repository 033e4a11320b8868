// Checked growth (core/util/checked.h) and the pager's log index (core/buffer/offset_map.h):
// the out-of-memory paths themselves are tested in wasm (tests/ts/memory.test.ts), where a
// budget makes allocations fail; natively these check that the helpers do what the
// containers they stand in for did.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/buffer/offset_map.h"
#include "core/util/checked.h"

using namespace adaptree;

TEST(Checked, GrowthKeepsContentsAndCapacity) {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < 10000; i++) ASSERT_TRUE(push_checked(v, i));
  for (uint32_t i = 0; i < 10000; i++) ASSERT_EQ(v[i], i);
  ASSERT_TRUE(reserve_checked(v, 50000));
  EXPECT_GE(v.capacity(), 50000u);
  ASSERT_TRUE(resize_checked(v, 20000));
  EXPECT_EQ(v.size(), 20000u);
  EXPECT_EQ(v[9999], 9999u);
  std::string s;
  ASSERT_TRUE(reserve_checked(s, 512));
  EXPECT_GE(s.capacity(), 512u);
  ASSERT_TRUE(append_checked(s, "abc", 3));
  EXPECT_EQ(s, "abc");
  // An impossible size fails instead of aborting.
  std::vector<uint64_t> huge;
  EXPECT_FALSE(reserve_checked(huge, SIZE_MAX / 4));
  EXPECT_TRUE(can_allocate(1 << 20));
}

TEST(Checked, WithBlockRunsOnceAndLeavesNoStash) {
  int runs = 0;
  EXPECT_TRUE(with_block(4096, [&] { runs++; }));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(unstash_block(), nullptr);
  EXPECT_EQ(take_stashed(1), nullptr);
}

// Threads sharing a tree grow their buffers at once: each with_block's block is its own
// (the stash used to be overwritten by a second thread, and the first block leaked: the
// ASan build's leak check saw it in the threads stress).
TEST(Checked, WithBlockFromManyThreads) {
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; t++) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; i++) {
        std::vector<uint8_t> v;
        if (reserve_checked(v, 64 + static_cast<size_t>((i * 7 + t) % 5000))) ok++;
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(ok.load(), 8000);
  EXPECT_EQ(unstash_block(), nullptr);
  EXPECT_EQ(take_stashed(1), nullptr);
}

TEST(OffsetMap, MatchesStdMap) {
  OffsetMap m;
  std::map<PageId, uint64_t> model;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.find(7), nullptr);
  std::mt19937 rng(5);
  for (int i = 0; i < 20000; i++) {
    PageId id = 1 + rng() % 5000;
    uint64_t off = rng();
    ASSERT_TRUE(m.put(id, LogRef{off, static_cast<uint32_t>(off >> 7), static_cast<uint16_t>(off & 15), 1, 0, 9}));
    model[id] = off;
  }
  EXPECT_EQ(m.size(), model.size());
  for (auto& [id, off] : model) {
    const LogRef* got = m.find(id);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(got->off, off);
    EXPECT_EQ(got->size, static_cast<uint32_t>(off >> 7));
    EXPECT_EQ(got->depth, off & 15);
    EXPECT_EQ(got->chain, 9u);
  }
  EXPECT_EQ(m.find(6000), nullptr);
  size_t seen = 0;
  m.for_each([&](PageId id, const LogRef& r) {
    EXPECT_EQ(model.at(id), r.off);
    seen++;
  });
  EXPECT_EQ(seen, model.size());
  // After reserve, puts up to the reserved size never grow (the pager relies on it).
  ASSERT_TRUE(m.reserve(m.size() + 1000));
  for (PageId id = 10000; id < 11000; id++) ASSERT_TRUE(m.put(id, LogRef{id}));
  m.clear();
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.find(10001), nullptr);
}
