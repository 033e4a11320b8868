// Unit tests per node layout, at the node level (build, search, insert,
// remove, iteration) without the tree around them.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "core/layouts/basic_node.h"
#include "core/layouts/dense_keys.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/util/hash.h"
#include "core/layouts/leaf.h"
#include "core/layouts/semi_dense_leaf.h"
#include "core/layouts/validate.h"
#include "core/layouts/separator.h"
#include "tests/core/key_helpers.h"

using namespace adaptree;

namespace {

std::string key_of(const uint8_t* p, int pos) {
  KeyBuffer k;
  leaf::key_at(p, pos, &k);
  return std::string(reinterpret_cast<const char*>(k.data), k.len);
}
std::string value_of(const ValueRef& v) { return std::string(reinterpret_cast<const char*>(v.ptr), v.field & kValueLenMask); }


}  // namespace

// copy_small copies inline up to kCopyInlineMax bytes (16-byte pieces, the last overlapping)
// and calls memcpy past it: every length and alignment, nothing written outside the target.
TEST(NodeCommon, CopySmallCopiesEveryLengthExactly) {
  std::vector<uint8_t> src(kCopyInlineMax + 64), dst(kCopyInlineMax + 96);
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<uint8_t>(i * 131 + 7);
  int checked = 0;
  for (uint32_t n = 0; n <= kCopyInlineMax + 40; n++) {
    for (uint32_t so = 0; so < 8; so += 3) {
      for (uint32_t d = 0; d < 8; d += 5) {
        std::fill(dst.begin(), dst.end(), uint8_t{0xA5});
        copy_small(dst.data() + 16 + d, src.data() + so, n);
        for (size_t i = 0; i < dst.size(); i++) {
          const bool inside = i >= 16 + d && i < 16 + d + n;
          ASSERT_EQ(dst[i], inside ? src[so + i - 16 - d] : uint8_t{0xA5}) << "n " << n << " at " << i;
        }
        checked++;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(kCopyInlineMax + 41) * 3 * 2);
}

TEST(BasicNode, BuildSearchInsertRemoveWithEveryFlagCombination) {
  for (uint8_t flags : {uint8_t{0}, kFlagHeads, uint8_t(kFlagHeads | kFlagHints)}) {
    for (bool trunc : {false, true}) {
      std::string lo = "key/0000", hi = "key/9999";
      std::vector<std::string> keys, vals;
      for (int i = 1; i < 120; i += 2) {
        char b[16];
        snprintf(b, sizeof b, "key/%04d", i * 37);
        keys.push_back(b);
        vals.push_back(std::string(i % 7, 'v'));
      }
      std::sort(keys.begin(), keys.end());
      std::vector<RecordRef> r;
      for (size_t i = 0; i < keys.size(); i++) r.push_back(rec(keys[i], vals[i]));
      Page pg;
      ASSERT_TRUE(BasicNode::build(pg.b, PageTag::kBasicLeaf, flags, fences(&lo, &hi), trunc, r.data(), r.size(), 0,
                                   kCounterDisabled));
      BasicNode n{pg.b};
      EXPECT_EQ(n.prefix_len(), trunc ? 4u : 0u);
      EXPECT_EQ(n.has_heads(), (flags & kFlagHeads) != 0);
      std::map<std::string, std::string> model;
      for (size_t i = 0; i < keys.size(); i++) model[keys[i]] = vals[i];
      // Every key is found at its position; absent keys are not.
      for (size_t i = 0; i < keys.size(); i++) {
        ValueRef v;
        ASSERT_TRUE(leaf::lookup(pg.b, sl(keys[i]), &v)) << keys[i];
        EXPECT_EQ(value_of(v), vals[i]);
      }
      ValueRef v;
      EXPECT_FALSE(leaf::lookup(pg.b, sl(std::string("key/0001")), &v));
      // Insert until full, then remove everything; compare with the model each time.
      int i = 0;
      for (;; i++) {
        std::string k = "key/" + std::to_string(1000 + i * 13 % 8000) + "x";
        std::string val(i % 11, 'w');
        OldValue old;
        PutResult res = leaf::upsert(pg.b, sl(k), reinterpret_cast<const uint8_t*>(val.data()), val.size(), &old);
        if (res == PutResult::kNoSpace) break;
        model[k] = val;
      }
      EXPECT_GT(i, 20);
      unsigned pos = 0;
      for (auto& [k, val] : model) {
        EXPECT_EQ(key_of(pg.b, pos), k);
        EXPECT_EQ(value_of(leaf::value_at(pg.b, pos)), val);
        pos++;
      }
      EXPECT_EQ(n.count(), model.size());
      // Hints and heads stay consistent: search finds every key after many inserts.
      for (auto& [k, val] : model) {
        ASSERT_TRUE(leaf::lookup(pg.b, sl(k), &v)) << k;
        EXPECT_EQ(value_of(v), val);
      }
      // Growing values force compaction.
      for (auto& [k, val] : model) {
        std::string nv(val.size() + 1, 'z');
        OldValue old;
        if (leaf::upsert(pg.b, sl(k), reinterpret_cast<const uint8_t*>(nv.data()), nv.size(), &old) ==
            PutResult::kUpdated)
          val = nv;
      }
      for (auto& [k, val] : model) {
        ASSERT_TRUE(leaf::lookup(pg.b, sl(k), &v));
        EXPECT_EQ(value_of(v), val);
      }
      for (auto it = model.begin(); it != model.end();) {
        OldValue old;
        ASSERT_TRUE(leaf::remove(pg.b, sl(it->first), &old));
        EXPECT_FALSE(leaf::remove(pg.b, sl(it->first), &old));
        it = model.erase(it);
      }
      EXPECT_EQ(n.count(), 0u);
      EXPECT_EQ(n.heap_used(), lo.size() + hi.size());
    }
  }
}

TEST(BasicNode, HintsNarrowTheSearchAndMatchSampledHeads) {
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < 150; i++) keys.push_back(be32(i * 1000));
  std::vector<RecordRef> r;
  std::string v = "12345678";
  for (auto& k : keys) r.push_back(rec(k, v));
  Page pg;
  ASSERT_TRUE(BasicNode::build(pg.b, PageTag::kBasicLeaf, kFlagHeads | kFlagHints, Fences{}, true, r.data(), r.size(), 0,
                               kCounterDisabled));
  BasicNode n{pg.b};
  unsigned dist = n.count() / (BasicNode::kHintCount + 1);
  for (unsigned i = 0; i < BasicNode::kHintCount; i++)
    EXPECT_EQ(load32(pg.b + BasicNode::kHintsOffset + 4 * i), n.head(dist * (i + 1)));
  for (uint32_t i = 0; i < 150 * 1000; i += 333) {
    bool exact;
    std::string k = be32(i);
    unsigned pos = n.lower_bound(reinterpret_cast<const uint8_t*>(k.data()), 4, &exact);
    unsigned want = (i + 999) / 1000;
    EXPECT_EQ(pos, want) << i;
    EXPECT_EQ(exact, i % 1000 == 0);
  }
}

TEST(FingerprintLeaf, SimdSearchLazySortAndRemove) {
  std::string lo = "a", hi = "z";
  Page pg;
  ASSERT_TRUE(FingerprintLeaf::build(pg.b, fences(&lo, &hi), true, nullptr, 0, 0));
  FingerprintLeaf f{pg.b};
  std::map<std::string, std::string> model;
  // Insert in random order: the unsorted range grows, fingerprints are appended.
  uint64_t x = 1;
  for (int i = 0; i < 500; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    std::string k = std::string("m").append(std::to_string(x >> 40));  // not "m" + ...: GCC 12's -Wrestrict false positive
    std::string v = std::to_string(i);
    OldValue old;
    if (leaf::upsert(pg.b, sl(k), reinterpret_cast<const uint8_t*>(v.data()), v.size(), &old) == PutResult::kNoSpace)
      break;
    model[k] = v;
  }
  ASSERT_GT(model.size(), 64u);  // more than two SIMD vectors
  EXPECT_LT(f.sorted(), f.count());
  EXPECT_EQ(f.fp_capacity() % 32, 0u);
  for (unsigned i = 0; i < f.count(); i++)
    EXPECT_EQ(f.fingerprints()[i], fingerprint(f.suffix(i).data, f.suffix(i).len));
  for (auto& [k, v] : model) {
    ValueRef r;
    ASSERT_TRUE(f.lookup(sl(k), &r)) << k;
    EXPECT_EQ(value_of(r), v);
  }
  // Absent keys sharing a fingerprint with present ones are still absent.
  int collisions = 0;
  for (int i = 0; i < 2000; i++) {
    std::string k = std::string("n").append(std::to_string(i));
    ValueRef r;
    EXPECT_FALSE(f.lookup(sl(k), &r));
    for (unsigned j = 0; j < f.count(); j++) collisions += f.fingerprints()[j] == fingerprint(sl(k).data + 0, k.size());
  }
  EXPECT_GT(collisions, 0);
  f.sort();
  EXPECT_TRUE(f.is_sorted());
  unsigned pos = 0;
  for (auto& [k, v] : model) {
    EXPECT_EQ(key_of(pg.b, pos), k);
    bool exact;
    EXPECT_EQ(f.lower_bound(sl(k), &exact), static_cast<int>(pos));
    EXPECT_TRUE(exact);
    pos++;
  }
  for (unsigned i = 0; i < f.count(); i++)
    EXPECT_EQ(f.fingerprints()[i], fingerprint(f.suffix(i).data, f.suffix(i).len)) << "fingerprints follow the sort";
  // Remove half; the rest stays findable and sorted.
  int i = 0;
  for (auto it = model.begin(); it != model.end(); i++) {
    if (i % 2) {
      OldValue old;
      ASSERT_TRUE(f.remove(sl(it->first), &old));
      it = model.erase(it);
    } else {
      ++it;
    }
  }
  EXPECT_TRUE(f.is_sorted());
  for (auto& [k, v] : model) {
    ValueRef r;
    ASSERT_TRUE(f.lookup(sl(k), &r));
    EXPECT_EQ(value_of(r), v);
  }
}

TEST(DenseKeys, ReferenceMaximumAndLowerIndex) {
  // 6-byte keys: non-numeric part "ab", numeric part 4 bytes.
  std::string lo = std::string("ab") + be32(100), hi = std::string("ab") + be32(200);
  uint32_t ref;
  uint64_t max;
  ASSERT_TRUE(dense::reference(fences(&lo, &hi), 6, &ref));
  EXPECT_EQ(ref, 101u);
  ASSERT_TRUE(dense::maximum(fences(&lo, &hi), 6, &max));
  EXPECT_EQ(max, 200u);
  // A truncated lower fence: smallest 6-byte key above "ab\0\0" is "ab\0\0\0\0".
  std::string lo2 = std::string("ab") + std::string(2, '\0');
  ASSERT_TRUE(dense::reference(fences(&lo2, &hi), 6, &ref));
  EXPECT_EQ(ref, 0u);
  // Upper fence shorter than the keys: largest key below "ab\0\1" is "ab\0\0\xff\xff".
  std::string hi2 = std::string("ab") + std::string(1, '\0') + "\x01";
  ASSERT_TRUE(dense::maximum(fences(&lo2, &hi2), 6, &max));
  EXPECT_EQ(max, 0xFFFFu);
  // Lower fence without the non-numeric part.
  std::string a = "a";
  EXPECT_FALSE(dense::reference(fences(&a, &hi), 6, &ref));
  // Upper fence in a later non-numeric range: everything with "ab" qualifies.
  std::string hi3 = "ac";
  ASSERT_TRUE(dense::maximum(fences(&lo, &hi3), 6, &max));
  EXPECT_EQ(max, 0xFFFFFFFFull);
  bool exact;
  std::string k = std::string("ab") + be32(150);
  EXPECT_EQ(dense::lower_index(sl(k), 6, reinterpret_cast<const uint8_t*>("ab"), 101, 100, &exact), 49u);
  EXPECT_TRUE(exact);
  std::string k2 = std::string("ab") + be32(150) + "x";
  EXPECT_EQ(dense::lower_index(sl(k2), 6, reinterpret_cast<const uint8_t*>("ab"), 101, 100, &exact), 50u);
  EXPECT_FALSE(exact);
  std::string k3 = "abc";
  EXPECT_EQ(dense::lower_index(sl(k3), 6, reinterpret_cast<const uint8_t*>("ab"), 101, 100, &exact), 100u);
  // Short keys (< 4 bytes) are numeric entirely.
  std::string s1 = "\x01\x02";
  EXPECT_EQ(dense::numeric(reinterpret_cast<const uint8_t*>(s1.data()), 2), 0x0102u);
}

TEST(SemiDenseLeaf, OneSlotPerPossibleKey) {
  std::string lo = be32(1000), hi = be32(1400);
  std::vector<std::string> keys, vals;
  for (uint32_t i = 1001; i <= 1400; i += 3) keys.push_back(be32(i)), vals.push_back(std::string(i % 9, 'q'));
  std::vector<RecordRef> r;
  for (size_t i = 0; i < keys.size(); i++) r.push_back(rec(keys[i], vals[i]));
  Page pg;
  ASSERT_TRUE(SemiDenseLeaf::build(pg.b, fences(&lo, &hi), r.data(), r.size()));
  SemiDenseLeaf s{pg.b};
  EXPECT_EQ(s.slot_count(), 400u);
  EXPECT_EQ(s.ref(), 1001u);
  EXPECT_EQ(s.count(), keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    ValueRef v;
    ASSERT_TRUE(s.lookup(sl(keys[i]), &v));
    EXPECT_EQ(value_of(v), vals[i]);
  }
  // Iteration visits present slots only, in order, both directions.
  std::vector<std::string> fwd, back;
  for (int p = s.next_present(0); p < static_cast<int>(s.slot_count()); p = s.next_present(p + 1)) fwd.push_back(key_of(pg.b, p));
  for (int p = s.prev_present(s.slot_count() - 1); p >= 0; p = s.prev_present(p - 1)) back.push_back(key_of(pg.b, p));
  EXPECT_EQ(fwd, keys);
  std::reverse(back.begin(), back.end());
  EXPECT_EQ(back, keys);
  // Keys of another length cannot be stored; in-range keys can.
  OldValue old;
  // (std::string's length, not strlen: the key starts with 0x00.)
  std::string other("\x00\x00\x04\x00\x01", 5);
  ASSERT_EQ(other.size(), 5u);
  EXPECT_EQ(s.upsert(sl(other), nullptr, 0, &old), PutResult::kNoSpace);
  std::string shorter = be32(1001).substr(0, 3);
  EXPECT_EQ(s.upsert(sl(shorter), nullptr, 0, &old), PutResult::kNoSpace);
  std::string k = be32(1002), v = "new";
  EXPECT_EQ(s.upsert(sl(k), reinterpret_cast<const uint8_t*>(v.data()), 3, &old), PutResult::kInserted);
  EXPECT_EQ(s.upsert(sl(k), reinterpret_cast<const uint8_t*>("longer!"), 7, &old), PutResult::kUpdated);
  ValueRef got;
  ASSERT_TRUE(s.lookup(sl(k), &got));
  EXPECT_EQ(value_of(got), "longer!");
  ASSERT_TRUE(s.remove(sl(k), &old));
  EXPECT_FALSE(s.lookup(sl(k), &got));
  // A range too wide for one page gets fewer slots, counted from the lower
  // fence (capacity); keys past the last slot are beyond capacity.
  std::string wide = be32(1000 + kPageSize);
  ASSERT_TRUE(SemiDenseLeaf::build(pg.b, fences(&lo, &wide), r.data(), r.size()));
  unsigned cap = s.slot_count();
  EXPECT_GE(cap, 400u);
  EXPECT_LT(cap, kPageSize);
  EXPECT_GE(s.index_of(sl(be32(1001 + cap - 1))), 0);
  EXPECT_FALSE(s.beyond_capacity(sl(be32(1001 + cap - 1))));
  EXPECT_TRUE(s.beyond_capacity(sl(be32(1001 + cap))));
  EXPECT_FALSE(s.beyond_capacity(sl(other)));
  // Inserts keep room for an upper fence of key length (split to self).
  std::string big(300, 'b');
  for (uint32_t i = 1002; i < 1001 + cap; i += 3)
    if (s.upsert(sl(be32(i)), reinterpret_cast<const uint8_t*>(big.data()), 300, &old) == PutResult::kNoSpace) break;
  EXPECT_GE(s.free_space_after_compaction(), 4u);
  // Records spread past what fits are rejected.
  std::string far = be32(1000 + kPageSize - 1);
  r.push_back(rec(far, "x"));
  EXPECT_FALSE(SemiDenseLeaf::build(pg.b, fences(&lo, &wide), r.data(), r.size()));
}

TEST(FullyDenseLeaf, BitmapValueArrayAndCapacity) {
  std::string lo = be32(99);
  std::vector<std::string> keys;
  std::string v8 = "ABCDEFGH";
  for (uint32_t i = 100; i < 400; i += 2) keys.push_back(be32(i));
  std::vector<RecordRef> r;
  for (auto& k : keys) r.push_back(rec(k, v8));
  Page pg;
  ASSERT_TRUE(FullyDenseLeaf::build(pg.b, fences(&lo, nullptr), r.data(), r.size(), 4, 8));
  FullyDenseLeaf d{pg.b};
  EXPECT_EQ(d.ref(), 100u);
  EXPECT_EQ(d.capacity(), FullyDenseLeaf::capacity_for(4, 4, 8));
  EXPECT_GT(d.capacity(), 450u);  // about 500 records of 8 bytes fit a 4 KiB page
  EXPECT_EQ(d.count(), keys.size());
  // next/prev present across 64-bit bitmap words.
  std::vector<std::string> fwd;
  for (int p = d.next_present(0); p < static_cast<int>(d.capacity()); p = d.next_present(p + 1)) fwd.push_back(key_of(pg.b, p));
  EXPECT_EQ(fwd, keys);
  int last = d.prev_present(d.capacity() - 1);
  EXPECT_EQ(key_of(pg.b, last), keys.back());
  OldValue old;
  std::string inside = be32(101), beyond = be32(100 + d.capacity());
  EXPECT_EQ(d.upsert(sl(inside), reinterpret_cast<const uint8_t*>(v8.data()), 8, &old), PutResult::kInserted);
  EXPECT_EQ(d.upsert(sl(inside), reinterpret_cast<const uint8_t*>("12345678"), 8, &old), PutResult::kUpdated);
  ValueRef got;
  ASSERT_TRUE(d.lookup(sl(inside), &got));
  EXPECT_EQ(value_of(got), "12345678");
  // Wrong value size or a key past the capacity need the tree's help.
  EXPECT_EQ(d.upsert(sl(inside), reinterpret_cast<const uint8_t*>("123"), 3, &old), PutResult::kNoSpace);
  EXPECT_EQ(d.upsert(sl(beyond), reinterpret_cast<const uint8_t*>(v8.data()), 8, &old), PutResult::kNoSpace);
  EXPECT_TRUE(d.beyond_capacity(sl(beyond), 8));
  EXPECT_FALSE(d.beyond_capacity(sl(inside), 8));
  // Split to self lowers the upper fence to the last slot's key.
  KeyBuffer last_key;
  d.last_slot_key(&last_key);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(last_key.data), 4), be32(100 + d.capacity() - 1));
  d.set_upper_fence(last_key.slice());
  Fences f = fences_of(pg.b);
  EXPECT_FALSE(f.upper_inf);
  EXPECT_EQ(f.upper.len, 4u);
  // Mixed value sizes or key lengths cannot be fully dense.
  r[3].val_len = 7;
  EXPECT_FALSE(FullyDenseLeaf::build(pg.b, fences(&lo, nullptr), r.data(), r.size(), 4, 8));
}

TEST(Separator, ShortestBetweenAndSplitPoint) {
  std::string a = "https://host/abc", b = "https://host/abd/x";
  KeyBuffer s;
  separator_between(rec(a, ""), rec(b, ""), &s);
  std::string sep(reinterpret_cast<char*>(s.data), s.len);
  EXPECT_EQ(sep, "https://host/abd");
  EXPECT_LE(a, sep);
  EXPECT_LT(sep, b);
  // When b is one byte past the common prefix, a itself is the separator.
  std::string c = "https://host/ab", d = "https://host/ac";
  separator_between(rec(c, ""), rec(d, ""), &s);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(s.data), s.len), c);
  // The split point prefers a short separator near the median.
  std::vector<std::string> keys;
  for (int i = 0; i < 64; i++) keys.push_back("prefix" + std::string(1, static_cast<char>('a' + i / 16)) + std::to_string(1000 + i));
  std::vector<RecordRef> r;
  for (auto& k : keys) r.push_back(rec(k, ""));
  unsigned j = choose_split_point(r.data(), r.size());
  EXPECT_GE(j, 30u);
  EXPECT_LE(j, 34u);
  separator_between(r[j - 1], r[j], &s);
  EXPECT_LE(s.len, keys[j].size());
}

// An insert short of contiguous room takes a gap the heap has (an entry that
// was removed) instead of compacting: the other entries stay where they are,
// so a commit logs a small delta of the page.
TEST(BasicNode, InsertFillsAHeapGapBeforeCompacting) {
  std::vector<std::string> keys;
  std::string v(100, 'v');
  for (uint32_t i = 0; i < 30; i++) keys.push_back(be32(i * 10));
  std::vector<RecordRef> r;
  for (auto& k : keys) r.push_back(rec(k, v));
  Page pg;
  ASSERT_TRUE(BasicNode::build(pg.b, PageTag::kBasicLeaf, kFlagHeads, Fences{}, false, r.data(), r.size(), 0,
                               kCounterDisabled));
  BasicNode n{pg.b};
  // Fill the contiguous room with entries of the same size.
  uint32_t next = 1;
  while (n.free_space() >= n.entry_space(4, 100)) {
    bool exact;
    std::string k = be32(next * 10 + 5);
    next++;
    unsigned pos = n.lower_bound(sl(k).data, 4, &exact);
    n.insert_at(pos, sl(k).data, 4, reinterpret_cast<const uint8_t*>(v.data()), 100);
  }
  // Remove one entry in the middle: its heap bytes are a gap now.
  n.remove_at(7);
  ASSERT_GE(n.free_space_after_compaction(), n.entry_space(4, 100));
  ASSERT_LT(n.free_space(), n.entry_space(4, 100));
  ASSERT_GE(n.free_space(), n.slot_size());
  Page before;
  memcpy(before.b, pg.b, kPageSize);
  unsigned heap_start = n.heap_start();
  std::string k = be32(71);
  bool exact;
  unsigned pos = n.lower_bound(sl(k).data, 4, &exact);
  std::string w(100, 'w');
  n.insert_at(pos, sl(k).data, 4, reinterpret_cast<const uint8_t*>(w.data()), 100);
  EXPECT_EQ(n.heap_start(), heap_start);  // no compaction
  // Every byte from heap_start up is as it was but the 104 bytes of the gap.
  unsigned changed = 0;
  for (unsigned i = heap_start; i < kNodeSize; i++) changed += before.b[i] != pg.b[i];
  EXPECT_LE(changed, 104u);
  // Contents: sorted, the new entry found with its value.
  pos = n.lower_bound(sl(k).data, 4, &exact);
  ASSERT_TRUE(exact);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(n.value(pos)), 100), w);
  for (unsigned i = 1; i < n.count(); i++) {
    Slice a = n.suffix(i - 1), b = n.suffix(i);
    EXPECT_LT(compare(a, b), 0) << i;
  }
  unsigned used = 0;
  for (unsigned i = 0; i < n.count(); i++) used += n.suffix(i).len + (n.value_field(i) & kValueLenMask);
  EXPECT_EQ(n.heap_used(), used);
  // With no gap large enough it compacts as before.
  n.remove_at(3);
  std::string big(200, 'b');
  k = be32(33);
  pos = n.lower_bound(sl(k).data, 4, &exact);
  if (n.free_space_after_compaction() >= n.entry_space(4, 200)) {
    n.insert_at(pos, sl(k).data, 4, reinterpret_cast<const uint8_t*>(big.data()), 200);
    pos = n.lower_bound(sl(k).data, 4, &exact);
    ASSERT_TRUE(exact);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(n.value(pos)), 200), big);
  }
}

namespace {
// One random change to a basic leaf: a third remove a record, the rest insert one whose
// value is up to max_value bytes (where it fits): the heap fills with gaps of every size.
void random_op(BasicNode n, XorShift32& rng, unsigned max_value) {
  uint32_t r = rng.next();
  if (n.count() > 0 && r % 3 == 0) {
    n.remove_at(r / 3 % n.count());
    return;
  }
  std::string k = "m" + std::to_string(r % 100000);
  std::string v(r / 100000 % max_value, static_cast<char>('a' + r % 26));
  bool exact;
  unsigned pos = n.lower_bound(sl(k).data, static_cast<uint32_t>(k.size()), &exact);
  if (exact || n.free_space_after_compaction() < n.entry_space(static_cast<unsigned>(k.size()), static_cast<unsigned>(v.size())))
    return;
  n.insert_at(pos, sl(k).data, static_cast<unsigned>(k.size()), reinterpret_cast<const uint8_t*>(v.data()),
              static_cast<uint16_t>(v.size()));
}
}  // namespace

// find_hole walks a bitmap of the node's bytes: it answers what the sort of the live ranges
// by offset answered (the reference below, the code it replaced) on basic leaves with
// garbage of every size, for every request size.
namespace {
int find_hole_by_sort(const BasicNode& n, unsigned bytes) {
  std::vector<uint32_t> r;
  for (unsigned i = 0; i < n.count(); i++) {
    const uint8_t* s = n.slot(i);
    unsigned len = load16(s + 2) + (load16(s + 4) & kValueLenMask);
    if (len) r.push_back((uint32_t{load16(s)} << 16) | len);
  }
  if (load16(n.p + hdr::kLowerLen)) r.push_back((uint32_t{load16(n.p + hdr::kLowerOff)} << 16) | load16(n.p + hdr::kLowerLen));
  if (load16(n.p + hdr::kUpperLen)) r.push_back((uint32_t{load16(n.p + hdr::kUpperOff)} << 16) | load16(n.p + hdr::kUpperLen));
  std::sort(r.begin(), r.end());
  unsigned at = n.heap_start();
  for (uint32_t x : r) {
    unsigned off = x >> 16, end = off + (x & 0xffff);
    if (off >= at + bytes) return static_cast<int>(at);
    if (end > at) at = end;
  }
  return kNodeSize >= at + bytes ? static_cast<int>(at) : -1;
}
}  // namespace

TEST(BasicNode, FindHoleAnswersAsTheSortOfRanges) {
  XorShift32 rng;
  unsigned checked = 0, found = 0;
  for (int round = 0; round < 300; round++) {
    std::string lo = "a" + std::to_string(round), hi = "z" + std::to_string(round);
    Page pg;
    ASSERT_TRUE(BasicNode::build(pg.b, PageTag::kBasicLeaf, round % 2 ? kFlagHeads : 0, fences(&lo, &hi), false, nullptr,
                                 0, 0, kCounterDisabled));
    BasicNode n{pg.b};
    // Inserts and removes of random sizes: the heap fills with gaps, until it is full.
    for (int op = 0; op < 400; op++) {
      random_op(n, rng, 90);
      if (op % 7 == 0)
        for (unsigned bytes : {0u, 1u, 2u, 7u, 13u, 40u, 100u, 300u, 1000u, 5000u}) {
          int want = find_hole_by_sort(n, bytes), got = n.find_hole(bytes);
          ASSERT_EQ(got, want) << "round " << round << " op " << op << " bytes " << bytes;
          checked++;
          found += got >= 0 && static_cast<unsigned>(got) > n.heap_start();
        }
    }
  }
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(found, 1000u);  // holes inside the heap, not only at its top
}

// A basic node as key -> value, its fences and the fields readers use (what rebase and
// make_gap must leave as they were, or make as `fresh` has them).
namespace {
struct NodeView {
  std::vector<std::pair<std::string, std::string>> recs;
  std::string lower, upper;
  uint8_t tag, flags, counter;
  unsigned prefix, heap_used;
  std::vector<uint8_t> hints;
  bool operator==(const NodeView&) const = default;
};
NodeView view_of(const uint8_t* p) {
  BasicNode n{const_cast<uint8_t*>(p)};
  NodeView v;
  for (unsigned i = 0; i < n.count(); i++) {
    Slice s = n.suffix(i);
    v.recs.emplace_back(std::string(reinterpret_cast<const char*>(s.data), s.len) + "/" + std::to_string(n.value_field(i)),
                        std::string(reinterpret_cast<const char*>(n.value(i)), n.value_field(i) & kValueLenMask));
  }
  Fences f = fences_of(p);
  v.lower = f.lower_inf ? "-inf" : std::string(reinterpret_cast<const char*>(f.lower.data), f.lower.len);
  v.upper = f.upper_inf ? "+inf" : std::string(reinterpret_cast<const char*>(f.upper.data), f.upper.len);
  v.tag = p[0], v.flags = p[hdr::kFlags], v.counter = p[hdr::kCounter];
  v.prefix = n.prefix_len(), v.heap_used = n.heap_used();
  v.hints.assign(p + BasicNode::kHintsOffset, p + BasicNode::kHintsOffset + (n.has_hints() ? 64 : 0));
  return v;
}
// A leaf with gaps in its heap: `ops` random_op()s.
void leaf_with_gaps(Page* pg, XorShift32& rng, uint8_t flags, const std::string& lo, const std::string& hi, int ops) {
  ASSERT_TRUE(BasicNode::build(pg->b, PageTag::kBasicLeaf, flags, fences(&lo, &hi), false, nullptr, 0, 0, kCounterDisabled));
  BasicNode n{pg->b};
  for (int op = 0; op < ops; op++) random_op(n, rng, 120);
}
}  // namespace

// rebase writes the node a fresh image describes over an older image of that page: every
// reader sees fresh (records, fences, heap_used, hints), the page is well formed, and the
// entries the old image held with the same bytes kept their bytes, so a split or regroup
// changes a fraction of the page (a commit logs a delta of it). Pages that do not match
// (another layout, prefix or tag) are refused and left as they were.
TEST(BasicNode, RebaseKeepsTheEntriesThePageHolds) {
  XorShift32 rng;
  unsigned rebased = 0, refused = 0, kept_bytes = 0, changed_total = 0;
  for (int round = 0; round < 400; round++) {
    const uint8_t flags = round % 4 == 0 ? 0 : round % 4 == 1 ? kFlagHeads : round % 4 == 2 ? kFlagHints : kFlagHeads | kFlagHints;
    Page old;
    leaf_with_gaps(&old, rng, flags, "a", "z", 300);
    BasicNode o{old.b};
    // fresh: the upper part of the old records (a split's upper half), some of the values
    // changed, plus records from a neighbour, with a new lower fence.
    std::vector<std::pair<std::string, std::string>> recs;
    for (unsigned i = o.count() / 2; i < o.count(); i++) {
      Slice s = o.suffix(i);
      std::string v(reinterpret_cast<const char*>(o.value(i)), o.value_field(i) & kValueLenMask);
      if (rng.next() % 10 == 0) v = std::string(v.size() + 1, 'X');
      recs.emplace_back(std::string(reinterpret_cast<const char*>(s.data), s.len), v);
    }
    for (int k = 0; k < 5; k++) recs.emplace_back("y" + std::to_string(rng.next() % 1000), std::string(rng.next() % 60, 'n'));
    std::sort(recs.begin(), recs.end());
    recs.erase(std::unique(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.first == b.first; }), recs.end());
    std::string lo = recs.empty() ? "a" : recs[0].first;
    std::vector<RecordRef> r;
    for (auto& [k, v] : recs) r.push_back(rec(k, v));
    std::string hi = "z";
    Page fresh;
    uint8_t fresh_flags = round % 17 == 0 ? flags ^ kFlagHeads : flags;  // now and then a layout that does not match
    if (!BasicNode::build(fresh.b, PageTag::kBasicLeaf, fresh_flags, fences(&lo, &hi), false, r.data(), r.size(), 0,
                          kCounterDisabled))
      continue;
    Page before;
    memcpy(before.b, old.b, kPageSize);
    if (!BasicNode{old.b}.rebase(fresh.b)) {
      refused++;
      EXPECT_EQ(memcmp(before.b, old.b, kPageSize), 0) << "round " << round;
      EXPECT_NE(fresh_flags, flags) << "round " << round;  // matching pages with room are rebased
      continue;
    }
    rebased++;
    ASSERT_EQ(view_of(old.b), view_of(fresh.b)) << "round " << round;
    ASSERT_TRUE(page_well_formed(old.b)) << "round " << round;
    // Entries with the same key and value in both: at the same offset, same bytes.
    BasicNode a{before.b}, b{old.b};
    unsigned changed = 0;
    for (unsigned i = 0; i < kNodeSize; i++) changed += before.b[i] != old.b[i];
    for (unsigned i = 0; i < b.count(); i++)
      for (unsigned j = 0; j < a.count(); j++)
        if (compare(a.suffix(j), b.suffix(i)) == 0 && a.value_field(j) == b.value_field(i) &&
            memcmp(a.value(j), b.value(i), a.value_field(j) & kValueLenMask) == 0 && load16(a.slot(j)) >= b.slot_base() + b.count() * b.slot_size()) {
          EXPECT_EQ(load16(a.slot(j)), load16(b.slot(i))) << "round " << round << " record " << i;
          kept_bytes += b.suffix(i).len + (b.value_field(i) & kValueLenMask);
        }
    changed_total += changed;
    // Still a node to insert into: the heap's room is what fresh had.
    EXPECT_EQ(b.free_space_after_compaction(), BasicNode{fresh.b}.free_space_after_compaction());
  }
  EXPECT_GT(rebased, 300u);
  EXPECT_GT(refused, 5u);
  EXPECT_GT(kept_bytes, 100000u);
  // Built anew, every page would differ in most of its bytes.
  EXPECT_LT(changed_total / rebased, kNodeSize / 3);
}

// make_gap makes `bytes` of room between the slots and the heap, moving the entries in the
// way into the heap's gaps (or packing only the bottom of the heap), and nothing else changes
// for a reader: the same records, fences and heap_used, a well-formed page.
TEST(BasicNode, MakeGapMovesOnlyWhatIsInTheWay) {
  XorShift32 rng;
  unsigned checked = 0, small_changes = 0;
  for (int round = 0; round < 300; round++) {
    const uint8_t flags = round % 2 ? kFlagHeads | kFlagHints : 0;
    Page pg;
    leaf_with_gaps(&pg, rng, flags, "a" + std::to_string(round), "z", 250);
    BasicNode n{pg.b};
    const unsigned most = n.free_space_after_compaction();
    for (unsigned bytes : {1u, 10u, 64u, 130u, 300u, most / 2, most}) {
      if (bytes > most || bytes <= n.free_space()) continue;
      Page p2;
      memcpy(p2.b, pg.b, kPageSize);
      BasicNode m{p2.b};
      m.make_gap(bytes);
      ASSERT_GE(m.free_space(), bytes) << "round " << round << " bytes " << bytes;
      ASSERT_EQ(view_of(p2.b), view_of(pg.b)) << "round " << round << " bytes " << bytes;
      ASSERT_TRUE(page_well_formed(p2.b)) << "round " << round << " bytes " << bytes;
      unsigned changed = 0;
      for (unsigned i = 0; i < kNodeSize; i++) changed += pg.b[i] != p2.b[i];
      small_changes += bytes <= 130 && changed < 1024;
      checked++;
    }
  }
  EXPECT_GT(checked, 300u);
  EXPECT_GT(small_changes, 100u);  // a compaction would have moved most of the heap
}

// OldValue::keep_overflow (a write under the shared tree latch, which cannot free an overflow
// chain): a record whose value has overflow pages is left as it is, by upsert (kKeptOverflow)
// and remove (false, `overflow` set), in every layout that holds such values; other records
// are written as ever. Session 27: a shared write replaced the record and left the chain for
// later, and an exclusive check or commit in between saw a leak.
TEST(Leaf, KeepOverflowLeavesOverflowRecordsAlone) {
  const uint8_t ref[kOverflowRefSize] = {7, 0, 0, 0, 0, 0, 0, 9};  // first page 7
  const uint16_t oflow = static_cast<uint16_t>(kOverflowRefSize) | kOverflowFlag;
  const std::string small = "small";
  auto builders = std::vector<std::pair<const char*, bool (*)(uint8_t*, const std::string&, const std::string&)>>{
      {"basic", [](uint8_t* p, const std::string& lo, const std::string& hi) {
         return BasicNode::build(p, PageTag::kBasicLeaf, kFlagHeads | kFlagHints, fences(&lo, &hi), false, nullptr, 0, 0, kCounterDisabled);
       }},
      {"fingerprint", [](uint8_t* p, const std::string& lo, const std::string& hi) { return FingerprintLeaf::build(p, fences(&lo, &hi), true, nullptr, 0, 0); }},
      {"semi-dense", [](uint8_t* p, const std::string& lo, const std::string& hi) {
         std::string k = be32(1001), v = "x";
         RecordRef r = rec(k, v);
         return SemiDenseLeaf::build(p, fences(&lo, &hi), &r, 1);
       }},
  };
  for (auto& [name, build] : builders) {
    SCOPED_TRACE(name);
    Page pg;
    ASSERT_TRUE(build(pg.b, be32(1000), be32(1400)));
    const std::string big = be32(1010), other = be32(1020);
    OldValue o;
    ASSERT_EQ(leaf::upsert(pg.b, sl(big), ref, oflow, &o), PutResult::kInserted);
    ASSERT_EQ(leaf::upsert(pg.b, sl(other), reinterpret_cast<const uint8_t*>(small.data()), small.size(), &o), PutResult::kInserted);
    const unsigned n = leaf::count(pg.b);
    // Replace or remove the overflow record with keep_overflow: nothing changes.
    OldValue keep;
    keep.keep_overflow = true;
    EXPECT_EQ(leaf::upsert(pg.b, sl(big), reinterpret_cast<const uint8_t*>(small.data()), small.size(), &keep), PutResult::kKeptOverflow);
    OldValue keep2;
    keep2.keep_overflow = true;
    EXPECT_FALSE(leaf::remove(pg.b, sl(big), &keep2));
    EXPECT_TRUE(keep2.overflow);
    ValueRef v;
    ASSERT_TRUE(leaf::lookup(pg.b, sl(big), &v));
    EXPECT_TRUE(v.is_overflow());
    EXPECT_EQ(leaf::count(pg.b), n);
    // Other records: as without the flag; an absent key is absent (overflow false).
    OldValue keep3;
    keep3.keep_overflow = true;
    EXPECT_EQ(leaf::upsert(pg.b, sl(other), reinterpret_cast<const uint8_t*>("tiny"), 4, &keep3), PutResult::kUpdated);
    EXPECT_FALSE(keep3.overflow);
    OldValue keep4;
    keep4.keep_overflow = true;
    EXPECT_FALSE(leaf::remove(pg.b, sl(be32(1030)), &keep4));
    EXPECT_FALSE(keep4.overflow);
    OldValue keep5;
    keep5.keep_overflow = true;
    EXPECT_TRUE(leaf::remove(pg.b, sl(other), &keep5));
    // Without the flag the overflow record is replaced, and its chain reported.
    OldValue plain;
    EXPECT_EQ(leaf::upsert(pg.b, sl(big), reinterpret_cast<const uint8_t*>(small.data()), small.size(), &plain), PutResult::kUpdated);
    EXPECT_TRUE(plain.overflow);
    EXPECT_EQ(plain.first_page, 7u);
  }
}
