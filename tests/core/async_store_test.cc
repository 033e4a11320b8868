// Stores on an asynchronous host (core/buffer/async_pager.h): a host loop
// answers NEED_PAGE from a std::map "backend" of page images, against a
// std::map model, with a tiny pool (evictions and refaults), commits that
// succeed, fail or are cut short by a crash, corrupt images, and the C ABI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bindings/adaptree.h"
#include "core/buffer/page_delta.h"
#include "core/buffer/page_trailer.h"
#include "core/store.h"
#include "core/tree/node_stats.h"
#include "core/tree/scan.h"

using namespace adaptree;

namespace {

using Model = std::map<std::string, std::string>;
using Pages = std::map<PageId, std::vector<uint8_t>>;

Slice sl(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())}; }

// The host: durable page images, and what it was asked for.
struct Host {
  Pages pages;
  uint64_t supplied = 0;
  uint64_t faults = 0;
};

// Runs f until it returns something other than kNeedPage, supplying each
// missing page from the host. A page the host lacks is kCorrupt; a loop that
// makes no progress is kRestart (a livelock would fail the test).
template <class F>
Status with_faults(Store& st, Host& h, F&& f) {
  for (int i = 0; i < 200000; i++) {
    Status s = f();
    if (s != Status::kNeedPage) return s;
    h.faults++;
    PageId id = st.tree().store().missing_page();
    auto it = h.pages.find(id);
    if (it == h.pages.end()) return Status::kCorrupt;
    Status ss = st.supply(id, it->second.data());
    if (ss != Status::kOk) return ss;
    h.supplied++;
  }
  return Status::kRestart;
}

// format: of a new store (an existing one keeps its own).
Status open(Host& h, uint64_t pool_bytes, std::unique_ptr<Store>* out, PageSum format = PageSum::kHash) {
  StoreOptions o;
  o.pool_bytes = pool_bytes;
  o.new_format = format;
  auto it = h.pages.find(0);
  return Store::open_async(it == h.pages.end() ? nullptr : it->second.data(), o, out);
}

// Parses a commit's images (page 0 first, ids distinct).
bool parse(const std::vector<uint8_t>& out, uint32_t n, Pages* images) {
  if (out.size() != size_t{n} * (4 + kPageSize)) return false;
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* p = out.data() + size_t{i} * (4 + kPageSize);
    PageId id = load32(p);
    if (i == 0 && id != 0) return false;
    if (!images->emplace(id, std::vector<uint8_t>(p + 4, p + 4 + kPageSize)).second) return false;
  }
  return true;
}

// A whole commit; the host stores the images all or nothing.
Status commit(Store& st, Host& h) {
  std::vector<uint8_t> out;
  uint32_t n = 0;
  Status s = st.commit_begin(&out, &n);
  if (s != Status::kOk) return s;
  Pages images;
  if (!parse(out, n, &images)) return Status::kInvalidArgument;
  for (auto& e : images) h.pages[e.first] = std::move(e.second);
  return st.commit_end(Status::kOk);
}

Status get(Store& st, Host& h, const std::string& k, std::string* v) {
  std::vector<uint8_t> buf;
  return with_faults(st, h, [&] {
    ValueRef ref;
    Status s = st.tree().get(sl(k), &ref);
    if (s != Status::kOk) return s;
    Slice out;
    s = st.tree().read_value(ref, &buf, &out);
    if (s == Status::kOk) v->assign(reinterpret_cast<const char*>(out.data), out.len);
    return s;
  });
}

// Every key by a cursor (faults re-position it), then every value by get.
Status dump(Store& st, Host& h, Model* m) {
  m->clear();
  Cursor c(&st.tree());
  Status s = with_faults(st, h, [&] { return c.seek({}, kSeekEdge); });
  std::vector<std::string> keys;
  while (s == Status::kOk) {
    KeyBuffer k;
    ValueRef v;
    s = with_faults(st, h, [&] { return c.next(&k, &v); });
    if (s == Status::kOk) keys.emplace_back(reinterpret_cast<const char*>(k.data), k.len);
  }
  if (s != Status::kNotFound) return s;
  for (const std::string& k : keys) {
    std::string v;
    s = get(st, h, k, &v);
    if (s != Status::kOk) return s;
    (*m)[k] = v;
  }
  return Status::kOk;
}

std::string key_of(uint32_t i) {
  char b[16];
  snprintf(b, sizeof b, "k%08u", i);
  return b;
}

std::string value_of(std::mt19937& rng) {
  uint32_t r = rng() % 100;
  size_t len = r < 85 ? rng() % 60 : r < 97 ? 200 + rng() % 1500 : 5000 + rng() % 20000;  // some overflow chains
  std::string v(len, 'a');
  for (size_t i = 0; i < len; i += 7) v[i] = static_cast<char>('a' + rng() % 26);
  return v;
}

constexpr uint64_t kTinyPool = 64 * kPageSize;  // the smallest pool: 64 frames

}  // namespace

// Random sets, removes, range deletes and reads with a 64-frame pool over a
// host map; commits and reopens; every reopen equals the committed model.
class AsyncStoreSeeds : public ::testing::TestWithParam<uint32_t> {};

TEST_P(AsyncStoreSeeds, RandomOpsTinyPoolMatchModel) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  EXPECT_TRUE(h.pages.empty());  // nothing stored before the first commit
  std::mt19937 rng(GetParam());
  Model live, committed;
  uint64_t evictions = 0;
  int reopens = 0;
  for (int op = 0; op < 20000; op++) {
    uint32_t r = rng() % 100;
    std::string k = key_of(rng() % 3000);
    if (r < 55) {
      std::string v = value_of(rng);
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(k), sl(v)); }), Status::kOk);
      live[k] = v;
    } else if (r < 75) {
      Status s = with_faults(*st, h, [&] { return st->tree().remove(sl(k)); });
      ASSERT_EQ(s, live.erase(k) ? Status::kOk : Status::kNotFound);
    } else if (r < 76) {
      std::string hi = key_of(std::stoul(k.substr(1)) + rng() % 60);
      uint64_t removed = 0, total = 0;
      Status s = with_faults(*st, h, [&] {
        Status x = st->tree().delete_range(sl(k), false, false, sl(hi), false, true, &removed);
        total += removed;
        return x;
      });
      ASSERT_EQ(s, Status::kOk);
      auto a = live.lower_bound(k), b = live.lower_bound(hi);
      size_t expect = static_cast<size_t>(std::distance(a, b));
      live.erase(a, b);
      ASSERT_EQ(total, expect);
    } else {
      std::string v;
      Status s = get(*st, h, k, &v);
      auto it = live.find(k);
      ASSERT_EQ(s, it == live.end() ? Status::kNotFound : Status::kOk) << k;
      if (it != live.end()) ASSERT_EQ(v, it->second);
    }
    ASSERT_EQ(st->tree().count(), live.size());
    if (op % 700 == 699) {
      ASSERT_EQ(commit(*st, h), Status::kOk);
      committed = live;
    }
    if (op % 2900 == 2899) {
      evictions += st->tree().store().stats().evictions;
      // Uncommitted writes are lost, as in a crash.
      st.reset();
      ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
      live = committed;
      Model got;
      ASSERT_EQ(dump(*st, h, &got), Status::kOk);
      ASSERT_TRUE(got == live) << "reopen " << reopens;
      reopens++;
    }
  }
  evictions += st->tree().store().stats().evictions;
  EXPECT_GT(evictions, 1000u);  // the pool was far too small: pages came and went
  EXPECT_GT(h.supplied, 1000u);
  EXPECT_EQ(reopens, 6);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  EXPECT_EQ(with_faults(*st, h, [&] { return st->tree().check().empty() ? Status::kOk : st->tree().store().failure() == Status::kNeedPage ? Status::kNeedPage : Status::kCorrupt; }),
            Status::kOk);
}

INSTANTIATE_TEST_SUITE_P(AsyncStore, AsyncStoreSeeds, ::testing::Values(42u, 7u, 2026u));

// An async reader beside a writer (IndexedDB tabs): at_store_follow_changed keeps the pages the
// commits since the reader's did not write. Random writes (overflow values included, so chains
// are freed and their pages reused), commits, and a reader that follows after 1..4 commits
// with the union of their pages: after every follow it equals the writer's committed model,
// and the pages it kept are not read again.
TEST_P(AsyncStoreSeeds, ReaderKeepsThePagesNewerCommitsDidNotWrite) {
  Host h;
  std::unique_ptr<Store> w;
  ASSERT_EQ(open(h, 1024 * kPageSize, &w), Status::kOk);
  std::mt19937 rng(GetParam());
  Model live;
  for (uint32_t i = 0; i < 2000; i++) {
    std::string k = key_of(i), v = value_of(rng);
    ASSERT_EQ(with_faults(*w, h, [&] { return w->tree().set(sl(k), sl(v)); }), Status::kOk);
    live[k] = v;
  }
  // The commit's images into the host; their ids into `changed`.
  auto commit_ids = [&](std::vector<PageId>* changed) {
    std::vector<uint8_t> out;
    uint32_t n = 0;
    ASSERT_EQ(w->commit_begin(&out, &n), Status::kOk);
    Pages images;
    ASSERT_TRUE(parse(out, n, &images));
    for (auto& e : images) {
      changed->push_back(e.first);
      h.pages[e.first] = std::move(e.second);
    }
    ASSERT_EQ(w->commit_end(Status::kOk), Status::kOk);
  };
  std::vector<PageId> changed;
  commit_ids(&changed);
  std::unique_ptr<Store> r;
  ASSERT_EQ(open(h, 4096 * kPageSize, &r), Status::kOk);
  ASSERT_EQ(r->follow(h.pages.at(0).data()), Status::kOk);
  // Not before the store is a reader: the pool must hold pages of a commit it followed.
  std::vector<PageId> none;
  EXPECT_EQ(w->follow_changed(h.pages.at(0).data(), none.data(), 0), Status::kInvalidArgument);
  Model got;
  ASSERT_EQ(dump(*r, h, &got), Status::kOk);
  ASSERT_TRUE(got == live);
  uint64_t kept_rounds = 0;
  for (int round = 0; round < 60; round++) {
    changed.clear();
    int commits = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < commits; c++) {
      int ops = 1 + static_cast<int>(rng() % (round % 3 == 0 ? 200 : 6));
      for (int op = 0; op < ops; op++) {
        std::string k = key_of(rng() % 2600);
        if (rng() % 4 != 0) {
          std::string v = value_of(rng);
          ASSERT_EQ(with_faults(*w, h, [&] { return w->tree().set(sl(k), sl(v)); }), Status::kOk);
          live[k] = v;
        } else {
          Status s = with_faults(*w, h, [&] { return w->tree().remove(sl(k)); });
          ASSERT_EQ(s, live.erase(k) ? Status::kOk : Status::kNotFound);
        }
      }
      commit_ids(&changed);
    }
    ASSERT_EQ(r->follow_changed(h.pages.at(0).data(), changed.data(), static_cast<uint32_t>(changed.size())), Status::kOk);
    uint64_t before = h.supplied;
    ASSERT_EQ(dump(*r, h, &got), Status::kOk);
    ASSERT_TRUE(got == live) << "round " << round;
    // Every page the dump read again was one the commits wrote (or a new one).
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    EXPECT_LE(h.supplied - before, changed.size()) << "round " << round;
    if (h.supplied - before < r->tree().store().resident_count()) kept_rounds++;
  }
  EXPECT_EQ(kept_rounds, 60u);
  EXPECT_EQ(r->commit_begin(nullptr, nullptr), Status::kReadOnly);
}

// With set_log_deltas (IndexedDB's frames): after the images, an entry per image whose delta
// turns the image the host holds for that page (named by its trailer) into the new one;
// runs on 4-byte words, at most 2048 bytes. Random writes over a tiny pool, both formats,
// reopens (the setting is per open) and the limit on the copies (the tiny pool's 256).
// With copies (at_store_set_log_deltas 2), the entries may hold copy runs (8 bytes, words).
TEST(AsyncStore, DeltaEntriesTurnTheHostsImagesIntoTheNewOnes) {
  for (bool copies : {false, true}) {
  for (PageSum format : {PageSum::kHash, PageSum::kCrc32c}) {
    for (uint64_t pool : {kTinyPool, uint64_t{4096} * kPageSize}) {
      Host h;
      std::unique_ptr<Store> st;
      ASSERT_EQ(open(h, pool, &st, format), Status::kOk);
      ASSERT_EQ(st->set_log_deltas(true, copies), Status::kOk);
      uint64_t copy_runs = 0;
      std::mt19937 rng(5);
      Model live;
      uint64_t deltas = 0, none = 0, delta_bytes = 0, none_held = 0;
      for (int op = 0; op < 12000; op++) {
        std::string k = key_of(rng() % 4000);
        if (rng() % 100 < 80) {
          // Small records, as most loads write; now and then one over several pages.
          std::string v(rng() % 100 == 0 ? 3000 + rng() % 9000 : 10 + rng() % 50, static_cast<char>('a' + rng() % 26));
          ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(k), sl(v)); }), Status::kOk);
          live[k] = v;
        } else {
          Status s = with_faults(*st, h, [&] { return st->tree().remove(sl(k)); });
          ASSERT_EQ(s, live.erase(k) ? Status::kOk : Status::kNotFound);
        }
        if (op % 60 != 59) continue;
        std::vector<uint8_t> out;
        uint32_t n = 0;
        ASSERT_EQ(st->commit_begin(&out, &n), Status::kOk);
        ASSERT_GT(out.size(), size_t{n} * (4 + kPageSize));
        const uint8_t* e = out.data() + size_t{n} * (4 + kPageSize);
        const uint8_t* end = out.data() + out.size();
        for (uint32_t i = 0; i < n; i++) {
          const uint8_t* img = out.data() + size_t{i} * (4 + kPageSize);
          PageId id = load32(img);
          ASSERT_LE(e + 4, end);
          uint32_t size = load32(e);
          e += 4;
          if (size == 0xFFFFFFFF) {
            none++;
            if (h.pages.count(id)) none_held++;
            continue;
          }
          ASSERT_NE(id, 0u);
          ASSERT_LE(size, 2048u);
          ASSERT_EQ(size % 4, 0u);
          ASSERT_LE(e + 8 + size, end);
          auto held = h.pages.find(id);
          ASSERT_NE(held, h.pages.end()) << "a delta of page " << id << ", which the host does not hold";
          ASSERT_EQ(memcmp(held->second.data() + kNodeSize, e, 8), 0) << "page " << id;
          std::vector<uint8_t> got = held->second;
          ASSERT_TRUE(apply_delta(e + 8, size, got.data(), copies));
          ASSERT_EQ(memcmp(got.data(), img + 4, kPageSize), 0) << "page " << id;
          for (const uint8_t* r = e + 8; r < e + 8 + size;) {
            ASSERT_EQ(load16(r) % 4, 0u);
            ASSERT_EQ(load16(r + 2) % 4, 0u);
            if (load16(r + 2) & kCopyRun) {
              ASSERT_TRUE(copies);
              copy_runs++;
              r += kCopyRunSize;
            } else {
              r += 4 + load16(r + 2);
            }
          }
          deltas++;
          delta_bytes += size;
          e += 8 + size;
        }
        ASSERT_EQ(e, end);
        for (uint32_t i = 0; i < n; i++) {
          const uint8_t* img = out.data() + size_t{i} * (4 + kPageSize);
          h.pages[load32(img)].assign(img + 4, img + 4 + kPageSize);
        }
        ASSERT_EQ(st->commit_end(Status::kOk), Status::kOk);
        if (op % 3000 == 2999) {  // (a multiple of 60: right after a commit)
          st.reset();
          ASSERT_EQ(open(h, pool, &st), Status::kOk);
          ASSERT_EQ(st->set_log_deltas(true, copies), Status::kOk);
        }
      }
      Model got;
      ASSERT_EQ(dump(*st, h, &got), Status::kOk);
      EXPECT_TRUE(got == live);
      // Most pages a commit of 60 writes into 4000 keys changes, of those the host holds
      // already, are deltas (the others: leaves rebuilt by a split or a regroup).
      EXPECT_GT(deltas, 4 * none_held) << "pool " << pool << ", " << none << " without a delta";
      EXPECT_LT(delta_bytes, deltas * 1024);
      if (copies) EXPECT_GT(copy_runs, deltas / 4) << "pool " << pool;
      std::printf("%s, pool %llu: %llu deltas of %.0f bytes, %llu copy runs, %llu without\n", copies ? "copies" : "runs",
                  static_cast<unsigned long long>(pool), static_cast<unsigned long long>(deltas),
                  static_cast<double>(delta_bytes) / (deltas ? deltas : 1), static_cast<unsigned long long>(copy_runs),
                  static_cast<unsigned long long>(none));
    }
  }
  }
}

// No-steal: more dirty pages than frames grow the pool; after the commit
// they are clean and evictable again, and reads refault them.
TEST(AsyncStore, DirtyPagesNeverEvictedPoolGrows) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  std::string v(300, 'v');
  for (uint32_t i = 0; i < 5000; i++)
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
  BufferPool& pool = st->tree().store();
  EXPECT_GT(pool.dirty_count(), pool.target_frames());
  EXPECT_GT(pool.frame_count(), pool.target_frames());
  EXPECT_EQ(h.faults, 0u);  // nothing was ever evicted, so nothing refaulted
  uint32_t grown = pool.frame_count();
  ASSERT_EQ(commit(*st, h), Status::kOk);
  EXPECT_EQ(pool.dirty_count(), 0u);
  // The growth was for the dirty pages only: the pool is back to its size.
  EXPECT_LT(pool.frame_count(), grown);
  EXPECT_LT(pool.frame_count(), pool.target_frames() + 64);
  EXPECT_EQ(pool.resident_count() <= pool.frame_count(), true);
  Model mid;
  ASSERT_EQ(dump(*st, h, &mid), Status::kOk);  // frames given back are refaulted
  EXPECT_EQ(mid.size(), 5000u);
  // Reads walk more pages than the pool's size: clean pages are evicted.
  uint64_t ev = pool.stats().evictions;
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_EQ(got.size(), 5000u);
  EXPECT_GT(st->tree().store().stats().evictions + ev, 0u);
  EXPECT_LE(st->tree().store().frame_count(), st->tree().store().target_frames() + 64);
}

// A commit's writes are refused with kBusy between begin and end; reads work.
TEST(AsyncStore, WritesBusyDuringCommit) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  ASSERT_EQ(st->tree().set(sl("a"), sl("1")), Status::kOk);
  std::vector<uint8_t> out;
  uint32_t n = 0;
  ASSERT_EQ(st->commit_begin(&out, &n), Status::kOk);
  EXPECT_GE(n, 2u);  // page 0 and the root
  EXPECT_EQ(st->commit_begin(&out, &n), Status::kInvalidArgument);
  EXPECT_EQ(st->tree().set(sl("b"), sl("2")), Status::kBusy);
  EXPECT_EQ(st->tree().remove(sl("a")), Status::kBusy);
  EXPECT_EQ(st->tree().clear(), Status::kBusy);
  ValueRef v;
  EXPECT_EQ(st->tree().get(sl("a"), &v), Status::kOk);
  EXPECT_EQ(st->commit_end(Status::kOk), Status::kOk);
  EXPECT_EQ(st->commit_end(Status::kOk), Status::kInvalidArgument);
  EXPECT_EQ(st->tree().set(sl("b"), sl("2")), Status::kOk);
}

// A failed commit: READ_ONLY, reads still see the writes, and a reopen gives
// the previous commit.
TEST(AsyncStore, FailedCommitIsReadOnlyAndReopensAtPrevious) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model m;
  std::mt19937 rng(7);
  for (uint32_t i = 0; i < 2000; i++) {
    std::string v = value_of(rng);
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
    m[key_of(i)] = v;
  }
  ASSERT_EQ(commit(*st, h), Status::kOk);
  Model before = m;
  for (uint32_t i = 1000; i < 3000; i++) {
    std::string v = value_of(rng);
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
    m[key_of(i)] = v;
  }
  std::vector<uint8_t> out;
  uint32_t n = 0;
  ASSERT_EQ(st->commit_begin(&out, &n), Status::kOk);
  EXPECT_EQ(st->commit_end(Status::kQuotaExceeded), Status::kQuotaExceeded);  // the host wrote nothing
  EXPECT_EQ(st->tree().set(sl("x"), sl("y")), Status::kReadOnly);
  EXPECT_EQ(st->commit_begin(&out, &n), Status::kReadOnly);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);  // the pages of the failed commit are still in the pool
  EXPECT_TRUE(got == m);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_TRUE(got == before);
}

// A crash between commit_begin and commit_end: the host kept its old state
// (or wrote all of the new one); a reopen gives that commit exactly.
TEST(AsyncStore, CrashBetweenBeginAndEnd) {
  for (bool host_wrote : {false, true}) {
    Host h;
    std::unique_ptr<Store> st;
    ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
    Model m;
    for (uint32_t i = 0; i < 3000; i += 2) {
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(key_of(i * 3))); }), Status::kOk);
      m[key_of(i)] = key_of(i * 3);
    }
    ASSERT_EQ(commit(*st, h), Status::kOk);
    Model first = m;
    for (uint32_t i = 0; i < 3000; i += 3) {
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl(key_of(i))); }) != Status::kNeedPage, true);
      m.erase(key_of(i));
    }
    std::vector<uint8_t> out;
    uint32_t n = 0;
    ASSERT_EQ(st->commit_begin(&out, &n), Status::kOk);
    if (host_wrote) {
      Pages images;
      ASSERT_TRUE(parse(out, n, &images));
      for (auto& e : images) h.pages[e.first] = std::move(e.second);
    }
    st.reset();  // the crash: commit_end never comes
    ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
    Model got;
    ASSERT_EQ(dump(*st, h, &got), Status::kOk);
    EXPECT_TRUE(got == (host_wrote ? m : first)) << host_wrote;
    EXPECT_EQ(st->sequence(), host_wrote ? 2u : 1u);
  }
}

// Damaged images are CORRUPT, never a wrong answer; page 0 damaged in one
// slot still opens (both slots hold the same superblock).
// Both formats: page_hash pages (2) and CRC-32C (1), whose stores (IndexedDB, Durable
// Objects) written before format version 2 keep opening.
class AsyncFormats : public ::testing::TestWithParam<PageSum> {};
INSTANTIATE_TEST_SUITE_P(Both, AsyncFormats, ::testing::Values(PageSum::kHash, PageSum::kCrc32c),
                         [](const ::testing::TestParamInfo<PageSum>& i) {
                           return std::string(i.param == PageSum::kHash ? "page_hash" : "crc32c");
                         });

TEST_P(AsyncFormats, CorruptImagesNeverGiveWrongAnswers) {
  const PageSum format = GetParam(), other = format == PageSum::kHash ? PageSum::kCrc32c : PageSum::kHash;
  Host good;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(good, kTinyPool, &st, format), Status::kOk);
  Model m;
  std::mt19937 rng(3);
  for (uint32_t i = 0; i < 3000; i++) {
    std::string v = value_of(rng);
    ASSERT_EQ(with_faults(*st, good, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
    m[key_of(i)] = v;
  }
  ASSERT_EQ(commit(*st, good), Status::kOk);
  st.reset();
  // supply() itself checks the trailer. The store keeps its format, whatever a new one would get.
  ASSERT_EQ(open(good, kTinyPool, &st, other), Status::kOk);
  EXPECT_EQ(st->page_sum(), format);
  EXPECT_EQ(load32(good.pages[0].data() + 8), static_cast<uint32_t>(format));  // the superblock's format version
  {
    std::vector<uint8_t> img = good.pages.rbegin()->second;
    seal_page(img.data(), good.pages.rbegin()->first, other);  // intact, sealed as the other format
    EXPECT_EQ(st->supply(good.pages.rbegin()->first, img.data()), Status::kCorrupt);
    img[100] ^= 1;
    EXPECT_EQ(st->supply(good.pages.rbegin()->first, img.data()), Status::kCorrupt);
    EXPECT_FALSE(st->tree().store().resident(good.pages.rbegin()->first));
    EXPECT_EQ(st->supply(0, img.data()), Status::kInvalidArgument);
    EXPECT_EQ(st->supply(st->tree().store().page_count(), img.data()), Status::kInvalidArgument);
  }
  int detected = 0, clean = 0;
  for (int trial = 0; trial < 60; trial++) {
    Host h = good;
    auto it = h.pages.begin();
    std::advance(it, 1 + rng() % (h.pages.size() - 1));  // not page 0
    it->second[rng() % kPageSize] ^= static_cast<uint8_t>(1 + rng() % 255);
    ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
    bool corrupt = false;
    for (uint32_t i = 0; i < 3000 && !corrupt; i += 1 + rng() % 20) {
      std::string v;
      Status s = get(*st, h, key_of(i), &v);
      if (s == Status::kCorrupt) {
        corrupt = true;
        break;
      }
      ASSERT_EQ(s, Status::kOk) << key_of(i);
      ASSERT_EQ(v, m[key_of(i)]);
    }
    Model got;
    Status s = corrupt ? Status::kCorrupt : dump(*st, h, &got);
    if (s == Status::kCorrupt) {
      detected++;
    } else {
      ASSERT_EQ(s, Status::kOk);
      ASSERT_TRUE(got == m);  // the flip hit a page nobody reads
      clean++;
    }
  }
  EXPECT_GT(detected, 40);
  // Page 0: one slot damaged opens; both damaged is CORRUPT.
  Host h = good;
  h.pages[0][20] ^= 4;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_TRUE(got == m);
  h.pages[0][kSuperblockSlot + 20] ^= 4;
  EXPECT_EQ(open(h, kTinyPool, &st), Status::kCorrupt);
  std::vector<uint8_t> foreign(kPageSize, 'x');
  StoreOptions o;
  EXPECT_EQ(Store::open_async(foreign.data(), o, &st), Status::kCorrupt);
}

// A value far larger than the pool, read, overwritten and removed through one-page faults:
// each retry goes on from where the last fault stopped (BTree::read_overflow, walk_chain),
// so the chain's pages need not all be resident at once. Before, every retry walked the
// chain from its start, and the pool grew to the value's size.
TEST(AsyncStore, LargeValuesStreamThroughFaults) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  std::string big(400 * kPageSize, 'x');
  for (size_t i = 0; i < big.size(); i += 997) big[i] = static_cast<char>('a' + i % 26);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big"), sl(big)); }), Status::kOk);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big2"), sl(big)); }), Status::kOk);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("small"), sl("s")); }), Status::kOk);
  // A value after both chains: freed, they stay inside the store (free pages at its end
  // would leave it at the commit, BufferPool::trim_free_tail).
  const std::string tail(3 * kPageSize, 't');
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("tail"), sl(tail)); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  const BufferPool& pool = st->tree().store();
  const uint64_t bound = pool.target_frames() + 64;
  // read: the buffer keeps what the faulted attempts read
  std::vector<uint8_t> buf;
  Slice out;
  uint64_t faults = h.faults;
  ASSERT_EQ(with_faults(*st, h, [&] {
              ValueRef v;
              Status s = st->tree().get(sl("big"), &v);
              return s == Status::kOk ? st->tree().read_value(v, &buf, &out) : s;
            }),
            Status::kOk);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data), out.len), big);
  EXPECT_LE(pool.frame_count(), bound);
  EXPECT_LT(h.faults - faults, 420u);  // a fault a page, none twice
  // overwrite and remove: the prefetch collects the chain's ids across faults
  faults = h.faults;
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big"), sl("now small")); }), Status::kOk);
  EXPECT_LE(pool.frame_count(), bound);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl("big2")); }), Status::kOk);
  EXPECT_LE(pool.frame_count(), bound);
  EXPECT_LT(h.faults - faults, 2 * 420u);
  EXPECT_GE(pool.free_pages(), 800u);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_EQ(got, (Model{{"big", "now small"}, {"small", "s"}, {"tail", tail}}));
  // the freed pages are reused: a new large value does not grow the store
  const PageId pages = st->tree().store().page_count();
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big3"), sl(big)); }), Status::kOk);
  EXPECT_EQ(st->tree().store().page_count(), pages);
}

// A read that a fault stopped never goes on with bytes of another value: between the
// fault and the retry, the value is overwritten by one of the same length, or removed and
// set again (its new chain reuses the freed pages, the first page id included).
TEST(AsyncStore, ResumedReadsNeverMixValues) {
  for (int variant = 0; variant < 2; variant++) {
    Host h;
    std::unique_ptr<Store> st;
    ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
    const size_t len = 200 * kPageSize;
    std::string a(len, 'a'), b(len, 'b');
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(a)); }), Status::kOk);
    ASSERT_EQ(commit(*st, h), Status::kOk);
    st.reset();
    ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
    std::vector<uint8_t> buf;
    Slice out;
    auto read = [&] {
      ValueRef v;
      Status s = st->tree().get(sl("v"), &v);
      return s == Status::kOk ? st->tree().read_value(v, &buf, &out) : s;
    };
    // a few faults into the read of a
    int faults = 0;
    for (Status s; (s = read()) == Status::kNeedPage && faults < 40; faults++) {
      PageId id = st->tree().store().missing_page();
      ASSERT_EQ(st->supply(id, h.pages.at(id).data()), Status::kOk);
    }
    ASSERT_EQ(faults, 40);
    if (variant == 0) {
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(b)); }), Status::kOk);
    } else {
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl("v")); }), Status::kOk);
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(b)); }), Status::kOk);
    }
    ASSERT_EQ(with_faults(*st, h, read), Status::kOk);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data), out.len), b) << "variant " << variant;
  }
}

// Likewise a remove's chain walk that faults: another write replaces the value in between
// (it finishes the walk of the same chain and frees it); the retried remove walks and frees
// the new chain's pages, once each: the values written after all read back whole (a page
// free and in use at once would make two of them overwrite each other).
TEST(AsyncStore, ResumedChainWalksFreeTheChainThere) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  const size_t len = 200 * kPageSize;
  auto value = [&](char c) {
    std::string v(len, c);
    for (size_t i = 0; i < len; i += 1000) v[i] = static_cast<char>(c + i % 7);
    return v;
  };
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(value('a'))); }), Status::kOk);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("w"), sl(value('w'))); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  int faults = 0;
  for (Status s; (s = st->tree().remove(sl("v"))) == Status::kNeedPage && faults < 40; faults++) {
    PageId id = st->tree().store().missing_page();
    ASSERT_EQ(st->supply(id, h.pages.at(id).data()), Status::kOk);
  }
  ASSERT_EQ(faults, 40);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl("v")); }) == Status::kNeedPage, false);
  // (that remove completed: now the value is set anew, then removed again after a partial walk)
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(value('b'))); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  faults = 0;
  for (Status s; (s = st->tree().remove(sl("v"))) == Status::kNeedPage && faults < 40; faults++) {
    PageId id = st->tree().store().missing_page();
    ASSERT_EQ(st->supply(id, h.pages.at(id).data()), Status::kOk);
  }
  ASSERT_EQ(faults, 40);
  // between the faults and the retry: v replaced by another value of its length
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("v"), sl(value('c'))); }), Status::kOk);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl("v")); }), Status::kOk);
  // new values take the freed pages; every value reads back whole
  for (char c : {'d', 'e', 'f'}) {
    std::string k(1, c);
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(k), sl(value(c))); }), Status::kOk);
  }
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_EQ(got, (Model{{"d", value('d')}, {"e", value('e')}, {"f", value('f')}, {"w", value('w')}}));
}

// Tree statistics through one-page faults on a 64-frame pool: each retry goes on from where
// the walk stopped (StatsWalk), so the pool keeps its size and every page is read once; the
// figures equal those of a pool that holds the whole store. (Starting over after each fault,
// the walk held every page at the end.)
TEST(AsyncStore, StatsWalkGoesOnAfterFaults) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, 512 * kPageSize, &st), Status::kOk);
  std::string v(300, 'v');
  for (uint32_t i = 0; i < 4000; i++)
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big"), sl(std::string(50000, 'b'))); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  TreeStats whole;
  ASSERT_EQ(collect_stats(st->tree(), &whole), Status::kOk);  // every page resident
  ASSERT_GT(whole.basic_leaf + whole.fingerprint_leaf, 200u);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  StatsWalk walk;
  TreeStats got;
  const uint64_t faults = h.faults;
  // (as at_stats: an operation of its own, the failure of the last one cleared)
  ASSERT_EQ(with_faults(*st, h, [&] {
              st->tree().store().begin_op();
              return collect_stats(st->tree(), &got, &walk);
            }),
            Status::kOk);
  EXPECT_FALSE(walk.pending);
  EXPECT_LE(st->tree().store().frame_count(), st->tree().store().target_frames() + 64);
  const uint64_t nodes = whole.inner + whole.basic_leaf + whole.fingerprint_leaf + whole.semi_dense_leaf + whole.fully_dense_leaf;
  EXPECT_LE(h.faults - faults, nodes + 2);  // a fault a node at most (one page each here), none twice
  EXPECT_EQ(stats_json(st->tree(), got), stats_json(st->tree(), whole));
}

// The free-page list survives commits and reopens: pages freed by removes are
// reused after a reopen (the file does not grow), in the file pager's format.
TEST(AsyncStore, FreeListPersists) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  std::string big(20000, 'b');
  for (uint32_t i = 0; i < 200; i++)
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(big)); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  for (uint32_t i = 0; i < 200; i += 2)
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl(key_of(i))); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  PageId pages = st->tree().store().page_count();
  size_t free_pages = st->tree().store().free_count();
  EXPECT_GT(free_pages, 400u);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  EXPECT_TRUE(st->tree().store().free_list_pending());
  EXPECT_EQ(st->tree().store().live_pages(), pages - 1 - free_pages);
  // stats' free_pages counts the list not read yet (it said 0 until the first write)
  EXPECT_EQ(st->tree().store().free_pages(), free_pages);
  for (uint32_t i = 0; i < 200; i += 2)
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(big)); }), Status::kOk);
  EXPECT_FALSE(st->tree().store().free_list_pending());
  EXPECT_LE(st->tree().store().page_count(), pages + 2);  // freed pages were reused
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, kTinyPool, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(*st, h, &got), Status::kOk);
  EXPECT_EQ(got.size(), 200u);
  std::string c;
  ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().check().empty() ? Status::kOk : st->tree().store().failure() == Status::kNeedPage ? Status::kNeedPage : Status::kCorrupt; }),
            Status::kOk);
}

// The C ABI: open, NEED_PAGE with the page id in result.aux, supply, commits,
// and at_delete_range's AT_RANGE_NEED_PAGE.
TEST(AsyncStore, CAbiRoundTrip) {
  Pages host;
  at_ctx* c = at_ctx_new();
  uint32_t* res = at_ctx_result(c);
  auto open_abi = [&] {
    auto it = host.find(0);
    return at_store_open_async(it == host.end() ? nullptr : it->second.data(), 7, 0, c);
  };
  auto serve = [&](at_tree* t, int32_t s) {
    if (s != 3) return false;
    auto it = host.find(res[4]);
    EXPECT_NE(it, host.end());
    EXPECT_EQ(at_store_supply(t, res[4], it->second.data()), 0);
    return true;
  };
  auto commit_abi = [&](at_tree* t) {
    ASSERT_EQ(at_store_commit_begin(t, c), 0);
    uint32_t n = res[4];
    const uint8_t* p = at_ctx_value_ptr(c);
    ASSERT_EQ(res[3], n * (4 + kPageSize));
    EXPECT_EQ(load32(p), 0u);
    for (uint32_t i = 0; i < n; i++, p += 4 + kPageSize) host[load32(p)].assign(p + 4, p + 4 + kPageSize);
    ASSERT_EQ(at_store_commit_end(t, 0), 0);
  };
  at_tree* t = open_abi();
  ASSERT_NE(t, nullptr);
  for (uint32_t i = 0; i < 20000; i++) {
    std::string k = key_of(i), v = key_of(i * 7);
    int32_t s;
    while (serve(t, s = at_set(t, c, reinterpret_cast<const uint8_t*>(k.data()), 9, reinterpret_cast<const uint8_t*>(v.data()), 9))) {}
    ASSERT_EQ(s, 0);
  }
  commit_abi(t);
  at_tree_free(t);
  t = open_abi();  // the smallest pool (1 MiB): 20000 records do not fit
  ASSERT_NE(t, nullptr);
  uint32_t faults = 0;
  for (uint32_t i = 0; i < 20000; i += 97) {
    std::string k = key_of(i);
    int32_t s;
    while (serve(t, s = at_get(t, c, reinterpret_cast<const uint8_t*>(k.data()), 9))) faults++;
    ASSERT_EQ(s, 0);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), res[3]), key_of(i * 7));
  }
  EXPECT_GT(faults, 10u);
  // A cursor seek's fault lands in the tree's last context.
  at_tree_free(t);
  t = open_abi();
  at_cursor* cur = at_cursor_new(t);
  int32_t s;
  std::string lo = key_of(15000);
  while (serve(t, s = at_cursor_seek(cur, reinterpret_cast<const uint8_t*>(lo.data()), 9, 0))) {}
  ASSERT_EQ(s, 0);
  at_cursor_free(cur);
  // deleteRange: AT_RANGE_NEED_PAGE until every page it needs is there.
  std::string a = key_of(100), b = key_of(19000);
  double r;
  int rounds = 0;
  while ((r = at_delete_range(t, c, reinterpret_cast<const uint8_t*>(a.data()), 9, reinterpret_cast<const uint8_t*>(b.data()), 9, AT_RANGE_HI_EXCLUSIVE)) == AT_RANGE_NEED_PAGE) {
    ASSERT_TRUE(serve(t, 3));
    rounds++;
  }
  ASSERT_GE(r, 0);
  EXPECT_GT(rounds, 0);
  EXPECT_EQ(at_count(t), 20000 - 18900);
  commit_abi(t);
  at_tree_free(t);
  t = open_abi();
  EXPECT_EQ(at_count(t), 20000 - 18900);
  while (serve(t, s = at_check(t, c))) {}
  EXPECT_EQ(s, 0) << std::string(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), res[3]);
  at_tree_free(t);
  std::vector<uint8_t> junk(kPageSize, 1);
  EXPECT_EQ(at_store_open_async(junk.data(), 7, 0, c), nullptr);
  EXPECT_EQ(static_cast<int32_t>(res[4]), -4);
  at_ctx_free(c);
}

// Found by a new-user probe (session 22): a store reopened cold with a large pool, then its keys
// deleted in order, hung: one delete faulted in the middle of its change, the tree was marked
// broken with NEED_PAGE, and every retry got NEED_PAGE again for a page already resident.
TEST(AsyncStore, DeletesInOrderAfterAColdReopenComplete) {
  Host h;
  std::unique_ptr<Store> st;
  ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
  const std::string v(500, 'v');
  char buf[16];
  auto key = [&](int i) {
    snprintf(buf, sizeof buf, "k%05d", i);
    return std::string(buf);
  };
  for (int i = 0; i < 3000; i++) ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key(i)), sl(v)); }), Status::kOk);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  st.reset();
  ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
  for (int i = 0; i < 3000; i++) {
    std::string k = key(i);
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl(k)); }), Status::kOk) << k;
  }
  EXPECT_EQ(st->tree().count(), 0u);
  ASSERT_EQ(commit(*st, h), Status::kOk);
  // Again in random orders, and by ranges, each time from a cold reopen.
  std::mt19937 rng(5);
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < 3000; i++) ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key(i)), sl(v)); }), Status::kOk);
    ASSERT_EQ(commit(*st, h), Status::kOk);
    st.reset();
    ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
    if (round % 2 == 0) {
      std::vector<int> order(3000);
      for (int i = 0; i < 3000; i++) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      if (round == 2) std::reverse(order.begin(), order.end());
      for (int i : order) ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl(key(i))); }), Status::kOk) << key(i);
    } else {
      for (int lo = 0; lo < 3000; lo += 37) {
        std::string a = key(lo), b = key(lo + 37);
        uint64_t removed = 0, total = 0;
        ASSERT_EQ(with_faults(*st, h, [&] {
                    Status x = st->tree().delete_range(sl(a), false, false, sl(b), false, true, &removed);
                    total += removed;
                    return x;
                  }),
                  Status::kOk);
        ASSERT_EQ(total, static_cast<uint64_t>(std::min(37, 3000 - lo)));
      }
    }
    EXPECT_EQ(st->tree().count(), 0u);
    EXPECT_TRUE(st->tree().check().empty());
    ASSERT_EQ(commit(*st, h), Status::kOk);
  }
}

// The same from cold reopens for writes that split and redistribute up the tree: runs of
// inserts into one region (splits up to the inner levels, node fill moving records to
// neighbours), then of deletes (merges), each run from a cold reopen with a large pool (the
// write's prefetch, not eviction, decides what is resident), values of several sizes.
TEST(AsyncStore, RunsOfWritesAfterColdReopensComplete) {
  // (seed 3 hung on the fix_keyless_inner fault; seed 6 failed a debug assert in trim_free_tail:
  // a free-list page read by load_free_list was resident when the store's end was cut)
  for (uint32_t seed : {1u, 2u, 3u, 6u}) {
    Host h;
    std::unique_ptr<Store> st;
    ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
    std::mt19937 rng(seed);
    Model live;
    char buf[24];
    for (int run = 0; run < 40; run++) {
      const bool insert = run < 6 || rng() % 3 != 0;
      const uint32_t base = rng() % 50000, n = insert ? 200 + rng() % 1500 : 500 + rng() % 3000, step = insert ? 1 + rng() % 3 : 1;
      for (uint32_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "r%06u", base + i * step);
        std::string k(buf);
        if (insert) {
          std::string v(200 + rng() % (rng() % 8 == 0 ? 3000 : 400), static_cast<char>('a' + run % 26));
          ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(k), sl(v)); }), Status::kOk) << "seed " << seed << " run " << run << " " << k;
          live[k] = v;
        } else {
          Status s = with_faults(*st, h, [&] { return st->tree().remove(sl(k)); });
          ASSERT_EQ(s, live.erase(k) ? Status::kOk : Status::kNotFound) << "seed " << seed << " run " << run << " " << k;
        }
      }
      ASSERT_EQ(st->tree().count(), live.size());
      ASSERT_EQ(commit(*st, h), Status::kOk);
      st.reset();
      ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
    }
    Model got;
    ASSERT_EQ(dump(*st, h, &got), Status::kOk);
    ASSERT_TRUE(got == live) << "seed " << seed;
  }
}

// compact() moves the live pages at the end down (core/tree/relocate.cc) on an asynchronous store
// too, when every page the tree reaches is resident: the next commit ends the store below them.
// Where a page would have to be fetched, nothing moves (and nothing fails); after the pages are
// read (a dump brings them all in), the same compact moves them.
TEST(AsyncStore, CompactMovesPagesWhenTheTreeIsResident) {
  for (const bool cold : {false, true}) {
    Host h;
    std::unique_ptr<Store> st;
    ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
    Model m;
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl("big"), sl(std::string(100 * kPageSize, 'B'))); }), Status::kOk);
    for (uint32_t i = 0; i < 3000; i++) {
      const std::string v(60, static_cast<char>('a' + i % 26));
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().set(sl(key_of(i)), sl(v)); }), Status::kOk);
      m[key_of(i)] = v;
    }
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().remove(sl("big")); }), Status::kOk);
    ASSERT_EQ(commit(*st, h), Status::kOk);
    const PageId end = st->tree().store().page_count();
    if (cold) {  // reopened: only page 0 is resident
      st.reset();
      ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
      uint64_t freed = 0;
      ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().compact(&freed); }), Status::kOk);
      EXPECT_EQ(st->tree().relocated_pages(), 0u);
      Model got;
      ASSERT_EQ(dump(*st, h, &got), Status::kOk);  // every page resident now
    }
    uint64_t freed = 0;
    ASSERT_EQ(with_faults(*st, h, [&] { return st->tree().compact(&freed); }), Status::kOk);
    EXPECT_GT(st->tree().relocated_pages(), 20u) << "cold " << cold;
    EXPECT_EQ(st->tree().check(), "");
    ASSERT_EQ(commit(*st, h), Status::kOk);
    EXPECT_EQ(st->tree().store().free_pages(), 0u);
    EXPECT_LE(st->tree().store().page_count() + 90, end);
    st.reset();
    ASSERT_EQ(open(h, 64u << 20, &st), Status::kOk);
    Model got;
    ASSERT_EQ(dump(*st, h, &got), Status::kOk);
    EXPECT_TRUE(got == m) << "cold " << cold;
  }
}
