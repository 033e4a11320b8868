// Differential test against std::map for every layout configuration and key
// distribution, through the C ABI (the same calls TypeScript makes).
// ADAPTREE_DIFF_OPS sets the operations per case (default 2M), and
// ADAPTREE_DIFF_CHECK the interval of full invariant checks (default 10k).
// The TinyPool suite runs the same operations on a persistent store whose
// buffer pool (1 MiB, 256 frames) is a small fraction of the tree, so pages are
// evicted, spilled and re-read every few operations, with a commit every 20k
// operations and a reopen at the end (an eighth of the operations per case).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bindings/adaptree.h"
#include "core/buffer/storage.h"
#include "core/config.h"
#include "abi_helpers.h"
#include "key_distributions.h"

namespace adaptree {
void register_native_host(uint32_t io, Storage* s);  // bindings/native_host.cc
}

namespace adaptree::testing {
namespace {

struct Harness {
  at_tree* t;
  at_ctx* c;
  std::map<std::string, std::string> model;
  KeySpace ks;
  Rng rng;
  // A long-lived cursor that must survive modifications.
  at_cursor* live = nullptr;
  bool live_reverse = false;
  bool live_started = false;
  std::string live_last;
  bool live_done = false;

  // A store on in-memory files (io number io_) instead of an in-memory tree.
  uint32_t io_ = 0;
  MemoryStorage files;
  uint64_t commit_every = 0;

  Harness(LayoutConfig cfg, Dist d, uint64_t seed) : ks(d, max_key_size_of(cfg)), rng(seed) {
    t = at_tree_new(static_cast<uint32_t>(cfg));
    c = at_ctx_new();
  }
  Harness(LayoutConfig cfg, Dist d, uint64_t seed, uint32_t io, uint64_t pool_bytes)
      : ks(d, max_key_size_of(cfg)), rng(seed), io_(io) {
    register_native_host(io, &files);
    c = at_ctx_new();
    t = at_store_open(io, static_cast<uint32_t>(cfg), static_cast<double>(pool_bytes), AT_OPEN_CREATE, c);
    commit_every = 20000;
  }
  // Closes the store without committing and opens it again: what a crash
  // after the last commit leaves. The model must be the committed state.
  void reopen(LayoutConfig cfg, uint64_t pool_bytes) {
    if (live) at_cursor_free(live);
    live = nullptr;
    live_started = false;
    at_tree_free(t);
    t = at_store_open(io_, static_cast<uint32_t>(cfg), static_cast<double>(pool_bytes), 0, c);
  }
  ~Harness() {
    if (live) at_cursor_free(live);
    at_ctx_free(c);
    at_tree_free(t);
    if (io_) register_native_host(io_, nullptr);
  }

  void check(uint64_t op) {
    int32_t s = at_check(t, c);
    ASSERT_EQ(s, 0) << "op " << op << ": " << result_value(c);
    ASSERT_EQ(at_count(t), static_cast<double>(model.size())) << "op " << op;
  }

  void do_set(const std::string& k, const std::string& v) {
    ASSERT_EQ(at_set(t, c, bytes(k), k.size(), bytes(v), v.size()), 0);
    model[k] = v;
  }

  void do_get(const std::string& k) {
    int32_t s = at_get(t, c, bytes(k), k.size());
    auto it = model.find(k);
    if (it == model.end()) {
      ASSERT_EQ(s, 1);
    } else {
      ASSERT_EQ(s, 0);
      ASSERT_EQ(result_value(c), it->second);
    }
    ASSERT_EQ(at_has(t, c, bytes(k), k.size()), it == model.end() ? 1 : 0);
  }

  void do_remove(const std::string& k) {
    int32_t s = at_remove(t, c, bytes(k), k.size());
    ASSERT_EQ(s, model.erase(k) ? 0 : 1);
  }

  // A batch in columns (AT_BATCH_COLUMNS): the records want[got, got + recs), each key's
  // non-ASCII bit and the header's flag.
  static void check_columns(const uint8_t* p, const uint8_t* end, uint32_t recs,
                            const std::vector<const std::pair<const std::string, std::string>*>& want,
                            unsigned got, bool want_value) {
    uint32_t head[4];
    memcpy(head, p, 16);
    ASSERT_EQ(head[0], recs);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 4, 0u);
    const uint8_t* lens = p + 16;
    const uint8_t* keys = lens + 8 * size_t{recs};
    const uint8_t* vals = keys + head[1];
    bool any_high = false;
    for (uint32_t i = 0; i < recs; i++) {
      ASSERT_LT(got + i, want.size());
      const auto& [k, v] = *want[got + i];
      uint32_t kw, vl;
      memcpy(&kw, lens + 4 * i, 4);
      memcpy(&vl, lens + 4 * (recs + i), 4);
      bool high = false;
      for (unsigned char ch : k) high |= ch >= 0x80;
      any_high |= high;
      ASSERT_EQ(kw, static_cast<uint32_t>(k.size()) | (high ? 0x80000000u : 0u));
      ASSERT_EQ(std::string(reinterpret_cast<const char*>(keys), k.size()), k);
      keys += k.size();
      if (want_value) {
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(vals), vl), v);
      } else {
        ASSERT_EQ(vl, 0u);
      }
      vals += vl;
    }
    ASSERT_EQ(keys, p + 16 + 8 * size_t{recs} + head[1]);
    ASSERT_EQ(head[2], any_high ? 1u : 0u);
    ASSERT_EQ(vals, end);
  }

  // Scan of up to n records from k (random flags), through the batch call or single steps.
  void do_scan(const std::string& k, bool reverse, bool exclusive, unsigned n, bool batch) {
    at_cursor* cur = at_cursor_new(t);
    uint32_t flags = (reverse ? AT_SEEK_REVERSE : 0) | (exclusive ? AT_SEEK_EXCLUSIVE : 0);
    bool edge = rng.chance(0.02);
    if (edge) flags |= AT_SEEK_EDGE;
    // at_cursor_seek_batch: the seek and the first batch in one call.
    const bool combined = batch && rng.chance(0.5);
    int32_t s = combined ? -100 : at_cursor_seek(cur, bytes(k), k.size(), flags);
    // Expected sequence.
    std::vector<const std::pair<const std::string, std::string>*> want;
    if (!reverse) {
      auto it = edge ? model.begin() : (exclusive ? model.upper_bound(k) : model.lower_bound(k));
      for (; it != model.end() && want.size() < n; ++it) want.push_back(&*it);
    } else {
      auto it = edge ? model.end() : (exclusive ? model.lower_bound(k) : model.upper_bound(k));
      while (it != model.begin() && want.size() < n) want.push_back(&*--it);
    }
    if (!combined) ASSERT_EQ(s, want.empty() ? 1 : 0);
    bool want_value = rng.chance(0.8);
    if (batch) {
      unsigned got = 0;
      if (combined && want.empty()) {
        ASSERT_EQ(at_cursor_seek_batch(cur, c, bytes(k), k.size(), flags, n, 1u << 20, AT_BATCH_VALUES), 1);
        ASSERT_EQ(at_ctx_result(c)[4], 0u);
      }
      bool first = combined;
      while (got < want.size()) {
        uint32_t max_bytes = rng.chance(0.2) ? 1 + rng.below(200) : 1u << 20;
        bool columns = rng.chance(0.5);
        uint32_t bflags = (want_value ? AT_BATCH_VALUES : 0) | (columns ? AT_BATCH_COLUMNS : 0);
        int32_t r = first ? at_cursor_seek_batch(cur, c, bytes(k), k.size(), flags, n - got, max_bytes, bflags)
                          : at_cursor_next_batch(cur, c, n - got, max_bytes, bflags);
        first = false;
        ASSERT_EQ(r, 0);
        uint32_t recs = at_ctx_result(c)[4];
        ASSERT_GT(recs, 0u);
        const uint8_t* p = at_ctx_value_ptr(c);
        const uint8_t* end = p + at_ctx_result(c)[3];
        // Columns unless the batch is large (small values here: never) or memory is short.
        ASSERT_EQ(at_ctx_result(c)[1], columns && at_ctx_result(c)[3] <= (512u << 10) ? 1u : 0u);
        if (columns) {
          check_columns(p, end, recs, want, got, want_value);
          got += recs;
          continue;
        }
        for (uint32_t i = 0; i < recs; i++, got++) {
          ASSERT_LT(got, want.size());
          uint32_t kl, vl;
          memcpy(&kl, p, 4);
          ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 4), kl), want[got]->first);
          memcpy(&vl, p + 4 + kl, 4);
          if (want_value) {
            ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 8 + kl), vl), want[got]->second);
          } else {
            ASSERT_EQ(vl, 0u);
          }
          p += 8 + kl + vl;
        }
        ASSERT_EQ(p, end);
      }
    } else {
      for (unsigned i = 0; i < want.size(); i++) {
        ASSERT_EQ(at_cursor_next(cur, c, want_value), 0);
        ASSERT_EQ(result_key(c), want[i]->first);
        if (want_value) {
          ASSERT_EQ(result_value(c), want[i]->second);
        }
      }
    }
    if (want.size() < n) {
      ASSERT_EQ(at_cursor_next(cur, c, 1), 1);
    }
    at_cursor_free(cur);
  }

  // A range from k to stop (in the scan's direction; either end inclusive or not) read as
  // TypeScript's iterator reads it: at_cursor_seek_batch_to, small batches, each re-seeking
  // after the last key it returned. No record past stop may come back, and the end comes as a
  // short batch or NOT_FOUND.
  void do_bounded_scan(const std::string& k, const std::string& stop, bool reverse, bool exclusive, bool inclusive, unsigned per) {
    std::vector<const std::pair<const std::string, std::string>*> want;
    if (!reverse) {
      auto it = exclusive ? model.upper_bound(k) : model.lower_bound(k);
      for (; it != model.end() && (it->first < stop || (inclusive && it->first == stop)); ++it) want.push_back(&*it);
    } else {
      auto it = exclusive ? model.lower_bound(k) : model.upper_bound(k);
      while (it != model.begin() && (std::prev(it)->first > stop || (inclusive && std::prev(it)->first == stop))) want.push_back(&*--it);
    }
    at_cursor* cur = at_cursor_new(t);
    std::string from = k;
    uint32_t flags = (reverse ? AT_SEEK_REVERSE : 0) | (exclusive ? AT_SEEK_EXCLUSIVE : 0);
    const bool numbers = rng.chance(0.3);
    const uint32_t bflags = AT_BATCH_VALUES | (numbers ? AT_BATCH_COLUMNS | AT_BATCH_NUMBERS : rng.chance(0.5) ? AT_BATCH_COLUMNS : 0);
    size_t got = 0;
    for (;;) {
      int32_t r = at_cursor_seek_batch_to(cur, c, bytes(from), from.size(), flags, per, 1u << 20, bflags, bytes(stop), stop.size(),
                                          inclusive ? AT_STOP_INCLUSIVE : 0);
      if (r == 1) break;
      ASSERT_EQ(r, 0);
      const uint32_t recs = at_ctx_result(c)[4];
      ASSERT_GT(recs, 0u);
      ASSERT_LE(got + recs, want.size()) << "a record past the stop key came back";
      if (numbers) {
        // (keys as doubles here: NaN for these keys; the values tell the records apart)
        const uint8_t* p = at_ctx_value_ptr(c);
        uint32_t head[4];
        memcpy(head, p, 16);
        ASSERT_EQ(head[0], recs);
        const uint8_t* vals = p + head[2];
        for (uint32_t i = 0; i < recs; i++) {
          uint32_t vl;
          memcpy(&vl, p + 16 + 4 * i, 4);
          ASSERT_EQ(std::string(reinterpret_cast<const char*>(vals), vl), want[got + i]->second);
          vals += vl;
        }
      } else if (at_ctx_result(c)[1] == 1) {
        check_columns(at_ctx_value_ptr(c), at_ctx_value_ptr(c) + at_ctx_result(c)[3], recs, want, got, true);
      } else {
        const uint8_t* p = at_ctx_value_ptr(c);
        for (uint32_t i = 0; i < recs; i++) {
          uint32_t kl, vl;
          memcpy(&kl, p, 4);
          ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 4), kl), want[got + i]->first);
          memcpy(&vl, p + 4 + kl, 4);
          ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 8 + kl), vl), want[got + i]->second);
          p += 8 + kl + vl;
        }
      }
      got += recs;
      if (recs < per) break;  // the end of the range (or of the tree)
      from = want[got - 1]->first;
      flags |= AT_SEEK_EXCLUSIVE;
    }
    ASSERT_EQ(got, want.size());
    at_cursor_free(cur);
  }

  // Steps the long-lived cursor once: it must return the first key after
  // (before) the last one it returned, whatever happened in between.
  void step_live() {
    if (!live || live_done) {
      if (live) at_cursor_free(live);
      live = at_cursor_new(t);
      live_reverse = rng.chance(0.5);
      live_started = false;
      live_done = false;
      ASSERT_GE(at_cursor_seek(live, nullptr, 0, AT_SEEK_EDGE | (live_reverse ? AT_SEEK_REVERSE : 0)), 0);
    }
    int32_t s = at_cursor_next(live, c, 1);
    std::map<std::string, std::string>::iterator it;
    if (!live_reverse) {
      it = live_started ? model.upper_bound(live_last) : model.begin();
    } else {
      it = live_started ? model.lower_bound(live_last) : model.end();
      it = it == model.begin() ? model.end() : std::prev(it);
    }
    if (it == model.end()) {
      ASSERT_EQ(s, 1) << "live cursor returned " << result_key(c).size() << "-byte key past the end";
      live_done = true;
      return;
    }
    ASSERT_EQ(s, 0);
    ASSERT_EQ(result_key(c), it->first);
    ASSERT_EQ(result_value(c), it->second);
    live_last = it->first;
    live_started = true;
  }

  void do_set_many() {
    std::vector<uint8_t> batch;
    std::vector<std::pair<std::string, std::string>> recs;
    unsigned n = 1 + rng.below(20);
    for (unsigned i = 0; i < n; i++) recs.emplace_back(ks.key(ks.pick(rng)), ks.value(rng));
    for (auto& [k, v] : recs) {
      uint32_t kl = k.size(), vl = v.size();
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
      batch.insert(batch.end(), k.begin(), k.end());
      batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&vl), reinterpret_cast<uint8_t*>(&vl) + 4);
      batch.insert(batch.end(), v.begin(), v.end());
      model[k] = v;
    }
    ASSERT_EQ(at_set_many(t, c, batch.data(), n), 0);
    ASSERT_EQ(at_ctx_result(c)[4], n);
  }

  void do_get_many() {
    std::vector<uint8_t> keys;
    std::vector<std::string> ks_;
    unsigned n = 1 + rng.below(20);
    for (unsigned i = 0; i < n; i++) {
      std::string k = ks.key(ks.pick(rng));
      uint32_t kl = k.size();
      keys.insert(keys.end(), reinterpret_cast<uint8_t*>(&kl), reinterpret_cast<uint8_t*>(&kl) + 4);
      keys.insert(keys.end(), k.begin(), k.end());
      ks_.push_back(k);
    }
    // (the output comes in chunks of ~1 MiB: result.key_len answered keys, 0 for all)
    unsigned done = 0;
    const uint8_t* kp = keys.data();
    const uint8_t* p = nullptr;
    for (unsigned j = 0; j < n; j++) {
      if (p == nullptr) {
        ASSERT_EQ(at_get_many(t, c, kp, n - done), 0);
        p = at_ctx_value_ptr(c);
        const uint32_t answered = at_ctx_result(c)[1];
        ASSERT_LT(answered, n - done);
        done += answered == 0 ? n - done : answered;
        for (unsigned q = 0; q < answered; q++) {
          uint32_t kl;
          memcpy(&kl, kp, 4);
          kp += 4 + kl;
        }
      }
      const std::string& k = ks_[j];
      uint32_t vl;
      memcpy(&vl, p, 4);
      auto it = model.find(k);
      if (it == model.end()) {
        ASSERT_EQ(vl, 0xFFFFFFFFu);
        p += 4;
      } else {
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 4), vl), it->second);
        p += 4 + vl;
      }
      if (j + 1 < n && j + 1 == done) p = nullptr;  // (the next chunk)
    }
    ASSERT_EQ(done, n);
  }

  void do_delete_range() {
    std::string lo = ks.key(ks.pick(rng)), hi = ks.key(ks.pick(rng));
    if (lo > hi) std::swap(lo, hi);
    uint32_t flags = rng.below(16);
    auto first = (flags & AT_RANGE_LO_NONE) ? model.begin()
                 : (flags & AT_RANGE_LO_EXCLUSIVE) ? model.upper_bound(lo) : model.lower_bound(lo);
    auto last = (flags & AT_RANGE_HI_NONE) ? model.end()
                : (flags & AT_RANGE_HI_EXCLUSIVE) ? model.lower_bound(hi) : model.upper_bound(hi);
    size_t n = 0;
    for (auto it = first; it != last && it != model.end(); ++it) n++;
    if (n > 2000 || std::distance(first, model.end()) < std::distance(last, model.end())) return;
    double r = at_delete_range(t, c, bytes(lo), lo.size(), bytes(hi), hi.size(), flags);
    ASSERT_EQ(r, static_cast<double>(n));
    model.erase(first, last);
  }

  void full_compare() {
    at_cursor* cur = at_cursor_new(t);
    at_cursor_seek(cur, nullptr, 0, AT_SEEK_EDGE);
    auto it = model.begin();
    for (;;) {
      int32_t r = at_cursor_next_batch(cur, c, 500, 1 << 20, 1);
      if (r == 1) break;
      ASSERT_EQ(r, 0);
      const uint8_t* p = at_ctx_value_ptr(c);
      for (uint32_t i = 0; i < at_ctx_result(c)[4]; i++, ++it) {
        ASSERT_NE(it, model.end());
        uint32_t kl, vl;
        memcpy(&kl, p, 4);
        memcpy(&vl, p + 4 + kl, 4);
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 4), kl), it->first);
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(p + 8 + kl), vl), it->second);
        p += 8 + kl + vl;
      }
    }
    ASSERT_EQ(it, model.end());
    at_cursor_free(cur);
  }

  void run(uint64_t ops, uint64_t check_every) {
    ASSERT_NE(t, nullptr);
    // Phases shift the mix so trees both grow large and shrink (merges).
    for (uint64_t op = 0; op < ops; op++) {
      uint64_t phase = (op * 4 / (ops ? ops : 1));
      double p_set = phase == 2 ? 0.15 : 0.42, p_remove = phase == 2 ? 0.40 : 0.12;
      double u = (rng.next() >> 11) * (1.0 / 9007199254740992.0);
      std::string k = ks.key(ks.pick(rng, u < p_set ? 0 : u < p_set + p_remove ? 1 : 2));
      if (u < p_set) {
        do_set(k, ks.value(rng));
      } else if (u < p_set + p_remove) {
        do_remove(k);
      } else if (u < p_set + p_remove + 0.25) {
        do_get(k);
      } else if (u < p_set + p_remove + 0.25 + 0.10) {
        if (rng.chance(0.2)) do_bounded_scan(k, ks.key(ks.pick(rng)), rng.chance(0.4), rng.chance(0.5), rng.chance(0.5), 1 + rng.below(80));
        else do_scan(k, rng.chance(0.4), rng.chance(0.5), 1 + rng.below(50), rng.chance(0.7));
      } else {
        unsigned w = rng.below(100);
        if (w < 70) step_live();
        else if (w < 85) do_get_many();
        else if (w < 98) do_set_many();
        else do_delete_range();
      }
      if (::testing::Test::HasFatalFailure()) {
        ADD_FAILURE() << "failed at op " << op;
        return;
      }
      if (check_every && (op + 1) % check_every == 0) {
        check(op);
        if (::testing::Test::HasFatalFailure()) return;
      }
      if (commit_every && (op + 1) % commit_every == 0) {
        ASSERT_EQ(at_store_commit(t), 0) << "op " << op;
        committed = model;
      }
    }
    check(ops);
    full_compare();
  }

  // Store mode: the operations since the last commit are dropped by a reopen.
  std::map<std::string, std::string> committed;
  void crash_and_reopen(LayoutConfig cfg, uint64_t pool_bytes) {
    reopen(cfg, pool_bytes);
    ASSERT_NE(t, nullptr);
    model = committed;
    check(0);
    full_compare();
  }
};

class Differential : public ::testing::TestWithParam<ConfigCase> {};

TEST_P(Differential, MatchesStdMap) {
  ConfigCase cs = GetParam();
  uint64_t ops = env_or("ADAPTREE_DIFF_OPS", 2000000);
  uint64_t every = env_or("ADAPTREE_DIFF_CHECK", 10000);
  // The heavy distributions run fewer operations between checks, same total.
  Harness h(cs.cfg, cs.dist, 0x5eed0000 + static_cast<uint64_t>(cs.cfg) * 131 + static_cast<uint64_t>(cs.dist));
  h.run(ops, every);
}

class TinyPool : public ::testing::TestWithParam<ConfigCase> {};

TEST_P(TinyPool, MatchesStdMap) {
  ConfigCase cs = GetParam();
  uint64_t ops = env_or("ADAPTREE_DIFF_OPS", 2000000) / 8;
  uint64_t every = env_or("ADAPTREE_DIFF_CHECK", 10000);
  constexpr uint64_t kPool = 1 << 20;
  Harness h(cs.cfg, cs.dist, 0x7e570000 + static_cast<uint64_t>(cs.cfg) * 131 + static_cast<uint64_t>(cs.dist), 1000 + static_cast<uint32_t>(cs.cfg) * 16 + static_cast<uint32_t>(cs.dist), kPool);
  h.run(ops, every);
  if (::testing::Test::HasFatalFailure()) return;
  h.crash_and_reopen(cs.cfg, kPool);
}

// Every configuration on the dense, URL, overflow-value and prefixed (appends, prepends)
// distributions.
INSTANTIATE_TEST_SUITE_P(Store, TinyPool, ::testing::ValuesIn(config_cases({Dist::kDense, Dist::kUrls, Dist::kOverflow, Dist::kPrefixed})),
                         [](const ::testing::TestParamInfo<ConfigCase>& i) { return case_name(i.param); });

INSTANTIATE_TEST_SUITE_P(AllConfigs, Differential,
                         ::testing::ValuesIn(config_cases({Dist::kDense, Dist::kSparse, Dist::kPartitioned, Dist::kDense64,
                                                           Dist::kUrls, Dist::kWords, Dist::kBinary, Dist::kMaxKeys,
                                                           Dist::kOverflow, Dist::kPrefixed})),
                         [](const ::testing::TestParamInfo<ConfigCase>& i) { return case_name(i.param); });

}  // namespace
}  // namespace adaptree::testing
