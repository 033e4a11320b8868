// The bounds-checked searches of optimistic reads (phase 2b, docs/THREADS.md):
// leaf::lookup_checked and BasicNode::child_for_checked. On a consistent page they
// answer as the plain searches do; on a torn page (random bytes anywhere, header
// fields at their extremes) they never read outside the node. The page under test
// sits right before an inaccessible page (mmap, PROT_NONE), so a read past it
// faults in every build, not only under AddressSanitizer.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <string>
#include <vector>

#include "core/layouts/basic_node.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/leaf.h"
#include "core/layouts/semi_dense_leaf.h"
#include "tests/core/key_helpers.h"

using namespace adaptree;

namespace {


// A page followed by an inaccessible one.
class GuardedPage {
 public:
  GuardedPage() {
    void* m = mmap(nullptr, 2 * kPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(m, MAP_FAILED);
    base_ = static_cast<uint8_t*>(m);
    EXPECT_EQ(mprotect(base_ + kPageSize, kPageSize, PROT_NONE), 0);
  }
  ~GuardedPage() { munmap(base_, 2 * kPageSize); }
  uint8_t* p() const { return base_; }

 private:
  uint8_t* base_;
};

struct Built {
  std::string name;
  std::vector<uint8_t> image;
  std::vector<std::string> keys, absent;
};

// One leaf of each layout (the basic leaf with each flag combination), and inner nodes.
std::vector<Built> built_pages() {
  std::vector<Built> out;
  auto add = [&](std::string name, auto build, std::vector<std::string> keys, std::vector<std::string> absent) {
    Built b{std::move(name), std::vector<uint8_t>(kPageSize), std::move(keys), std::move(absent)};
    EXPECT_TRUE(build(b.image.data())) << b.name;
    out.push_back(std::move(b));
  };
  std::vector<std::string> strs, strs_absent, vals;
  for (int i = 0; i < 90; i++) {
    char k[32];
    snprintf(k, sizeof k, "user/%05d/name", i * 7);
    strs.push_back(k);
    snprintf(k, sizeof k, "user/%05d/name", i * 7 + 3);
    strs_absent.push_back(k);
    vals.push_back(std::string(static_cast<size_t>(i % 23), static_cast<char>('a' + i % 26)));
  }
  std::vector<RecordRef> r;
  for (size_t i = 0; i < strs.size(); i++) r.push_back(rec(strs[i], vals[i]));
  std::string lo = "user/", hi = "user/99999";
  Fences f;
  f.lower = sl(lo), f.lower_inf = false, f.upper = sl(hi), f.upper_inf = false;
  for (uint8_t flags : {uint8_t{0}, kFlagHeads, uint8_t(kFlagHeads | kFlagHints)})
    for (PageTag tag : {PageTag::kBasicLeaf, PageTag::kBasicInner}) {
      std::vector<RecordRef> rr = r;
      std::vector<std::string> children(r.size());
      if (tag == PageTag::kBasicInner)
        for (size_t i = 0; i < rr.size(); i++) {
          children[i] = be32(static_cast<uint32_t>(1000 + i));
          rr[i].val = reinterpret_cast<const uint8_t*>(children[i].data());
          rr[i].val_len = 4;
        }
      add((tag == PageTag::kBasicInner ? "inner flags " : "basic leaf flags ") + std::to_string(flags),
          [&](uint8_t* pg) { return BasicNode::build(pg, tag, flags, f, true, rr.data(), rr.size(), 999, 0); }, strs,
          strs_absent);
    }
  add("fingerprint leaf",
      [&](uint8_t* pg) {
        if (!FingerprintLeaf::build(pg, f, true, r.data(), r.size(), 0)) return false;
        // and a few records in its unsorted range
        for (int i = 0; i < 5; i++) {
          OldValue old;
          std::string k = "user/5" + std::to_string(i);
          if (leaf::upsert(pg, sl(k), reinterpret_cast<const uint8_t*>("v"), 1, &old) == PutResult::kNoSpace) return false;
        }
        return true;
      },
      strs, strs_absent);
  std::vector<std::string> nums, nums_absent, nvals;
  for (uint32_t i = 1001; i <= 1400; i += 3) nums.push_back(be32(i)), nvals.push_back(std::string(i % 9, 'q'));
  for (uint32_t i = 1002; i <= 1400; i += 3) nums_absent.push_back(be32(i));
  nums_absent.push_back(be32(5000));
  nums_absent.push_back("abc");
  std::vector<RecordRef> nr;
  for (size_t i = 0; i < nums.size(); i++) nr.push_back(rec(nums[i], nvals[i]));
  std::string nlo = be32(1000), nhi = be32(1400);
  Fences nf;
  nf.lower = sl(nlo), nf.lower_inf = false, nf.upper = sl(nhi), nf.upper_inf = false;
  add("semi-dense leaf", [&](uint8_t* pg) { return SemiDenseLeaf::build(pg, nf, nr.data(), nr.size()); }, nums,
      nums_absent);
  std::string v8 = "ABCDEFGH";
  std::vector<RecordRef> dr;
  for (auto& k : nums) dr.push_back(rec(k, v8));
  Fences df;
  df.lower = sl(nlo), df.lower_inf = false;
  add("fully dense leaf", [&](uint8_t* pg) { return FullyDenseLeaf::build(pg, df, dr.data(), dr.size(), 4, 8); },
      nums, nums_absent);
  return out;
}

bool inner(const uint8_t* p) { return p[0] == static_cast<uint8_t>(PageTag::kBasicInner); }

}  // namespace

TEST(CheckedLookups, AnswerAsThePlainSearchesOnEveryLayout) {
  GuardedPage g;
  for (const Built& b : built_pages()) {
    memcpy(g.p(), b.image.data(), kPageSize);
    uint8_t* p = g.p();
    for (const auto* set : {&b.keys, &b.absent})
      for (const std::string& k : *set) {
        if (inner(p)) {
          EXPECT_EQ(BasicNode{p}.child_for_checked(sl(k).data, sl(k).len), BasicNode{p}.child_for(sl(k).data, sl(k).len))
              << b.name << " " << k;
          continue;
        }
        ValueRef plain, checked;
        bool found = leaf::lookup(p, sl(k), &plain);
        Probe r = leaf::lookup_checked(p, sl(k), &checked);
        ASSERT_EQ(r, found ? Probe::kFound : Probe::kAbsent) << b.name << " " << k;
        EXPECT_EQ(found, set == &b.keys) << b.name << " " << k;
        if (found) {
          EXPECT_EQ(checked.ptr, plain.ptr);
          EXPECT_EQ(checked.field, plain.field);
        }
      }
  }
}

TEST(CheckedLookups, NeverReadOutsideATornPage) {
  GuardedPage g;
  uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  const std::vector<Built> pages = built_pages();
  unsigned bad = 0, found = 0;
  for (int round = 0; round < 40000; round++) {
    const Built& b = pages[round % pages.size()];
    uint8_t* p = g.p();
    memcpy(p, b.image.data(), kPageSize);
    // Tear it: a few random bytes anywhere, and often a header field (offsets, lengths,
    // counts, capacities) at a random or extreme value.
    for (int n = 1 + next() % 6; n-- > 0;) p[next() % kNodeSize] = static_cast<uint8_t>(next());
    if (next() % 2) {
      unsigned field = 2 * (1 + next() % 15);  // bytes 2..31 (any layout's header)
      uint16_t v = next() % 3 == 0 ? 0xFFFF : next() % 3 == 0 ? static_cast<uint16_t>(kNodeSize - next() % 8)
                                                              : static_cast<uint16_t>(next());
      store16(p + field, v);
    }
    for (int q = 0; q < 4; q++) {
      const std::vector<std::string>& set = next() % 2 ? b.keys : b.absent;
      const std::string& k = set[next() % set.size()];
      if (inner(p)) {
        (void)BasicNode{p}.child_for_checked(sl(k).data, sl(k).len);
        continue;
      }
      ValueRef v;
      Probe r = leaf::lookup_checked(p, sl(k), &v);
      bad += r == Probe::kBad;
      if (r != Probe::kFound) continue;
      found++;
      // The value it hands out lies inside the node.
      const size_t len = v.is_overflow() ? kOverflowRefSize : (v.field & kValueLenMask);
      ASSERT_GE(v.ptr, p) << b.name;
      ASSERT_LE(v.ptr + len, p + kNodeSize) << b.name;
    }
  }
  // Both outcomes occurred: torn pages were seen as such, and some still answered.
  EXPECT_GT(bad, 1000u);
  EXPECT_GT(found, 1000u);
}
