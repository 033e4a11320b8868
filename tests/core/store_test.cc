// The persistent store: commits, recovery, crashes at every storage operation,
// torn and flipped pages, a full disk, a tiny pool, real files and locking.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <random>
#include <string>
#include <fcntl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "core/buffer/posix_storage.h"
#include "core/store.h"
#include "core/tree/scan.h"
#include "tests/core/crash_check.h"
#include "tests/core/fault_storage.h"
#include "tests/core/tree_helpers.h"

using namespace adaptree;

namespace {

struct Workload {
  int ops;
  int commit_every;
  int key_space;
  uint32_t seed;
};

// Runs the workload on a store over storage. *committed gets the model after
// each commit that returned kOk (index 0: the empty store). Stops at the first
// failure; *attempted: commits started (acknowledged or not).
// format: of the store it creates (format version 2, page_hash pages, unless kCrc32c).
void run(Storage* storage, const Workload& w, uint64_t pool_bytes, std::vector<Model>* committed, size_t* attempted,
         PageSum format = PageSum::kHash) {
  committed->assign(1, Model{});
  *attempted = 0;
  StoreOptions o;
  o.pool_bytes = pool_bytes;
  o.new_format = format;
  o.checkpoint_bytes = 256 << 10;  // checkpoints happen during the workload
  std::unique_ptr<Store> st;
  if (Store::open(storage, o, &st) != Status::kOk) return;
  std::mt19937 rng(w.seed);
  Model m;
  for (int i = 0; i < w.ops; i++) {
    std::string k = "key" + std::to_string(rng() % w.key_space);
    Status s;
    if (rng() % 10 < 7) {
      size_t len = rng() % 40 == 0 ? 3000 + rng() % 9000 : rng() % 120;
      std::string v(len, static_cast<char>('a' + rng() % 26));
      s = st->tree().set(sl(k), sl(v));
      if (s == Status::kOk) m[k] = v;
    } else {
      s = st->tree().remove(sl(k));
      if (s == Status::kOk) m.erase(k);
      if (s == Status::kNotFound) s = Status::kOk;
    }
    if (s != Status::kOk) return;
    if ((i + 1) % w.commit_every == 0) {
      (*attempted)++;
      if (st->commit() != Status::kOk) return;
      committed->push_back(m);
    }
  }
}

}  // namespace

TEST(Store, CommitReopenRoundTrip) {
  MemoryStorage ms;
  std::vector<Model> committed;
  size_t attempted;
  Workload w{3000, 50, 2000, 7};
  run(&ms, w, 64 * kPageSize, &committed, &attempted);
  ASSERT_EQ(committed.size(), 61u);
  StoreOptions o;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, committed.back());
  EXPECT_EQ(st->tree().check(), "");
}

// A page goes to the files whole, the bytes no node wrote too: those must be the store's
// own, never what the heap held before. Session 25: frames and the tree's scratch pages
// came uninitialized, and heap memory another store had freed (its log buffer: commit
// frames of the same salt) was written inside page images; after a torn write, recovery
// took them for intact commits past the tail and opened the store as kCorrupt, in about 1
// of 100 runs of CrashAtEveryStorageOperationWhileTheEndIsCut.
TEST(Store, FilesHoldNoBytesOfTheHeapsPastUse) {
  constexpr size_t kBlock = 256 << 10;
#ifdef __GLIBC__
  // Blocks of this size from the heap, kept there once freed (not unmapped or trimmed).
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  {
    std::vector<void*> junk;
    for (int i = 0; i < 64; i++) {
      void* p = malloc(kBlock);
      ASSERT_NE(p, nullptr);
      memset(p, 0xAB, kBlock);
      junk.push_back(p);
    }
    for (void* p : junk) free(p);
  }
  MemoryStorage ms;
  std::vector<Model> committed;
  size_t attempted;
  run(&ms, Workload{3000, 50, 2000, 11}, 64 * kPageSize, &committed, &attempted, PageSum::kCrc32c);
  ASSERT_EQ(committed.size(), 61u);
  // Keys and values are letters and digits: 32 bytes in a row of the fill (0xAB here, 0xBE
  // from AddressSanitizer's allocator) are bytes the store did not write.
  for (FileId f : {FileId::kData, FileId::kLog}) {
    const std::vector<uint8_t>& b = ms.file(f);
    ASSERT_GT(b.size(), 0u);
    size_t run_ab = 0, run_be = 0, found = 0;
    for (size_t i = 0; i < b.size(); i++) {
      run_ab = b[i] == 0xAB ? run_ab + 1 : 0;
      run_be = b[i] == 0xBE ? run_be + 1 : 0;
      if (run_ab == 32 || run_be == 32) found++;
    }
    EXPECT_EQ(found, 0u) << (f == FileId::kData ? "data file" : "log") << " of " << b.size() << " bytes";
  }
}

TEST(Store, UncommittedWritesAreNotDurable) {
  MemoryStorage ms;
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("a"), sl("1")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("b"), sl("2")), Status::kOk);
  }
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, (Model{{"a", "1"}}));
}

// A tiny pool (64 frames) under a tree of many times its size: every few
// operations evict, dirty pages spill to the log before their commit.
TEST(Store, TinyPoolMatchesModel) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  o.checkpoint_bytes = 1 << 20;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  std::mt19937 rng(3);
  Model m;
  for (int i = 0; i < 60000; i++) {
    std::string k = "k" + std::to_string(rng() % 40000);
    if (rng() % 4) {
      std::string v(rng() % 100, 'v');
      ASSERT_EQ(st->tree().set(sl(k), sl(v)), Status::kOk);
      m[k] = v;
    } else {
      Status s = st->tree().remove(sl(k));
      ASSERT_EQ(s, m.erase(k) ? Status::kOk : Status::kNotFound);
    }
    if (i % 5000 == 4999) ASSERT_EQ(st->commit(), Status::kOk);
  }
  EXPECT_GT(st->tree().store().stats().evictions, 1000u);
  EXPECT_GT(st->tree().store().stats().spills, 0u);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, m);
  EXPECT_EQ(st->tree().check(), "");
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, m);
  EXPECT_EQ(st->tree().check(), "");
}

// check() streams through the pool, overflow chains too: it fixed every chain of a leaf at
// once, so a leaf of large values pulled them all in (20 values of 10 MiB grew a 1 MiB pool to
// 201 MiB; 40 of 100 MB ran out of memory; a probe, session 32).
TEST(Store, CheckStreamsOverflowChainsThroughThePool) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  for (int i = 0; i < 12; i++) {
    std::string v(300000, static_cast<char>('a' + i));  // 74 pages each, one leaf for all
    ASSERT_EQ(st->tree().set(sl("v" + std::to_string(i)), sl(v)), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
  }
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  EXPECT_EQ(st->tree().check(), "");
  // (the pool may grow past its size a little for pinned pages, not by the values' 900 pages)
  EXPECT_LE(st->tree().store().frame_count(), 2 * 64u);
}

// A write walks its path (and the neighbours) once before it changes anything, so that a
// page that cannot be read fails it cleanly (BTree::prefetch_for_write). It skips that walk
// only where nothing can miss or be evicted: every page resident and frames free for what
// it may allocate (BufferPool::all_resident_with_room). Both sides of that line here.
TEST(Store, WritesSkipThePrefetchOnlyWithEveryPageResidentAndRoom) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64ull << 20;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  Model m;
  auto key = [](int i) { return "k" + std::to_string(i * 7919 % 20000); };
  for (int i = 0; i < 20000; i++) {
    std::string v(40 + i % 60, static_cast<char>('a' + i % 26));
    ASSERT_EQ(st->tree().set(sl(key(i)), sl(v)), Status::kOk);
    m[key(i)] = v;
  }
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_GE(st->tree().height(), 2u);
  // Fixes per write: the path alone with every page resident, against the path, the
  // neighbours and the path again with a pool that holds a fraction of the pages.
  auto fixes_per_write = [&](Store& s, int from) {
    PoolStats a = s.tree().store().stats();
    for (int i = from; i < from + 500; i++) {
      std::string v(30, static_cast<char>('A' + i % 26));
      EXPECT_EQ(s.tree().set(sl(key(i)), sl(v)), Status::kOk);
      m[key(i)] = v;
    }
    PoolStats b = s.tree().store().stats();
    return double(b.hits + b.misses - a.hits - a.misses) / 500;
  };
  const double resident = fixes_per_write(*st, 0);
  EXPECT_LE(resident, st->tree().height() + 2.0);
  // Reopened with the same pool: room, but the pages come in as the writes need them.
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  const double loading = fixes_per_write(*st, 500);
  EXPECT_GT(loading, resident + st->tree().height());
  // A pool that holds a fraction of the pages (and no free frame).
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  StoreOptions small = o;
  small.pool_bytes = 64 * kPageSize;
  ASSERT_EQ(Store::open(&ms, small, &st), Status::kOk);
  ASSERT_GT(st->tree().store().live_pages(), 4u * st->tree().store().target_frames());
  const double partial = fixes_per_write(*st, 1000);
  EXPECT_GT(partial, resident + st->tree().height());
  // Every page resident but the pool at its size: a value whose overflow chain needs more
  // frames than are free takes the walk, and the evictions it causes lose nothing.
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  MemoryStorage ms2;
  StoreOptions tiny = o;
  tiny.pool_bytes = 64 * kPageSize;
  ASSERT_EQ(Store::open(&ms2, tiny, &st), Status::kOk);
  Model m2;
  for (int i = 0; i < 300; i++) {
    std::string v(60, static_cast<char>('a' + i % 26));
    ASSERT_EQ(st->tree().set(sl(key(i)), sl(v)), Status::kOk);
    m2[key(i)] = v;
  }
  ASSERT_EQ(st->commit(), Status::kOk);
  const BufferPool& pool = st->tree().store();
  ASSERT_EQ(pool.resident_count() + 1, pool.page_count());
  const uint64_t evictions = pool.stats().evictions;
  std::string big(100 * kPageSize, 'z');
  ASSERT_EQ(st->tree().set(sl(key(7)), sl(big)), Status::kOk);
  m2[key(7)] = big;
  EXPECT_GT(pool.stats().evictions, evictions);
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  for (auto [storage, model] : {std::pair{&ms, &m}, std::pair{&ms2, &m2}}) {
    ASSERT_EQ(Store::open(storage, o, &st), Status::kOk);
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_EQ(got, *model);
    EXPECT_EQ(st->tree().check(), "");
    st.reset();
  }
}

// A crash at every storage operation of a workload with dozens of commits:
// the reopened store holds the last acknowledged commit (or the one in
// flight), never a mix. Both formats: page_hash pages (2) and CRC-32C (1).
class StoreFormats : public ::testing::TestWithParam<PageSum> {};
INSTANTIATE_TEST_SUITE_P(Both, StoreFormats, ::testing::Values(PageSum::kHash, PageSum::kCrc32c),
                         [](const ::testing::TestParamInfo<PageSum>& i) {
                           return std::string(i.param == PageSum::kHash ? "page_hash" : "crc32c");
                         });

TEST_P(StoreFormats, CrashAtEveryStorageOperation) {
  const PageSum format = GetParam();
  Workload w{1500, 40, 600, 11};
  uint64_t pool = 64 * kPageSize;
  // The full run: every commit's state, and how many storage operations.
  FaultStorage clean;
  std::vector<Model> all;
  size_t attempted;
  run(&clean, w, pool, &all, &attempted, format);
  ASSERT_EQ(all.size(), 1u + w.ops / w.commit_every);
  uint64_t n = clean.ops();
  ASSERT_GT(n, 50u);
  std::printf("storage operations in the workload: %llu\n", static_cast<unsigned long long>(n));
  int checked = 0;
  for (uint64_t k = 1; k <= n; k++) {
    FaultStorage fs(k);
    std::vector<Model> committed;
    run(&fs, w, pool, &committed, &attempted, format);
    for (uint32_t variant = 0; variant < 2; variant++) {
      MemoryStorage after;
      fs.crashed(&after, static_cast<uint32_t>(k * 2 + variant), variant == 1);
      StoreOptions o;
      o.pool_bytes = pool;
      // Reopened asking for the other format: a store with a commit keeps its own.
      o.new_format = format == PageSum::kHash ? PageSum::kCrc32c : PageSum::kHash;
      std::unique_ptr<Store> st;
      Status s = Store::open(&after, o, &st);
      ASSERT_EQ(s, Status::kOk) << "crash at op " << k << " variant " << variant;
      if (committed.size() > 1) ASSERT_EQ(st->page_sum(), format) << "crash at op " << k;
      Model got;
      ASSERT_EQ(dump(st->tree(), &got), Status::kOk) << "crash at op " << k;
      ASSERT_EQ(st->tree().check(), "") << "crash at op " << k;
      size_t acked = committed.size() - 1;
      bool ok = got == all[acked] || (acked + 1 < all.size() && attempted > acked && got == all[acked + 1]);
      ASSERT_TRUE(ok) << "crash at op " << k << " variant " << variant << ": " << got.size()
                      << " keys, not commit " << acked << " (" << all[acked].size() << " keys)";
      checked++;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(2 * n));
}

// The same with a workload that keeps cutting the store's end: large values set and
// deleted again (their pages free at the end), so that commits trim free pages and
// checkpoints cut the data file, then the store grows over the cut ids again.
TEST_P(StoreFormats, CrashAtEveryStorageOperationWhileTheEndIsCut) {
  const PageSum format = GetParam();
  auto workload = [&](Storage* storage, std::vector<Model>* committed, size_t* attempted, uint64_t* trimmed) {
    committed->assign(1, Model{});
    *attempted = 0;
    StoreOptions o;
    o.pool_bytes = 32 * kPageSize;
    o.new_format = format;
    o.checkpoint_bytes = 64 << 10;
    std::unique_ptr<Store> st;
    if (Store::open(storage, o, &st) != Status::kOk) return;
    std::mt19937 rng(3);
    Model m;
    for (int i = 0; i < 40; i++) {
      Status s = Status::kOk;
      for (int j = 0; j < 12 && s == Status::kOk; j++) {
        std::string k = "k" + std::to_string(rng() % 300);
        std::string v(rng() % 80, static_cast<char>('a' + rng() % 26));
        s = st->tree().set(sl(k), sl(v));
        if (s == Status::kOk) m[k] = v;
      }
      // a large value on even rounds, deleted on odd ones
      if (s == Status::kOk && i % 2 == 0) {
        std::string v((4 + rng() % 12) * kPageSize, static_cast<char>('A' + i % 26));
        s = st->tree().set(sl("big"), sl(v));
        if (s == Status::kOk) m["big"] = v;
      } else if (s == Status::kOk) {
        s = st->tree().remove(sl("big"));
        if (s == Status::kOk) m.erase("big");
        if (s == Status::kNotFound) s = Status::kOk;
      }
      if (s != Status::kOk) return;
      (*attempted)++;
      if (st->commit() != Status::kOk) return;
      committed->push_back(m);
      *trimmed = st->pager_stats().trimmed_pages;
    }
  };
  FaultStorage clean;
  std::vector<Model> all;
  size_t attempted;
  uint64_t trimmed = 0;
  workload(&clean, &all, &attempted, &trimmed);
  ASSERT_EQ(all.size(), 41u);
  EXPECT_GT(trimmed, 20u);  // the workload does cut the store's end (pages cut since the last open)
  uint64_t unused = 0;
  expect_a_commit_after_every_crash(
      [&](Storage* storage, std::vector<Model>* committed, size_t* started) { workload(storage, committed, started, &unused); },
      32 * kPageSize);
}

// Flipped bits anywhere in the files: the store reports kCorrupt (at open or
// on the read that meets the page) or returns exactly the committed state.
TEST_P(StoreFormats, BitFlipsAreDetectedNeverWrongAnswers) {
  Workload w{1200, 40, 500, 5};
  MemoryStorage base;
  std::vector<Model> all;
  size_t attempted;
  run(&base, w, 64 * kPageSize, &all, &attempted, GetParam());
  std::mt19937 rng(99);
  int detected = 0, harmless = 0;
  for (int trial = 0; trial < 300; trial++) {
    MemoryStorage ms = base;
    FileId f = rng() % 2 ? FileId::kLog : FileId::kData;
    std::vector<uint8_t>& file = ms.file(f);
    if (file.empty()) continue;
    size_t at = rng() % file.size();
    file[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    std::unique_ptr<Store> st;
    Status s = Store::open(&ms, StoreOptions{}, &st);
    if (s == Status::kCorrupt) {
      detected++;
      continue;
    }
    ASSERT_EQ(s, Status::kOk);
    Model got;
    s = dump(st->tree(), &got);
    if (s == Status::kCorrupt) {
      detected++;
      continue;
    }
    ASSERT_EQ(s, Status::kOk);
    // The flip hit a byte nobody reads (free page, stale log frame, padding),
    // or the log's last commit (then the previous one is the answer).
    ASSERT_TRUE(got == all.back() || got == all[all.size() - 2])
        << "flip in " << (f == FileId::kLog ? "log" : "data") << " at " << at << " gave a wrong state";
    harmless++;
  }
  EXPECT_GT(detected, 50);
  EXPECT_GT(harmless + detected, 250);
}

// Every bit of the log's header flipped in turn, on a store that was never checkpointed (its
// data file empty: the log is the whole store) and on one with commits after a checkpoint:
// kCorrupt, or the last committed state. A new-user probe (session 23): a flip in bytes 0..35
// opened the first as a new, empty store (and reset its log: every commit gone), and the
// second at its checkpoint, silently; a reader was told there was no store.
namespace {
// 600 keys in commits of 100 (a checkpoint after the third with `checkpoint_at_300`), on files
// copied while the store is open (as a crash leaves them); the model in *want.
void six_hundred_keys(MemoryStorage* base, PageSum format, bool checkpoint_at_300, Model* want) {
  MemoryStorage live;
  std::unique_ptr<Store> st;
  StoreOptions o;
  o.new_format = format;
  ASSERT_EQ(Store::open(&live, o, &st), Status::kOk);
  for (int i = 0; i < 600; i++) {
    std::string k = "key" + std::to_string(i * 7919 % 600), v(20 + i % 90, static_cast<char>('a' + i % 26));
    ASSERT_EQ(st->tree().set(sl(k), sl(v)), Status::kOk);
    (*want)[k] = v;
    if (i % 100 == 99) ASSERT_EQ(st->commit(), Status::kOk);
    if (checkpoint_at_300 && i == 299) ASSERT_EQ(st->checkpoint(), Status::kOk);
  }
  *base = live;
}
}  // namespace

TEST_P(StoreFormats, LogHeaderFlipsAreCorruptNeverAnOlderState) {
  for (bool checkpointed : {false, true}) {
    MemoryStorage base;
    Model want;
    six_hundred_keys(&base, GetParam(), checkpointed, &want);
    ASSERT_EQ(base.file(FileId::kData).empty(), !checkpointed);
    for (size_t at = 0; at < kLogHeaderSize; at++) {
      for (int bit = 0; bit < 8; bit += 3) {
        for (bool read_only : {true, false}) {
          MemoryStorage ms = base;
          ms.file(FileId::kLog)[at] ^= static_cast<uint8_t>(1u << bit);
          StoreOptions o;
          o.read_only = read_only;
          o.create = !read_only;
          std::unique_ptr<Store> st;
          Status s = Store::open(&ms, o, &st);
          if (s == Status::kCorrupt) {
            // and the files are as they were
            ASSERT_EQ(ms.file(FileId::kData), base.file(FileId::kData));
            continue;
          }
          ASSERT_EQ(s, Status::kOk) << "byte " << at << " bit " << bit << (checkpointed ? " (checkpointed)" : "");
          Model got;
          ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
          ASSERT_TRUE(got == want) << "byte " << at << " bit " << bit << (checkpointed ? " (checkpointed)" : "")
                                   << (read_only ? " read-only" : "") << ": " << got.size() << " keys, not " << want.size();
        }
      }
    }
  }
}

// Flipped bits in the log after open (recovery checked every frame): the read that meets the
// page (read_log_image verifies the page and its frame in one pass) reports kCorrupt, or the
// flip hit a byte nobody reads; never a wrong answer.
TEST_P(StoreFormats, LogBitFlipsAfterOpenAreDetectedOnRead) {
  // A store whose pages all live in the log (no checkpoint yet), copied while open.
  MemoryStorage base;
  Model want;
  six_hundred_keys(&base, GetParam(), false, &want);
  std::mt19937 rng(7);
  int detected = 0;
  for (int trial = 0; trial < 200; trial++) {
    MemoryStorage ms = base;
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk);
    std::vector<uint8_t>& log = ms.file(FileId::kLog);
    ASSERT_GT(log.size(), 64u);
    size_t at = 64 + rng() % (log.size() - 64);
    log[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    Model got;
    Status s = dump(st->tree(), &got);
    if (s == Status::kCorrupt) {
      detected++;
      continue;
    }
    ASSERT_EQ(s, Status::kOk);
    ASSERT_TRUE(got == want) << "flip in the log at " << at << " gave a wrong state";
  }
  EXPECT_GT(detected, 20);
}

// A log damaged part way, intact commits after the damage (a frame of commit k of 6 flipped):
// open is kCorrupt, read-only or not, and says where (damaged_at); the files stay as they were.
// A salvage (read-only) opens exactly the state of commit k - 1 and writes nothing. Damage in
// the last commit is a torn tail: every open gives commit k - 1. On a store that never
// checkpointed (the log is the whole store) and on one checkpointed after commit 3 (its log
// cut there, so that each commit's end is the log's size).
TEST(Store, ALogDamagedPartWayIsCorruptAndASalvageOpensTheCommitBeforeIt) {
  for (bool checkpointed : {false, true}) {
    MemoryStorage live;
    std::vector<Model> models(1);
    std::vector<uint64_t> ends;  // the log's end after each commit since the last checkpoint
    {
      StoreOptions o;
      o.reuse_log = false;
      std::unique_ptr<Store> st;
      ASSERT_EQ(Store::open(&live, o, &st), Status::kOk);
      ends.push_back(live.file(FileId::kLog).size());
      Model m;
      for (int i = 0; i < 600; i++) {
        std::string k = "key" + std::to_string(i * 7919 % 600), v(20 + i % 90, static_cast<char>('a' + i % 26));
        ASSERT_EQ(st->tree().set(sl(k), sl(v)), Status::kOk);
        m[k] = v;
        if (i % 100 == 99) {
          ASSERT_EQ(st->commit(), Status::kOk);
          if (checkpointed && i == 299) {
            ASSERT_EQ(st->checkpoint(), Status::kOk);
            models.assign(1, m);
            ends.assign(1, live.file(FileId::kLog).size());
            continue;
          }
          models.push_back(m);
          ends.push_back(live.file(FileId::kLog).size());
        }
      }
    }  // (files as a crash leaves them: no close)
    ASSERT_EQ(live.file(FileId::kData).empty(), !checkpointed);
    ASSERT_EQ(models.size(), checkpointed ? 4u : 7u);
    for (size_t k = 1; k < models.size(); k++) {
      const uint64_t from = ends[k - 1], to = ends[k];
      const bool last = k + 1 == models.size();
      int detected = 0;
      // the first frame's kind and sequence, a byte of its page, the middle, the commit frame's
      // kind and sequence (a byte nobody checks, frame padding, is harmless)
      for (uint64_t at : {from, from + 20, from + 164, (from + to) / 2, to - 64, to - 48}) {
        const std::string where = std::string(checkpointed ? "checkpointed, " : "") + "commit " + std::to_string(k) + " byte " + std::to_string(at);
        MemoryStorage base = live;
        base.file(FileId::kLog)[at] ^= 0x5a;
        bool harmless = false;
        for (bool read_only : {false, true}) {
          MemoryStorage ms = base;
          StoreOptions o;
          o.read_only = read_only;
          uint64_t damaged = 0;
          o.damaged_at = &damaged;
          std::unique_ptr<Store> st;
          Status s = Store::open(&ms, o, &st);
          if (s == Status::kOk) {
            // the last commit's damage is a torn tail (commit k - 1); elsewhere the flip hit a
            // byte nobody checks
            EXPECT_EQ(damaged, 0u) << where;
            Model got;
            ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
            ASSERT_TRUE(got == models[last ? k - 1 : models.size() - 1]) << where;
            harmless = !last;
            continue;
          }
          ASSERT_FALSE(last) << where;
          ASSERT_EQ(s, Status::kCorrupt) << where;
          EXPECT_GE(damaged, from) << where;
          EXPECT_LT(damaged, to) << where;
          ASSERT_EQ(ms.file(FileId::kLog), base.file(FileId::kLog)) << where;
          ASSERT_EQ(ms.file(FileId::kData), base.file(FileId::kData)) << where;
        }
        if (harmless) continue;
        detected++;
        MemoryStorage ms = base;
        StoreOptions o;
        o.read_only = true;
        o.salvage = true;
        std::unique_ptr<Store> st;
        ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk) << where;
        Model got;
        ASSERT_EQ(dump(st->tree(), &got), Status::kOk) << where;
        ASSERT_TRUE(got == models[k - 1]) << where << ": " << got.size() << " keys, not " << models[k - 1].size();
        EXPECT_EQ(st->tree().set(sl("x"), sl("y")), Status::kReadOnly);
        st.reset();
        ASSERT_EQ(ms.file(FileId::kLog), base.file(FileId::kLog)) << where;
        ASSERT_EQ(ms.file(FileId::kData), base.file(FileId::kData)) << where;
      }
      EXPECT_GE(detected, 4) << "commit " << k;
    }
    // A salvage is a reader's: without read_only it is refused, and nothing is written.
    MemoryStorage ms = live;
    StoreOptions o;
    o.salvage = true;
    std::unique_ptr<Store> st;
    EXPECT_EQ(Store::open(&ms, o, &st), Status::kInvalidArgument);
    EXPECT_EQ(ms.file(FileId::kLog), live.file(FileId::kLog));
  }
}

// Another store's data file where the log should be (stores named 'a' and 'a-log' side by side:
// a new-user probe, session 23, found a's log written over a-log's data): kCorrupt, nothing
// written. (The backends refuse that pair before, when a-log's own log is beside it.)
TEST(Store, AStoresDataFileAsTheLogIsCorruptAndUntouched) {
  MemoryStorage other;
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&other, StoreOptions{}, &st), Status::kOk);
    for (int i = 0; i < 500; i++) ASSERT_EQ(st->tree().set(sl("k" + std::to_string(i)), sl(std::string(40, 'v'))), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
  }
  ASSERT_GE(other.file(FileId::kData).size(), kPageSize);
  for (bool read_only : {false, true}) {
    MemoryStorage ms;
    ms.file(FileId::kLog) = other.file(FileId::kData);  // its data file, as this store's log
    StoreOptions o;
    o.read_only = read_only;
    o.create = !read_only;
    std::unique_ptr<Store> st;
    EXPECT_EQ(Store::open(&ms, o, &st), Status::kCorrupt);
    EXPECT_EQ(ms.file(FileId::kLog), other.file(FileId::kData));
    EXPECT_TRUE(ms.file(FileId::kData).empty());
  }
}

// A file of the user's where the log should be (a new store 'app' beside an application's text
// log 'app-log': a new-user probe, session 25, found the 800 KB file cut to a 64-byte log
// header): kCorrupt, nothing written, for a new store and for one whose data file holds a
// checkpoint alike. What a crash leaves of our own header (a prefix of it, then zeros, from
// creation; the whole magic from a checkpoint) still opens.
TEST(Store, AForeignFileWhereTheLogShouldBeIsCorruptAndUntouched) {
  MemoryStorage checkpointed;
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&checkpointed, StoreOptions{}, &st), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("k"), sl("v")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
  }
  ASSERT_GE(checkpointed.file(FileId::kData).size(), kPageSize);
  MemoryStorage fresh;  // a new store's log: its header (naming checkpoint 0)
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&fresh, StoreOptions{}, &st), Status::kOk);
  }
  const std::vector<uint8_t> header(fresh.file(FileId::kLog).begin(), fresh.file(FileId::kLog).begin() + kLogHeaderSize);
  std::string text;
  for (int i = 0; i < 2000; i++) text += "2025-11-27 10:00:00 INFO server started\n";
  const std::string foreign[] = {text, "garbage that is not a log", "x", std::string(8, '\0') + "!", std::string(100, '\0')};
  for (const std::string& f : foreign) {
    for (bool existing : {false, true}) {
      for (bool read_only : {false, true}) {
        MemoryStorage ms;
        if (existing) ms.file(FileId::kData) = checkpointed.file(FileId::kData);
        ms.file(FileId::kLog).assign(f.begin(), f.end());
        MemoryStorage before = ms;
        StoreOptions o;
        o.read_only = read_only;
        o.create = !read_only;
        std::unique_ptr<Store> st;
        EXPECT_EQ(Store::open(&ms, o, &st), Status::kCorrupt) << f.size() << " bytes" << (existing ? ", existing store" : "") << (read_only ? ", read-only" : "");
        EXPECT_EQ(ms.file(FileId::kLog), before.file(FileId::kLog));
        EXPECT_EQ(ms.file(FileId::kData), before.file(FileId::kData));
      }
    }
  }
  // Our header torn at every length: alone, or followed by the zeros of the file's cut to the
  // header's size (creation); a new store opens (and the log is reset).
  for (size_t n = 0; n <= kLogHeaderSize; n++) {
    for (bool padded : {false, true}) {
      MemoryStorage ms;
      ms.file(FileId::kLog).assign(header.begin(), header.begin() + static_cast<long>(n));
      if (padded) ms.file(FileId::kLog).resize(kLogHeaderSize, 0);
      std::unique_ptr<Store> st;
      ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk) << "header torn at " << n << (padded ? ", padded" : "");
      EXPECT_EQ(st->tree().count(), 0u);
    }
  }
  // A checkpoint's header torn over the previous one: the magic stays; the store opens at its
  // checkpoint.
  for (size_t n = 8; n < kLogHeaderSize; n++) {
    MemoryStorage ms = checkpointed;
    for (size_t i = n; i < kLogHeaderSize; i++) ms.file(FileId::kLog)[i] ^= 0x5a;
    std::unique_ptr<Store> st;
    Status s = Store::open(&ms, StoreOptions{}, &st);
    if (n >= 36) {  // (bytes past the checksum: the header is still valid)
      ASSERT_EQ(s, Status::kOk) << n;
      continue;
    }
    ASSERT_EQ(s, Status::kOk) << "checkpoint header torn at " << n;
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_EQ(got, (Model{{"k", "v"}}));
  }
}

TEST(Store, ForeignAndTruncatedFilesAreCorrupt) {
  MemoryStorage ms;
  std::string junk = "this is not an adaptree store, but a text file of some length................";
  ms.write(FileId::kData, 0, reinterpret_cast<const uint8_t*>(junk.data()), static_cast<uint32_t>(junk.size()));
  std::unique_ptr<Store> st;
  EXPECT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kCorrupt);
  MemoryStorage big;
  std::vector<uint8_t> page(2 * kPageSize, 0x5a);
  big.write(FileId::kData, 0, page.data(), static_cast<uint32_t>(page.size()));
  EXPECT_EQ(Store::open(&big, StoreOptions{}, &st), Status::kCorrupt);
  // A store whose data file lost its pages after a checkpoint.
  MemoryStorage good;
  std::vector<Model> all;
  size_t attempted;
  run(&good, Workload{2000, 50, 3000, 2}, 64 * kPageSize, &all, &attempted);
  good.file(FileId::kData).resize(kPageSize * 3);
  Status s = Store::open(&good, StoreOptions{}, &st);
  if (s == Status::kOk) {
    Model got;
    s = dump(st->tree(), &got);
  }
  EXPECT_EQ(s, Status::kCorrupt);
  // A data file cut right after its superblock: scans report kCorrupt (they
  // used to loop on the unreadable page).
  MemoryStorage cut;
  run(&cut, Workload{2000, 50, 3000, 4}, 64 * kPageSize, &all, &attempted);
  ASSERT_EQ(Store::open(&cut, StoreOptions{}, &st), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  st.reset();
  cut.file(FileId::kData).resize(kPageSize + 100);
  cut.file(FileId::kLog).resize(64);
  s = Store::open(&cut, StoreOptions{}, &st);
  if (s == Status::kOk) {
    Model got;
    s = dump(st->tree(), &got);
  }
  EXPECT_EQ(s, Status::kCorrupt);
  StoreOptions no_create;
  no_create.create = false;
  MemoryStorage empty;
  EXPECT_EQ(Store::open(&empty, no_create, &st), Status::kNotFound);
  // A data file shorter than a page that bears the magic is a damaged store,
  // not a creation cut short (creation leaves the data file empty until the
  // first checkpoint writes page 0 whole).
  for (uint32_t len : {8u, kSuperblockSize, 2048u + kSuperblockSize, kPageSize - 1}) {
    MemoryStorage short_magic;
    std::vector<uint8_t> head(kPageSize, 0);
    encode_superblock(head.data(), 3, StoreMeta{}, kFormatVersionHash);
    short_magic.write(FileId::kData, 0, head.data(), len);
    EXPECT_EQ(Store::open(&short_magic, StoreOptions{}, &st), Status::kCorrupt) << len;
    EXPECT_EQ(short_magic.file(FileId::kData).size(), len);  // untouched
  }
}

// A store's format (its pages' checksum) is in its superblock and its log header; they must
// agree, and a version this build does not know is refused (kCorrupt), never reset.
TEST(Store, FormatAndLogVersionsMustAgree) {
  for (PageSum format : {PageSum::kHash, PageSum::kCrc32c}) {
    MemoryStorage ms;
    StoreOptions o;
    o.new_format = format;
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("a"), sl("1")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("b"), sl("2")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);  // in the log only
    EXPECT_EQ(st->page_sum(), format);
    st.reset();
    const uint32_t want_version = format == PageSum::kHash ? kFormatVersionHash : kFormatVersionCrc;
    EXPECT_EQ(load32(ms.file(FileId::kData).data() + 8), want_version);
    EXPECT_EQ(load32(ms.file(FileId::kLog).data() + 8), format == PageSum::kHash ? kLogVersionHashed : kLogVersionDeltas);
    {
      // Reopened with the other format asked for new stores: it keeps its own.
      MemoryStorage again = ms;
      StoreOptions other;
      other.new_format = format == PageSum::kHash ? PageSum::kCrc32c : PageSum::kHash;
      ASSERT_EQ(Store::open(&again, other, &st), Status::kOk);
      EXPECT_EQ(st->page_sum(), format);
      ValueRef v;
      EXPECT_EQ(st->tree().get(sl("b"), &v), Status::kOk);
      st.reset();
    }
    // The log header naming the other format (its own checksum right): not this store's log.
    MemoryStorage mixed = ms;
    std::vector<uint8_t>& log = mixed.file(FileId::kLog);
    store32(log.data() + 8, format == PageSum::kHash ? kLogVersionDeltas : kLogVersionHashed);
    store32(log.data() + 32, checksum(log.data(), 32));
    std::vector<uint8_t> before = log;
    EXPECT_EQ(Store::open(&mixed, StoreOptions{}, &st), Status::kCorrupt);
    EXPECT_EQ(mixed.file(FileId::kLog), before);  // left as it is
    // A superblock of an unknown format version, in both slots: refused.
    MemoryStorage future = ms;
    for (uint32_t slot : {0u, kSuperblockSlot}) {
      uint8_t* sb = future.file(FileId::kData).data() + slot;
      if (memcmp(sb, kStoreMagic, 8) != 0) continue;
      store32(sb + 8, 3);
      store32(sb + 56, checksum(sb, 56));
    }
    EXPECT_EQ(Store::open(&future, StoreOptions{}, &st), Status::kCorrupt);
  }
}

// A new store has no superblock until its first checkpoint: its commits are in
// the log, and a reopen finds them there; the checkpoint writes page 0 whole.
TEST(Store, NewStoreLivesInTheLogUntilItsFirstCheckpoint) {
  MemoryStorage ms;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, StoreOptions{}, &st), Status::kOk);
  ASSERT_EQ(st->tree().set(sl("a"), sl("1")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  EXPECT_EQ(ms.file(FileId::kData).size(), 0u);
  StoreOptions no_create;
  no_create.create = false;
  ASSERT_EQ(Store::open(&ms, no_create, &st), Status::kOk);
  ValueRef v;
  EXPECT_EQ(st->tree().get(sl("a"), &v), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  st.reset();
  ASSERT_GE(ms.file(FileId::kData).size(), 2 * kPageSize);
  EXPECT_EQ(memcmp(ms.file(FileId::kData).data(), kStoreMagic, 8), 0);
  ASSERT_EQ(Store::open(&ms, no_create, &st), Status::kOk);
  EXPECT_EQ(st->tree().get(sl("a"), &v), Status::kOk);
  EXPECT_EQ(st->tree().count(), 1u);
}

// Free pages at the store's end leave it: deleting the large value written last gives its
// pages back to the file system at the next checkpoint (the data file is cut), and the store
// is the same after reopening. Pages freed in the middle stay in the free list (no
// relocation).
TEST(Store, FreePagesAtTheEndAreCutFromTheDataFile) {
  auto key = [](int i) { return "k" + std::to_string(i * 7919 % 20000); };
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  Model m;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  for (int i = 0; i < 500; i++) {
    std::string v(40, static_cast<char>('a' + i % 26));
    ASSERT_EQ(st->tree().set(sl(key(i)), sl(v)), Status::kOk);
    m[key(i)] = v;
  }
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  const size_t small = ms.file(FileId::kData).size();
  const PageId small_count = st->tree().store().page_count();
  // A value of 300 pages, then one of 100 pages after it.
  const std::string big(300 * kPageSize, 'x'), mid(100 * kPageSize, 'y');
  ASSERT_EQ(st->tree().set(sl("big"), sl(big)), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->tree().set(sl("mid"), sl(mid)), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  const size_t grown = ms.file(FileId::kData).size();
  EXPECT_GE(grown, small + 400 * kPageSize);
  // Deleting the first leaves its pages in the middle: free, the file as long.
  ASSERT_EQ(st->tree().remove(sl("big")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  EXPECT_EQ(ms.file(FileId::kData).size(), grown);
  EXPECT_EQ(st->pager_stats().trimmed_pages, 0u);
  // Deleting the last one frees the end: both runs leave the store, the file is cut.
  ASSERT_EQ(st->tree().remove(sl("mid")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  EXPECT_GE(st->pager_stats().trimmed_pages, 400u);
  EXPECT_LE(st->tree().store().page_count(), small_count + 2);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  EXPECT_EQ(st->pager_stats().data_truncations, 1u);
  EXPECT_LE(ms.file(FileId::kData).size(), small + 2 * kPageSize);
  EXPECT_EQ(ms.file(FileId::kData).size(), uint64_t{st->tree().store().page_count()} * kPageSize);
  EXPECT_EQ(st->tree().check(), "");
  // The store grows again from there and keeps everything across reopening.
  const std::string again(50 * kPageSize, 'z');
  ASSERT_EQ(st->tree().set(sl("again"), sl(again)), Status::kOk);
  m["again"] = again;
  ASSERT_EQ(st->commit(), Status::kOk);
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, m);
  EXPECT_EQ(st->tree().check(), "");
  // Cut without a checkpoint (the log only): reopening replays the shorter store.
  ASSERT_EQ(st->tree().remove(sl("again")), Status::kOk);
  m.erase("again");
  ASSERT_EQ(st->commit(), Status::kOk);
  const PageId cut = st->tree().store().page_count();
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  EXPECT_EQ(st->tree().store().page_count(), cut);
  got.clear();
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, m);
  EXPECT_EQ(st->tree().check(), "");
}

// A full disk: the write or commit that needs space fails with
// kQuotaExceeded, and reopening gives the last commit.
TEST(Store, FullDiskKeepsLastCommit) {
  FaultStorage fs;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
  Model m;
  for (int i = 0; i < 500; i++) {
    std::string k = "k" + std::to_string(i);
    ASSERT_EQ(st->tree().set(sl(k), sl(std::string(50, 'x'))), Status::kOk);
    m[k] = std::string(50, 'x');
  }
  ASSERT_EQ(st->commit(), Status::kOk);
  fs.set_growth_budget(20000);
  Status failed = Status::kOk;
  for (int i = 500; i < 20000 && failed == Status::kOk; i++) {
    std::string k = "k" + std::to_string(i);
    failed = st->tree().set(sl(k), sl(std::string(50, 'y')));
    if (failed == Status::kOk && i % 100 == 0) failed = st->commit();
  }
  EXPECT_EQ(failed, Status::kQuotaExceeded);
  // Further writes are refused; the committed state is intact after reopen.
  EXPECT_NE(st->tree().set(sl("after"), sl("x")), Status::kOk);
  st.reset();
  MemoryStorage after;
  fs.crashed(&after, 1, false);
  ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  ASSERT_GE(got.size(), m.size());
  for (auto& e : m) EXPECT_EQ(got[e.first], e.second);
  EXPECT_EQ(st->tree().check(), "");
}

// After a failed commit, no later commit goes through, room or not: its writes are in the
// pool, and a commit that resolved would make them durable though the commit that held them
// failed. The JavaScript handle that saw the failure refused further commits itself, but a
// store shared between threads has one handle each: a worker's commit failed on a full disk,
// and the owner's commit then resolved with the worker's writes in it (a probe, session 32).
TEST(Store, NoCommitGoesThroughAfterAFailedOne) {
  FaultStorage fs;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
  ASSERT_EQ(st->tree().set(sl("base"), sl("1")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  fs.set_growth_budget(0);
  ASSERT_EQ(st->tree().set(sl("w"), sl(std::string(5000, 'x'))), Status::kOk);
  EXPECT_EQ(st->commit(), Status::kQuotaExceeded);
  fs.set_growth_budget(~uint64_t{0});  // room is back
  EXPECT_EQ(st->commit(), Status::kReadOnly);
  EXPECT_EQ(st->commit(), Status::kReadOnly);
  st.reset();
  MemoryStorage after;
  fs.crashed(&after, 1, false);
  ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got, (Model{{"base", "1"}}));
}

// A full disk that fails the checkpoint a commit runs after it is durable: the commit is kOk
// (it is durable), take_checkpoint_failure says why the checkpoint failed, writes and commits
// go on in the log, and once there is room a later commit's checkpoint succeeds. A new-user
// probe (session 23): such a commit returned kQuotaExceeded, the store refused writes, and the
// "failed" commit was there after reopening.
TEST(Store, AFailedCheckpointAfterACommitLeavesTheCommitDurableAndTheStoreWritable) {
  FaultStorage fs;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  o.checkpoint_bytes = 64 << 10;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
  Model m;
  auto put = [&](int i, char c) {
    std::string k = "k" + std::to_string(i * 7919 % 100000);
    Status s = st->tree().set(sl(k), sl(std::string(60, c)));
    if (s == Status::kOk) m[k] = std::string(60, c);
    return s;
  };
  for (int i = 0; i < 2000; i++) ASSERT_EQ(put(i, 'a'), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->take_checkpoint_failure(), Status::kOk);
  // Room for the log to grow a little, never for a checkpoint's pages as well: the data file
  // takes the checkpoint's pages past its end.
  fs.set_growth_budget(40 * kPageSize);
  int failed_checkpoints = 0, i = 2000;
  Model durable = m;
  for (int round = 0; round < 200 && failed_checkpoints < 3; round++) {
    Status s = Status::kOk;
    for (int j = 0; j < 20 && s == Status::kOk; j++) s = put(i++, 'b');
    if (s == Status::kOk) s = st->commit();
    if (s != Status::kOk) {
      // The log itself is full: a real failed commit, the store refuses writes.
      EXPECT_EQ(s, Status::kQuotaExceeded);
      break;
    }
    durable = m;
    Status c = st->take_checkpoint_failure();
    if (c != Status::kOk) {
      EXPECT_EQ(c, Status::kQuotaExceeded);
      EXPECT_EQ(st->take_checkpoint_failure(), Status::kOk);  // taken
      failed_checkpoints++;
      fs.set_growth_budget(8 * kPageSize);  // a little room for the next commits' log frames
    }
  }
  ASSERT_GE(failed_checkpoints, 1);
  EXPECT_EQ(st->pager_stats().checkpoint_failures, static_cast<uint64_t>(failed_checkpoints));
  // Every kOk commit is durable: a crash now reopens to the last of them.
  {
    MemoryStorage after;
    fs.crashed(&after, 3, true);
    std::unique_ptr<Store> again;
    ASSERT_EQ(Store::open(&after, o, &again), Status::kOk);
    Model got;
    ASSERT_EQ(dump(again->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == durable) << got.size() << " keys, not " << durable.size();
    EXPECT_EQ(again->tree().check(), "");
  }
  // Room again: the store, if it still takes writes, checkpoints with the next commit.
  fs.set_growth_budget(~uint64_t{0});
  if (put(i++, 'c') == Status::kOk) {
    const uint64_t before = st->pager_stats().checkpoints;
    ASSERT_EQ(st->commit(), Status::kOk);
    EXPECT_EQ(st->take_checkpoint_failure(), Status::kOk);
    EXPECT_GT(st->pager_stats().checkpoints, before);
    durable = m;
  }
  st.reset();
  MemoryStorage after;
  fs.crashed(&after, 4, false);
  ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_TRUE(got == durable) << got.size() << " keys, not " << durable.size();
  EXPECT_EQ(st->tree().check(), "");
}

// Uncommitted writes past the pool on a full disk: the write whose eviction cannot spill fails
// with kQuotaExceeded before it changes anything, the tree stays whole, and once there is room
// reads, writes and the commit go on. A new-user probe (session 23): the spill failed in the
// middle of a split, and every later call, reads of committed keys too, answered
// kQuotaExceeded for good, even with room again.
// Reads while the disk is full: a read that needs a frame takes a clean one, never fails
// because the clock met a dirty page first whose spill the full disk refused (docs/STORE.md:
// "reads work"). Session 25: a get of a committed key failed with QUOTA_EXCEEDED after a
// failed write on a full disk, while clean frames were there to take.
// A store ~10x its 64-frame pool (20000 committed records), half the pool dirty and spread
// over it (one same-size write into every other of 64 leaves far apart), on a disk then full.
struct FullDiskStore {
  FaultStorage fs;
  StoreOptions o;
  std::unique_ptr<Store> st;
  Model m;
  static std::string key(int i) {
    char b[16];
    snprintf(b, sizeof b, "k%06d", i);
    return std::string(b);
  }
  void open() {
    o.pool_bytes = 64 * kPageSize;
    ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
    for (int i = 0; i < 20000; i++) {
      ASSERT_EQ(st->tree().set(sl(key(i)), sl(std::string(100, 'a' + i % 26))), Status::kOk);
      m[key(i)] = std::string(100, 'a' + i % 26);
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    for (int i = 0; i < 32; i++) {
      const std::string k = key(i * 600);
      ASSERT_EQ(st->tree().set(sl(k), sl(std::string(100, 'C'))), Status::kOk);
      m[k] = std::string(100, 'C');
    }
    fs.set_growth_budget(0);
  }
  // Room again: the tree is whole, the writes are there and commit.
  void room_again() {
    EXPECT_EQ(st->tree().broken(), Status::kOk);
    fs.set_growth_budget(~uint64_t{0});
    ASSERT_EQ(st->commit(), Status::kOk);
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == m);
    EXPECT_EQ(st->tree().check(), "");
  }
};

TEST(Store, ReadsOnAFullDiskTakeCleanFramesAndSucceed) {
  FullDiskStore d;
  ASSERT_NO_FATAL_FAILURE(d.open());
  std::mt19937 rng(4);
  for (int reads = 0; reads < 3000; reads++) {
    const std::string k = FullDiskStore::key(static_cast<int>(rng() % 20000));
    ValueRef ref;
    Status s = d.st->tree().get(sl(k), &ref);
    ASSERT_EQ(s, Status::kOk) << "read " << reads << " of " << k;
    std::vector<uint8_t> buf;
    Slice v;
    ASSERT_EQ(d.st->tree().read_value(ref, &buf, &v), Status::kOk);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(v.data), v.len), d.m[k]);
  }
  d.room_again();
}

// Writes on a full disk take clean frames too: every write on a store past its pool first frees
// frames for its change (make_room), and make_room failed at the first dirty victim whose spill
// the disk refused, while clean frames were there to take (take_frame's session 25 fix, which
// make_room's copy of the clock loop lacked). Writes into leaves that are already dirty need no
// spill: they succeed; the store goes on once there is room.
TEST(Store, WritesOnAFullDiskTakeCleanFramesAndSucceed) {
  FullDiskStore d;
  ASSERT_NO_FATAL_FAILURE(d.open());
  std::mt19937 rng(5);
  for (int w = 0; w < 500; w++) {
    // a read elsewhere (a clean frame taken), then a same-size write into a dirty leaf
    const std::string r = FullDiskStore::key(static_cast<int>(rng() % 20000));
    ValueRef ref;
    ASSERT_EQ(d.st->tree().get(sl(r), &ref), Status::kOk) << r;
    const std::string k = FullDiskStore::key(static_cast<int>(rng() % 32) * 600);
    const std::string v(100, static_cast<char>('D' + w % 20));
    ASSERT_EQ(d.st->tree().set(sl(k), sl(v)), Status::kOk) << "write " << w << " of " << k;
    d.m[k] = v;
  }
  d.room_again();
}

TEST(Store, ASpillThatFailsOnAFullDiskFailsTheWriteCleanly) {
  for (uint64_t budget : {64 * 1024, 150 * 1024, 400 * 1024}) {
    FaultStorage fs;
    StoreOptions o;
    o.pool_bytes = 64 * kPageSize;
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
    Model m;
    for (int i = 0; i < 100; i++) {
      ASSERT_EQ(st->tree().set(sl("base" + std::to_string(i)), sl(std::string(100, 'b'))), Status::kOk);
      m["base" + std::to_string(i)] = std::string(100, 'b');
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    fs.set_growth_budget(budget);
    std::mt19937 rng(static_cast<uint32_t>(budget));
    Status failed = Status::kOk;
    int i = 0;
    for (; i < 100000 && failed == Status::kOk; i++) {
      std::string k = "k" + std::to_string(rng() % 1000000), v(300, static_cast<char>('a' + i % 26));
      failed = st->tree().set(sl(k), sl(v));
      if (failed == Status::kOk) m[k] = v;
    }
    ASSERT_EQ(failed, Status::kQuotaExceeded) << "budget " << budget;
    EXPECT_EQ(st->tree().broken(), Status::kOk) << "budget " << budget << ": the failure broke the tree";
    // Room again: everything the successful writes did is there, and goes on.
    fs.set_growth_budget(~uint64_t{0});
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == m) << "budget " << budget;
    EXPECT_EQ(st->tree().check(), "");
    ASSERT_EQ(st->tree().set(sl("after"), sl("x")), Status::kOk);
    m["after"] = "x";
    ASSERT_EQ(st->commit(), Status::kOk);
    st.reset();
    MemoryStorage after;
    fs.crashed(&after, 5, false);
    ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
    got.clear();
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == m) << "budget " << budget << ": " << got.size() << " keys, not " << m.size();
  }
}

// The same for a value that goes to overflow pages: its chain is written page by page before the
// leaf changes, each new page taking a frame, and with the pool full of dirty pages each frame
// is a spill. A new-user probe (session 25, a 100 KB value on a full 8 MiB tmpfs): the spill
// that failed in the middle of the chain marked the tree broken, so every later call (a read of a
// committed key too) answered kQuotaExceeded for good, even once there was room, and the writes
// since the last commit were lost. Budgets of 0 to 60 pages, so that the failure falls before the
// write (make_room), in the chain (budget 5 failed so), or in the change after it, a split that
// found the frames begin_write freed taken by the chain (budget 36, once the chain failed cleanly).
TEST(Store, AnOverflowValueThatFailsOnAFullDiskFailsTheWriteCleanly) {
  for (uint64_t budget_pages = 0; budget_pages <= 60; budget_pages++) {
    FaultStorage fs;
    StoreOptions o;
    o.pool_bytes = 64 * kPageSize;
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
    Model m;
    auto put = [&](const std::string& k, const std::string& v) {
      Status s = st->tree().set(sl(k), sl(v));
      if (s == Status::kOk) m[k] = v;
      return s;
    };
    for (int i = 0; i < 100; i++) ASSERT_EQ(put("base" + std::to_string(i), std::string(100, 'b')), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    // Uncommitted writes past the pool (spilled while there is room), overflow values last: the
    // pool is full of dirty pages.
    for (int i = 0; i < 1000; i++) ASSERT_EQ(put("u" + std::to_string(i * 7919 % 10007), std::string(100, 'u')), Status::kOk);
    for (int i = 0; i < 20; i++) ASSERT_EQ(put("o" + std::to_string(i), std::string(20000, 'o')), Status::kOk);
    ASSERT_GE(st->tree().store().dirty_count(), 40u);
    fs.set_growth_budget(budget_pages * kPageSize + budget_pages * 1000);
    // Values of 25 overflow pages under long random keys (a leaf splits every few of them) until
    // one fails: in the chain, or in the change after it.
    std::mt19937 rng(static_cast<uint32_t>(budget_pages));
    Status s = Status::kOk;
    int j = 0;
    for (; j < 100 && s == Status::kOk; j++) {
      std::string k(300, ' ');
      for (char& c : k) c = static_cast<char>('a' + rng() % 26);
      s = put(k, std::string(100000, static_cast<char>('A' + j % 26)));
    }
    SCOPED_TRACE("budget " + std::to_string(budget_pages) + " pages, set " + std::to_string(j));
    ASSERT_EQ(s, Status::kQuotaExceeded);
    EXPECT_EQ(st->tree().broken(), Status::kOk) << "the failed write broke the tree";
    // Still full: reads work (the committed keys and the uncommitted ones that were written).
    for (const char* k : {"base7", "u7919"}) {
      ValueRef ref;
      std::vector<uint8_t> buf;
      Slice val;
      Status r = st->tree().get(sl(k), &ref);
      if (r == Status::kOk) r = st->tree().read_value(ref, &buf, &val);
      EXPECT_EQ(r, Status::kOk) << k;
      if (r == Status::kOk) EXPECT_EQ(std::string(reinterpret_cast<const char*>(val.data), val.len), m[k]) << k;
    }
    // Room again: everything the successful writes did is there, and goes on.
    fs.set_growth_budget(~uint64_t{0});
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == m) << got.size() << " keys, not " << m.size();
    EXPECT_EQ(st->tree().check(), "");
    ASSERT_EQ(put("big2", std::string(70000, 'W')), Status::kOk);
    ASSERT_EQ(put("after", "x"), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    st.reset();
    MemoryStorage after;
    fs.crashed(&after, 5, false);
    ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
    got.clear();
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_TRUE(got == m) << got.size() << " keys, not " << m.size();
    EXPECT_EQ(st->tree().check(), "");
  }
}

// A sorted batch into an empty tree is bulk loaded (at_set_many). A bulk load whose spill met a
// full disk released its pages and left the tree as it was, but the pool's failure stayed and
// end_write marked the tree broken: every later call, reads of committed keys too, failed with
// QUOTA_EXCEEDED until reopened, and the writes since the last commit were lost (session 25's
// helper found it beside write_chain's case). Now the load fails alone, as a write does.
TEST(Store, ABulkLoadThatFailsOnAFullDiskFailsAlone) {
  for (uint64_t budget_pages = 0; budget_pages <= 40; budget_pages += 4) {
    SCOPED_TRACE("budget " + std::to_string(budget_pages) + " pages");
    FaultStorage fs;
    StoreOptions o;
    o.pool_bytes = 64 * kPageSize;
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&fs, o, &st), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("committed"), sl("yes")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->tree().remove(sl("committed")), Status::kOk);  // empty again, uncommitted
    ASSERT_EQ(st->tree().count(), 0u);
    // Records for ~300 pages (and a few overflow chains) into a pool of 64: it spills.
    std::vector<std::string> ks, vs;
    for (int i = 0; i < 20000; i++) {
      char k[16];
      snprintf(k, sizeof k, "k%08d", i);
      ks.push_back(k);
      vs.push_back(i % 2000 == 0 ? std::string(30000, 'o') : std::string(50, 'v'));
    }
    std::vector<Slice> kss, vss;
    for (size_t i = 0; i < ks.size(); i++) {
      kss.push_back(sl(ks[i]));
      vss.push_back(sl(vs[i]));
    }
    fs.set_growth_budget(budget_pages * kPageSize);
    ASSERT_EQ(st->tree().bulk_load(kss.data(), vss.data(), kss.size()), Status::kQuotaExceeded);
    EXPECT_EQ(st->tree().broken(), Status::kOk) << "the failed bulk load broke the tree";
    EXPECT_EQ(st->tree().count(), 0u);
    EXPECT_EQ(st->tree().check(), "");
    // Room again: the store goes on, the load with it, and the commit holds it.
    fs.set_growth_budget(~uint64_t{0});
    ASSERT_EQ(st->tree().bulk_load(kss.data(), vss.data(), kss.size()), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    st.reset();
    MemoryStorage after;
    fs.crashed(&after, 3, false);
    ASSERT_EQ(Store::open(&after, o, &st), Status::kOk);
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    ASSERT_EQ(got.size(), ks.size());
    EXPECT_EQ(got[ks[0]], vs[0]);
    EXPECT_EQ(got[ks[12345]], vs[12345]);
    EXPECT_EQ(got.count("committed"), 0u);
    EXPECT_EQ(st->tree().check(), "");
  }
}

// Store::pending (at_store_pending: whether the owner of a shared store commits what its workers
// wrote) counts writes whose pages the pool already spilled into the log: with every dirty page
// evicted by reads, a commit still has something to make durable.
TEST(Store, PendingCountsWritesSpilledBeforeTheCommit) {
  FullDiskStore d;  // (its disk is never made full here)
  d.o.pool_bytes = 64 * kPageSize;
  ASSERT_EQ(Store::open(&d.fs, d.o, &d.st), Status::kOk);
  EXPECT_FALSE(d.st->pending());
  for (int i = 0; i < 20000; i++) ASSERT_EQ(d.st->tree().set(sl(FullDiskStore::key(i)), sl(std::string(100, 'a'))), Status::kOk);
  ASSERT_EQ(d.st->commit(), Status::kOk);
  EXPECT_FALSE(d.st->pending());
  ASSERT_EQ(d.st->tree().set(sl(FullDiskStore::key(7)), sl(std::string(100, 'b'))), Status::kOk);
  EXPECT_TRUE(d.st->pending());
  // Reads all over the store until the changed leaf was evicted (spilled into the log).
  for (int i = 0; i < 20000 && d.st->tree().store().dirty_count() > 0; i += 3) {
    ValueRef ref;
    ASSERT_EQ(d.st->tree().get(sl(FullDiskStore::key(i)), &ref), Status::kOk);
  }
  ASSERT_EQ(d.st->tree().store().dirty_count(), 0u);
  EXPECT_TRUE(d.st->pending()) << "a spilled write is pending until the commit";
  ASSERT_EQ(d.st->commit(), Status::kOk);
  EXPECT_FALSE(d.st->pending());
}

TEST(Store, PosixFilesAndLocking) {
  char tmpl[] = "/tmp/adaptree-store-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/db";
  PosixStorage* ps = nullptr;
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  std::unique_ptr<PosixStorage> hold(ps);
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(ps, StoreOptions{}, &st), Status::kOk);
  for (int i = 0; i < 20000; i++) st->tree().set(sl("k" + std::to_string(i)), sl("v" + std::to_string(i)));
  ASSERT_EQ(st->commit(), Status::kOk);
  // A second open of the same files (as another process would) is refused.
  PosixStorage* second = nullptr;
  EXPECT_EQ(PosixStorage::open(path, &second), Status::kLocked);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  st.reset();
  hold.reset();
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  hold.reset(ps);
  ASSERT_EQ(Store::open(ps, StoreOptions{}, &st), Status::kOk);
  EXPECT_EQ(st->tree().count(), 20000u);
  Model got;
  ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
  EXPECT_EQ(got["k12345"], "v12345");
  st.reset();
  hold.reset();
  std::string cmd = std::string("rm -rf ") + tmpl;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

namespace {
// Forwards to a MemoryStorage and counts the calls that would change it.
class CountingStorage : public Storage {
 public:
  explicit CountingStorage(MemoryStorage* m) : m_(m) {}
  Status read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) override { return m_->read(f, off, dst, len, got); }
  Status write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) override {
    changes++;
    return m_->write(f, off, src, len);
  }
  Status sync(FileId f) override {
    changes++;
    return m_->sync(f);
  }
  Status size(FileId f, uint64_t* out) override { return m_->size(f, out); }
  Status truncate(FileId f, uint64_t len) override {
    changes++;
    return m_->truncate(f, len);
  }
  uint64_t changes = 0;

 private:
  MemoryStorage* m_;
};
}  // namespace

// A reader (StoreOptions::read_only) opens the last commit of a crashed store
// without a single write, sync or truncate, even when its pool is far smaller
// than the store and its scans sort fingerprint leaves (dropped on eviction,
// not spilled); writes and commits are kReadOnly; a missing store is kNotFound.
TEST(Store, ReadOnlyWritesNothing) {
  MemoryStorage m;
  StoreOptions o;
  o.layout = LayoutConfig::kFingerprint;
  o.pool_bytes = 1 << 20;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&m, o, &st), Status::kOk);
  Model model;
  std::mt19937 rng(7);
  for (int c = 0; c < 3; c++) {
    for (int i = 0; i < 8000; i++) {
      std::string k = "k" + std::to_string(rng() % 100000), v = std::string(20 + rng() % 60, 'a' + c);
      ASSERT_EQ(st->tree().set(sl(k), sl(v)), Status::kOk);
      model[k] = v;
    }
    ASSERT_EQ(st->commit(), Status::kOk);
  }
  for (int i = 0; i < 3000; i++) st->tree().set(sl("u" + std::to_string(i)), sl(std::string(50, 'u')));  // never committed
  st.reset();  // a crash: no checkpoint
  CountingStorage counting(&m);
  StoreOptions ro;
  ro.read_only = true;
  ro.pool_bytes = 256 << 10;  // 64 frames
  ASSERT_EQ(Store::open(&counting, ro, &st), Status::kOk);
  EXPECT_TRUE(st->read_only());
  for (int pass = 0; pass < 2; pass++) {
    Model got;
    ASSERT_EQ(dump(st->tree(), &got), Status::kOk);
    EXPECT_EQ(got, model);
  }
  EXPECT_EQ(st->tree().check(), "");
  EXPECT_EQ(st->tree().set(sl("x"), sl("y")), Status::kReadOnly);
  EXPECT_EQ(st->tree().remove(sl("k1")), Status::kReadOnly);
  EXPECT_EQ(st->commit(), Status::kReadOnly);
  EXPECT_EQ(st->checkpoint(), Status::kOk);
  EXPECT_GT(st->tree().store().stats().evictions, 0u);
  EXPECT_EQ(counting.changes, 0u);
  st.reset();
  MemoryStorage empty;
  EXPECT_EQ(Store::open(&empty, ro, &st), Status::kNotFound);
  uint64_t size = 1;
  ASSERT_EQ(empty.size(FileId::kData, &size), Status::kOk);
  EXPECT_EQ(size, 0u);
}

namespace {
void write_file(const std::string& p, const std::string& text) {
  FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}
std::string read_file(const std::string& p) {
  FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) return "(none)";
  char buf[64] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  return std::string(buf, n);
}
}  // namespace

// The lock file `path-lock` is the Node backend's (ts/src/storage/node.ts): a
// live pid in it (another process, or this one) is kLocked and left alone; an
// empty one (an owner between creating and writing it) is kLocked until it is
// 10 s old, then stale (its writer was killed in that moment); a dead
// pid's is taken over, and so is one that says "flock" (Deno's or this tool's:
// its writer held the flock we now hold); we write "<pid> flock"; the owner
// removes it when done.
TEST(Store, PosixLockFileIsTheNodeBackends) {
  char tmpl[] = "/tmp/adaptree-lockfile-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/db", lock = path + "-lock";
  PosixStorage* ps = nullptr;
  write_file(lock, std::to_string(getppid()));  // a live process: the test runner's parent
  EXPECT_EQ(PosixStorage::open(path, &ps), Status::kLocked);
  EXPECT_EQ(read_file(lock), std::to_string(getppid()));
  write_file(lock, "");
  EXPECT_EQ(PosixStorage::open(path, &ps), Status::kLocked);
  // An empty one a minute old: its writer was killed before writing (stale).
  struct timeval old[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
  ASSERT_EQ(utimes(lock.c_str(), old), 0);
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  EXPECT_EQ(read_file(lock), std::to_string(getpid()) + " flock");
  delete ps;
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  write_file(lock, std::to_string(child));  // a dead process: stale
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  std::string mine = std::to_string(getpid()) + " flock";
  EXPECT_EQ(read_file(lock), mine);
  PosixStorage* second = nullptr;
  EXPECT_EQ(PosixStorage::open(path, &second), Status::kLocked);  // this process holds it
  EXPECT_EQ(read_file(lock), mine);
  delete ps;
  EXPECT_EQ(read_file(lock), "(none)");
  // A flock holder's file whose pid runs (our parent) is stale all the same: we got the flock.
  write_file(lock, std::to_string(getppid()) + " flock");
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  EXPECT_EQ(read_file(lock), mine);
  delete ps;
  std::string cmd = std::string("rm -rf ") + tmpl;
  EXPECT_EQ(system(cmd.c_str()), 0);
}

// A store many times larger than its pool, on real files: a 1 MiB pool (256
// frames) under ADAPTREE_BIG_STORE_KEYS keys (default 300,000: about 17 times
// the pool; at least 100,000; set 10000000 for the 10M-key run, and
// ADAPTREE_BIG_STORE_POOL=33554432 for the 32 MiB pool). Keys go in in random order with
// commits; the page table stays sized by the pool, not by the store; after a
// reopen every key is found with its value and a full scan is in order.
// Deleting or overwriting a value far larger than the pool reads its overflow chain
// without making it resident (the pool kept it all: 20 MB of frames for a 20 MB value),
// and a chain page that cannot be read still fails the write before anything changed.
TEST(Store, FreeingALargeChainStreamsItAndFailsCleanly) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::string big(600 * kPageSize, 'q');
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
    for (int i = 0; i < 50; i++) ASSERT_EQ(st->tree().set(sl("k" + std::to_string(i)), sl("v" + std::to_string(i))), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("big"), sl(big)), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("big2"), sl(big)), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);  // the chains in the data file
  }
  // A page of big2's chain (the chains' pages are the overflow pages of the data file:
  // big's first, then big2's) unreadable.
  std::vector<uint8_t>& data = ms.file(FileId::kData);
  std::vector<size_t> overflow;
  for (size_t off = 0; off + kPageSize <= data.size(); off += kPageSize)
    if (data[off] == static_cast<uint8_t>(PageTag::kOverflow)) overflow.push_back(off);
  ASSERT_GE(overflow.size(), 1200u);
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  const BufferPool& pool = st->tree().store();
  ASSERT_EQ(st->tree().remove(sl("big")), Status::kOk);
  EXPECT_LE(pool.frame_count(), pool.target_frames() + 64);  // was 600 frames more
  ASSERT_EQ(st->tree().set(sl("big3"), sl("small")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  // corrupt a page of the remaining chain, then delete and overwrite big2
  ValueRef v;
  ASSERT_EQ(st->tree().get(sl("big2"), &v), Status::kOk);
  ASSERT_TRUE(v.is_overflow());
  PageId chain = load32(v.ptr);
  ASSERT_LT(size_t{chain} * kPageSize, data.size());
  // the chain's 300th page, found by walking it in the data file
  PageId id = chain;
  for (int i = 0; i < 300; i++) id = load32(data.data() + size_t{id} * kPageSize + 4);
  data[size_t{id} * kPageSize + 100] ^= 0x10;
  const uint64_t count = st->tree().count();
  EXPECT_EQ(st->tree().remove(sl("big2")), Status::kCorrupt);
  EXPECT_LE(pool.frame_count(), pool.target_frames() + 64);
  EXPECT_EQ(st->tree().set(sl("big2"), sl("x")), Status::kCorrupt);
  EXPECT_LE(pool.frame_count(), pool.target_frames() + 64);
  EXPECT_EQ(st->tree().count(), count);  // nothing removed
  EXPECT_EQ(st->tree().get(sl("big2"), &v), Status::kOk);
  // the tree is not broken: other writes go on and commit
  ASSERT_EQ(st->tree().set(sl("after"), sl("yes")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  EXPECT_LE(pool.frame_count(), pool.target_frames() + 64);
  st.reset();
  // reopened: everything but the damaged value reads back
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  EXPECT_EQ(st->tree().count(), count + 1);
  std::vector<uint8_t> buf;
  Slice got;
  ASSERT_EQ(st->tree().get(sl("after"), &v), Status::kOk);
  ASSERT_EQ(st->tree().read_value(v, &buf, &got), Status::kOk);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.data), got.len), "yes");
  ASSERT_EQ(st->tree().get(sl("big2"), &v), Status::kOk);
  EXPECT_EQ(st->tree().read_value(v, &buf, &got), Status::kCorrupt);
}

// A chain whose last page points back to its first (checksums intact): a read stops at the
// value's length with kCorrupt (the chain goes on), and a write that frees it stops at the
// value's page count with kCorrupt instead of walking for ever.
TEST(Store, ALoopingChainIsCorruptNotEndless) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  PageSum sum;
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("v"), sl(std::string(10 * kPageSize, 'v'))), Status::kOk);
    ASSERT_EQ(st->tree().set(sl("w"), sl("small")), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
    sum = st->page_sum();
  }
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  ValueRef v;
  ASSERT_EQ(st->tree().get(sl("v"), &v), Status::kOk);
  const PageId first = load32(v.ptr);
  std::vector<uint8_t>& data = ms.file(FileId::kData);
  PageId last = first;
  while (load32(data.data() + size_t{last} * kPageSize + 4) != kInvalidPageId) last = load32(data.data() + size_t{last} * kPageSize + 4);
  uint8_t* page = data.data() + size_t{last} * kPageSize;
  store32(page + 4, first);
  seal_page(page, last, sum);
  st.reset();
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  std::vector<uint8_t> buf;
  Slice got;
  ASSERT_EQ(st->tree().get(sl("v"), &v), Status::kOk);
  EXPECT_EQ(st->tree().read_value(v, &buf, &got), Status::kCorrupt);  // (it read 10 pages' worth and stopped)
  EXPECT_EQ(st->tree().remove(sl("v")), Status::kCorrupt);
  EXPECT_EQ(st->tree().set(sl("v"), sl("x")), Status::kCorrupt);
  EXPECT_NE(st->tree().check().find("overflow chain longer than its value"), std::string::npos);
  ASSERT_EQ(st->tree().set(sl("w"), sl("still writable")), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
}

// Inner pages that point back up the tree (checksums intact: a crafted or damaged file): a
// read or a write stops after kMaxHeight levels with kCorrupt. Before, a write's descent
// went on writing past its fixed path array (memory not its own), a read looped for ever.
TEST(Store, InnerPagesThatLoopAreCorrupt) {
  MemoryStorage ms;
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  PageSum sum;
  PageId root;
  {
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
    for (int i = 0; i < 2000; i++) ASSERT_EQ(st->tree().set(sl("key" + std::to_string(i)), sl(std::string(40, 'v'))), Status::kOk);
    ASSERT_EQ(st->commit(), Status::kOk);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
    ASSERT_GE(st->tree().height(), 2u);
    sum = st->page_sum();
    root = st->tree().root();
  }
  // every child of the root is the root
  uint8_t* page = ms.file(FileId::kData).data() + size_t{root} * kPageSize;
  ASSERT_EQ(page[0], static_cast<uint8_t>(PageTag::kBasicInner));
  BasicNode n{page};
  for (unsigned i = 0; i <= n.count(); i++) n.set_child(i, root);
  seal_page(page, root, sum);
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&ms, o, &st), Status::kOk);
  ValueRef v;
  EXPECT_EQ(st->tree().get(sl("key7"), &v), Status::kCorrupt);
  EXPECT_EQ(st->tree().set(sl("key7"), sl("x")), Status::kCorrupt);
  EXPECT_EQ(st->tree().remove(sl("key7")), Status::kCorrupt);
  for (uint32_t flags : {0u, kSeekEdge, kSeekEdge | kSeekReverse}) {
    Cursor c(&st->tree());
    Status s = c.seek(sl("key7"), flags);
    if (s == Status::kOk) {
      KeyBuffer k;
      s = c.next(&k, &v);
    }
    EXPECT_EQ(s, Status::kCorrupt) << "seek flags " << flags;
  }
}

TEST(Store, LargerThanPoolOnFiles) {
  const char* env = std::getenv("ADAPTREE_BIG_STORE_KEYS");
  const uint64_t n = std::max<uint64_t>(env ? std::strtoull(env, nullptr, 10) : 300000, 100000);
  char tmpl[] = "/tmp/adaptree-big-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/db";
  StoreOptions o;
  const char* pool_env = std::getenv("ADAPTREE_BIG_STORE_POOL");  // bytes; default 1 MiB
  o.pool_bytes = pool_env ? std::strtoull(pool_env, nullptr, 10) : 1 << 20;
  // Key i is a permutation of i (odd multiplier mod 2^32), value depends on i.
  auto key = [](uint64_t i) { return "key:" + std::to_string(static_cast<uint32_t>(i * 2654435761u)); };
  auto value = [](uint64_t i) { return "value-" + std::to_string(i) + std::string(i % 17, '.'); };
  {
    PosixStorage* ps = nullptr;
    ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
    std::unique_ptr<PosixStorage> hold(ps);
    std::unique_ptr<Store> st;
    ASSERT_EQ(Store::open(ps, o, &st), Status::kOk);
    for (uint64_t i = 0; i < n; i++) {
      ASSERT_EQ(st->tree().set(sl(key(i)), sl(value(i))), Status::kOk) << i;
      if (i % 50000 == 49999) ASSERT_EQ(st->commit(), Status::kOk);
    }
    ASSERT_EQ(st->commit(), Status::kOk);
    const BufferPool& pool = st->tree().store();
    EXPECT_GT(pool.live_pages(), 4u * pool.target_frames());  // several times the pool
    EXPECT_GT(pool.stats().evictions, n / 100);
    // The page table is sized by the pool's frames, not by the store's pages.
    EXPECT_LT(pool.page_table_bytes(), 64u * pool.target_frames());
    EXPECT_LE(pool.frame_count(), pool.target_frames() + 256);
    ASSERT_EQ(st->checkpoint(), Status::kOk);
  }
  PosixStorage* ps = nullptr;
  ASSERT_EQ(PosixStorage::open(path, &ps), Status::kOk);
  std::unique_ptr<PosixStorage> hold(ps);
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(ps, o, &st), Status::kOk);
  ASSERT_EQ(st->tree().count(), n);
  std::vector<uint8_t> buf;
  for (uint64_t i = 0; i < n; i++) {
    ValueRef v;
    ASSERT_EQ(st->tree().get(sl(key(i)), &v), Status::kOk) << i;
    Slice got;
    ASSERT_EQ(st->tree().read_value(v, &buf, &got), Status::kOk);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(got.data), got.len), value(i)) << i;
  }
  Cursor c(&st->tree());
  ASSERT_EQ(c.seek({}, kSeekEdge), Status::kOk);
  std::string prev;
  uint64_t seen = 0;
  for (;;) {
    KeyBuffer k;
    ValueRef v;
    Status s = c.next(&k, &v);
    if (s == Status::kNotFound) break;
    ASSERT_EQ(s, Status::kOk);
    std::string cur(reinterpret_cast<const char*>(k.data), k.len);
    if (seen++) ASSERT_LT(prev, cur);
    prev = cur;
  }
  EXPECT_EQ(seen, n);
  EXPECT_EQ(st->tree().check(), "");
  st.reset();
  hold.reset();
  std::string cmd = std::string("rm -rf ") + tmpl;
  EXPECT_EQ(system(cmd.c_str()), 0);
}
