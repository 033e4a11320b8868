// Point operations under the tree latch shared, with the leaf latched (docs/THREADS.md,
// phase 2a): BTree::get_latched, set_shared, remove_shared, the Contention Split
// counters and finish_shared, the work they leave for the exclusive latch. A file of
// their own: the single-threaded paths in btree.cc stay as they were compiled (their
// inlining), and the shared paths read apart from them.
#include <utility>

#include <cstring>

#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/leaf.h"
#include "core/tree/btree.h"
#include "core/util/checked.h"
#include "core/tree/overflow.h"

namespace adaptree {

namespace {
// As in btree.cc: merge two neighbours when together they are at least 3/4 empty.
constexpr unsigned kMergeThreshold = kNodeSize / 2;
const uint8_t kEmpty[1] = {0};
// How long a descent waits for a leaf parent held by a structure change under the shared latch
// (a regroup holds it ~10 us in wasm) before it restarts exclusive.
constexpr unsigned kParentSpins = 1u << 16;
// How often a shared write descends again, still shared, after another thread's structure
// change moved its leaf's range or held a page it needed (BTree::set_shared).
constexpr unsigned kSharedRetries = 8;
}  // namespace

// The parent step of a descent under the shared tree latch (phase 2c): a leaf's parent
// may be changing under its latch (w), so it is waited for briefly while latched, searched
// with a checked search (find: the node's bytes to a child id), and its word validated
// before the child is followed. kInvalidPageId: it stayed latched, or changed meanwhile.
template <class Find>
static PageId parent_step(std::atomic<uint64_t>* w, Find&& find, uint64_t* word) {
  uint64_t v = w->load(std::memory_order_acquire);
  for (unsigned spins = 0; frame_state::lock_state(v) != frame_state::kUnlocked; spins++) {
    if (spins >= kParentSpins) return kInvalidPageId;
    v = w->load(std::memory_order_acquire);
  }
  PageId id = find();
  std::atomic_thread_fence(std::memory_order_acquire);
  if (w->load(std::memory_order_relaxed) != v) return kInvalidPageId;
  *word = v;
  return id;
}

PageId BTree::descend_shared(Descent kind, Slice key, ParentRef* parent) const {
  PageId id = root_;
  for (unsigned d = 1; d < height_; d++) {
    uint8_t* p = store_.memory_page(id);
    BasicNode n{p};
    if (d + 1 < height_) {  // above the leaves' parents: changed only under the exclusive latch
      id = kind == Descent::kTo      ? n.child_for(key.data, key.len)
           : kind == Descent::kAfter ? n.child_after(key.data, key.len)
           : kind == Descent::kFirst ? n.child(0)
                                     : n.upper_child();
      continue;
    }
    std::atomic<uint64_t>* w = store_.latch_word(id);
    parent->latch = w;
    parent->page = p;
    parent->id = id;
    id = parent_step(
        w,
        [&] {
          return kind == Descent::kTo      ? n.child_for_checked(key.data, key.len)
                 : kind == Descent::kAfter ? n.child_after_checked(key.data, key.len)
                 : kind == Descent::kFirst ? n.child_checked(0)
                                           : n.upper_child();
        },
        &parent->word);
  }
  return id;
}

bool BTree::shared_leaf(Slice key, bool write, const ReadMode& mode, SharedLeaf* out) const {
  if (!store_.backed()) {
    out->id = descend_shared(Descent::kTo, key, &out->parent);
    if (out->id == kInvalidPageId) return false;
    out->page = store_.memory_page(out->id);
    out->latch = store_.latch_word(out->id);
    return true;
  }
  // A store: nothing loads or evicts under the shared latch (BufferPool::resident_frame);
  // a frame becomes dirty under its own latch (BufferPool::mark_dirty_shared). Inner nodes
  // above the leaves' parents change only under the exclusive one.
  if (write && store_.pressure()) return false;  // XMerge is due: the exclusive write runs it
  PageId id = root_;
  FrameId f = store_.resident_frame(id);
  for (unsigned d = 1; d < height_ && f != kNoFrame; d++) {
    store_.reference(f);
    uint8_t* p = store_.frame_bytes(f);
    if (d + 1 < height_) {
      id = BasicNode{p}.child_for(key.data, key.len);
    } else {
      out->parent = ParentRef{store_.frame_latch(f), 0, p, id, f};
      id = parent_step(
          out->parent.latch, [&] { return BasicNode{p}.child_for_checked(key.data, key.len); }, &out->parent.word);
      if (id == kInvalidPageId) return false;
    }
    f = store_.resident_frame(id);
  }
  if (f == kNoFrame) return false;
  store_.reference(f);
  store_.add_shared_hits(height_, reinterpret_cast<uintptr_t>(mode.rng));
  out->id = id;
  out->page = store_.frame_bytes(f);
  out->latch = store_.frame_latch(f);
  out->frame = f;
  return true;
}

// shared_leaf, then the leaf latched (exclusive to write, shared to read) once its parent
// still holds it: a structure change under the shared latch (phase 2c) that moved the
// leaf's range before it was latched sends the descent round again (kSharedRetries times).
// A write's leaf on a store is marked dirty first (the pager keeps its base). False: run
// exclusive (nothing is held).
bool BTree::latch_shared_leaf(Slice key, bool write, ReadMode& m, SharedLeaf* l, PageLatch* latch, bool* waited) {
  for (unsigned attempt = 0;; attempt++) {
    if (!shared_leaf(key, write, m, l)) return false;
    *latch = PageLatch(l->latch, m.block);
    if (write) latch->lock_exclusive(waited);
    else latch->lock_shared();
    if (l->parent.holds()) break;
    if (write) latch->unlock_exclusive_unchanged();
    else latch->unlock_shared();
    if (attempt >= kSharedRetries) return false;
  }
  if (write && store_.backed() && !store_.mark_dirty_shared(l->frame)) {
    latch->unlock_exclusive_unchanged();
    return false;
  }
  return true;
}

// Writers change leaves meanwhile (under their latches): latch the leaf; on
// kOk it stays latched for the caller to copy the value (ReadMode::release).
// Out of line: get() stays small enough for its leaf search to be inlined.
// The lookup comes before the counter step: under this latch the step never
// converts the leaf, so it cannot move the record `out` points to.
Status BTree::get_latched(Slice key, ValueRef* out, ReadMode& mode) {
  mode.release();
  SharedLeaf l;
  PageLatch latch(nullptr);
  if (!latch_shared_leaf(key, false, mode, &l, &latch)) return Status::kRestart;
  bool found = leaf::lookup(l.page, key, out);
  // A store's overflow chain is read through the pool, which only the exclusive latch may change.
  if (found && out->is_overflow() && store_.backed()) {
    latch.unlock_shared();
    return Status::kRestart;
  }
  if (cfg_.adaptive && read_only_ == Status::kOk) {
    uint8_t before = __atomic_load_n(l.page + hdr::kCounter, __ATOMIC_RELAXED);
    const bool drawn = mode.drawn;
    mode.drawn = false;
    if (!point_step_shared(l.page, *mode.rng, drawn)) {
      latch.unlock_shared();
      mode.step = true;  // drawn: the exclusive run takes it
      return Status::kRestart;
    }
    // A clean frame changed by a read no longer matches its stored image.
    if (store_.backed() && __atomic_load_n(l.page + hdr::kCounter, __ATOMIC_RELAXED) != before)
      store_.note_lossy_shared(l.frame);
  }
  if (!found) {
    latch.unlock_shared();
    return Status::kNotFound;
  }
  mode.held = l.latch;
  return Status::kOk;
}

// Phase 2b: no latch word is written. Inner nodes change only under the exclusive
// tree latch, so a child id read is followed once the latch's sequence shows that no
// exclusive holder came in meanwhile (read_check: where loads may be reordered that
// check is early, and memory_page_checked keeps a torn id from trapping in wasm; the
// fenced check at the end decides); a leaf also changes under its node latch
// (writers under the shared tree latch), so its version is read first and validated
// after the value is copied out. Torn images cannot lead a read outside the node
// (the checked searches) and end in a failed validation.
Status BTree::get_optimistic(Slice key, const TreeLatch& latch, uint64_t seq, XorShift32& rng, uint8_t* out,
                             uint32_t* out_len, bool* drew, TouchedFrames* touched) const {
  *drew = false;
  const bool backed = store_.backed();
  if (key.len > kMaxKeySize || broken_ != Status::kOk || (backed && !touched)) return Status::kRestart;
  if (!key.data) key.data = kEmpty;
  const unsigned height = height_;
  PageId id = root_;
  if (!latch.read_check(seq) || height > kMaxHeight) return Status::kRestart;
  uint8_t* p;
  FrameId f;
  // A leaf's parent may change under its latch (phase 2c): its word is read before its
  // search and validated with the leaf.
  const std::atomic<uint64_t>* pword = nullptr;
  uint64_t pv = 0;
  for (unsigned d = 1;; d++) {
    // A store: the frame as the page table shows it (a page not resident: latched,
    // which loads it). In memory mode a page is its frame.
    if (!backed) {
      f = id;
    } else {
      if ((f = store_.resident_frame_unlatched(id)) == kNoFrame) return Status::kRestart;
      touched->note(f, id);
    }
    if (!(p = store_.memory_page_checked(f))) return Status::kRestart;
    if (d >= height) break;
    if (d + 1 == height) {
      pword = BufferPool::latch_of(p, f);
      pv = pword->load(std::memory_order_acquire);
      if (frame_state::lock_state(pv) != frame_state::kUnlocked) return Status::kRestart;
    }
    id = BasicNode{p}.child_for_checked(key.data, key.len);
    if (id == kInvalidPageId || !latch.read_check(seq)) return Status::kRestart;
  }
  const std::atomic<uint64_t>* word = BufferPool::latch_of(p, f);  // (p is checked: no second load)
  uint64_t v = word->load(std::memory_order_acquire);
  if (frame_state::lock_state(v) >= frame_state::kExclusive) return Status::kRestart;  // a writer is in
  if (cfg_.adaptive && read_only_ == Status::kOk && point_step_draw(p, rng)) {
    *drew = true;  // the step writes the page: latched
    return Status::kRestart;
  }
  ValueRef ref;
  Probe r = leaf::lookup_checked(p, key, &ref);
  if (r == Probe::kBad) return Status::kRestart;
  if (r == Probe::kFound) {
    if (ref.is_overflow()) return Status::kRestart;
    const uint32_t len = ref.field & kValueLenMask;  // (<= kNodeSize: lookup_checked)
    if (out) copy_small(out, ref.ptr, len);
    *out_len = len;
  }
  std::atomic_thread_fence(std::memory_order_acquire);  // (the one fence of the read)
  const uint64_t now = word->load(std::memory_order_relaxed);
  if (frame_state::lock_state(now) >= frame_state::kExclusive || frame_state::version(now) != frame_state::version(v) ||
      (pword && pword->load(std::memory_order_relaxed) != pv) || !latch.read_check(seq))
    return Status::kRestart;
  if (backed) touched->hits += height, touched->reads++;
  return r == Probe::kFound ? Status::kOk : Status::kNotFound;
}

void BTree::settle(TouchedFrames& t, uintptr_t stripe) {
  if (store_.backed()) {
    for (unsigned i = 0; i < t.n; i++) store_.reference_if_holds(t.frames[i], t.pids[i]);
    if (t.hits) store_.add_shared_hits(t.hits, stripe);
  }
  t.clear();
}

// The counter step of a point write under the shared latch, with its leaf
// latched exclusive (readers step the same byte with atomics under the leaf's
// shared latch, so the step stays atomic). False: the step converts the leaf,
// which needs the scratch (exclusive); nothing changed, the exclusive run takes it.
static bool shared_write_step(uint8_t* p, ReadMode& m, bool (*step)(uint8_t*, XorShift32&, bool)) {
  if (m.counted) return true;
  if (!step(p, *m.rng, false)) {
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
  if (!m.leaves || !value_is_inline(key.len, value.len)) return Status::kRestart;
  // Room that another thread's latches kept this write from making: descend again, still
  // shared (kSharedRetries times), rather than take the exclusive latch for what is over in
  // microseconds (latch_shared_leaf does the same for a leaf whose range moved).
  for (unsigned attempt = 0;; attempt++) {
    SharedLeaf l;
    PageLatch latch(nullptr);
    bool waited = false;
    if (!latch_shared_leaf(key, true, m, &l, &latch, &waited)) return Status::kRestart;
    const PageId id = l.id;
    uint8_t* p = l.page;
    if (cfg_.adaptive && !shared_write_step(p, m, &BTree::point_step_shared)) {
      latch.unlock_exclusive_unchanged();
      return Status::kRestart;
    }
    // A record whose value has overflow pages is left alone: replacing it frees its chain,
    // which the free list (the tree's) takes only under the exclusive latch. Done here, the
    // chain was left for finish_shared, and whatever ran exclusive in the gap saw its pages
    // neither reachable nor free: checkInvariants reported a leak (CORRUPT) on a healthy tree,
    // and the owner's commit of a shared store made it durable, so a crash before the next
    // commit left the store failing its checks for good (a new-user probe, session 27). Such
    // a write runs exclusive, as one that allocates overflow pages does (the step is carried).
    OldValue old;
    old.keep_overflow = true;
    PutResult r = leaf::upsert(p, key, value.data ? value.data : kEmpty, static_cast<uint16_t>(value.len), &old, room_);
    if (r == PutResult::kKeptOverflow) {
      latch.unlock_exclusive_unchanged();
      return Status::kRestart;
    }
    if (r == PutResult::kNoSpace) {
      // Neighbours may take records, or two leaves become three (a store), or the leaf
      // splits (a map): phase 2c. Else a conversion or a split: exclusive (the counter
      // step is taken).
      SharedRoom room = store_.backed() ? make_room_shared(l, key, value, m, &old, &r)
                                        : split_shared(l, key, value, m, &old, &r);
      if (room != SharedRoom::kInserted) {
        if (room == SharedRoom::kMoved) latch.unlock_exclusive();
        else latch.unlock_exclusive_unchanged();
        if (room != SharedRoom::kNone && attempt < kSharedRetries) continue;
        return Status::kRestart;
      }
    }
    if (csplit_ && !store_.backed()) note_contention(id, p, key, waited || m.contended, m);
    latch.unlock_exclusive();
    m.counted = false;
    CountStripe& cs = counts_[id % kCountStripes];
    if (r == PutResult::kInserted) cs.n.fetch_add(1, std::memory_order_relaxed);
    if (store_.backed()) cs.writes.fetch_add(1, std::memory_order_relaxed);
    return Status::kOk;
  }
}

// The exclusive make_room's first step for a comparison-based leaf that cannot take key:
// a conversion to a dense layout (fully, then semi-dense) that makes room. True if one
// would (built into dst, a page of scratch): a shared structure change leaves it to the
// exclusive run.
bool BTree::converts_for(uint8_t* dst, const Fences& f, const RecordRef* recs, unsigned n, Slice key,
                         uint16_t vfield) const {
  return (cfg_.fully_dense_leaves && dense_build(dst, PageTag::kFullyDenseLeaf, f, recs, n, &key, vfield)) ||
         (cfg_.semi_dense_leaves && dense_build(dst, PageTag::kSemiDenseLeaf, f, recs, n, &key, vfield));
}

// Phase 2c (docs/THREADS.md): a store's write whose basic leaf is full makes room as the
// exclusive make_room would, under the shared tree latch: the same Rebalancer code
// (before_split: a redistribution over two or three leaves, by shifts or a regroup, or a
// 2-to-3 split), run by the calling context's own Rebalancer (its scratch) over the pages
// at hand. The caller holds the leaf exclusive; the parent and the leaves up to two to
// either side are latched exclusive by try, never waited for (kBusy: one was taken), and
// a clean one is marked dirty right before its first change (Rebalancer::write,
// BufferPool::mark_dirty_shared); one that is not resident is left out, as the exclusive
// run leaves it out. A 2-to-3 split's new page comes from BufferPool::allocate_shared.
// Whatever the exclusive make_room would do first or instead (convert the leaf to a dense
// layout, an edge or partition-aware split, a plain split) is left to it: kNone, nothing
// changed. kInserted: the leaves changed and key is in (*r, *old as leaf::upsert gives
// them); kMoved: they changed but key did not fit after all (the caller descends again).
BTree::SharedRoom BTree::make_room_shared(const SharedLeaf& l, Slice key, Slice value, ReadMode& m, OldValue* old,
                                          PutResult* r) {
  // Stores only: a map redistributes only when asked to (fill), and then splits exclusive.
  if (!store_.backed() || store_.asynchronous() || !l.parent.latch || !m.recs || !m.scratch || !m.rebalancer ||
      !fill_.redistribute || !rebalance_)
    return SharedRoom::kNone;
  uint8_t* lp = l.page;
  if (lp[0] != static_cast<uint8_t>(PageTag::kBasicLeaf)) return SharedRoom::kNone;
  const uint16_t vfield = static_cast<uint16_t>(value.len);
  std::vector<RecordRef>& recs = *m.recs;
  const Fences lf = fences_of(lp);
  const unsigned n = leaf::count(lp);
  if ((lf.upper_inf || lf.lower_inf) && n > 0) return SharedRoom::kNone;  // appends: an edge split
  if (cfg_.fully_dense_leaves || cfg_.semi_dense_leaves) {
    if (!resize_checked(recs, n)) return SharedRoom::kNone;
    BasicNode{lp}.extract(recs.data());
    if (converts_for(m.scratch, lf, recs.data(), n, key, vfield)) return SharedRoom::kNone;
  }
  PageLatch parent(l.parent.latch);
  if (!parent.try_lock_exclusive()) return SharedRoom::kBusy;
  BasicNode pn{l.parent.page};
  bool exact;
  const int pos = static_cast<int>(pn.lower_bound(key.data, key.len, &exact)), c = static_cast<int>(pn.count());
  SharedGroup g;
  g.add(l.parent.id, l.parent.page, l.parent.frame);
  g.add(l.id, lp, l.frame);
  std::atomic<uint64_t>* held[4];
  unsigned nheld = 0;
  bool busy = false;  // a leaf another thread holds
  // The leaves before_split looks at: pos - 2 .. pos + 2.
  bool ok = pos <= c && pn.child(static_cast<unsigned>(pos)) == l.id;
  for (int q = pos - 2; q <= pos + 2 && ok; q++) {
    if (q == pos || q < 0 || q > c) continue;
    const PageId id = pn.child(static_cast<unsigned>(q));
    const FrameId f = store_.resident_frame(id);
    if (f == kNoFrame) continue;  // (as the exclusive run: not at hand)
    std::atomic<uint64_t>* w = store_.frame_latch(f);
    if (!PageLatch(w).try_lock_exclusive()) {
      ok = false, busy = true;
      break;
    }
    held[nheld++] = w;
    g.add(id, store_.frame_bytes(f), f);
  }
  bool changed = false;
  if (ok) {
    Rebalancer& rb = *m.rebalancer;
    rb.bind(this, &g);
    const PageId ids[2] = {l.parent.id, l.id};
    changed = rb.before_split(ids, 2, key, vfield);
    if (changed) {
      // The leaf that holds key's range now: one of the group's, or a new one.
      uint8_t* kp = nullptr;
      for (unsigned i = 1; i < g.n && !kp; i++)
        if (key_in_fences(fences_of(g.pages[i]), key)) kp = g.pages[i];
      const SharedGroup& fresh = rb.allocated();
      for (unsigned i = 0; i < fresh.n && !kp; i++)
        if (key_in_fences(fences_of(fresh.pages[i]), key)) kp = fresh.pages[i];
      *r = kp ? leaf::upsert(kp, key, value.data ? value.data : kEmpty, vfield, old, room_) : PutResult::kNoSpace;
    }
    rb.absorb_into(*rebalance_);
  }
  for (unsigned i = 0; i < nheld; i++) {
    PageLatch w(held[i]);
    if (changed) w.unlock_exclusive();
    else w.unlock_exclusive_unchanged();
  }
  if (!changed) {
    parent.unlock_exclusive_unchanged();
    return busy ? SharedRoom::kBusy : SharedRoom::kNone;
  }
  parent.unlock_exclusive();
  return *r == PutResult::kNoSpace ? SharedRoom::kMoved : SharedRoom::kInserted;
}

// Phase 2c on a shared map (docs/THREADS.md): a write whose basic or fingerprint leaf is
// full splits it under the shared tree latch, as split_leaf would (the same images,
// split_images, built from a copy in the context's scratch), where its parent has room
// for the separator and the pool a page without growing. The caller holds the leaf
// exclusive; the parent is latched exclusive by try. The new lower half is written to
// the new page and key put in its half before the parent, unlatched last, shows either.
// kNone (nothing changed: a dense conversion comes first, a redistribution is on, the
// parent is full or latched, the pool must grow): the exclusive run does it.
BTree::SharedRoom BTree::split_shared(const SharedLeaf& l, Slice key, Slice value, ReadMode& m, OldValue* old,
                                      PutResult* r) {
  if (store_.backed() || fill_.redistribute || !l.parent.latch || !m.recs || !m.scratch) return SharedRoom::kNone;
  uint8_t* lp = l.page;
  // The tree's first and last leaves split exclusive: an append there fills the neighbour
  // or splits at the edge (Rebalancer::before_split, FillOptions::edges).
  if (fill_.edges && (lp[hdr::kFlags] & (kFlagLowerInf | kFlagUpperInf))) return SharedRoom::kNone;
  if (lp[0] != static_cast<uint8_t>(PageTag::kBasicLeaf) && lp[0] != static_cast<uint8_t>(PageTag::kFingerprintLeaf))
    return SharedRoom::kNone;
  const uint16_t vfield = static_cast<uint16_t>(value.len);
  uint8_t* copy = m.scratch;
  uint8_t* lower = m.scratch + kPageSize;
  uint8_t* upper = m.scratch + 2 * kPageSize;
  memcpy(copy, lp, kPageSize);  // (a fingerprint leaf sorts as it extracts)
  const unsigned n = leaf::count(copy);
  std::vector<RecordRef>& recs = *m.recs;
  if (n == 0 || !resize_checked(recs, n)) return SharedRoom::kNone;
  if (copy[0] == static_cast<uint8_t>(PageTag::kBasicLeaf)) BasicNode{copy}.extract(recs.data());
  else FingerprintLeaf{copy}.extract(recs.data());
  const Fences lf = fences_of(copy);
  if (converts_for(lower, lf, recs.data(), n, key, vfield)) return SharedRoom::kNone;
  KeyBuffer sep;
  if (!split_images(copy, recs.data(), n, key, 0, lower, upper, &sep)) return SharedRoom::kNone;
  PageLatch parent(l.parent.latch);
  if (!parent.try_lock_exclusive()) return SharedRoom::kBusy;
  BasicNode pn{l.parent.page};
  bool exact;
  const unsigned pos = pn.lower_bound(key.data, key.len, &exact), plen = pn.prefix_len();
  PageId id;
  if (pos > pn.count() || pn.child(pos) != l.id || sep.len < plen ||
      pn.entry_space(sep.len - plen, 4) > pn.free_space_after_compaction() || !store_.allocate_shared(&id)) {
    parent.unlock_exclusive_unchanged();
    return SharedRoom::kNone;
  }
  uint8_t* np = store_.memory_page(id);
  memcpy(np, lower, kPageSize);
  memcpy(lp, upper, kPageSize);
  *store_.contention_word(id) = 0;
  insert_separator(l.parent.id, sep.slice(), id);  // (memory mode: page_mut is the page)
  *r = leaf::upsert(compare(key, sep.slice()) <= 0 ? np : lp, key, value.data ? value.data : kEmpty, vfield, old, room_);
  parent.unlock_exclusive();
  shared_splits_.fetch_add(1, std::memory_order_relaxed);
  return *r == PutResult::kNoSpace ? SharedRoom::kMoved : SharedRoom::kInserted;
}

Status BTree::remove_shared(Slice key, ReadMode& m) {
  Status w = writable();
  if (w != Status::kOk) return w;
  if (!m.leaves) return Status::kRestart;
  SharedLeaf l;
  PageLatch latch(nullptr);
  if (!latch_shared_leaf(key, true, m, &l, &latch)) return Status::kRestart;
  const PageId id = l.id;
  uint8_t* p = l.page;
  if (cfg_.adaptive && !shared_write_step(p, m, &BTree::point_step_shared)) {
    latch.unlock_exclusive_unchanged();
    return Status::kRestart;
  }
  // A value with overflow pages: exclusive, as in set_shared.
  OldValue old;
  old.keep_overflow = true;
  if (!leaf::remove(p, key, &old)) {
    latch.unlock_exclusive_unchanged();
    if (old.overflow) return Status::kRestart;  // (the counter step is carried: m.counted)
    m.counted = false;
    return Status::kNotFound;
  }
  m.counted = false;
  bool underfull = height_ > 1 && content_bytes(p) <= kMergeThreshold;
  latch.unlock_exclusive();
  CountStripe& cs = counts_[id % kCountStripes];
  cs.n.fetch_sub(1, std::memory_order_relaxed);
  if (store_.backed()) cs.writes.fetch_add(1, std::memory_order_relaxed);
  __atomic_fetch_add(&erase_epoch_, 1, __ATOMIC_RELEASE);
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
  if (store_.backed()) {
    // A store: what the merge reads may have to come in first, as for any exclusive
    // write. If it cannot (I/O failure, or another thread's failed commit made the store
    // read-only meanwhile), the work is dropped: an underfull leaf is a valid tree.
    Status ps = begin_write(key);
    if (ps != Status::kOk) {
      m->contention_split = 0;
      m->rebalance = false;
      return ps;
    }
  }
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
  return store_.backed() ? end_write(s) : s;
}

}  // namespace adaptree
