// Point operations under the tree latch shared, with the leaf latched (docs/THREADS.md,
// phase 2a): BTree::get_latched, set_shared, remove_shared, the Contention Split
// counters and finish_shared, the work they leave for the exclusive latch. A file of
// their own: the single-threaded paths in btree.cc stay as they were compiled (their
// inlining), and the shared paths read apart from them.
#include <utility>

#include "core/layouts/leaf.h"
#include "core/tree/btree.h"
#include "core/tree/overflow.h"

namespace adaptree {

namespace {
// As in btree.cc: merge two neighbours when together they are at least 3/4 empty.
constexpr unsigned kMergeThreshold = kNodeSize / 2;
const uint8_t kEmpty[1] = {0};
}  // namespace

// Writers change leaves meanwhile (under their latches): latch the leaf; on
// kOk it stays latched for the caller to copy the value (ReadMode::release).
// Out of line: get() stays small enough for its leaf search to be inlined.
Status BTree::get_latched(Slice key, ValueRef* out, ReadMode& mode) {
  mode.release();
  PageId id = leaf_for(key);
  PageLatch latch(store_.latch_word(id));
  latch.lock_shared();
  uint8_t* leaf = store_.memory_page(id);
  if (cfg_.adaptive && !point_step_shared(leaf, *mode.rng)) {
    latch.unlock_shared();
    mode.step = true;  // drawn: the exclusive run takes it
    return Status::kRestart;
  }
  if (!leaf::lookup(leaf, key, out)) {
    latch.unlock_shared();
    return Status::kNotFound;
  }
  mode.held = store_.latch_word(id);
  return Status::kOk;
}

// Nothing changes the pool or the pages meanwhile but other readers stepping the
// adaptive counter (atomically). The lookup comes before the counter step here: the
// step never converts under this latch, so it cannot move the record `out` points to,
// and an overflow value restarts before anything was stepped.
Status BTree::get_resident(Slice key, ValueRef* out, ReadMode& mode) {
  PageId id = root_;
  const uint8_t* leaf;
  uint32_t pages = 0;
  for (;;) {
    leaf = store_.resident_page(id);
    if (!leaf) return Status::kRestart;
    pages++;
    if (leaf[0] != static_cast<uint8_t>(PageTag::kBasicInner)) break;
    id = BasicNode{const_cast<uint8_t*>(leaf)}.child_for(key.data, key.len);
  }
  store_.add_shared_hits(pages, reinterpret_cast<uintptr_t>(mode.rng));
  bool found = leaf::lookup(const_cast<uint8_t*>(leaf), key, out);
  if (found && out->is_overflow()) return Status::kRestart;  // its chain is read exclusive
  if (cfg_.adaptive && read_only_ == Status::kOk) {
    uint8_t* p = const_cast<uint8_t*>(leaf);
    uint8_t before = __atomic_load_n(p + hdr::kCounter, __ATOMIC_RELAXED);
    if (!point_step_shared(p, *mode.rng)) {
      mode.step = true;  // drawn: the exclusive run takes it
      return Status::kRestart;
    }
    if (__atomic_load_n(p + hdr::kCounter, __ATOMIC_RELAXED) != before) store_.note_lossy_shared(id);
  }
  return found ? Status::kOk : Status::kNotFound;
}

// The counter step of a point write under the shared latch, with its leaf
// latched exclusive (readers step the same byte with atomics under the leaf's
// shared latch, so the step stays atomic). False: the step converts the leaf,
// which needs the scratch (exclusive); nothing changed, the exclusive run takes it.
static bool shared_write_step(uint8_t* p, ReadMode& m, bool (*step)(uint8_t*, XorShift32&)) {
  if (m.counted) return true;
  if (!step(p, *m.rng)) {
    m.step = true;
    return false;
  }
  m.counted = true;
  return true;
}

Status BTree::set_shared(Slice key, Slice value, ReadMode& m) {
  Status w = writable();
  if (w != Status::kOk) return w;
  // An overflow value allocates pages: the free list is the tree's.
  if (!m.leaves || store_.backed() || !value_is_inline(key.len, value.len)) return Status::kRestart;
  PageId id = leaf_for(key);
  PageLatch latch(store_.latch_word(id));
  bool waited;
  latch.lock_exclusive(&waited);
  uint8_t* p = store_.memory_page(id);
  if (cfg_.adaptive && !shared_write_step(p, m, &BTree::point_step_shared)) {
    latch.unlock_exclusive_unchanged();
    return Status::kRestart;
  }
  OldValue old;
  PutResult r = leaf::upsert(p, key, value.data ? value.data : kEmpty, static_cast<uint16_t>(value.len), &old);
  if (r == PutResult::kNoSpace) {  // a split or conversion: exclusive (the counter step is taken)
    latch.unlock_exclusive_unchanged();
    return Status::kRestart;
  }
  if (csplit_) note_contention(id, p, key, waited || m.contended, m);
  latch.unlock_exclusive();
  m.counted = false;
  if (r == PutResult::kInserted) counts_[id % kCountStripes].n.fetch_add(1, std::memory_order_relaxed);
  // The replaced value's pages: nobody reaches them now, but a reader under the
  // shared latch may still be copying them. Freed under the exclusive latch.
  if (old.overflow) m.free_chain = old.first_page;
  return Status::kOk;
}

Status BTree::remove_shared(Slice key, ReadMode& m) {
  Status w = writable();
  if (w != Status::kOk) return w;
  if (!m.leaves || store_.backed()) return Status::kRestart;
  PageId id = leaf_for(key);
  PageLatch latch(store_.latch_word(id));
  latch.lock_exclusive();
  uint8_t* p = store_.memory_page(id);
  if (cfg_.adaptive && !shared_write_step(p, m, &BTree::point_step_shared)) {
    latch.unlock_exclusive_unchanged();
    return Status::kRestart;
  }
  m.counted = false;
  OldValue old;
  if (!leaf::remove(p, key, &old)) {
    latch.unlock_exclusive_unchanged();
    return Status::kNotFound;
  }
  bool underfull = height_ > 1 && content_bytes(p) <= kMergeThreshold;
  latch.unlock_exclusive();
  counts_[id % kCountStripes].n.fetch_sub(1, std::memory_order_relaxed);
  if (old.overflow) m.free_chain = old.first_page;
  if (underfull) m.rebalance = true;  // merging changes the parent: exclusive, after
  return Status::kOk;
}

// Contention Split's probabilistic counters (paper, listing 1), in the leaf's
// contention word: sampled updates (16 bits), how many of them waited for the
// latch (16 bits), the record index last sampled + 1 (16 bits; 0 none). A
// period ends with probability 2^-9: if enough of its sampled updates waited,
// and this update's record is not the one last sampled, the leaf is contended
// by writers of different records: split between the two. The paper asks for
// every sampled update to have waited (many threads on one leaf); with two
// workers a contended leaf finds its latch taken in a part of the updates, so
// one in eight (of at least eight samples) counts here.
void BTree::note_contention(PageId id, uint8_t* p, Slice key, bool waited, ReadMode& m) {
  // The record's position in key order: a basic leaf's slot, or a sorted fingerprint leaf's.
  // A hot leaf under the adaptive configuration becomes a fingerprint leaf (its point
  // operations count it down) with its newest records unsorted; counting only basic leaves,
  // Contention Split never fired there (0 splits in every threads bench run).
  const bool basic = p[0] == static_cast<uint8_t>(PageTag::kBasicLeaf);
  if (!basic && p[0] != static_cast<uint8_t>(PageTag::kFingerprintLeaf)) return;
  uint32_t r = m.rng->next();
  constexpr uint32_t kSample = 1u << 30, kPeriod = 1u << 23;  // 2^-2, 2^-9
  if (r >= kSample) return;
  uint64_t* w = store_.contention_word(id);
  uint64_t updates = *w & 0xFFFF, slow = (*w >> 16) & 0xFFFF, last = (*w >> 32) & 0xFFFF;
  const bool contended = updates >= 8 && slow * 8 >= updates;
  // An unsorted fingerprint leaf has no positions: once its sampled updates show it
  // contended, it is sorted here (this leaf alone, under its exclusive latch, as the lazy
  // sort before scans is; updates keep it sorted); until then they count without one.
  bool positioned = basic || FingerprintLeaf{p}.is_sorted();
  if (!positioned && contended) {
    FingerprintLeaf{p}.sort();
    positioned = true;
  }
  bool exact;
  const unsigned pos = !positioned ? 0
                       : basic     ? static_cast<unsigned>(BasicNode{p}.lower_bound(key.data, key.len, &exact))
                                   : static_cast<unsigned>(FingerprintLeaf{p}.lower_bound(key, &exact));
  if (r < kPeriod) {
    if (positioned && contended && last != 0 && last - 1 != pos) {
      unsigned a = static_cast<unsigned>(last - 1), b = pos;
      if (a > b) std::swap(a, b);
      m.contention_split = (a + b + 1) / 2;  // records a and b end up in different leaves
    }
    *w = 0;
    return;
  }
  if (updates < 0xFFFF) {
    updates++;
    slow += waited;
  }
  *w = updates | (slow << 16) | (uint64_t{positioned ? pos + 1 : 0} << 32);  // 0: no position
}

Status BTree::finish_shared(Slice key, ReadMode* m) {
  Status s = Status::kOk;
  if (!key.data) key.data = kEmpty;
  if (unsigned at = m->contention_split) {
    m->contention_split = 0;
    Path path;
    PageId leaf = descend(key, &path);
    const uint8_t* p = page(leaf);
    // Other writers came in between: only a leaf of either counted layout that still has
    // records on both sides (split_leaf takes them in key order).
    const bool counted = p[0] == static_cast<uint8_t>(PageTag::kBasicLeaf) || p[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf);
    if (counted && at < leaf::count(p) && leaf::count(p) >= 4) {
      unsigned before = leaf::count(p);
      Status r = split_leaf(&path, key, at);
      if (r == Status::kOk && leaf::count(page(leaf)) < before) {  // (not when a parent split first)
        csplits_++;
        if (height_ > 2) fix_keyless_inner(key);
      }
      if (s == Status::kOk && r != Status::kOk) s = r;
    }
  }
  if (m->free_chain != kInvalidPageId) {
    s = overflow_free(store_, m->free_chain);
    m->free_chain = kInvalidPageId;
  }
  if (m->rebalance) {
    m->rebalance = false;
    // Other writers came in between: merge only if the leaf is still underfull.
    Path path;
    PageId leaf = descend(key, &path);
    if (path.depth > 1 && content_bytes(page(leaf)) <= kMergeThreshold) {
      Status r = rebalance(&path, key);
      if (s == Status::kOk) s = r;
    }
  }
  return s;
}

}  // namespace adaptree
