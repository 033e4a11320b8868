// Node fill (core/tree/rebalance.h): redistribution before splits, 2-to-3
// and edge splits, XMerge on demand and under pool pressure. Every layout
// configuration; the invariant checker after each structure change batch;
// contents against a std::map model; cursors across redistributions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/buffer/storage.h"
#include "core/store.h"
#include "core/tree/btree.h"
#include "core/tree/node_stats.h"

namespace adaptree {
namespace {

using Model = std::map<std::string, std::string>;

// The sanitizer build (scripts/test.sh, Debug + ASan/UBSan) runs the per-layout
// cases at a third of their size: the suite's time stays in bounds.
#if defined(__SANITIZE_ADDRESS__)
constexpr unsigned kScale = 3;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr unsigned kScale = 3;
#else
constexpr unsigned kScale = 1;
#endif
#else
constexpr unsigned kScale = 1;
#endif

Slice sl(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())}; }

enum class Keys { kUrls, kInts8, kSeqStrings, kDense4, kMixedValues };

std::string make_key(Keys k, uint64_t i, std::mt19937_64& g) {
  char b[96];
  switch (k) {
    case Keys::kUrls:
    case Keys::kMixedValues:
      snprintf(b, sizeof b, "https://host%llu.example.org/p/%llu", static_cast<unsigned long long>(g() % 5000),
               static_cast<unsigned long long>(g() % 100000000));
      return b;
    case Keys::kInts8: {
      uint64_t v = g();
      std::string s(8, 0);
      for (int j = 0; j < 8; j++) s[j] = static_cast<char>(v >> (56 - 8 * j));
      return s;
    }
    case Keys::kSeqStrings:
      snprintf(b, sizeof b, "key%010llu", static_cast<unsigned long long>(i));
      return b;
    case Keys::kDense4: {
      uint32_t v = static_cast<uint32_t>(g() % 60000);
      std::string s(4, 0);
      for (int j = 0; j < 4; j++) s[j] = static_cast<char>(v >> (24 - 8 * j));
      return s;
    }
  }
  return {};
}

std::string make_value(Keys k, uint64_t i, std::mt19937_64& g) {
  if (k != Keys::kMixedValues) return std::string(8, static_cast<char>('a' + i % 26));
  unsigned r = g() % 100;
  size_t len = r < 70 ? 8 : r < 95 ? 40 + g() % 200 : 1500 + g() % 3000;  // some overflow values
  return std::string(len, static_cast<char>('A' + i % 26));
}

Model dump(BTree& t) {
  Model m;
  Cursor c(&t);
  EXPECT_EQ(c.seek(Slice{}, kSeekEdge), Status::kOk);
  KeyBuffer k;
  ValueRef v;
  std::vector<uint8_t> buf;
  c.seek(Slice{}, kSeekEdge);
  while (c.next(&k, &v) == Status::kOk) {
    Slice val;
    EXPECT_EQ(t.read_value(v, &buf, &val), Status::kOk);
    m.emplace(std::string(reinterpret_cast<const char*>(k.data), k.len),
              std::string(reinterpret_cast<const char*>(val.data), val.len));
  }
  return m;
}

double leaf_fill(const BTree& t) {
  TreeStats s = collect_stats(t);
  if (s.levels.empty() || s.levels[0].nodes == 0) return 0;
  return static_cast<double>(s.levels[0].used_bytes) / (static_cast<double>(s.levels[0].nodes) * kPageSize);
}

struct Case {
  LayoutConfig layout;
  Keys keys;
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  static const char* layouts[] = {"baseline", "prefix", "heads", "hints", "fingerprint", "semidense", "fullydense", "adaptive"};
  static const char* keys[] = {"urls", "ints8", "seqstrings", "dense4", "mixedvalues"};
  return std::string(layouts[static_cast<int>(i.param.layout)]) + "_" + keys[static_cast<int>(i.param.keys)];
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  for (uint8_t l = 0; l < kLayoutConfigCount; l++)
    for (Keys k : {Keys::kUrls, Keys::kInts8, Keys::kSeqStrings, Keys::kDense4, Keys::kMixedValues})
      v.push_back({static_cast<LayoutConfig>(l), k});
  return v;
}

class Rebalance : public ::testing::TestWithParam<Case> {};

// Inserts (with updates and some deletes) with redistribution on: the tree is
// sound after every batch and equals the model; the fill mechanisms ran.
TEST_P(Rebalance, MixedOpsMatchModel) {
  const Case c = GetParam();
  BTree t(c.layout);
  ASSERT_EQ(t.init(), Status::kOk);
  ASSERT_TRUE(t.fill().redistribute);
  std::mt19937_64 g(1234 + static_cast<int>(c.layout) * 7 + static_cast<int>(c.keys));
  Model model;
  std::vector<std::string> inserted;
  const unsigned kOps = 24000 / kScale;
  for (unsigned i = 0; i < kOps; i++) {
    unsigned r = g() % 100;
    if (r < 80 || inserted.empty()) {
      std::string k = make_key(c.keys, i, g), v = make_value(c.keys, i, g);
      ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
      model[k] = v;
      inserted.push_back(k);
    } else if (r < 90) {
      const std::string& k = inserted[g() % inserted.size()];
      std::string v = make_value(c.keys, i + 1, g);
      ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
      model[k] = v;
    } else {
      const std::string& k = inserted[g() % inserted.size()];
      Status s = t.remove(sl(k));
      ASSERT_EQ(s, model.erase(k) ? Status::kOk : Status::kNotFound);
    }
    if (i % (3000 / kScale) == 3000 / kScale - 1) ASSERT_EQ(t.check(), "") << "after op " << i;
  }
  ASSERT_EQ(t.check(), "");
  EXPECT_EQ(t.count(), model.size());
  EXPECT_EQ(dump(t), model);
  FillStats fs = t.fill_stats();
  // Comparison-based leaves under random keys must have redistributed;
  // sequential keys take edge splits instead.
  bool comparison_leaves = c.layout != LayoutConfig::kFullyDense && c.layout != LayoutConfig::kSemiDense &&
                           c.layout != LayoutConfig::kAdaptive;
  if (comparison_leaves && c.keys == Keys::kUrls) EXPECT_GT(fs.redistributions + fs.splits_2to3, 0u);
  if (comparison_leaves && c.keys == Keys::kSeqStrings) EXPECT_GT(fs.edge_splits, 0u);
  // Basic leaves redistribute in place (Rebalancer::shift) where they can.
  if (comparison_leaves && c.layout != LayoutConfig::kFingerprint && c.keys == Keys::kUrls) EXPECT_GT(fs.shifts, 0u);
  // Every key still found by a point lookup.
  for (const auto& [k, v] : model) {
    ValueRef ref;
    ASSERT_EQ(t.get(sl(k), &ref), Status::kOk);
  }
}

// XMerge after a delete-heavy workload: fewer pages, fuller leaves, same contents.
TEST_P(Rebalance, XMergeAfterDeletes) {
  const Case c = GetParam();
  BTree t(c.layout);
  ASSERT_EQ(t.init(), Status::kOk);
  FillOptions o;
  o.redistribute = false;  // the paper's splits: leaves at ~0.7 before the deletes
  t.set_fill(o);
  std::mt19937_64 g(99 + static_cast<int>(c.keys));
  Model model;
  std::vector<std::string> keys;
  for (unsigned i = 0; i < 15000 / kScale; i++) {
    std::string k = make_key(c.keys, i, g), v = make_value(c.keys, i, g);
    ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
    if (model.emplace(k, v).second) keys.push_back(k);
    else model[k] = v;
  }
  // Delete 55% of the keys in random order: leaves thin out without merging
  // (pairs merge only below half a page together).
  std::shuffle(keys.begin(), keys.end(), g);
  for (size_t i = 0; i < keys.size() * 55 / 100; i++) {
    ASSERT_EQ(t.remove(sl(keys[i])), Status::kOk);
    model.erase(keys[i]);
  }
  ASSERT_EQ(t.check(), "");
  uint64_t pages_before = t.store().live_pages();
  double fill_before = leaf_fill(t);
  uint64_t freed = 0;
  ASSERT_EQ(t.compact(&freed), Status::kOk);
  ASSERT_EQ(t.check(), "");
  EXPECT_EQ(dump(t), model);
  EXPECT_EQ(t.store().live_pages() + freed, pages_before);
  if (t.height() > 1 && fill_before < 0.6) {
    EXPECT_GT(freed, 0u);
    EXPECT_GT(leaf_fill(t), fill_before);
  }
  // A second pass finds little left to do, and the tree keeps working.
  uint64_t again = 0;
  ASSERT_EQ(t.compact(&again), Status::kOk);
  EXPECT_LE(again, freed / 4 + 1);
  for (unsigned i = 0; i < 3000; i++) {
    std::string k = make_key(c.keys, 100000 + i, g), v = make_value(c.keys, i, g);
    ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
    model[k] = v;
  }
  ASSERT_EQ(t.check(), "");
  EXPECT_EQ(dump(t), model);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, Rebalance, ::testing::ValuesIn(all_cases()), case_name);

// The aim: random loads fill leaves to ~0.85 instead of ~0.70.
TEST(RebalanceFill, RandomLoadFillsLeaves) {
  for (Keys k : {Keys::kUrls, Keys::kInts8}) {
    double fill[2];
    for (int on = 0; on < 2; on++) {
      BTree t(LayoutConfig::kAdaptive);
      ASSERT_EQ(t.init(), Status::kOk);
      FillOptions o;
      o.redistribute = on;
      t.set_fill(o);
      std::mt19937_64 g(7);
      for (unsigned i = 0; i < 60000; i++) ASSERT_EQ(t.set(sl(make_key(k, i, g)), sl("value678")), Status::kOk);
      ASSERT_EQ(t.check(), "");
      fill[on] = leaf_fill(t);
    }
    EXPECT_LT(fill[0], 0.75) << static_cast<int>(k);
    EXPECT_GT(fill[1], 0.80) << static_cast<int>(k);
  }
}

// Appends: leaves fill at least as well as without redistribution (sequential
// strings much better; dense integer keys keep their full dense leaves).
TEST(RebalanceFill, SequentialLoadsNoRegression) {
  for (int kind = 0; kind < 2; kind++) {
    double fill[2];
    uint64_t pages[2];
    for (int on = 0; on < 2; on++) {
      BTree t(LayoutConfig::kAdaptive);
      ASSERT_EQ(t.init(), Status::kOk);
      FillOptions o;
      o.redistribute = on;
      t.set_fill(o);
      for (uint32_t i = 0; i < 60000; i++) {
        std::string k;
        if (kind == 0) {
          char b[32];
          snprintf(b, sizeof b, "key%010u", i);
          k = b;
        } else {
          k.assign(4, 0);
          for (int j = 0; j < 4; j++) k[j] = static_cast<char>(i >> (24 - 8 * j));
        }
        ASSERT_EQ(t.set(sl(k), sl("value678")), Status::kOk);
      }
      ASSERT_EQ(t.check(), "");
      fill[on] = leaf_fill(t);
      pages[on] = t.store().live_pages();
    }
    EXPECT_GE(fill[1], fill[0] - 0.005) << kind;
    EXPECT_LE(pages[1], pages[0]) << kind;
    if (kind == 1) EXPECT_GT(fill[1], 0.95);
  }
}

// Descending loads take the prepend edge split.
TEST(RebalanceFill, DescendingLoad) {
  BTree t(LayoutConfig::kHints);
  ASSERT_EQ(t.init(), Status::kOk);
  Model model;
  for (uint32_t i = 30000; i-- > 0;) {
    char b[32];
    snprintf(b, sizeof b, "key%010u", i);
    ASSERT_EQ(t.set(sl(b), sl("v")), Status::kOk);
    model[b] = "v";
  }
  ASSERT_EQ(t.check(), "");
  EXPECT_GT(t.fill_stats().edge_splits, 0u);
  EXPECT_EQ(dump(t), model);
}

// Sparse integer keys (every 5th, as the TypeScript `number` encoding writes them: a tag, the
// high word, the low word) with 1-byte values make fully dense leaves that look underfull by
// their bytes, while two of them fit no layout together: every delete extracted and rebuilt
// both in vain (a probe, session 30: 44x a delete under `hints`). merge_children keeps such a
// pair out until it holds an eighth fewer records. The deletes stay right, the merges that fit
// still happen (after 96% of the keys are gone the leaves are merged down), and the failed
// attempts are counted: a few per pair, not one or two per delete.
TEST(RebalanceFill, SparseDenseLeavesDeleteRightAndStillMerge) {
  auto key = [](uint32_t v) {
    std::string s(9, '\0');
    s[0] = 0x12;
    s[1] = static_cast<char>(0x80);
    store_be32(reinterpret_cast<uint8_t*>(&s[5]), v);
    return s;
  };
  for (const LayoutConfig layout : {LayoutConfig::kFullyDense, LayoutConfig::kAdaptive}) {
    BTree t(layout);
    ASSERT_EQ(t.init(), Status::kOk);
    Model model;
    for (uint32_t i = 0; i < 50000; i++) {
      ASSERT_EQ(t.set(sl(key(i * 5)), sl("v")), Status::kOk);
      model[key(i * 5)] = "v";
    }
    const TreeStats full = collect_stats(t);
    EXPECT_GT(full.fully_dense_leaf, 50u);
    std::mt19937 g(7);
    std::vector<uint32_t> order(50000);
    for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
    std::shuffle(order.begin(), order.end(), g);
    for (size_t j = 0; j < 48000; j++) {
      ASSERT_EQ(t.remove(sl(key(order[j] * 5))), Status::kOk);
      model.erase(key(order[j] * 5));
      if (j % 8000 == 0) ASSERT_EQ(t.check(), "");
    }
    ASSERT_EQ(t.check(), "");
    EXPECT_EQ(dump(t), model);
    EXPECT_LT(collect_stats(t).pages, full.pages / 3) << "layout " << static_cast<int>(layout);
    // ~70 leaves, two pairs each, some ten tries per pair as they thin: far below 48,000.
    EXPECT_LT(t.failed_merge_attempts(), 5000u) << "layout " << static_cast<int>(layout);
  }
}

// A cursor walks every key that was there when it started exactly once, in
// order, while inserts between its steps redistribute the leaves under it.
TEST(RebalanceCursor, SurvivesRedistribution) {
  for (uint8_t l = 0; l < kLayoutConfigCount; l++) {
    BTree t(static_cast<LayoutConfig>(l));
    ASSERT_EQ(t.init(), Status::kOk);
    std::mt19937_64 g(5);
    Model original;
    for (unsigned i = 0; i < 8000; i++) {
      std::string k = make_key(Keys::kUrls, i, g);
      ASSERT_EQ(t.set(sl(k), sl("v")), Status::kOk);
      original[k] = "v";
    }
    FillStats before = t.fill_stats();
    Cursor c(&t);
    ASSERT_EQ(c.seek(Slice{}, kSeekEdge), Status::kOk);
    KeyBuffer k;
    ValueRef v;
    std::string last;
    size_t seen_original = 0;
    bool first = true;
    while (c.next(&k, &v) == Status::kOk) {
      std::string key(reinterpret_cast<const char*>(k.data), k.len);
      if (!first) ASSERT_LT(last, key);
      first = false;
      last = key;
      seen_original += original.count(key);
      for (int j = 0; j < 3; j++) ASSERT_EQ(t.set(sl(make_key(Keys::kUrls, 0, g)), sl("w")), Status::kOk);
    }
    EXPECT_EQ(seen_original, original.size()) << static_cast<int>(l);
    FillStats after = t.fill_stats();
    EXPECT_GT(after.redistributions + after.splits_2to3, before.redistributions + before.splits_2to3);
    ASSERT_EQ(t.check(), "");
  }
}

// A store under a tiny pool: evictions trigger XMerge on resident leaves;
// contents survive commit and reopen.
TEST(RebalanceStore, XMergeUnderPoolPressure) {
  MemoryStorage ms;
  Model model;
  std::mt19937_64 g(11);
  std::vector<std::string> keys;
  uint64_t xmerges = 0, attempts = 0;
  {
    StoreOptions o;
    o.pool_bytes = 1 << 20;  // 256 frames under a tree of several MiB
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
    BTree& t = st->tree();
    FillOptions fo;
    fo.redistribute = false;
    fo.xmerge_on_pressure = false;
    t.set_fill(fo);
    for (unsigned i = 0; i < 60000; i++) {
      std::string k = make_key(Keys::kUrls, i, g);
      ASSERT_EQ(t.set(sl(k), sl("value-of-some-length")), Status::kOk);
      if (model.emplace(k, "value-of-some-length").second) keys.push_back(k);
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    std::shuffle(keys.begin(), keys.end(), g);
    for (size_t i = 0; i < keys.size() * 6 / 10; i++) {
      ASSERT_EQ(t.remove(sl(keys[i])), Status::kOk);
      model.erase(keys[i]);
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    uint64_t pages_before = t.store().live_pages();
    fo.xmerge_on_pressure = true;
    t.set_fill(fo);
    // Writes over the whole key space keep the pool evicting.
    for (unsigned i = 0; i < 20000; i++) {
      const std::string& k = keys[keys.size() * 6 / 10 + g() % (keys.size() - keys.size() * 6 / 10)];
      ASSERT_EQ(t.set(sl(k), sl("value-of-other-length")), Status::kOk);
      model[k] = "value-of-other-length";
      if (i % 5000 == 4999) ASSERT_EQ(st->commit(), Status::kOk);
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    xmerges = t.fill_stats().xmerges;
    attempts = t.fill_stats().xmerge_attempts;
    EXPECT_GT(attempts, 0u);
    EXPECT_GT(xmerges, 0u);
    EXPECT_LT(t.store().live_pages(), pages_before);
    ASSERT_EQ(t.check(), "");
    EXPECT_EQ(dump(t), model);
  }
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk);
  ASSERT_EQ(st->tree().check(), "");
  EXPECT_EQ(dump(st->tree()), model);
}

// Operation adaption meets fuller leaves: a scan-heavy fingerprint leaf too
// full for the basic layout keeps its layout (counter at max) until it next
// overflows; the regroup then builds it as a basic leaf.
TEST(RebalanceAdaption, StuckFingerprintLeavesConvertAtNextOverflow) {
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  std::mt19937_64 g(21);
  std::vector<std::string> keys;
  for (unsigned i = 0; i < 40000; i++) {
    keys.push_back(make_key(Keys::kUrls, i, g));
    ASSERT_EQ(t.set(sl(keys.back()), sl("value678")), Status::kOk);
  }
  auto stuck = [&] {
    uint64_t n = 0;
    visit_nodes(
        t,
        [](const NodeInfo& i, void* c) {
          if (i.level == 0 && i.tag == PageTag::kFingerprintLeaf && i.counter == kCounterMax) ++*static_cast<uint64_t*>(c);
        },
        &n);
    return n;
  };
  Cursor c(&t);
  for (int round = 0; round < 60000; round++) {
    c.seek(sl(keys[g() % keys.size()]), 0);
    ValueRef v;
    for (int i = 0; i < 5 && c.next(nullptr, &v) == Status::kOk; i++) {
    }
  }
  ASSERT_EQ(t.check(), "");
  uint64_t s1 = stuck();
  ASSERT_GT(s1, 0u);
  for (unsigned i = 0; i < 40000; i++) ASSERT_EQ(t.set(sl(make_key(Keys::kUrls, i, g)), sl("value678")), Status::kOk);
  ASSERT_EQ(t.check(), "");
  uint64_t s2 = stuck();
  EXPECT_LT(s2 * 2, s1) << s1 << " -> " << s2;
}

// Redistribution off: no regroup runs (the paper's behaviour is reproducible).
// Found by fuzz_btree (CI, session 9): 1 KiB keys, three leaves. The first
// shift of a three-leaf redistribution moved records, the second did not fit,
// and before_split reported "nothing changed": the insert then split the leaf
// on its old path although the key now belonged to its neighbour, and built a
// leaf whose lower fence lay above its upper one. The invariant checker after
// every operation; the content against the model.
TEST(RebalanceRegression, HalfAThreeLeafShiftDescendsAgain) {
  auto key = [](char c, unsigned len, uint8_t last) {
    std::string k(len, c);
    k.back() = static_cast<char>(last);
    return k;
  };
  struct Op {
    bool set;
    std::string k;
    size_t vlen;
  };
  const std::vector<Op> ops = {
      {true, key('k', 1015, 0xf0), 15952}, {true, key('k', 1015, 0x28), 15952}, {true, key('k', 1015, 0xf0), 18943},
      {true, key('l', 1015, 0xf0), 15952}, {true, key('k', 1000, 0x00), 30907}, {true, key('n', 1015, 0x41), 17},
      {true, "", 33},                      {true, key('n', 1000, 0xfa), 0},     {true, "", 16},
      {false, key('n', 1002, 0x02), 0},    {true, key('m', 1000, 0x00), 15},
  };
  // (`prefix`: `baseline`, where the fuzzer found it, refuses keys over 1011 bytes since session
  // 33; these fences differ at their first byte, so nothing is truncated here either)
  BTree t(LayoutConfig::kPrefix);
  ASSERT_EQ(t.init(), Status::kOk);
  // (without edge refills, which since session 31 take the first leaf's records here before
  // a three-leaf shift can run)
  FillOptions fo;
  fo.edges = false;
  t.set_fill(fo);
  Model model;
  for (size_t i = 0; i < ops.size(); i++) {
    const Op& o = ops[i];
    if (o.set) {
      std::string v(o.vlen, static_cast<char>('a' + i));
      ASSERT_EQ(t.set(sl(o.k), sl(v)), Status::kOk);
      model[o.k] = v;
    } else {
      EXPECT_EQ(t.remove(sl(o.k)), model.erase(o.k) ? Status::kOk : Status::kNotFound);
    }
    ASSERT_EQ(t.check(), "") << "after op " << i;
  }
  EXPECT_GT(t.fill_stats().shifts, 0u);
  EXPECT_EQ(dump(t), model);
  uint64_t removed = 0;
  ASSERT_EQ(t.delete_range(sl(key('k', 1015, 0xf0)), false, false, sl(key('n', 1005, 0xff)), false, true, &removed),
            Status::kOk);
  EXPECT_EQ(removed, 4u);
  ASSERT_EQ(t.check(), "");
}

// The same class of input at volume: many small trees (the fuzzer found it
// in one of a dozen records) of 1 KiB keys that share long runs (a few
// records per leaf, separators near the inner-node limit), values from empty
// to overflow, inserted, updated and removed in every configuration with
// redistribution on. The checker runs after every operation.
TEST(RebalanceRegression, LongKeysEveryConfigCheckedAfterEachOp) {
  for (uint8_t l = 0; l < kLayoutConfigCount; l++) {
    std::mt19937_64 g(77 + l);
    const unsigned kTrees = 240 / kScale, kOps = 48;
    for (unsigned tree = 0; tree < kTrees; tree++) {
      BTree t(static_cast<LayoutConfig>(l));
      ASSERT_EQ(t.init(), Status::kOk);
      Model model;
      for (unsigned i = 0; i < kOps; i++) {
        std::string k;
        if (g() % 8 == 0) {
          k.assign(g() % 4, static_cast<char>('a' + g() % 26));
        } else {
          // (up to 1011 bytes under `baseline`, which refuses longer keys)
          k.assign(std::min<size_t>(1000 + g() % 25, t.max_key_size()), static_cast<char>('k' + g() % 4));
          k.back() = static_cast<char>(g() % 256);
        }
        if (g() % 10 < 8) {
          size_t vlen = g() % 3 == 0 ? (g() % 32) * 997 : g() % 40;
          std::string v(vlen, static_cast<char>('A' + i % 26));
          ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
          model[k] = v;
        } else {
          ASSERT_EQ(t.remove(sl(k)), model.erase(k) ? Status::kOk : Status::kNotFound);
        }
        ASSERT_EQ(t.check(), "") << "config " << int(l) << " tree " << tree << " after op " << i;
      }
      ASSERT_EQ(dump(t), model) << "config " << int(l) << " tree " << tree;
    }
  }
}

TEST(RebalanceOptions, OffMeansOff) {
  for (bool ascending : {false, true}) {
    BTree t(LayoutConfig::kAdaptive);
    ASSERT_EQ(t.init(), Status::kOk);
    FillOptions o;
    o.redistribute = false;
    o.edges = false;
    t.set_fill(o);
    std::mt19937_64 g(3);
    for (unsigned i = 0; i < 20000; i++) {
      char b[32];
      snprintf(b, sizeof b, "key%010u", i);
      ASSERT_EQ(t.set(sl(ascending ? std::string(b) : make_key(Keys::kUrls, i, g)), sl("v")), Status::kOk);
    }
    FillStats fs = t.fill_stats();
    EXPECT_EQ(fs.redistributions + fs.splits_2to3 + fs.edge_splits + fs.edge_refills, 0u);
  }
}

// Edge refills (FillOptions::edges, a map's default): keys with a long shared prefix inserted
// in order (or in reverse) fill their leaves with truncated keys, as a random order does.
// Before, the edge leaf (one infinite fence: no prefix) split in the middle and appends never
// came back to the half it left: 4-5x the pages of a random order at a 40-byte prefix,
// 2 pages a key at 1000 bytes (probe, session 30).
// A tree of cfg with node fill o, holding keys (set in this order, value v), checked and
// compared with a model: its figures and what node fill did.
void load_checked(LayoutConfig cfg, const FillOptions& o, const std::vector<std::string>& keys, const std::string& v,
                  TreeStats* st, FillStats* fs = nullptr) {
  BTree t(cfg);
  ASSERT_EQ(t.init(), Status::kOk);
  t.set_fill(o);
  Model model;
  for (auto& k : keys) {
    ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
    model[k] = v;
  }
  ASSERT_EQ(t.check(), "") << "config " << int(cfg);
  ASSERT_EQ(dump(t), model);
  *st = collect_stats(t);
  if (fs) *fs = t.fill_stats();
}

// The pages of load_checked under node fill (redistribute, edges; no XMerge). A failure inside
// is the test's (recorded there); the pages are then 0.
uint64_t pages_with(LayoutConfig cfg, bool redistribute, bool edges, const std::vector<std::string>& keys,
                    const std::string& v, FillStats* fs = nullptr) {
  FillOptions o;
  o.redistribute = redistribute;
  o.xmerge_on_pressure = false;
  o.edges = edges;
  TreeStats st;
  load_checked(cfg, o, keys, v, &st, fs);
  return st.pages;
}

// Keys that come nearly in order (batches of 10 written in reverse) and several append points
// at once (tenants appending in turn): a key near the end of the last leaf, or ending a run of
// a quarter of its leaf's records that share more of it than the next record does, is an
// append too. Before, both split in the middle: 3554 pages against 414 random (batches),
// 1285-1370 (tenants), maps under hints (a probe, session 31).
TEST(EdgeRefill, NearlyOrderedKeysAndSeveralAppendPointsFillLeaves) {
  const unsigned n = 30000;
  auto keys_of = [&](int order) {
    std::vector<std::string> k;
    for (unsigned i = 0; i < n; i++) {
      char b[64];
      if (order == 0 || order == 3) {
        snprintf(b, sizeof b, "%010u", i);
        k.push_back(std::string(100, 'p') + b);
      } else {
        snprintf(b, sizeof b, "tenant/%u/events/2026-11-28T%010u", i % (order == 1 ? 2u : 10u), i / (order == 1 ? 2u : 10u));
        k.push_back(b);
      }
    }
    if (order == 0)
      for (unsigned i = 0; i + 10 <= n; i += 10) std::reverse(k.begin() + i, k.begin() + i + 10);
    if (order == 3) std::shuffle(k.begin(), k.end(), std::mt19937(5));
    return k;
  };
  for (LayoutConfig cfg : {LayoutConfig::kHints, LayoutConfig::kAdaptive, LayoutConfig::kPrefix}) {
    for (bool redistribute : {false, true}) {
      uint64_t pages[4][2] = {};
      for (int order = 0; order < 4; order++) {
        const std::vector<std::string> k = keys_of(order);
        for (int edges = 0; edges < 2; edges++) pages[order][edges] = pages_with(cfg, redistribute, edges, k, "12345678");
      }
      SCOPED_TRACE("cfg " + std::to_string(int(cfg)) + (redistribute ? " redistribute" : " map"));
      for (int order = 0; order < 3; order++) {
        EXPECT_LE(pages[order][1], pages[3][1] * 11 / 10) << "order " << order << " vs random";
        EXPECT_LT(pages[order][1] * 3, pages[order][0] * 2) << "order " << order << " vs edges off";
      }
    }
  }
}

// Counters written as strings without padding come in order but sort otherwise ("b005:10" after
// "b005:1", before "b005:2"): a key before the first record of a leaf inside the tree lies at the
// end of the leaf before just as well. Split off alone there (an interior prepend) it left leaves
// of one record: 800-byte values, 1192 pages against 940 without edges (the opfs quota test,
// session 31). Edge refills must not cost pages here.
TEST(EdgeRefill, UnpaddedCountersWithLargeValuesTakeNoMorePages) {
  std::vector<std::string> keys;
  for (int b = 0; b < 30; b++)
    for (int i = 0; i < 100; i++) keys.push_back("b" + std::to_string(1000 + b).substr(1) + ":" + std::to_string(i));
  for (LayoutConfig cfg : {LayoutConfig::kAdaptive, LayoutConfig::kHints}) {
    for (bool redistribute : {true, false}) {
      uint64_t pages[2];
      for (int edges = 0; edges < 2; edges++) pages[edges] = pages_with(cfg, redistribute, edges, keys, std::string(800, 'x'));
      EXPECT_LE(pages[1], pages[0]) << "config " << int(cfg) << (redistribute ? " redistribute" : " map");
    }
  }
}

// Hex or decimal string counters are sparse as numbers (16 or 10 of every 256 values of a
// byte): a fully dense leaf at the edge too sparse to keep (dense_enough) that could not become
// comparison-based with its open fence split to self into another dense leaf, a chain of dense
// leaves of ~60 records a page each (adaptive: 417 pages in order against 258 under hints; a
// probe, session 31). Now it becomes comparison-based with its new fence (BTree::split_to_self).
TEST(EdgeRefill, SparseDenseLeavesDoNotChainAtTheEdge) {
  std::vector<std::string> keys;
  for (unsigned i = 0; i < 40000; i++) {
    char b[16];
    snprintf(b, sizeof b, "%08x", i);
    keys.push_back(std::string(100, 'p') + b);
  }
  uint64_t pages[3];
  const LayoutConfig cfgs[3] = {LayoutConfig::kHints, LayoutConfig::kAdaptive, LayoutConfig::kFullyDense};
  for (int c = 0; c < 3; c++) {
    FillOptions o;
    o.redistribute = false;
    TreeStats st;
    ASSERT_NO_FATAL_FAILURE(load_checked(cfgs[c], o, keys, "null", &st));
    pages[c] = st.pages;
    EXPECT_LE(st.fully_dense_leaf, 2u) << "config " << int(cfgs[c]);
  }
  EXPECT_LE(pages[1], pages[0] * 11 / 10);
  EXPECT_LE(pages[2], pages[0] * 11 / 10);
  // Integer keys stay dense: a dense leaf that is dense enough still splits to self.
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  for (uint32_t i = 0; i < 100000; i++) {
    std::string k(4, '\0');
    for (int b = 0; b < 4; b++) k[b] = static_cast<char>(i >> (24 - 8 * b));
    ASSERT_EQ(t.set(sl(k), sl("12345678")), Status::kOk);
  }
  ASSERT_EQ(t.check(), "");
  TreeStats st = collect_stats(t);
  EXPECT_GT(st.fully_dense_leaf, 100u);
  EXPECT_LE(st.basic_leaf + st.fingerprint_leaf, 2u);
}

TEST(EdgeRefill, SharedPrefixKeysInOrderFillLeavesAsRandomOrderDoes) {
  struct Shape {
    unsigned prefix, n;
  };
  for (Shape sh : {Shape{40, 30000}, Shape{1000, 3000}}) {
    std::vector<std::string> keys;
    for (unsigned i = 0; i < sh.n; i++) {
      char b[16];
      snprintf(b, sizeof b, "%08u", i);
      keys.push_back(std::string(sh.prefix, 'p') + b);
    }
    for (uint8_t cfg = 0; cfg < kLayoutConfigCount; cfg++) {
      // pages[order][edges]: order 0 ascending, 1 descending, 2 random
      uint64_t pages[3][2] = {}, refills[3][2] = {};
      for (int order = 0; order < 3; order++) {
        std::vector<std::string> k = keys;
        if (order == 1) std::reverse(k.begin(), k.end());
        if (order == 2) std::shuffle(k.begin(), k.end(), std::mt19937(7));
        for (int edges = 0; edges < 2; edges++) {
          FillStats fs;  // (a map's defaults: no redistribution, with edges)
          pages[order][edges] = pages_with(static_cast<LayoutConfig>(cfg), false, edges, k, "12345678", &fs);
          refills[order][edges] = fs.edge_refills;
        }
      }
      SCOPED_TRACE("cfg " + std::to_string(cfg) + " prefix " + std::to_string(sh.prefix));
      for (int order = 0; order < 2; order++) {
        EXPECT_EQ(refills[order][0], 0u);
        // (without a prefix, baseline, the edge split alone fills leaves)
        if (cfg != uint8_t(LayoutConfig::kBaseline)) EXPECT_GT(refills[order][1], 0u) << "order " << order;
        EXPECT_LT(pages[order][1] * 3, pages[order][0] * 2) << "order " << order;
        // (The dense layouts, adaptive too, converted full leaves of these decimal keys to
        // dense leaves of ~250 slots, 10 records each, until a conversion had to be dense
        // enough (BTree::dense_build): 595 pages in order against 89 at 1000 bytes, session
        // 31. The edge's inner nodes held whole separators, 3-4 a node, until refill_inner:
        // 2x random then.)
        EXPECT_LE(pages[order][1], pages[2][1] * 11 / 10) << "order " << order << " vs random";
      }
    }
  }
}

// Inner nodes at the tree's edge (one infinite fence: no prefix) hold whole separators: keys
// with a long shared prefix inserted in order filled them with 3-13 separators, and a middle
// split left interior nodes that later appends never came back to. 300-byte prefixes, 300k
// keys: 406 inner pages and 5 levels in order, 33 and 4 in random order; 1000-byte prefixes,
// 20k keys: 240 and 8 levels against 13 and 4 (session 32). Now the edge node's neighbour
// takes its entries first (Rebalancer::refill_inner), in maps and stores, both edges.
TEST(EdgeRefill, InnerNodesAtTheEdgeFillAsInRandomOrder) {
  for (unsigned prefix : {300u, 1000u}) {
    const unsigned n = prefix == 300 ? 60000 : 12000;
    std::vector<std::string> keys;
    for (unsigned i = 0; i < n; i++) {
      char b[16];
      snprintf(b, sizeof b, "%08u", i);
      keys.push_back(std::string(prefix, 'p') + b);
    }
    for (LayoutConfig cfg : {LayoutConfig::kHints, LayoutConfig::kAdaptive}) {
      for (bool redistribute : {false, true}) {
        TreeStats st[3];
        FillStats fs[3];
        for (int order = 0; order < 3; order++) {  // ascending, descending, random
          std::vector<std::string> k = keys;
          if (order == 1) std::reverse(k.begin(), k.end());
          if (order == 2) std::shuffle(k.begin(), k.end(), std::mt19937(11));
          FillOptions o;
          o.redistribute = redistribute;
          o.xmerge_on_pressure = false;
          ASSERT_NO_FATAL_FAILURE(load_checked(cfg, o, k, "12345678", &st[order], &fs[order]));
        }
        SCOPED_TRACE("cfg " + std::to_string(int(cfg)) + " prefix " + std::to_string(prefix) + " redistribute " +
                     std::to_string(redistribute));
        for (int order = 0; order < 2; order++) {
          EXPECT_GT(fs[order].inner_refills, 0u) << "order " << order;
          EXPECT_LE(st[order].height, st[2].height) << "order " << order;
          EXPECT_LE(st[order].inner, st[2].inner * 3 / 2 + 1) << "order " << order;
          EXPECT_LE(st[order].pages, st[2].pages * 11 / 10) << "order " << order;
        }
      }
    }
  }
  // Without edges, the paper's splits: no inner refill either; nor without prefix truncation
  // (baseline), where the neighbour's entries keep every byte and inner nodes of ~1 KiB keys
  // hold one separator: refilled, they made one-child chains sooner (a probe, session 32).
  std::vector<std::string> keys;
  for (unsigned i = 0; i < 20000; i++) keys.push_back(std::string(300, 'p') + std::to_string(100000 + i));
  FillStats fs;
  pages_with(LayoutConfig::kHints, false, false, keys, "v", &fs);
  EXPECT_EQ(fs.inner_refills, 0u);
  pages_with(LayoutConfig::kBaseline, false, true, keys, "v", &fs);
  EXPECT_EQ(fs.inner_refills, 0u);
}

// Room::kMoveFew (async stores): leaves short of room move only the entries in the way and
// splits and regroups rebase the pages they rewrite. The same tree as std::map under random
// inserts, overwrites of every size and deletes, in every layout configuration, checked as it
// goes (the differential suite runs the trees with Room::kCompact, the default).
TEST(RoomMoveFew, MatchesStdMapInEveryConfiguration) {
  for (LayoutConfig cfg : {LayoutConfig::kBaseline, LayoutConfig::kPrefix, LayoutConfig::kHeads, LayoutConfig::kHints,
                           LayoutConfig::kFingerprint, LayoutConfig::kSemiDense, LayoutConfig::kFullyDense,
                           LayoutConfig::kAdaptive}) {
    BTree t(cfg);
    ASSERT_EQ(t.init(), Status::kOk);
    t.set_room(Room::kMoveFew);
    Model m;
    std::mt19937_64 g(static_cast<uint64_t>(cfg) * 7919 + 1);
    for (int op = 0; op < 60000; op++) {
      uint64_t r = g();
      char kb[24];
      std::snprintf(kb, sizeof kb, "k%06llu", static_cast<unsigned long long>(r % 20000));
      std::string k = kb;
      if (r % 7 == 0) {
        Status st = t.remove(sl(k));
        EXPECT_EQ(st == Status::kOk, m.erase(k) == 1) << k;
      } else {
        unsigned len = static_cast<unsigned>(r >> 40) % 10 == 0 ? 200 + static_cast<unsigned>(r >> 20) % 600 : static_cast<unsigned>(r >> 24) % 60;
        std::string v(len, static_cast<char>('a' + op % 26));
        ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk) << k;
        m[k] = v;
      }
      if (op % 5000 == 4999) {
        ASSERT_EQ(t.check(), "") << "config " << static_cast<int>(cfg) << " op " << op;
        ASSERT_EQ(dump(t), m) << "config " << static_cast<int>(cfg) << " op " << op;
      }
    }
  }
}

}  // namespace
}  // namespace adaptree
