// Values past a quarter page stay in their leaf, up to kInlineRecordMax (core/layouts/node_common.h).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "core/layouts/basic_node.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/store.h"
#include "core/tree/btree.h"
#include "core/tree/node_stats.h"
#include "tests/core/key_helpers.h"
#include "tests/core/tree_helpers.h"

namespace adaptree {
namespace {

std::string value_of(size_t len, uint32_t seed) {
  std::string v(len, '\0');
  for (size_t i = 0; i < len; i++) v[i] = static_cast<char>((seed * 2654435761u + i * 40503u) >> 13);
  return v;
}

void expect_sound(const BTree& t) {
  std::string err = t.check();
  ASSERT_TRUE(err.empty()) << err;
}

void expect_model(BTree& t, const Model& model) {
  Model got;
  ASSERT_EQ(dump(t, &got), Status::kOk);
  ASSERT_EQ(got.size(), model.size());
  auto it = model.begin();
  for (auto& [k, v] : got) {
    ASSERT_EQ(k, it->first);
    ASSERT_EQ(v, it->second) << "key of " << k.size() << " bytes";
    ++it;
  }
}

// The rule's promise: an empty leaf between two maximal fences takes the largest inline record,
// in every comparison-based layout, with and without prefix truncation. (The fences share no
// prefix, so nothing of the key is truncated.)
TEST(MediumValues, AnEmptyLeafBetweenTwoMaximalFencesTakesTheLargestInlineRecord) {
  const std::string lower(kMaxKeySize, 'a'), upper(kMaxKeySize, 'c');
  const Fences f = fences(&lower, &upper);
  Page pg;
  uint8_t* page = pg.b;
  for (uint32_t klen : {1u, 8u, 500u, kMaxKeySize}) {
    const std::string k(klen, 'b');
    const std::string v(kInlineRecordMax - klen, 'v');
    ASSERT_TRUE(value_is_inline(klen, v.size()));
    ASSERT_FALSE(value_is_inline(klen, v.size() + 1));
    const RecordRef r = rec(k, v);
    for (bool truncation : {false, true}) {
      for (uint8_t flags : {uint8_t{0}, kFlagHeads, static_cast<uint8_t>(kFlagHeads | kFlagHints)}) {
        EXPECT_TRUE(BasicNode::build(page, PageTag::kBasicLeaf, flags, f, truncation, &r, 1, 0, kCounterDisabled))
            << "key " << klen << ", flags " << int(flags) << ", truncation " << truncation;
      }
      EXPECT_TRUE(FingerprintLeaf::build(page, f, truncation, &r, 1, 0)) << "key " << klen << ", truncation " << truncation;
    }
  }
  // A maximal key with a value of kInlineAlways bytes (inline whatever the key) is smaller still.
  EXPECT_TRUE(value_is_inline(kMaxKeySize, kInlineAlways));
  EXPECT_LT(kMaxKeySize + kInlineAlways, kInlineRecordMax);
}

// Values of 1-1.9 KB with short keys take no page of their own: a 1300-byte value cost a 4 KiB
// overflow page (4125 B a record) when the limit was a quarter page.
TEST(MediumValues, StayInTheirLeaf) {
  for (LayoutConfig cfg : {LayoutConfig::kBaseline, LayoutConfig::kHints, LayoutConfig::kAdaptive}) {
    for (size_t len : {1300u, 1800u}) {
      BTree t(cfg);
      ASSERT_EQ(t.init(), Status::kOk);
      Model model;
      std::mt19937 rng(7);
      const int n = 3000;
      for (int i = 0; i < n; i++) {
        std::string k = "doc/" + std::to_string(rng() % 1000000);
        std::string v = value_of(len, static_cast<uint32_t>(i));
        ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
        model[k] = v;
      }
      expect_sound(t);
      expect_model(t, model);
      TreeStats s = collect_stats(t);
      EXPECT_EQ(s.overflow, 0u) << "config " << int(cfg) << ", values of " << len;
      // Two records a leaf at worst (1800 B), three at 1300 B and leaves half full or better.
      const double per_record = double(s.pages) * kPageSize / double(model.size());
      EXPECT_LT(per_record, len == 1300 ? 2.0 * len : 2.4 * len) << "config " << int(cfg);
      // One byte past the limit: every value takes an overflow page.
      BTree big(cfg);
      ASSERT_EQ(big.init(), Status::kOk);
      const std::string k = "doc/1";
      ASSERT_EQ(big.set(sl(k), sl(std::string(kInlineRecordMax - k.size() + 1, 'x'))), Status::kOk);
      EXPECT_EQ(collect_stats(big).overflow, 1u);
      ASSERT_EQ(big.set(sl(k), sl(std::string(kInlineRecordMax - k.size(), 'x'))), Status::kOk);
      EXPECT_EQ(collect_stats(big).overflow, 0u);
      expect_sound(big);
    }
  }
}

// Every inline record finds its place (node_common.h says why a 2-way split always fits): a
// split that found no fitting halves would fail the write as kCorrupt. Every configuration, three
// workloads of random sets (updates between value sizes) and removes, the tree checked against
// the model throughout and every page given back at the end:
// - keys of the longest length in 64 groups of 4: groups differ in the first byte (short
//   separators between them: a leaf may hold one group between short fences), keys of a group in
//   the last (separators as long as a key); values small, kInlineAlways, the largest inline, and
//   between;
// - 4-byte big-endian keys (dense leaves) with values of one medium size or the largest inline;
// - short keys with values from 0 to past the limit.
TEST(MediumValues, EveryInlineRecordFindsItsPlace) {
  for (int workload = 0; workload < 3; workload++) {
    for (uint8_t c = 0; c < kLayoutConfigCount; c++) {
      BTree t(static_cast<LayoutConfig>(c));
      ASSERT_EQ(t.init(), Status::kOk);
      const uint32_t max = t.max_key_size();
      Model model;
      std::mt19937 rng(100 + 10 * workload + c);
      auto key = [&](uint32_t i) -> std::string {
        if (workload == 1) return be32(i * 3);
        if (workload == 2) return "doc/" + std::to_string(i);
        std::string k(max - (i % 7 == 0 ? 1 + i % 30 : 0), 'k');
        k[0] = static_cast<char>(0x20 + i / 4);
        k.back() = static_cast<char>('0' + i % 4);
        return k;
      };
      auto value = [&](const std::string& k, uint32_t r) {
        const uint32_t top = kInlineRecordMax - static_cast<uint32_t>(k.size());
        if (workload == 1) return value_of(r % 8 == 0 ? top : 1200, r);
        if (workload == 2) return value_of(r % (top + 200), r);
        switch (r % 4) {
          case 0: return value_of(8, r);
          case 1: return value_of(kInlineAlways, r);
          case 2: return value_of(top, r);
          default: return value_of(top / 2 + r % (top / 2), r);
        }
      };
      const uint32_t keys = workload == 0 ? 256 : 2000;
      for (int op = 0; op < 8000; op++) {
        const uint32_t i = workload == 1 && op < 2000 ? op : rng() % keys;  // (ascending first: dense leaves)
        const std::string k = key(i);
        if (op >= 2000 && rng() % 5 == 0) {
          const Status s = t.remove(sl(k));
          ASSERT_EQ(s, model.erase(k) ? Status::kOk : Status::kNotFound) << "config " << int(c) << " op " << op;
        } else {
          const std::string v = value(k, static_cast<uint32_t>(rng()));
          ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk) << "workload " << workload << ", config " << int(c) << ", op " << op;
          model[k] = v;
        }
        if (op % 2000 == 1999) {
          expect_sound(t);
          expect_model(t, model);
        }
      }
      expect_sound(t);
      expect_model(t, model);
      for (auto& [k, v] : model) ASSERT_EQ(t.remove(sl(k)), Status::kOk);
      expect_sound(t);
      EXPECT_EQ(t.store().live_pages(), 1u) << "workload " << workload << ", config " << int(c);
    }
  }
}

}  // namespace
}  // namespace adaptree
