// Tree-level tests: transitions between layouts, splits (median, partition,
// to self), merges, worst-case keys, overflow values, cursors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bindings/adaptree.h"
#include "core/layouts/basic_node.h"
#include "core/tree/btree.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/tree/node_stats.h"
#include "tests/core/key_helpers.h"

using namespace adaptree;


namespace {

std::string be64(uint64_t v) { return be32(static_cast<uint32_t>(v >> 32)) + be32(static_cast<uint32_t>(v)); }

std::string get(BTree& t, const std::string& k, Status* st = nullptr) {
  ValueRef v;
  Status s = t.get(sl(k), &v);
  if (st) *st = s;
  if (s != Status::kOk) return "<absent>";
  std::vector<uint8_t> buf;
  Slice out;
  EXPECT_EQ(t.read_value(v, &buf, &out), Status::kOk);
  return std::string(reinterpret_cast<const char*>(out.data), out.len);
}

void expect_sound(const BTree& t) {
  std::string err = t.check();
  ASSERT_TRUE(err.empty()) << err;
}

std::vector<std::string> scan_all(BTree& t, bool reverse) {
  std::vector<std::string> out;
  Cursor c(&t);
  c.seek({}, kSeekEdge | (reverse ? kSeekReverse : 0));
  KeyBuffer k;
  ValueRef v;
  while (c.next(&k, &v) == Status::kOk) out.emplace_back(reinterpret_cast<const char*>(k.data), k.len);
  return out;
}

uint64_t leaves_of(const BTree& t, PageTag tag) {
  TreeStats s = collect_stats(t);
  switch (tag) {
    case PageTag::kBasicLeaf: return s.basic_leaf;
    case PageTag::kFingerprintLeaf: return s.fingerprint_leaf;
    case PageTag::kSemiDenseLeaf: return s.semi_dense_leaf;
    case PageTag::kFullyDenseLeaf: return s.fully_dense_leaf;
    default: return s.inner;
  }
}

const std::string kVal8 = "01234567";

// Repository URLs: a few thousand users with many repositories each, so that
// adjacent keys in a leaf often share their first bytes past the prefix (bad
// heads), as with real URLs (paper, section 4.2).
std::vector<std::string> url_keys(int n) {
  std::vector<std::string> keys, users;
  std::mt19937_64 r(3);
  const char* hosts[] = {"https://github.com/", "https://www.npmjs.com/package/", "https://gitlab.com/"};
  for (int u = 0; u < 1500; u++) {
    std::string name = hosts[r() % 3];
    int len = 4 + r() % 8;
    for (int c = 0; c < len; c++) name.push_back(static_cast<char>('a' + r() % 26));
    users.push_back(name + "/");
  }
  for (int i = 0; i < n; i++) {
    std::string k = users[r() % users.size()];
    int len = 3 + r() % 8;
    for (int c = 0; c < len; c++) k.push_back(static_cast<char>('a' + r() % 26));
    keys.push_back(k + "-" + std::to_string(i));
  }
  return keys;
}

}  // namespace

TEST(Tree, EveryConfigBasicOperationsAndEmptyKey) {
  for (uint8_t c = 0; c < kLayoutConfigCount; c++) {
    BTree t(static_cast<LayoutConfig>(c));
    ASSERT_EQ(t.init(), Status::kOk);
    EXPECT_EQ(t.set(sl(""), sl("empty")), Status::kOk);
    EXPECT_EQ(get(t, ""), "empty");
    EXPECT_EQ(t.set(sl(std::string(1, '\0')), sl("nul")), Status::kOk);
    EXPECT_EQ(t.set(sl("\xff\xff"), sl("ff")), Status::kOk);
    auto all = scan_all(t, false);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0], "");
    EXPECT_EQ(all[1], std::string(1, '\0'));
    EXPECT_EQ(t.remove(sl("")), Status::kOk);
    EXPECT_EQ(t.remove(sl("")), Status::kNotFound);
    Status st;
    get(t, "", &st);
    EXPECT_EQ(st, Status::kNotFound);
    // Too-long keys are rejected and change nothing.
    const uint32_t max = t.max_key_size();
    EXPECT_EQ(max, c == static_cast<uint8_t>(LayoutConfig::kBaseline) ? kMaxKeySizeUntruncated : kMaxKeySize);
    std::string big(max + 1, 'k');
    EXPECT_EQ(t.set(sl(big), sl("x")), Status::kKeyTooLarge);
    EXPECT_EQ(t.count(), 2u);
    // Reads and removes take any key up to kMaxKeySize (absent here), whatever the layout.
    get(t, std::string(kMaxKeySize, 'l'), &st);
    EXPECT_EQ(st, Status::kNotFound);
    EXPECT_EQ(t.remove(sl(std::string(kMaxKeySize, 'l'))), Status::kNotFound);
    EXPECT_EQ(t.set(sl(std::string(max, 'k')), sl("x")), Status::kOk);
    EXPECT_EQ(get(t, std::string(max, 'k')), "x");
    EXPECT_EQ(t.count(), 3u);
    // Too-large values are rejected before their bytes are read.
    EXPECT_EQ(t.set(sl("v"), Slice{reinterpret_cast<const uint8_t*>("x"), static_cast<uint32_t>(kMaxValueSize + 1)}),
              Status::kValueTooLarge);
    EXPECT_EQ(t.count(), 3u);
    expect_sound(t);
  }
}

TEST(Transition, BasicToFingerprintAndBackByOperationCounter) {
  // URL keys have bad heads: key-adaption enables the counter, and point
  // operations make leaves fingerprinting.
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  // The paper's splits: with redistribution (core/tree/rebalance.h) many
  // leaves are too full for the basic layout and convert only at their next
  // overflow (RebalanceAdaption.StuckFingerprintLeavesConvertAtNextOverflow).
  FillOptions paper;
  paper.redistribute = false;
  t.set_fill(paper);
  auto keys = url_keys(60000);
  for (auto& k : keys) ASSERT_EQ(t.set(sl(k), sl(kVal8)), Status::kOk);
  expect_sound(t);
  uint64_t fp0 = leaves_of(t, PageTag::kFingerprintLeaf), basic0 = leaves_of(t, PageTag::kBasicLeaf);
  EXPECT_GT(fp0, basic0 * 4) << "string keys with colliding heads should use fingerprint leaves";
  // Scans raise the counters (one step per scan, on the leaf where it
  // starts): short scans from random keys convert leaves back to comparison-based.
  Cursor c(&t);
  std::mt19937 sr(4);
  for (int round = 0; round < 60000; round++) {
    c.seek(sl(keys[sr() % keys.size()]), 0);
    ValueRef v;
    for (int i = 0; i < 5 && c.next(nullptr, &v) == Status::kOk; i++) {
    }
  }
  expect_sound(t);
  uint64_t fp1 = leaves_of(t, PageTag::kFingerprintLeaf), basic1 = leaves_of(t, PageTag::kBasicLeaf);
  EXPECT_GT(basic1, fp1 * 4) << "scan-heavy use should convert leaves to basic (fp " << fp1 << ", basic " << basic1 << ")";
  // Point operations bring fingerprints back.
  for (int round = 0; round < 30; round++)
    for (auto& k : keys) ASSERT_EQ(get(t, k), kVal8);
  expect_sound(t);
  EXPECT_GT(leaves_of(t, PageTag::kFingerprintLeaf), leaves_of(t, PageTag::kBasicLeaf) * 4);
  // Integer keys have good heads: the counter stays disabled, leaves stay basic.
  BTree ints(LayoutConfig::kAdaptive);
  ASSERT_EQ(ints.init(), Status::kOk);
  std::mt19937 r(5);
  for (int i = 0; i < 50000; i++) ints.set(sl(be32(r())), sl(kVal8));
  for (int i = 0; i < 100000; i++) get(ints, be32(r()));
  EXPECT_EQ(leaves_of(ints, PageTag::kFingerprintLeaf), 0u);
  expect_sound(ints);
}

namespace {

struct LeafState {
  PageTag tag;
  uint8_t counter;
  bool operator==(const LeafState&) const = default;
};

// Layout and operation counter of every leaf, by page id (conversions keep the id).
std::map<PageId, LeafState> leaf_states(const BTree& t) {
  std::map<PageId, LeafState> out;
  visit_nodes(
      t,
      [](const NodeInfo& n, void* ctx) {
        if (n.level == 0) (*static_cast<std::map<PageId, LeafState>*>(ctx))[n.id] = {n.tag, n.counter};
      },
      &out);
  return out;
}

PageId leaf_for(const BTree& t, const std::string& key) {
  PageId id = t.root();
  while (t.store().page(id)[0] == static_cast<uint8_t>(PageTag::kBasicInner))
    id = BasicNode{t.store().page(id)}.child_for(sl(key).data, static_cast<uint32_t>(key.size()));
  return id;
}

// Leaves whose layout or counter differ between two snapshots of the same tree.
std::vector<PageId> changed_leaves(const std::map<PageId, LeafState>& a, const std::map<PageId, LeafState>& b) {
  std::vector<PageId> out;
  for (auto& [id, s] : b) {
    auto it = a.find(id);
    if (it == a.end() || !(it->second == s)) out.push_back(id);
  }
  return out;
}

}  // namespace

TEST(Transition, ScanCounterStepsOncePerScanNotPerLeaf) {
  // Fingerprint leaves (URL keys have bad heads), adaptive config.
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  // The paper's splits: with node fill some fingerprint leaves are too full for the basic
  // layout and convert only at their next overflow (StuckFingerprintLeavesConvertAtNextOverflow),
  // and which leaf the second half finds first then depends on the fill.
  FillOptions paper;
  paper.redistribute = false;
  paper.edges = false;
  t.set_fill(paper);
  auto keys = url_keys(20000);
  for (auto& k : keys) ASSERT_EQ(t.set(sl(k), sl(kVal8)), Status::kOk);
  auto before = leaf_states(t);
  ASSERT_GT(before.size(), 50u);
  // Long scans across every leaf, forward and backward: only the leaf where
  // each scan starts may step, so no inner leaf changes (per-leaf counting
  // would step each one ten times and convert most of them).
  Cursor c(&t);
  ValueRef v;
  KeyBuffer k;
  for (int round = 0; round < 10; round++) {
    ASSERT_EQ(c.seek({}, kSeekEdge | (round % 2 ? kSeekReverse : 0)), Status::kOk);
    size_t n = 0;
    while (c.next(nullptr, &v) == Status::kOk) n++;
    ASSERT_EQ(n, keys.size());
  }
  auto after = leaf_states(t);
  EXPECT_LE(changed_leaves(before, after).size(), 2u) << "full scans stepped counters of leaves they passed";
  expect_sound(t);
  // Re-positioning after a modification is the same scan: interleave updates
  // of one key with a full scan (every next() re-seeks), then only the leaf
  // of the start and the updated key's leaf may differ.
  std::string last = *std::max_element(keys.begin(), keys.end());
  before = leaf_states(t);
  ASSERT_EQ(c.seek({}, kSeekEdge), Status::kOk);
  size_t n = 0;
  for (;; n++) {
    ASSERT_EQ(t.set(sl(last), sl(kVal8)), Status::kOk);
    if (c.next(&k, &v) != Status::kOk) break;
  }
  EXPECT_EQ(n, keys.size());
  after = leaf_states(t);
  EXPECT_LE(changed_leaves(before, after).size(), 2u) << "re-positioning counted as new scans";
  // Exact semantics: a short scan that crosses leaves steps at most one
  // counter, by one.
  std::mt19937 r(12);
  unsigned stepped = 0;
  for (int round = 0; round < 300; round++) {
    before = leaf_states(t);
    c.seek(sl(keys[r() % keys.size()]), r() % 2 ? kSeekReverse : 0);
    for (int i = 0; i < 300 && c.next(nullptr, &v) == Status::kOk; i++) {
    }
    after = leaf_states(t);
    auto changed = changed_leaves(before, after);
    ASSERT_LE(changed.size(), 1u) << "round " << round;
    if (changed.empty()) continue;
    LeafState a = before[changed[0]], b = after[changed[0]];
    EXPECT_EQ(b.counter, a.counter + 1) << "round " << round;
    stepped++;
  }
  EXPECT_GT(stepped, 10u);
  // Many short scans starting in one fingerprint leaf convert it.
  std::string key;
  PageId leaf = kInvalidPageId;
  for (size_t i = 0; i < keys.size() && leaf == kInvalidPageId; i += 101) {
    PageId id = leaf_for(t, keys[i]);
    if (t.store().page(id)[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf)) {
      leaf = id;
      key = keys[i];
    }
  }
  ASSERT_NE(leaf, kInvalidPageId);
  for (int round = 0; round < 200; round++) {
    ASSERT_EQ(c.seek(sl(key), 0), Status::kOk);
    for (int i = 0; i < 3; i++) c.next(nullptr, &v);
  }
  EXPECT_EQ(t.store().page(leaf)[0], static_cast<uint8_t>(PageTag::kBasicLeaf));
  EXPECT_EQ(t.store().page(leaf)[hdr::kCounter], kCounterMax);
  expect_sound(t);
}

TEST(Transition, BasicToFullyDenseAndBack) {
  for (LayoutConfig cfg : {LayoutConfig::kFullyDense, LayoutConfig::kAdaptive}) {
    BTree t(cfg);
    ASSERT_EQ(t.init(), Status::kOk);
    std::vector<uint32_t> ids(100000);
    for (uint32_t i = 0; i < ids.size(); i++) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), std::mt19937(7));
    for (uint32_t i : ids) ASSERT_EQ(t.set(sl(be32(i)), sl(kVal8)), Status::kOk);
    expect_sound(t);
    uint64_t fdl = leaves_of(t, PageTag::kFullyDenseLeaf);
    EXPECT_GT(fdl, 0u);
    EXPECT_EQ(leaves_of(t, PageTag::kBasicLeaf) + leaves_of(t, PageTag::kFingerprintLeaf), 0u)
        << "dense keys with equal value sizes should all be fully dense";
    TreeStats s = collect_stats(t);
    EXPECT_LT(static_cast<double>(s.bytes) / s.count, 14.0);  // paper: ~14.5 B/record adaptive dense
    // A value of another size cannot live in a fully dense leaf: the leaf
    // becomes comparison-based (or splits), and every record survives.
    ASSERT_EQ(t.set(sl(be32(5000)), sl("longer value")), Status::kOk);
    EXPECT_GE(leaves_of(t, PageTag::kBasicLeaf) + leaves_of(t, PageTag::kFingerprintLeaf), 1u);
    EXPECT_GE(leaves_of(t, PageTag::kFullyDenseLeaf), fdl - 1);
    EXPECT_EQ(get(t, be32(5000)), "longer value");
    EXPECT_EQ(get(t, be32(5001)), kVal8);
    // A key of another length too.
    ASSERT_EQ(t.set(sl(be32(70000) + "x"), sl(kVal8)), Status::kOk);
    expect_sound(t);
    EXPECT_EQ(t.count(), 100001u);
  }
  // Sparse keys never qualify.
  BTree sp(LayoutConfig::kFullyDense);
  ASSERT_EQ(sp.init(), Status::kOk);
  std::mt19937 r(9);
  for (int i = 0; i < 50000; i++) sp.set(sl(be32(r())), sl(kVal8));
  EXPECT_EQ(leaves_of(sp, PageTag::kFullyDenseLeaf), 0u);
}

TEST(Transition, SemiDenseLeaves) {
  BTree t(LayoutConfig::kSemiDense);
  ASSERT_EQ(t.init(), Status::kOk);
  std::vector<uint32_t> ids;
  for (uint32_t i = 0; i < 60000; i++)
    if (i % 3 != 1) ids.push_back(i);  // 67% density
  std::shuffle(ids.begin(), ids.end(), std::mt19937(8));
  for (uint32_t i : ids) ASSERT_EQ(t.set(sl(be32(i)), sl(std::string(i % 5 + 4, 'v'))), Status::kOk);
  expect_sound(t);
  EXPECT_GT(leaves_of(t, PageTag::kSemiDenseLeaf), leaves_of(t, PageTag::kBasicLeaf));
  for (uint32_t i = 0; i < 60000; i += 7) {
    Status st;
    std::string v = get(t, be32(i), &st);
    if (i % 3 != 1) EXPECT_EQ(v, std::string(i % 5 + 4, 'v'));
    else EXPECT_EQ(st, Status::kNotFound);
  }
  auto all = scan_all(t, true);
  EXPECT_EQ(all.size(), ids.size());
  EXPECT_TRUE(std::is_sorted(all.rbegin(), all.rend()));
}

TEST(Transition, SplitToSelfFillsDenseLeavesOnAscendingInserts) {
  BTree t(LayoutConfig::kFullyDense);
  ASSERT_EQ(t.init(), Status::kOk);
  const uint32_t n = 200000;
  for (uint32_t i = 0; i < n; i++) ASSERT_EQ(t.set(sl(be32(i)), sl(kVal8)), Status::kOk);
  expect_sound(t);
  uint64_t fdl = leaves_of(t, PageTag::kFullyDenseLeaf);
  unsigned cap = FullyDenseLeaf::capacity_for(4, 4, 8);
  // Split to self keeps every dense leaf full: about n / capacity leaves.
  EXPECT_LE(fdl, n / (cap - 20) + 3);
  EXPECT_GE(fdl, n / cap);
  TreeStats s = collect_stats(t);
  EXPECT_LT(static_cast<double>(s.bytes) / n, 9.5);
  // Median splits (hints) leave ascending inserts half full.
  BTree h(LayoutConfig::kHints);
  ASSERT_EQ(h.init(), Status::kOk);
  for (uint32_t i = 0; i < n; i++) h.set(sl(be32(i)), sl(kVal8));
  EXPECT_GT(collect_stats(h).bytes, 2 * s.bytes);
}

TEST(Transition, SplitToSelfFillsSemiDenseLeavesOnAscendingInserts) {
  // Values of varying size: only the semi-dense layout applies. Keys start
  // far from zero, so the first leaf (no lower fence) stays comparison-based.
  const uint32_t n = 100000;
  for (int width : {4, 8}) {
    BTree t(LayoutConfig::kSemiDense);
    ASSERT_EQ(t.init(), Status::kOk);
    auto key = [&](uint32_t i) { return width == 4 ? be32(3000000000u + i) : be64(0x0123456780000000ull + i); };
    auto value = [](uint32_t i) { return std::string(4 + i % 9, static_cast<char>('a' + i % 26)); };
    for (uint32_t i = 0; i < n; i++) ASSERT_EQ(t.set(sl(key(i)), sl(value(i))), Status::kOk);
    expect_sound(t);
    // Leaves in key order (the first and the last one may be partly empty).
    std::vector<NodeInfo> leaves;
    visit_nodes(
        t, [](const NodeInfo& i, void* c) { if (i.level == 0) static_cast<std::vector<NodeInfo>*>(c)->push_back(i); },
        &leaves);
    ASSERT_GT(leaves.size(), 10u);
    double fill = 0;
    for (size_t i = 1; i + 1 < leaves.size(); i++) {
      EXPECT_EQ(leaves[i].tag, PageTag::kSemiDenseLeaf) << "width " << width << ", leaf " << i;
      EXPECT_GT(leaves[i].fill, 0.9) << "width " << width << ", leaf " << i << " of " << leaves.size();
      fill += leaves[i].fill;
    }
    EXPECT_GT(fill / (leaves.size() - 2), 0.95) << "width " << width;
    // About 12.5 bytes per record (2 slot, 2 length, 8.0 value on average) in full pages.
    TreeStats s = collect_stats(t);
    EXPECT_LT(static_cast<double>(s.bytes) / n, 14.5) << "width " << width;
    for (uint32_t i = 0; i < n; i += 7) ASSERT_EQ(get(t, key(i)), value(i));
    auto all = scan_all(t, false);
    ASSERT_EQ(all.size(), n);
    for (uint32_t i = 0; i < n; i += 13) ASSERT_EQ(all[i], key(i));
    // Further random inserts and removals between the ascending keys keep the tree sound.
    std::mt19937 r(width);
    for (uint32_t i = 0; i < 20000; i++) {
      uint32_t x = r() % (n + 1000);
      if (r() % 3) ASSERT_EQ(t.set(sl(key(x)), sl(value(x + 1))), Status::kOk);
      else t.remove(sl(key(x)));
    }
    expect_sound(t);
  }
}

TEST(Transition, PartitionAwareSplitSeparatesIdRanges) {
  // 64-bit keys: partition (u32) ++ counter (u32), partitions interleaved,
  // each ascending (paper, section 4.6 "Partitioned Sequential Insert").
  for (LayoutConfig cfg : {LayoutConfig::kFullyDense, LayoutConfig::kAdaptive}) {
    BTree t(cfg);
    ASSERT_EQ(t.init(), Status::kOk);
    const uint32_t parts = 20, per = 10000;
    std::vector<uint32_t> next(parts, 0);
    std::mt19937 r(11);
    for (uint32_t i = 0; i < parts * per; i++) {
      uint32_t p = r() % parts;
      if (next[p] >= per) {
        i--;
        continue;
      }
      ASSERT_EQ(t.set(sl(be64((uint64_t{p} << 32) | next[p]++)), sl(kVal8)), Status::kOk);
    }
    expect_sound(t);
    TreeStats s = collect_stats(t);
    EXPECT_GT(s.fully_dense_leaf, 8 * (s.basic_leaf + s.fingerprint_leaf))
        << "boundary leaves should not keep keys of two partitions";
    EXPECT_LT(static_cast<double>(s.bytes) / s.count, 14.0);
  }
}

TEST(Merge, RemovingShrinksTheTree) {
  for (uint8_t c = 0; c < kLayoutConfigCount; c++) {
    BTree t(static_cast<LayoutConfig>(c));
    ASSERT_EQ(t.init(), Status::kOk);
    std::vector<std::string> keys = url_keys(40000);
    for (auto& k : keys) t.set(sl(k), sl(kVal8));
    uint64_t pages = t.store().live_pages();
    unsigned height = t.height();
    std::shuffle(keys.begin(), keys.end(), std::mt19937(c));
    for (size_t i = 0; i < keys.size() - 100; i++) ASSERT_EQ(t.remove(sl(keys[i])), Status::kOk);
    expect_sound(t);
    EXPECT_LT(t.store().live_pages(), pages / 20) << "merges should free most pages";
    EXPECT_LT(t.height(), height);
    for (size_t i = keys.size() - 100; i < keys.size(); i++) EXPECT_EQ(get(t, keys[i]), kVal8);
    for (size_t i = keys.size() - 100; i < keys.size(); i++) ASSERT_EQ(t.remove(sl(keys[i])), Status::kOk);
    EXPECT_EQ(t.count(), 0u);
    EXPECT_EQ(t.height(), 1u);
    EXPECT_EQ(t.store().live_pages(), 1u);
    expect_sound(t);
  }
}

TEST(WorstCase, MaximumKeysDifferingInTheLastByte) {
  // 1 KiB keys that differ only in their last byte give 1 KiB fences and
  // separators: inner nodes hold very few keys, leaves sometimes one record.
  for (uint8_t c = 0; c < kLayoutConfigCount; c++) {
    BTree t(static_cast<LayoutConfig>(c));
    ASSERT_EQ(t.init(), Status::kOk);
    const uint32_t max = t.max_key_size();  // (1011 bytes under `baseline`)
    std::map<std::string, std::string> model;
    for (int g = 0; g < 6; g++) {
      for (int i = 0; i < 256; i++) {
        std::string k(max, static_cast<char>('a' + g));
        k[max - 1] = static_cast<char>((i * 37) % 256);
        std::string v(i % 3 == 0 ? 900 : 8, static_cast<char>(i));  // some values near the inline limit
        ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk) << "config " << int(c);
        model[k] = v;
      }
    }
    expect_sound(t);
    EXPECT_EQ(t.count(), model.size());
    for (auto& [k, v] : model) ASSERT_EQ(get(t, k), v);
    auto all = scan_all(t, false);
    ASSERT_EQ(all.size(), model.size());
    auto it = model.begin();
    for (auto& k : all) EXPECT_EQ(k, (it++)->first);
    // Remove all; merges with 1 KiB fences must work too.
    for (auto& [k, v] : model) ASSERT_EQ(t.remove(sl(k)), Status::kOk);
    expect_sound(t);
    EXPECT_EQ(t.store().live_pages(), 1u);
  }
}

namespace {
struct KeylessCount {
  unsigned height, keyless = 0;
};
// Inner nodes below the root with no key (a single child).
unsigned keyless_inner_nodes(const BTree& t) {
  KeylessCount k{t.height()};
  visit_nodes(
      t,
      [](const NodeInfo& i, void* c) {
        auto* k = static_cast<KeylessCount*>(c);
        if (i.tag == PageTag::kBasicInner && i.count == 0 && i.level + 1 < k->height) k->keyless++;
      },
      &k);
  return k.keyless;
}
}  // namespace

TEST(WorstCase, LongSeparatorsLeaveNoKeylessInnerNodes) {
  // 1 KiB keys sharing a 960-byte prefix: separators of about 961 bytes,
  // stored untruncated (no prefix truncation) with fences as long, so inner
  // nodes hold one or two keys. Splits and merges must still leave every
  // inner node below the root a key (rotation through the parent).
  for (LayoutConfig cfg : {LayoutConfig::kBaseline, LayoutConfig::kHints}) {
    BTree t(cfg);
    ASSERT_EQ(t.init(), Status::kOk);
    std::mt19937 r(21);
    std::vector<std::string> keys;
    const uint32_t max = t.max_key_size();
    for (int i = 0; i < 3000; i++) {
      std::string k(max, 'p');
      for (unsigned b = 960; b < max; b++) k[b] = static_cast<char>('a' + r() % 26);
      keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::shuffle(keys.begin(), keys.end(), r);
    auto bound = [](size_t n) { return 2u + static_cast<unsigned>(std::ceil(std::log2(std::max<size_t>(n, 2)))); };
    for (size_t i = 0; i < keys.size(); i++) {
      ASSERT_EQ(t.set(sl(keys[i]), sl(kVal8)), Status::kOk);
      if (i % 250 == 0) {
        expect_sound(t);
        ASSERT_EQ(keyless_inner_nodes(t), 0u) << "after insert " << i;
      }
    }
    expect_sound(t);
    EXPECT_EQ(keyless_inner_nodes(t), 0u);
    EXPECT_LE(t.height(), bound(keys.size()));
    // Remove 90%, then all but a few.
    std::shuffle(keys.begin(), keys.end(), r);
    size_t keep = 7;
    for (size_t i = 0; i + keep < keys.size(); i++) {
      ASSERT_EQ(t.remove(sl(keys[i])), Status::kOk);
      if (i % 100 == 0 || i + keep + 20 > keys.size()) {
        expect_sound(t);
        ASSERT_EQ(keyless_inner_nodes(t), 0u) << "after remove " << i;
        ASSERT_LE(t.height(), bound(t.count()) + 1) << "after remove " << i;
      }
    }
    std::vector<std::string> rest(keys.end() - keep, keys.end());
    std::sort(rest.begin(), rest.end());
    EXPECT_EQ(scan_all(t, false), rest);
    auto back = scan_all(t, true);
    std::reverse(back.begin(), back.end());
    EXPECT_EQ(back, rest);
    for (auto& k : rest) EXPECT_EQ(get(t, k), kVal8);
  }
}

TEST(WorstCase, BaselineTakesKeysOnlyAsLongAsItsInnerNodesHoldTwo) {
  // Without prefix truncation an inner node keeps its fences and separators whole. Keys of
  // 1020 bytes left room for one separator: a node of one split into two of none, and five
  // runs of appends (tenants) side by side grew chains of one-child inner nodes until set
  // failed at the height limit after 872 keys, 21 pages a key (a probe, session 32). Now
  // `baseline` refuses keys over kMaxKeySizeUntruncated, and at that length the tree stays
  // about as high as with shorter keys.
  static_assert(kMaxKeySizeUntruncated < kMaxKeySize);
  static_assert(BasicNode::kSlotsPlain + 2 * kMaxKeySizeUntruncated + 2 * (6 + kMaxKeySizeUntruncated + 4) <= kNodeSize);
  static_assert(BasicNode::kSlotsPlain + 2 * (kMaxKeySizeUntruncated + 1) + 2 * (6 + kMaxKeySizeUntruncated + 1 + 4) >
                kNodeSize);
  auto tenants = [](unsigned len, unsigned n) {
    std::vector<std::string> keys;
    for (unsigned i = 0; i < n; i++) {
      char tail[32];
      snprintf(tail, sizeof tail, "t%u%012u", i % 5, i);
      keys.push_back(std::string(len - 14, 'p') + tail);
    }
    return keys;
  };
  BTree base(LayoutConfig::kBaseline);
  ASSERT_EQ(base.init(), Status::kOk);
  for (auto& k : tenants(kMaxKeySizeUntruncated + 1, 20)) EXPECT_EQ(base.set(sl(k), sl(kVal8)), Status::kKeyTooLarge);
  for (auto& k : tenants(kMaxKeySize, 20)) EXPECT_EQ(base.set(sl(k), sl(kVal8)), Status::kKeyTooLarge);
  EXPECT_EQ(base.count(), 0u);
  EXPECT_EQ(base.store().live_pages(), 1u);
  // The bulk load refuses them too, and leaves the tree empty.
  std::vector<std::string> sorted = tenants(kMaxKeySizeUntruncated + 1, 50);
  std::sort(sorted.begin(), sorted.end());
  std::vector<Slice> ks, vs;
  for (auto& k : sorted) ks.push_back(sl(k)), vs.push_back(sl(kVal8));
  EXPECT_EQ(base.bulk_load(ks.data(), vs.data(), ks.size()), Status::kKeyTooLarge);
  EXPECT_EQ(base.count(), 0u);
  // At the limit: 3000 keys, no keyless inner node, the height of a tree of 1000-byte keys.
  auto height_of = [&](unsigned len) {
    BTree t(LayoutConfig::kBaseline);
    EXPECT_EQ(t.init(), Status::kOk);
    std::vector<std::string> keys = tenants(len, 3000);
    for (auto& k : keys) EXPECT_EQ(t.set(sl(k), sl(kVal8)), Status::kOk) << len;
    expect_sound(t);
    EXPECT_EQ(keyless_inner_nodes(t), 0u) << len;
    EXPECT_EQ(t.count(), keys.size());
    for (size_t i = 0; i < keys.size(); i += 97) EXPECT_EQ(get(t, keys[i]), kVal8);
    return t.height();
  };
  unsigned h1000 = height_of(1000), hmax = height_of(kMaxKeySizeUntruncated);
  EXPECT_LE(hmax, h1000 + 2) << "1000-byte keys: height " << h1000;
  EXPECT_LE(hmax, 14u);
  // Every other layout truncates prefixes and takes keys up to kMaxKeySize.
  BTree prefix(LayoutConfig::kPrefix);
  ASSERT_EQ(prefix.init(), Status::kOk);
  for (auto& k : tenants(kMaxKeySize, 3000)) ASSERT_EQ(prefix.set(sl(k), sl(kVal8)), Status::kOk);
  expect_sound(prefix);
  EXPECT_LE(prefix.height(), 6u);
}

TEST(WorstCase, BaselineSetManyWithATooLongKeyWritesNothing) {
  // at_set_many applied a batch entry by entry; a key past baseline's limit (which the
  // encoders, checking 1024 bytes, let through) failed after the entries before it were in,
  // and adaptree/level's batch, which relies on setMany changing nothing when it throws, was
  // left half applied and then committed (a probe, session 33). In order into an empty tree
  // (the bulk load) and not.
  for (bool empty : {true, false}) {
    at_tree* t = at_tree_new(static_cast<uint32_t>(LayoutConfig::kBaseline));
    at_ctx* c = at_ctx_new();
    if (!empty) ASSERT_EQ(at_set(t, c, reinterpret_cast<const uint8_t*>("0"), 1, reinterpret_cast<const uint8_t*>("v"), 1), 0);
    std::vector<uint8_t> batch;
    auto add = [&](const std::string& k) {
      uint32_t kl = static_cast<uint32_t>(k.size()), vl = 1;
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
      batch.insert(batch.end(), k.begin(), k.end());
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&vl), reinterpret_cast<uint8_t*>(&vl) + 4);
      batch.push_back('x');
    };
    add("a");
    add("b");
    add("c" + std::string(kMaxKeySizeUntruncated, 'c'));  // 1012 bytes
    add("d");
    EXPECT_EQ(at_set_many(t, c, batch.data(), 4), static_cast<int32_t>(Status::kKeyTooLarge)) << empty;
    EXPECT_EQ(at_ctx_result(c)[3], 0u) << "applied";
    EXPECT_EQ(at_count(t), empty ? 0.0 : 1.0);
    EXPECT_EQ(at_get(t, c, reinterpret_cast<const uint8_t*>("a"), 1), static_cast<int32_t>(Status::kNotFound));
    EXPECT_EQ(at_check(t, c), 0);
    // At the limit the batch goes in.
    batch.clear();
    add("a");
    add("c" + std::string(kMaxKeySizeUntruncated - 1, 'c'));
    EXPECT_EQ(at_set_many(t, c, batch.data(), 2), 0);
    EXPECT_EQ(at_count(t), empty ? 2.0 : 3.0);
    at_ctx_free(c);
    at_tree_free(t);
  }
}

TEST(Overflow, LargeValuesRoundTripAndFreeTheirPages) {
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  // A 64 MiB document.
  std::string doc(64u << 20, '\0');
  for (size_t i = 0; i < doc.size(); i++) doc[i] = static_cast<char>("{\"a\":[1,2,3]}"[i % 13] + (i >> 20));
  uint64_t before = t.store().live_pages();
  ASSERT_EQ(t.set(sl("doc.json"), sl(doc)), Status::kOk);
  uint64_t after = t.store().live_pages();
  EXPECT_GE(after - before, doc.size() / kPageSize);
  EXPECT_EQ(get(t, "doc.json"), doc);
  expect_sound(t);
  TreeStats s = collect_stats(t);
  EXPECT_EQ(s.overflow, after - before);
  // Overwriting with a small value frees the chain.
  ASSERT_EQ(t.set(sl("doc.json"), sl("{}")), Status::kOk);
  EXPECT_EQ(t.store().live_pages(), before);
  EXPECT_EQ(get(t, "doc.json"), "{}");
  // Removing frees it too.
  std::string mid(100000, 'm');
  ASSERT_EQ(t.set(sl("mid"), sl(mid)), Status::kOk);
  EXPECT_GT(t.store().live_pages(), before);
  ASSERT_EQ(t.remove(sl("mid")), Status::kOk);
  EXPECT_EQ(t.store().live_pages(), before);
  // Through the C ABI: the value is assembled in the context buffer.
  at_tree* at = at_tree_new(7);
  at_ctx* ctx = at_ctx_new();
  std::string v(300000, 'q');
  ASSERT_EQ(at_set(at, ctx, reinterpret_cast<const uint8_t*>("k"), 1, reinterpret_cast<const uint8_t*>(v.data()), v.size()), 0);
  ASSERT_EQ(at_get(at, ctx, reinterpret_cast<const uint8_t*>("k"), 1), 0);
  EXPECT_EQ(at_ctx_result(ctx)[3], v.size());
  at_ctx_free(ctx);
  at_tree_free(at);
}

// at_get_many answers keys until its output passes ~1 MiB, then result.key_len says how many it
// answered (0: all) and the caller calls again for the rest: the whole output in one buffer,
// grown by doubling, kept ~3x the result in wasm memory for good (session 32).
TEST(Overflow, GetManyAnswersInChunksOfAboutAMebibyte) {
  at_tree* at = at_tree_new(7);
  at_ctx* ctx = at_ctx_new();
  std::vector<std::string> keys, values;
  for (int i = 0; i < 8; i++) {
    keys.push_back("k" + std::to_string(i));
    values.push_back(std::string(400000 + i, static_cast<char>('a' + i)));
    ASSERT_EQ(at_set(at, ctx, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size(),
                     reinterpret_cast<const uint8_t*>(values[i].data()), values[i].size()),
              0);
  }
  std::vector<std::string> ask = {"k0", "nope", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
  std::vector<uint8_t> batch;
  for (auto& k : ask) {
    uint32_t kl = k.size();
    batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
    batch.insert(batch.end(), k.begin(), k.end());
  }
  std::vector<uint32_t> chunks;
  size_t done = 0;
  const uint8_t* kp = batch.data();
  while (done < ask.size()) {
    ASSERT_EQ(at_get_many(at, ctx, kp, ask.size() - done), 0);
    const uint32_t answered = at_ctx_result(ctx)[1];
    const uint32_t m = answered == 0 ? ask.size() - done : answered;
    chunks.push_back(m);
    EXPECT_LE(at_ctx_result(ctx)[3], (1u << 20) + 400100);  // at most a value past the mebibyte
    const uint8_t* p = at_ctx_value_ptr(ctx);
    for (uint32_t j = 0; j < m; j++, done++) {
      uint32_t vl, kl;
      memcpy(&vl, p, 4);
      memcpy(&kl, kp, 4);
      kp += 4 + kl;
      if (ask[done] == "nope") {
        EXPECT_EQ(vl, 0xFFFFFFFFu);
        p += 4;
        continue;
      }
      ASSERT_EQ(vl, values[ask[done][1] - '0'].size());
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(p + 4), vl), values[ask[done][1] - '0']);
      p += 4 + vl;
    }
  }
  // 400 KB values: three to a chunk (the third passes 1 MiB), the absent key in the first.
  EXPECT_EQ(chunks, (std::vector<uint32_t>{4, 3, 2}));
  at_ctx_free(ctx);
  at_tree_free(at);
}

TEST(Cursor, SurvivesModificationsNeverSkipsOrRepeats) {
  for (LayoutConfig cfg : {LayoutConfig::kBaseline, LayoutConfig::kFingerprint, LayoutConfig::kFullyDense,
                           LayoutConfig::kAdaptive}) {
    for (bool reverse : {false, true}) {
      BTree t(cfg);
      ASSERT_EQ(t.init(), Status::kOk);
      std::map<std::string, std::string> model;
      for (uint32_t i = 0; i < 20000; i += 2) {
        t.set(sl(be32(i)), sl(kVal8));
        model[be32(i)] = kVal8;
      }
      Cursor c(&t);
      c.seek({}, kSeekEdge | (reverse ? kSeekReverse : 0));
      KeyBuffer k;
      ValueRef v;
      std::string last;
      bool started = false;
      std::mt19937 r(1);
      size_t steps = 0;
      for (;;) {
        // Modify around the cursor: delete next keys, insert behind and ahead.
        uint32_t x = r() % 20000;
        if (r() % 2) {
          t.set(sl(be32(x)), sl(kVal8));
          model[be32(x)] = kVal8;
        } else {
          t.remove(sl(be32(x)));
          model.erase(be32(x));
        }
        Status s = c.next(&k, &v);
        std::string key(reinterpret_cast<const char*>(k.data), k.len);
        auto it = !reverse ? (started ? model.upper_bound(last) : model.begin())
                           : (started ? model.lower_bound(last) : model.end());
        if (reverse) it = it == model.begin() ? model.end() : std::prev(it);
        if (it == model.end()) {
          EXPECT_EQ(s, Status::kNotFound);
          break;
        }
        ASSERT_EQ(s, Status::kOk);
        ASSERT_EQ(key, it->first);
        last = key;
        started = true;
        steps++;
      }
      EXPECT_GT(steps, 1000u);
      expect_sound(t);
    }
  }
}

TEST(Cursor, SeekFlagsInclusiveExclusiveReverse) {
  BTree t(LayoutConfig::kAdaptive);
  ASSERT_EQ(t.init(), Status::kOk);
  for (uint32_t i = 10; i <= 100; i += 10) t.set(sl(be32(i)), sl(kVal8));
  auto first = [&](uint32_t key, uint32_t flags) -> int64_t {
    Cursor c(&t);
    if (c.seek(sl(be32(key)), flags) != Status::kOk) return -1;
    KeyBuffer k;
    ValueRef v;
    EXPECT_EQ(c.next(&k, &v), Status::kOk);
    return load_be32(k.data);
  };
  EXPECT_EQ(first(50, 0), 50);
  EXPECT_EQ(first(50, kSeekExclusive), 60);
  EXPECT_EQ(first(55, 0), 60);
  EXPECT_EQ(first(50, kSeekReverse), 50);
  EXPECT_EQ(first(50, kSeekReverse | kSeekExclusive), 40);
  EXPECT_EQ(first(55, kSeekReverse), 50);
  EXPECT_EQ(first(100, kSeekExclusive), -1);
  EXPECT_EQ(first(10, kSeekReverse | kSeekExclusive), -1);
  EXPECT_EQ(first(0, kSeekEdge | kSeekReverse), 100);
  // Seek keys longer than any stored key still order correctly.
  Cursor c(&t);
  std::string longk = be32(50) + std::string(kMaxKeySize, 'x');
  ASSERT_EQ(c.seek(sl(longk), 0), Status::kOk);
  KeyBuffer k;
  ValueRef v;
  c.next(&k, &v);
  EXPECT_EQ(load_be32(k.data), 60u);
  ASSERT_EQ(c.seek(sl(longk), kSeekReverse), Status::kOk);
  c.next(&k, &v);
  EXPECT_EQ(load_be32(k.data), 50u);
}

// A bulk load writes the tree first and the values' overflow chains after it (their ids go
// into the leaves then), so that deleting the values, the last pages written, can give the
// room back (a probe, session 29; tests/ts/store.test.ts checks the file). Here: in every
// layout configuration, inline and overflow values mixed (dense integer keys too, for the
// dense leaves), every value reads back whole, and deleting the large ones frees their pages.
TEST(BulkLoad, OverflowValuesAreWrittenAfterTheTree) {
  for (uint32_t cfg = 0; cfg < 8; cfg++) {
    for (bool dense : {false, true}) {
      at_tree* t = at_tree_new(cfg);
      at_ctx* c = at_ctx_new();
      std::vector<std::string> keys;
      if (dense) {
        for (uint32_t i = 0; i < 3000; i++) {
          std::string k(4, '\0');
          for (int b = 0; b < 4; b++) k[b] = static_cast<char>((i >> (24 - 8 * b)) & 0xff);
          keys.push_back(k);
        }
      } else {
        keys = url_keys(3000);
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      }
      auto value = [](size_t i) {
        size_t len = i % 7 == 3 ? 5000 + (i * 131) % 20000 : 8;
        std::string v(len, '\0');
        for (size_t j = 0; j < len; j++) v[j] = static_cast<char>((i * 31 + j) & 0xff);
        return v;
      };
      std::vector<uint8_t> batch;
      for (size_t i = 0; i < keys.size(); i++) {
        const std::string v = value(i);
        uint32_t kl = keys[i].size(), vl = v.size();
        batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
        batch.insert(batch.end(), keys[i].begin(), keys[i].end());
        batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&vl), reinterpret_cast<uint8_t*>(&vl) + 4);
        batch.insert(batch.end(), v.begin(), v.end());
      }
      ASSERT_EQ(at_set_many(t, c, batch.data(), keys.size()), 0) << cfg;
      ASSERT_EQ(at_check(t, c), 0) << cfg;
      for (size_t i = 0; i < keys.size(); i++) {
        ASSERT_EQ(at_get(t, c, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size()), 0) << cfg << " " << i;
        const std::string v = value(i);
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), at_ctx_result(c)[3]), v) << cfg << " " << i;
      }
      ASSERT_EQ(at_stats(t, c), 0);
      std::string json(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), at_ctx_result(c)[3]);
      size_t p = json.find("\"pages\":");
      ASSERT_NE(p, std::string::npos);
      const uint64_t pages_before = std::stoull(json.substr(p + 8));
      for (size_t i = 3; i < keys.size(); i += 7)
        ASSERT_EQ(at_remove(t, c, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size()), 0);
      ASSERT_EQ(at_check(t, c), 0);
      ASSERT_EQ(at_stats(t, c), 0);
      json.assign(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), at_ctx_result(c)[3]);
      p = json.find("\"pages\":");
      EXPECT_LT(std::stoull(json.substr(p + 8)), pages_before / 4) << cfg << " " << json;
      at_ctx_free(c);
      at_tree_free(t);
    }
  }
}

TEST(BulkLoad, SortedSetManyFillsLeavesDensely) {
  for (uint32_t cfg : {3u, 4u, 7u}) {
    at_tree* bulk = at_tree_new(cfg);
    at_tree* random = at_tree_new(cfg);
    // The paper's splits (about 70%); redistribution fills random inserts to
    // about 0.85-0.93 (RebalanceFill.RandomLoadFillsLeaves).
    ASSERT_EQ(at_tree_set_fill(random, 0), 0);
    at_ctx* c = at_ctx_new();
    std::vector<uint8_t> batch;
    auto keys = url_keys(50000);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (auto& k : keys) {
      uint32_t kl = k.size(), vl = 8;
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
      batch.insert(batch.end(), k.begin(), k.end());
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&vl), reinterpret_cast<uint8_t*>(&vl) + 4);
      batch.insert(batch.end(), kVal8.begin(), kVal8.end());
    }
    ASSERT_EQ(at_set_many(bulk, c, batch.data(), keys.size()), 0);
    EXPECT_EQ(at_ctx_result(c)[4], keys.size());
    EXPECT_EQ(at_check(bulk, c), 0);
    auto shuffled = keys;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(2));
    for (auto& k : shuffled) at_set(random, c, reinterpret_cast<const uint8_t*>(k.data()), k.size(), reinterpret_cast<const uint8_t*>(kVal8.data()), 8);
    // Fill of the leaf level from the stats JSON (bulk: nearly full; random
    // inserts: about 70%, the usual B-Tree fill).
    auto leaf_fill = [&](at_tree* t) {
      EXPECT_EQ(at_stats(t, c), 0);
      std::string json(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), at_ctx_result(c)[3]);
      EXPECT_NE(json.find("\"layouts\":{\"inner\":"), std::string::npos) << json;
      size_t p = json.find("{\"level\":0,");
      EXPECT_NE(p, std::string::npos) << json;
      p = json.find("\"fill\":", p);
      return std::stod(json.substr(p + 7));
    };
    double fb = leaf_fill(bulk), fr = leaf_fill(random);
    EXPECT_GT(fb, 0.9) << "bulk-loaded leaves should be nearly full";
    EXPECT_GT(fb, fr + 0.1) << "bulk " << fb << ", random inserts " << fr;
    // The bulk-loaded tree behaves like any other afterwards.
    for (size_t i = 0; i < keys.size(); i += 97) {
      ASSERT_EQ(at_get(bulk, c, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size()), 0);
      ASSERT_EQ(at_remove(bulk, c, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size()), 0);
    }
    EXPECT_EQ(at_check(bulk, c), 0);
    EXPECT_EQ(at_count(bulk), keys.size() - (keys.size() + 96) / 97);

    at_ctx_free(c);
    at_tree_free(bulk);
    at_tree_free(random);
  }
}
