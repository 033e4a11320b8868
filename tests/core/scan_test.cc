// Cursor::for_each (core/scan.h) against std::map and against next(): every
// layout configuration, forward and reverse, stopping at random points and
// mixing for_each with next() on the same cursor.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/tree/btree.h"
#include "core/tree/scan.h"
#include "tests/core/key_distributions.h"

using namespace adaptree;
using adaptree::testing::Dist;
using adaptree::testing::KeySpace;
using adaptree::testing::Rng;

namespace {

Slice sl(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())}; }
std::string str(const KeyBuffer& k) { return std::string(reinterpret_cast<const char*>(k.data), k.len); }

std::string value_of(BTree& t, const ValueRef& v) {
  std::vector<uint8_t> buf;
  Slice out;
  EXPECT_EQ(t.read_value(v, &buf, &out), Status::kOk);
  return std::string(reinterpret_cast<const char*>(out.data), out.len);
}

using adaptree::testing::ConfigCase;

class ForEach : public ::testing::TestWithParam<ConfigCase> {};

TEST_P(ForEach, MatchesModelAndMixesWithNext) {
  ConfigCase c = GetParam();
  BTree t(c.cfg);
  ASSERT_EQ(t.init(), Status::kOk);
  KeySpace ks(c.dist, t.max_key_size());
  Rng r(1234 + static_cast<unsigned>(c.cfg) * 31 + static_cast<unsigned>(c.dist));
  std::map<std::string, std::string> model;
  unsigned n = std::min<uint32_t>(ks.space, 20000);
  for (unsigned i = 0; i < n; i++) {
    std::string k = ks.key(ks.pick(r)), v = ks.value(r);
    ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
    model[k] = v;
  }
  // Some scans, so adaptive leaves change layout under the cursor's feet.
  for (unsigned round = 0; round < 400; round++) {
    bool reverse = r.chance(0.3), exclusive = r.chance(0.5);
    std::string from = ks.key(r.below(ks.space));
    Cursor cur(&t);
    cur.seek(sl(from), (reverse ? kSeekReverse : 0) | (exclusive ? kSeekExclusive : 0));
    // Expected sequence from the model.
    std::vector<std::pair<std::string, std::string>> want;
    if (!reverse) {
      auto it = exclusive ? model.upper_bound(from) : model.lower_bound(from);
      for (; it != model.end() && want.size() < 700; ++it) want.push_back(*it);
    } else {
      auto it = exclusive ? model.lower_bound(from) : model.upper_bound(from);
      while (it != model.begin() && want.size() < 700) want.push_back(*--it);
    }
    size_t got = 0;
    bool ended = false;
    while (got < want.size() && !ended) {
      if (r.chance(0.3)) {  // one next()
        KeyBuffer k;
        ValueRef v;
        Status s = cur.next(&k, &v);
        ASSERT_EQ(s, Status::kOk) << got;
        ASSERT_EQ(str(k), want[got].first);
        ASSERT_EQ(value_of(t, v), want[got].second);
        got++;
      } else {  // a run of for_each
        size_t stop = 1 + r.below(120), seen = 0;
        Status s = cur.for_each([&](const KeyBuffer& k, const ValueRef& v) {
          EXPECT_LT(got, want.size());
          if (got >= want.size()) return false;
          EXPECT_EQ(str(k), want[got].first) << got;
          EXPECT_EQ(value_of(t, v), want[got].second) << got;
          got++;
          return ++seen < stop && got < want.size();
        });
        if (::testing::Test::HasFailure()) return;
        if (s == Status::kNotFound) ended = true;
        else ASSERT_EQ(s, Status::kOk);
      }
    }
    if (want.size() < 700) {  // the model's range ended: so must the cursor
      KeyBuffer k;
      ValueRef v;
      EXPECT_EQ(cur.next(&k, &v), Status::kNotFound);
      EXPECT_EQ(cur.for_each([](const KeyBuffer&, const ValueRef&) { return true; }), Status::kNotFound);
    }
    EXPECT_EQ(got, want.size());
  }
  std::string err = t.check();
  EXPECT_TRUE(err.empty()) << err;
}

TEST(ForEach, FullIterationCountsEveryRecordOnce) {
  for (uint8_t ci = 0; ci < kLayoutConfigCount; ci++) {
    BTree t(static_cast<LayoutConfig>(ci));
    ASSERT_EQ(t.init(), Status::kOk);
    std::string v(8, 'v');
    for (uint32_t i = 0; i < 50000; i++) {
      std::string k;
      adaptree::testing::put_be(k, i * 3, 4);
      ASSERT_EQ(t.set(sl(k), sl(v)), Status::kOk);
    }
    Cursor c(&t);
    c.seek({}, kSeekEdge);
    uint64_t n = 0;
    std::string prev;
    bool ordered = true;
    EXPECT_EQ(c.for_each([&](const KeyBuffer& k, const ValueRef&) {
      std::string s = str(k);
      if (n && !(prev < s)) ordered = false;
      prev = s;
      n++;
      return true;
    }), Status::kNotFound);
    EXPECT_EQ(n, 50000u) << static_cast<int>(ci);
    EXPECT_TRUE(ordered) << static_cast<int>(ci);
  }
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, ForEach,
                         ::testing::ValuesIn(adaptree::testing::config_cases(
                             {Dist::kDense, Dist::kPartitioned, Dist::kUrls, Dist::kWords, Dist::kBinary, Dist::kOverflow})),
                         [](const ::testing::TestParamInfo<ConfigCase>& i) { return adaptree::testing::case_name(i.param); });

}  // namespace
