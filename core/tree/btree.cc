#include "core/tree/btree.h"
#include "core/util/checked.h"

#include <climits>

#include "core/layouts/dense_keys.h"
#include "core/layouts/leaf.h"
#include "core/tree/overflow.h"
#include "core/layouts/separator.h"

namespace adaptree {

namespace {
// Operation-adaption probabilities (paper, section 5.1) as thresholds on a
// uniformly distributed u32.
constexpr uint32_t kScanIncrementThreshold = static_cast<uint32_t>(0.15 * 4294967296.0);
constexpr uint32_t kPointDecrementThreshold = static_cast<uint32_t>(0.05 * 4294967296.0);
// Merge two neighbours when together they are at least 3/4 empty.
constexpr unsigned kMergeThreshold = kNodeSize / 2;
// Guard against a structure modification that makes no progress.
constexpr unsigned kMaxAttempts = 100000;
const uint8_t kEmpty[1] = {0};
}  // namespace

BTree::BTree(LayoutConfig layout) : cfg_(Config::of(layout)), layout_(layout) {}
BTree::~BTree() = default;

Rebalancer* BTree::rebalancer() {
  if (!rebalance_) rebalance_.reset(new (std::nothrow) Rebalancer(this));
  return rebalance_.get();
}

uint8_t BTree::leaf_flags() const {
  return (cfg_.heads ? kFlagHeads : 0) | (cfg_.hints && cfg_.heads ? kFlagHints : 0);
}
uint8_t BTree::inner_flags() const { return leaf_flags(); }

void BTree::adopt(PageId root, unsigned height, uint64_t count) {
  root_ = root;
  height_ = height;
  set_count(count);
  version_++;
}

Status BTree::init() {
  PageId id;
  Status s = store_.allocate(&id);
  if (s != Status::kOk) return s;
  build_leaf(page_mut(id), Fences{}, nullptr, 0, kCounterDisabled);
  root_ = id;
  height_ = 1;
  set_count(0);
  version_++;
  return Status::kOk;
}

void BTree::release_subtree(PageId id) {
  uint8_t* p = page(id);
  if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) return;
  BasicNode n{p};
  for (unsigned i = 0, c = n.count(); i <= c; i++) {
    PageId child = n.child(i);
    release_subtree(child);
    store_.release(child);
  }
}

Status BTree::copy_page(PageId id, uint8_t* out) const {
  store_.begin_op();
  uint8_t* p;
  Status s = store_.fix(id, &p);
  if (s != Status::kOk) return s;
  memcpy(out, p, kPageSize);
  return Status::kOk;
}

Status BTree::clear() {
  Status w = writable();
  if (w != Status::kOk) return w;
  store_.begin_op();
  store_.clear();
  __atomic_fetch_add(&erase_epoch_, 1, __ATOMIC_RELEASE);
  return end_write(init());
}

// ---------------------------------------------------------------- descent

PageId BTree::descend(Slice key, Path* path) const {
  PageId id = root_;
  unsigned d = 0;
  for (;;) {
    path->ids[d++] = id;
    const uint8_t* p = page(id);
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) {
      path->depth = d;
      if (!is_leaf_tag(p[0])) [[unlikely]] store_.note_corrupt(id);  // (an overflow page as a child)
      return id;
    }
    if (d == kMaxHeight) {
      // Inner pages deeper than any tree: they loop (a damaged store whose checksums
      // hold). The path is full: the operation fails with kCorrupt.
      store_.note_corrupt(id);
      path->depth = d;
      return id;
    }
    id = BasicNode{const_cast<uint8_t*>(p)}.child_for(key.data, key.len);
  }
}

PageId BTree::leaf_for(Slice key) const {
  PageId id = root_;
  for (unsigned d = 1; d < height_; d++) id = BasicNode{store_.memory_page(id)}.child_for(key.data, key.len);
  return id;
}

PageId BTree::descend_after(Slice key) const {
  PageId id = root_;
  for (unsigned level = 1;; level++) {
    uint8_t* p = page(id);
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) {
      if (!is_leaf_tag(p[0])) [[unlikely]] store_.note_corrupt(id);
      return id;
    }
    if (level == kMaxHeight) return store_.note_corrupt(id), id;  // pages that loop (descend)
    id = BasicNode{p}.child_after(key.data, key.len);
  }
}

PageId BTree::descend_edge(bool rightmost) const {
  PageId id = root_;
  for (unsigned level = 1;; level++) {
    uint8_t* p = page(id);
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) {
      if (!is_leaf_tag(p[0])) [[unlikely]] store_.note_corrupt(id);
      return id;
    }
    if (level == kMaxHeight) return store_.note_corrupt(id), id;  // pages that loop (descend)
    BasicNode n{p};
    id = rightmost ? n.upper_child() : n.child(0);
  }
}

// ---------------------------------------------------------------- point operations

Status BTree::get(Slice key, ValueRef* out, ReadMode* mode) {
  if (key.len > kMaxKeySize) return Status::kKeyTooLarge;
  if (broken_ != Status::kOk) return broken_;
  if (!key.data) key.data = kEmpty;
  PageId id = root_;
  uint8_t* leaf;
  if (mode && mode->leaves && mode->shared) [[unlikely]] return get_latched(key, out, *mode);
  if (!store_.backed()) {
    // Memory mode: pages never fail and never move; nothing to protect.
    for (;;) {
      leaf = store_.memory_page(id);
      touch_lines(leaf, 8);
      if (leaf[0] != static_cast<uint8_t>(PageTag::kBasicInner)) break;
      id = BasicNode{leaf}.child_for(key.data, key.len);
    }
  } else {
    store_.begin_op();
    for (unsigned level = 1;; level++) {
      leaf = page(id);
      touch_lines(leaf, 8);
      if (leaf[0] != static_cast<uint8_t>(PageTag::kBasicInner)) break;
      if (level == kMaxHeight) return Status::kCorrupt;  // inner pages that loop (descend)
      id = BasicNode{leaf}.child_for(key.data, key.len);
    }
    if (store_.failure() != Status::kOk) return store_.failure();
    if (!is_leaf_tag(leaf[0])) [[unlikely]] return Status::kCorrupt;  // (an overflow page as a child)
  }
  if (cfg_.adaptive) {
    if (!mode) {
      if (static_cast<int8_t>(leaf[hdr::kCounter]) > 0) on_point_op_counted(id);
    } else if (mode->shared) {
      if (!point_step_shared(leaf, *mode->rng)) {
        mode->step = true;  // drawn: the exclusive run takes it
        return Status::kRestart;
      }
    } else if (mode->step) {
      mode->step = false;
      point_step(id, leaf);
    } else if (static_cast<int8_t>(leaf[hdr::kCounter]) > 0) {
      on_point_op_counted(id);
    }
  }
  return leaf::lookup(leaf, key, out) ? Status::kOk : Status::kNotFound;
}

Status BTree::contains(Slice key) {
  ValueRef v;
  return get(key, &v);
}

Status BTree::read_value(const ValueRef& ref, std::vector<uint8_t>* buf, Slice* out) const {
  if (!ref.is_overflow()) {
    *out = {ref.ptr, static_cast<uint32_t>(ref.field & kValueLenMask)};
    return Status::kOk;
  }
  if (!value_length_ok(ref)) return Status::kCorrupt;
  uint64_t len = ref.length();
  if (!handed_.empty()) std::vector<uint8_t>().swap(handed_);
  store_.end_protection();
  // Going on after a fault: the value ends whole in the read's own bytes, which go out as
  // they are (no second copy of a large value).
  Status kept = finish_kept_read(ref, &handed_);
  if (kept != Status::kNotFound) {
    *out = {handed_.data(), static_cast<uint32_t>(len)};
    return kept;
  }
  // A read that cannot get the memory fails typed and changes nothing.
  if (buf->size() < len && !resize_checked(*buf, len)) return Status::kOutOfMemory;
  Status s = read_overflow(ref, buf->data());
  *out = {buf->data(), static_cast<uint32_t>(len)};
  return s;
}

BTree::ChainRead* BTree::read_of(const ValueRef& ref) const {
  const PageId first = load32(ref.ptr);
  const uint64_t len = ref.length(), gen = store_.reuse_generation();
  for (size_t i = 0; i < reads_.size();) {
    ChainRead& r = reads_[i];
    if (r.gen != gen) {
      drop_read(i);  // the chain may have other contents now
      continue;
    }
    if (r.first == first && r.len == len) return &r;
    i++;
  }
  return nullptr;
}

Status BTree::finish_kept_read(const ValueRef& ref, std::vector<uint8_t>* whole) const {
  ChainRead* r = read_of(ref);
  if (r == nullptr) return Status::kNotFound;
  const size_t i = static_cast<size_t>(r - reads_.data());
  Status s = overflow_read_from(store_, &r->next, r->len, r->bytes.data(), &r->done);
  if (s == Status::kNeedPage) return s;
  if (s == Status::kOk) whole->swap(r->bytes);
  drop_read(i);
  return s;
}

Status BTree::read_overflow(const ValueRef& ref, uint8_t* out) const {
  if (!value_length_ok(ref)) return Status::kCorrupt;
  const uint64_t len = ref.length();
  std::vector<uint8_t> whole;
  Status kept = finish_kept_read(ref, &whole);
  if (kept == Status::kOk) memcpy(out, whole.data(), len);
  if (kept != Status::kNotFound) return kept;
  PageId at = load32(ref.ptr);
  uint64_t done = 0;
  Status s = overflow_read_from(store_, &at, len, out, &done);
  // (Only an asynchronous store, never shared between threads, keeps a read: readers of a
  // shared tree run this side by side.)
  if (s == Status::kNeedPage && store_.asynchronous()) {
    // What was read moves to a buffer of its own, where the retry goes on. Without the
    // memory for it, the retry starts over as before.
    if (reads_.size() >= kChainsKept) drop_read(0);
    ChainRead r;
    if (resize_checked(r.bytes, len) && reserve_checked(reads_, reads_.size() + 1)) {
      memcpy(r.bytes.data(), out, done);
      r.first = load32(ref.ptr);
      r.next = at;
      r.len = len;
      r.done = done;
      r.gen = store_.reuse_generation();
      reads_.push_back(std::move(r));
    }
  }
  return s;
}

Status BTree::set(Slice key, Slice value, ReadMode* mode) {
  if (key.len > max_key_size()) return Status::kKeyTooLarge;
  if (value.len > kMaxValueSize) return Status::kValueTooLarge;
  if (!key.data) key.data = kEmpty;
  if (mode && mode->shared) return set_shared(key, value, *mode);
  Status ps = begin_write(key, value_is_inline(key.len, value.len) ? 0 : overflow_pages(value.len));
  if (ps != Status::kOk) return ps;
  Status s = set_attempt(key, value, mode);
  return end_write(s);
}

Status BTree::set_attempt(Slice key, Slice value, ReadMode* mode) {
  uint8_t ref[kOverflowRefSize];
  const uint8_t* vptr = value.data ? value.data : kEmpty;
  uint16_t field;
  PageId chain = kInvalidPageId;
  if (value_is_inline(key.len, value.len)) {
    field = static_cast<uint16_t>(value.len);
  } else {
    Status s = write_chain(key, value, &chain);
    if (s != Status::kOk) return s;
    store32(ref, chain);
    store32(ref + 4, value.len);
    vptr = ref;
    field = kOverflowRefSize | kOverflowFlag;
  }
  for (unsigned attempt = 0; attempt < kMaxAttempts; attempt++) {
    Path path;
    PageId leaf = descend(key, &path);
    if (store_.failure() != Status::kOk) [[unlikely]] {
      if (chain != kInvalidPageId) free_chain(chain);
      return store_.failure();
    }
    if (attempt == 0 && cfg_.adaptive) {
      if (!mode || !(mode->counted || mode->step)) {
        on_point_op(leaf);
      } else if (mode->step) {  // a shared run drew this step
        mode->step = false;
        point_step(leaf, page(leaf));
      }
      if (mode) mode->counted = false;  // a shared run took it already
    }
    OldValue old;
    uint8_t* lp = page_mut(leaf);
    if (key.len < load16(lp + hdr::kPrefixLen)) [[unlikely]] {
      // Not a key of this leaf (a key inside its fences has its prefix): a damaged parent.
      store_.note_corrupt(leaf);
      if (chain != kInvalidPageId) free_chain(chain);
      return Status::kCorrupt;
    }
    PutResult r = leaf::upsert(lp, key, vptr, field, &old, room_);
    if (r != PutResult::kNoSpace) {
      if (r == PutResult::kInserted) count_++;
      if (old.overflow) {
        Status fs = free_chain(old.first_page);
        if (fs != Status::kOk) return fs;
      }
      version_++;
      if (attempt > 0 && height_ > 2) fix_keyless_inner(key);
      return Status::kOk;
    }
    Status s = make_room(&path, key, field);
    if (s != Status::kOk) {
      if (chain != kInvalidPageId) free_chain(chain);
      return s;
    }
  }
  if (chain != kInvalidPageId) free_chain(chain);
  return Status::kCorrupt;
}

Status BTree::remove(Slice key, ReadMode* mode) {
  if (key.len > kMaxKeySize) return Status::kKeyTooLarge;
  if (!key.data) key.data = kEmpty;
  if (mode && mode->shared) return remove_shared(key, *mode);
  Status ps = begin_write(key);
  if (ps != Status::kOk) return ps;
  if (mode && cfg_.adaptive && (mode->counted || mode->step)) {
    // A shared run stepped (or drew the step of) this remove's counter.
    Path path;
    PageId leaf = descend(key, &path);
    if (mode->step) point_step(leaf, page(leaf));
    mode->counted = mode->step = false;
    return end_write(remove_attempt(key, false));
  }
  return end_write(remove_attempt(key, true));
}

// Write operations on a backed pool: everything the operation may touch is
// made resident first, unless every page already is and frames are free for what
// it may allocate (an asynchronous host answers NEED_PAGE before anything
// changes), and a failure in the middle of a change leaves the in-memory tree
// unusable until the store is reopened from its last commit.
Status BTree::begin_write(Slice key, uint64_t new_pages) {
  Status w = writable();
  if (w != Status::kOk) return w;
  ready_chain_ = kInvalidPageId;
  store_.begin_op();
  if (!store_.backed()) return Status::kOk;
  // Allocation takes from the free-page list: an async store reads it first.
  Status s = store_.load_free_list();
  if (s != Status::kOk) return s;
  // The pool evicted since the last write: XMerge first (core/tree/rebalance.h).
  if (store_.take_pressure() && fill_.xmerge_on_pressure && rebalancer()) {
    rebalance_->xmerge_random(rng_.next());
    if (store_.failure() != Status::kOk) return store_.failure();
  }
  // Every page resident and frames free for what the write may allocate (a split up
  // the whole path and a new root, a regroup's new leaf, the value's overflow chain):
  // nothing can miss or be evicted, so the prefetch would only walk the path twice.
  if (store_.all_resident_with_room(2 * height_ + 8 + new_pages)) return Status::kOk;
  return prepare_change(key);
}

Status BTree::prepare_change(Slice key) {
  Status s = prefetch_for_write(key);
  if (s != Status::kOk) return s;
  // Frames for what the change may allocate (a split up the path, a regroup's leaf), freed now:
  // a dirty page that cannot be spilled (a full disk) then fails the write before it changes
  // anything. Spilled in the middle of the change, the failure left the tree half changed and
  // every later call, reads too, failed for good, even once there was room again (a new-user
  // probe, session 23). (An overflow chain's pages are not counted: a value's pages may be more
  // than the pool. write_chain calls this again once the chain is written.)
  return store_.make_room(static_cast<uint32_t>(std::min<uint64_t>(2 * height_ + 8, store_.target_frames() / 2)));
}

// A new value's overflow chain, written before the leaf changes. Each of its pages takes a frame:
// the frames begin_write freed, then (a synchronous store, the pool full) the clock's victims,
// dirty ones spilled, among them the write's path (the chain gives up its pages' protection as it
// goes: it may be longer than the pool). So a failure here changes nothing in the tree, and is the
// write's, not the tree's: the chain's pages are freed and the pool's failure (a spill that failed
// on a full disk) cleared, or end_write marked the tree broken. A new-user probe (session 25: a
// 100 KB value on a full disk) found every later call, reads of committed keys too, failing with
// QUOTA_EXCEEDED for good, and the writes since the last commit lost. Once the chain is written,
// the path and the frames for the change are made ready again, so the change itself neither misses
// nor spills.
Status BTree::write_chain(Slice key, Slice value, PageId* chain) {
  const uint64_t live = store_.live_pages();
  Status s = overflow_write(store_, value.data, value.len, chain);
  if (s == Status::kOk && store_.backed() && !store_.asynchronous() && !store_.all_resident_with_room(2 * height_ + 8)) {
    s = prepare_change(key);
    if (s != Status::kOk) {
      free_chain(*chain);
      *chain = kInvalidPageId;
    }
  }
  // (Pages of the chain that could not be freed, an unreadable page: the failure stays the tree's.)
  if (s != Status::kOk && store_.live_pages() == live) store_.clear_failure();
  return s;
}

Status BTree::end_write(Status s) {
  Status f = store_.failure();
  if (f != Status::kOk) {
    // A page failed in the middle of a change: the tree in memory may be half
    // modified. Committed state is safe in storage. A page an asynchronous store
    // lacked (a fault the write's prefetch should have prevented) is an I/O
    // failure here: NEED_PAGE would have its caller supply a page and call again
    // for ever (it did, found in session 22), the tree refusing every call.
    if (f == Status::kNeedPage) f = Status::kIoError;
    broken_ = f;
    return f;
  }
  return s;
}

// Makes resident: the path to key's leaf and each path node's neighbours (merges and
// rotations read them); the overflow chain of key's current value is walked for its page
// ids (walk_chain), not made resident: an unreadable page still fails the write before it
// changes anything, and the pool does not grow to the value's size (deleting a 20 MB value
// on a 4 MiB pool grew it to 19 MiB, kept after the commit).
Status BTree::prefetch_for_write(Slice key) {
  PageId id = root_;
  for (unsigned level = 1;; level++) {
    uint8_t* p = page(id);
    if (store_.failure() != Status::kOk) return store_.failure();
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) break;
    if (level == kMaxHeight) return Status::kCorrupt;  // inner pages that loop (descend)
    BasicNode n{p};
    bool exact;
    unsigned pos = n.lower_bound(key.data, key.len, &exact);
    unsigned c = n.count();
    PageId next = n.child(pos > c ? c : pos);
    for (int d = -1; d <= 1; d += 2) {
      int q = static_cast<int>(pos) + d;
      if (q < 0 || q > static_cast<int>(c)) continue;
      page(BasicNode{page(id)}.child(static_cast<unsigned>(q)));
      if (store_.failure() != Status::kOk) return store_.failure();
    }
    id = next;
  }
  ValueRef v;
  if (leaf::lookup(page(id), key, &v) && v.is_overflow()) {
    Status s = walk_chain(load32(v.ptr), overflow_pages(v.length()));
    if (s != Status::kOk) return s;
  }
  // Removing the last record of a tree taller than one leaf releases every
  // node (remove_attempt starts over from one leaf): all of them, then.
  if (count() <= 1 && height_ > 1) {
    std::vector<PageId> todo{root_};
    while (!todo.empty()) {
      PageId n = todo.back();
      todo.pop_back();
      uint8_t* p = page(n);
      if (store_.failure() != Status::kOk) return store_.failure();
      if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) continue;
      BasicNode b{p};
      for (unsigned i = 0; i <= b.count(); i++) todo.push_back(b.child(i));
    }
  }
  return Status::kOk;
}

Status BTree::walk_chain(PageId first, uint64_t pages) {
  const uint64_t gen = store_.reuse_generation();
  ChainWalk* w = nullptr;
  for (size_t i = 0; i < walks_.size();) {
    if (walks_[i].gen != gen) {
      walks_.erase(walks_.begin() + static_cast<std::ptrdiff_t>(i));  // the chain may differ now
      continue;
    }
    if (walks_[i].first == first) w = &walks_[i];
    i++;
  }
  if (w == nullptr) {
    if (walks_.size() >= kChainsKept) walks_.erase(walks_.begin());
    if (!reserve_checked(walks_, walks_.size() + 1)) return Status::kOutOfMemory;
    walks_.emplace_back();
    w = &walks_.back();
    w->first = first;
    w->next = first;
    w->gen = gen;
  }
  alignas(16) uint8_t scratch[kPageSize];
  while (!w->complete) {
    if (w->next == kInvalidPageId) {
      w->complete = true;
      break;
    }
    const uint8_t* pg;
    Status s = store_.view(w->next, scratch, &pg);
    if (s != Status::kOk) return s;  // kNeedPage: the retry goes on from w->next
    // (A chain longer than its value's pages loops, or is damaged.)
    if (pg[0] != static_cast<uint8_t>(PageTag::kOverflow) || w->ids.size() >= pages) return Status::kCorrupt;
    if (!push_checked(w->ids, w->next)) return Status::kOutOfMemory;
    w->next = load32(pg + 4);
  }
  ready_chain_ = first;
  return Status::kOk;
}

Status BTree::free_chain(PageId first) {
  // Reads and walks of this chain end here: its pages may hold another value next.
  for (size_t i = 0; i < reads_.size();) {
    if (reads_[i].first == first) drop_read(i);
    else i++;
  }
  const bool ready = ready_chain_ == first && first != kInvalidPageId;
  ready_chain_ = kInvalidPageId;
  for (size_t i = 0; i < walks_.size(); i++) {
    if (walks_[i].first != first) continue;
    const bool by_ids = ready && walks_[i].complete;
    if (by_ids)
      for (PageId id : walks_[i].ids) store_.release(id);
    walks_.erase(walks_.begin() + static_cast<std::ptrdiff_t>(i));
    if (by_ids) return Status::kOk;
    break;
  }
  return overflow_free(store_, first);
}

Status BTree::remove_attempt(Slice key, bool step) {
  Path path;
  PageId leaf = descend(key, &path);
  if (store_.failure() != Status::kOk) [[unlikely]] return store_.failure();
  if (step && cfg_.adaptive) on_point_op(leaf);
  OldValue old;
  if (!leaf::remove(page_mut(leaf), key, &old)) return Status::kNotFound;
  count_--;
  version_++;
  __atomic_fetch_add(&erase_epoch_, 1, __ATOMIC_RELEASE);
  if (old.overflow) {
    Status fs = free_chain(old.first_page);
    if (fs != Status::kOk) return fs;
  }
  if (path.depth > 1 && content_bytes(page(leaf)) <= kMergeThreshold) return rebalance(&path, key);
  return Status::kOk;
}

Status BTree::rebalance(Path* p, Slice key) {
  Path& path = *p;
  {
    // Walk up: merge the leaf, then each parent that became underfull.
    for (unsigned d = path.depth; d >= 2; d--) {
      PageId node = path.ids[d - 1], parent = path.ids[d - 2];
      const uint8_t* np = page(node);
      if (content_bytes(np) > kMergeThreshold) break;
      BasicNode pn{page(parent)};
      bool exact;
      unsigned pos = pn.lower_bound(key.data, key.len, &exact);
      // Without a sibling to merge with (or room for the merge), the parent
      // may still be underfull itself: keep walking up.
      if (pos < pn.count() && merge_children(parent, pos)) continue;
      if (pos > 0) merge_children(parent, pos - 1);
    }
    // An emptied tree starts over from one leaf: with very long separators
    // (1 KiB keys without prefix truncation) inner nodes that hold one key
    // each cannot always merge, and would otherwise linger.
    if (count() == 0 && height_ > 1) {
      release_subtree(root_);
      store_.release(root_);
      return init();
    }
    fix_keyless_inner(key);
    // A root without keys hands over to its only child.
    for (;;) {
      uint8_t* rp = page(root_);
      if (rp[0] != static_cast<uint8_t>(PageTag::kBasicInner) || BasicNode{rp}.count() != 0) break;
      PageId child = BasicNode{rp}.upper_child();
      store_.release(root_);
      root_ = child;
      height_--;
    }
  }
  return Status::kOk;
}

Status BTree::delete_range(Slice lo, bool lo_none, bool lo_exclusive, Slice hi, bool hi_none, bool hi_exclusive,
                           uint64_t* removed) {
  *removed = 0;
  if (!lo_none && !hi_none) {
    int c = compare(lo, hi);
    if (c > 0 || (c == 0 && (lo_exclusive || hi_exclusive))) return Status::kOk;
  }
  Status w = writable();
  if (w != Status::kOk) return w;
  Cursor cur(this);
  uint32_t flags = lo_none ? kSeekEdge : (lo_exclusive ? kSeekExclusive : 0);
  Status ss = cur.seek(lo_none ? Slice{} : lo, flags);
  // A page fault (async store) or an error ends the call: what was removed
  // stays removed, and a call again removes the rest.
  if (ss == Status::kNeedPage || is_error(ss)) return ss;
  std::vector<uint8_t> keys;
  std::vector<uint32_t> lens;
  for (;;) {
    keys.clear();
    lens.clear();
    KeyBuffer k;
    ValueRef v;
    bool done = false;
    while (lens.size() < 256) {
      Status ns = cur.next(&k, &v);
      if (ns == Status::kNeedPage || is_error(ns)) {
        if (!lens.empty()) break;  // remove what was read first
        return ns;
      }
      if (ns != Status::kOk) {
        done = true;
        break;
      }
      if (!hi_none) {
        int c = compare(k.slice(), hi);
        if (c > 0 || (c == 0 && hi_exclusive)) {
          done = true;
          break;
        }
      }
      if (!reserve_checked(keys, keys.size() + k.len) || !push_checked(lens, k.len)) return Status::kOutOfMemory;
      keys.insert(keys.end(), k.data, k.data + k.len);
    }
    size_t off = 0;
    for (uint32_t len : lens) {
      Status s = remove({keys.data() + off, len});
      if (s == Status::kOk) (*removed)++;
      else if (is_error(s) || s == Status::kNeedPage) return s;
      off += len;
    }
    if (done) return Status::kOk;
  }
}

// ---------------------------------------------------------------- adaption

void BTree::on_point_op_counted(PageId leaf) {
  if (read_only_ != Status::kOk) return;  // a reader (or a failed store) does not adapt
  uint8_t* p = page(leaf);
  if (p[0] != static_cast<uint8_t>(PageTag::kBasicLeaf) && p[0] != static_cast<uint8_t>(PageTag::kFingerprintLeaf))
    return;
  if (rng_.next() >= kPointDecrementThreshold) return;
  point_step(leaf, p);
}

void BTree::point_step(PageId leaf, uint8_t* p) {
  if (read_only_ != Status::kOk) return;
  if (static_cast<int8_t>(p[hdr::kCounter]) <= 0) return;
  if (p[0] != static_cast<uint8_t>(PageTag::kBasicLeaf) && p[0] != static_cast<uint8_t>(PageTag::kFingerprintLeaf))
    return;
  --p[hdr::kCounter];
  store_.note_lossy(leaf);  // (written through page(): a read's step)
  if (p[hdr::kCounter] == 0 && p[0] == static_cast<uint8_t>(PageTag::kBasicLeaf))
    convert_leaf(leaf, PageTag::kFingerprintLeaf);
}

// Other shared holders step the same counter at the same time: the counter
// byte is only touched atomically while the latch is shared (the layout, the
// tag, changes only under the exclusive latch).
bool BTree::point_step_draw(const uint8_t* p, XorShift32& rng) {
  uint8_t v = __atomic_load_n(p + hdr::kCounter, __ATOMIC_RELAXED);
  if (static_cast<int8_t>(v) <= 0) return false;
  uint8_t tag = __atomic_load_n(p, __ATOMIC_RELAXED);
  if (tag != static_cast<uint8_t>(PageTag::kBasicLeaf) && tag != static_cast<uint8_t>(PageTag::kFingerprintLeaf))
    return false;
  return rng.next() < kPointDecrementThreshold;
}

bool BTree::point_step_shared(uint8_t* p, XorShift32& rng, bool drawn) {
  uint8_t* c = p + hdr::kCounter;
  uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
  if (static_cast<int8_t>(v) <= 0) return true;
  uint8_t tag = p[0];
  if (tag != static_cast<uint8_t>(PageTag::kBasicLeaf) && tag != static_cast<uint8_t>(PageTag::kFingerprintLeaf))
    return true;
  if (!drawn && rng.next() >= kPointDecrementThreshold) return true;
  for (;;) {
    if (static_cast<int8_t>(v) <= 0) return true;
    if (v == 1 && tag == static_cast<uint8_t>(PageTag::kBasicLeaf)) return false;
    if (__atomic_compare_exchange_n(c, &v, static_cast<uint8_t>(v - 1), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return true;
  }
}

bool BTree::on_scan(PageId leaf, ReadMode* mode) {
  if (read_only_ != Status::kOk) return true;  // a reader (or a failed store) does not adapt
  uint8_t* p = page(leaf);
  bool fp = p[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf);
  if (!fp && p[0] != static_cast<uint8_t>(PageTag::kBasicLeaf)) return true;
  if (!mode || !mode->shared) {
    if (mode && mode->scanned) {  // the shared run took this scan's step
      mode->scanned = false;
      return true;
    }
    bool drawn = mode && mode->step;  // a shared run drew this step already
    if (mode) mode->step = false;
    if (p[hdr::kCounter] >= kCounterMax) return true;  // saturated or disabled (255)
    if (!drawn && rng_.next() >= kScanIncrementThreshold) return true;
    ++p[hdr::kCounter];
    store_.note_lossy(leaf);  // (written through page(): a scan's step)
    if (p[hdr::kCounter] == kCounterMax && fp) convert_leaf(leaf, PageTag::kBasicLeaf);
    return true;
  }
  uint8_t* c = p + hdr::kCounter;
  uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
  mode->scanned = true;
  if (v >= kCounterMax) return true;
  if (mode->rng->next() >= kScanIncrementThreshold) return true;
  for (;;) {
    if (v >= kCounterMax) return true;
    if (v + 1 == kCounterMax && fp) {
      mode->scanned = false;
      mode->step = true;
      return false;
    }
    if (__atomic_compare_exchange_n(c, &v, static_cast<uint8_t>(v + 1), true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return true;
  }
}

unsigned BTree::extract(const uint8_t* src, unsigned slot, std::vector<RecordRef>* out) {
  // The records refer into scratch_[slot], a copy of the node.
  uint8_t* p = scratch_[slot];
  if (src != p) memcpy(p, src, kPageSize);
  unsigned n;
  // The scratch grows only through checked calls (util/checked.h): kExtractFailed when
  // there is no memory, nothing changed. (Merges append to recs_ and reserve that first.)
  auto room = [&](unsigned count, bool arena) {
    if (!resize_checked(*out, count)) return false;
    return !arena || resize_checked(arena_[slot], 4 * size_t{count} + 4);
  };
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicInner:
    case PageTag::kBasicLeaf:
      n = BasicNode{p}.count();
      if (!room(n, false)) return kExtractFailed;
      BasicNode{p}.extract(out->data());
      return n;
    case PageTag::kFingerprintLeaf:
      n = FingerprintLeaf{p}.count();
      if (!room(n, false)) return kExtractFailed;
      FingerprintLeaf{p}.extract(out->data());
      return n;
    case PageTag::kSemiDenseLeaf:
      n = SemiDenseLeaf{p}.count();
      if (!room(n, true)) return kExtractFailed;
      return SemiDenseLeaf{p}.extract(out->data(), arena_[slot].data());
    case PageTag::kFullyDenseLeaf:
      n = FullyDenseLeaf{p}.count();
      if (!room(n, true)) return kExtractFailed;
      return FullyDenseLeaf{p}.extract(out->data(), arena_[slot].data());
    default:
      out->clear();
      return 0;
  }
}

// Key-adaption (paper, section 5.1) and the static configurations: choose the
// leaf layout for a set of records at split, merge or conversion time.
bool BTree::build_leaf(uint8_t* dst, const Fences& f, const RecordRef* r, unsigned n, uint8_t counter) {
  if (n > 0 && cfg_.fully_dense_leaves && FullyDenseLeaf::build(dst, f, r, n, r[0].key_len(), r[0].val_len))
    return true;
  if (n > 0 && cfg_.semi_dense_leaves && SemiDenseLeaf::build(dst, f, r, n)) return true;
  bool fingerprint = cfg_.fingerprint_leaves && !cfg_.adaptive;
  uint8_t c = kCounterDisabled;
  if (cfg_.adaptive) {
    // Heads are good if fewer than n/16 adjacent pairs share them.
    uint32_t plen = cfg_.prefix_truncation ? fence_prefix_len(f) : 0;
    unsigned collisions = 0;
    for (unsigned i = 1; i < n; i++) collisions += r[i - 1].head_at(plen) == r[i].head_at(plen);
    bool good_heads = n == 0 || collisions * 16 < n;
    if (!good_heads) {
      c = counter == kCounterDisabled ? 0 : counter;
      fingerprint = c < 2;
    }
  }
  if (fingerprint && FingerprintLeaf::build(dst, f, cfg_.prefix_truncation, r, n, c)) return true;
  return BasicNode::build(dst, PageTag::kBasicLeaf, leaf_flags(), f, cfg_.prefix_truncation, r, n, 0, c);
}

// A dense leaf with fewer records than a quarter of its slots is not worth
// its layout: a key past its last slot turns it back into a comparison-based
// leaf instead of splitting it to self (paper, section 3.5, end of "Dense Leaf Split").
bool BTree::dense_enough(const uint8_t* p) { return leaf::count(p) * 4 >= leaf::positions(p); }

// Rebuilds a leaf in another layout (kBasicLeaf: comparison-based as chosen
// by build_leaf without dense layouts). False, leaf unchanged, if it does not fit.
bool BTree::dense_build(uint8_t* dst, PageTag target, const Fences& f, const RecordRef* recs, unsigned n,
                        const Slice* key, uint16_t vfield) {
  if (n == 0) return false;
  if (target == PageTag::kFullyDenseLeaf) {
    if (!FullyDenseLeaf::build(dst, f, recs, n, recs[0].key_len(), recs[0].val_len)) return false;
  } else if (!SemiDenseLeaf::build(dst, f, recs, n)) {
    return false;
  }
  if (!key) return true;
  // Converting to a dense layout to make room for key must not lead straight
  // back: the key has to fit the dense leaf, or lie past its capacity (split
  // to self follows) with the leaf dense enough not to be converted back.
  // A leaf too sparse to keep its layout (dense_enough) is not converted either: decimal
  // string keys (10 of every 256 numeric values) of 200 bytes or more, whose fences leave a
  // dense leaf ~250 slots, made leaves of ~10 records in order (5 keys a page at 1000
  // bytes; session 31).
  if (target == PageTag::kFullyDenseLeaf) {
    FullyDenseLeaf d{dst};
    return d.beyond_capacity(*key, vfield) ? dense_enough(dst)
                                           : d.index_of(*key) >= 0 && vfield == d.value_size() && dense_enough(dst);
  }
  SemiDenseLeaf d{dst};
  return d.beyond_capacity(*key) ? dense_enough(dst) : d.index_of(*key) >= 0 && dense_enough(dst);
}

bool BTree::convert_leaf(PageId leaf, PageTag target, const Slice* key, uint16_t vfield) {
  unsigned n = extract(page(leaf), 0, &recs_);
  if (n == kExtractFailed) return false;  // out of memory: the leaf stays as it is
  uint8_t* src = scratch_[0];
  uint8_t* dst = scratch_[1];
  Fences f = fences_of(src);
  uint8_t counter = src[hdr::kCounter];
  bool ok = false;
  switch (target) {
    case PageTag::kFullyDenseLeaf:
    case PageTag::kSemiDenseLeaf:
      ok = dense_build(dst, target, f, recs_.data(), n, key, vfield);
      break;
    case PageTag::kFingerprintLeaf:
      ok = FingerprintLeaf::build(dst, f, cfg_.prefix_truncation, recs_.data(), n, counter);
      break;
    case PageTag::kBasicLeaf:
      if (cfg_.adaptive && (src[0] == static_cast<uint8_t>(PageTag::kBasicLeaf) ||
                            src[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf))) {
        ok = BasicNode::build(dst, PageTag::kBasicLeaf, leaf_flags(), f, cfg_.prefix_truncation, recs_.data(), n, 0,
                              counter);
      } else {
        Config saved = cfg_;
        cfg_.fully_dense_leaves = cfg_.semi_dense_leaves = false;
        ok = build_leaf(dst, f, recs_.data(), n, counter);
        cfg_ = saved;
      }
      break;
    default:
      break;
  }
  if (!ok) return false;
  memcpy(page_mut(leaf), dst, kPageSize);
  version_++;
  return true;
}

// Bytes of a node without its fences: merge decisions look at content only,
// or nodes with 1 KiB fences would never look empty enough to merge.
unsigned BTree::content_bytes(const uint8_t* p) const {
  return used_bytes(p) - load16(p + hdr::kLowerLen) - load16(p + hdr::kUpperLen);
}

unsigned BTree::used_bytes(const uint8_t* p) const {
  uint8_t* q = const_cast<uint8_t*>(p);
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicLeaf:
    case PageTag::kBasicInner: return BasicNode{q}.used_bytes();
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{q}.used_bytes();
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{q}.used_bytes();
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{q}.used_bytes();
    default: return kNodeSize;
  }
}

// ---------------------------------------------------------------- splits

Status BTree::new_root(Path* path) {
  if (height_ + 1 >= kMaxHeight) return Status::kOutOfMemory;
  PageId r;
  Status s = store_.allocate(&r);
  if (s != Status::kOk) return s;
  BasicNode::build(page_mut(r), PageTag::kBasicInner, inner_flags(), Fences{}, cfg_.prefix_truncation, nullptr, 0, root_,
                   kCounterDisabled);
  memmove(path->ids + 1, path->ids, path->depth * sizeof(PageId));
  path->ids[0] = r;
  path->depth++;
  root_ = r;
  height_++;
  return Status::kOk;
}

// Makes sure the parent of path->ids[child_idx] can take a separator of
// sep_len bytes. Creates a new root above a splitting root. If the parent is
// full it is split instead and *restarted is set: the caller must retry the
// whole operation from the root.
Status BTree::ensure_parent_space(Path* path, unsigned child_idx, uint32_t sep_len, bool* restarted) {
  *restarted = false;
  if (child_idx == 0) {
    Status s = new_root(path);
    if (s != Status::kOk) return s;
    child_idx = 1;
  }
  BasicNode pn{page(path->ids[child_idx - 1])};
  if (pn.entry_space(sep_len - pn.prefix_len(), 4) <= pn.free_space_after_compaction()) return Status::kOk;
  *restarted = true;
  return split_inner(path, child_idx - 1);
}

// The last step of every split, once both halves are built (scratch_[1] the
// lower, scratch_[2] the upper) and the parent has room: the lower half gets
// a new page, the upper half keeps node's page (and its parent pointer).
Status BTree::install_split(PageId parent, PageId node, Slice sep) {
  // A separator from the node's records has the parent's prefix unless the pages disagree
  // (damaged or crafted): then nothing changes.
  if (sep.len < BasicNode{page_mut(parent)}.prefix_len()) return store_.note_corrupt(parent), Status::kCorrupt;
  PageId left;
  Status s = store_.allocate(&left);
  if (s != Status::kOk) return s;
  memcpy(page_mut(left), scratch_[1], kPageSize);
  // The upper half stays in the node's page. With Room::kMoveFew it is rebased there: its
  // records keep their bytes, and a commit logs a delta of the page (BasicNode::rebase).
  uint8_t* np = page_mut(node);
  if (room_ != Room::kMoveFew || !is_basic_tag(np[0]) || !BasicNode{np}.rebase(scratch_[2])) memcpy(np, scratch_[2], kPageSize);
  insert_separator(parent, sep, left);
  version_++;
  return Status::kOk;
}

void BTree::insert_separator(PageId parent, Slice sep, PageId left_child) {
  BasicNode pn{page_mut(parent)};
  bool exact;
  unsigned pos = pn.lower_bound(sep.data, sep.len, &exact);
  uint8_t child[4];
  store32(child, left_child);
  unsigned plen = pn.prefix_len();
  pn.insert_at(pos, sep.data + plen, sep.len - plen, child, 4);
}

Status BTree::split_inner(Path* path, unsigned idx) {
  // At the tree's edge, with keys in order, the neighbour takes entries first (rebalance.h);
  // the caller descends again either way. (Not without prefix truncation, `baseline`: there the
  // neighbour's entries keep every byte, and inner nodes of ~1 KiB keys, one separator each,
  // made chains of one-child nodes sooner: 55 levels at 750 keys against 35; a probe, session 32.)
  if (fill_.edges && cfg_.prefix_truncation && rebalancer() && rebalance_->refill_inner(path->ids, path->depth, idx))
    return Status::kOk;
  PageId node = path->ids[idx];
  unsigned n = extract(page(node), 0, &recs_);
  if (n == kExtractFailed) return Status::kOutOfMemory;
  if (n == 0) return Status::kCorrupt;  // an inner node without keys always has room
  const uint8_t* src = scratch_[0];
  Fences f = fences_of(src);
  PageId upper = BasicNode{const_cast<uint8_t*>(src)}.upper_child();
  KeyBuffer sep;
  // The middle key moves up; try the preferred split point first, then
  // others until both halves fit (only long separators make this necessary).
  unsigned preferred = n / 2;
  bool built = false;
  unsigned mid = preferred;
  for (unsigned k = 0; k < 2 * n && !built; k++) {
    int cand = static_cast<int>(preferred) + ((k & 1) ? -static_cast<int>((k + 1) / 2) : static_cast<int>(k / 2));
    if (cand < 0 || cand >= static_cast<int>(n)) continue;
    mid = static_cast<unsigned>(cand);
    sep.assign(recs_[mid], recs_[mid].key_len());
    Fences lf{f.lower, sep.slice(), f.lower_inf, false};
    Fences rf{sep.slice(), f.upper, false, f.upper_inf};
    built = BasicNode::build(scratch_[1], PageTag::kBasicInner, inner_flags(), lf, cfg_.prefix_truncation,
                             recs_.data(), mid, load32(recs_[mid].val), kCounterDisabled) &&
            BasicNode::build(scratch_[2], PageTag::kBasicInner, inner_flags(), rf, cfg_.prefix_truncation,
                             recs_.data() + mid + 1, n - mid - 1, upper, kCounterDisabled);
  }
  if (!built) return Status::kCorrupt;
  bool restarted;
  Status s = ensure_parent_space(path, idx, sep.len, &restarted);
  if (s != Status::kOk || restarted) return s;
  while (path->ids[idx] != node) idx++;  // a new root was pushed on the path
  return install_split(path->ids[idx - 1], node, sep.slice());
}

// The two halves split_leaf builds from a leaf's n >= 1 records (recs, in key order,
// taken from the image src: its fences, counter and layout), key pending (at: Contention
// Split's record index, 0: none): the lower one into dl, the upper one into dr, their
// separator into *sep. False: no split point where both halves fit.
bool BTree::split_images(const uint8_t* src, const RecordRef* recs, unsigned n, Slice key, unsigned at, uint8_t* dl,
                         uint8_t* dr, KeyBuffer* sep) {
  Fences f = fences_of(src);
  uint8_t counter = src[hdr::kCounter];
  PageTag src_tag = static_cast<PageTag>(src[0]);
  RecordRef keyref{key.data, nullptr, nullptr, static_cast<uint16_t>(key.len), 0, 0};
  unsigned j = 0;
  bool special = false;
  if (n == 1) {
    special = true;
    if (compare_record_key(recs[0], key) < 0) {
      j = 1;
      separator_between(recs[0], keyref, sep);
    } else {
      j = 0;
      separator_between(keyref, recs[0], sep);
    }
  } else {
    if (cfg_.fully_dense_leaves && src_tag != PageTag::kFullyDenseLeaf) {
      // Partition-aware split: the largest split point whose lower node could
      // be fully dense, if it is at least the median.
      unsigned dp = FullyDenseLeaf::dense_prefix(f, recs, n);
      if (dp >= n / 2 && dp < n) j = dp;
    }
    if (at > 0 && at < n) j = at;  // Contention Split's choice
    if (j == 0) j = choose_split_point(recs, n);
    separator_between(recs[j - 1], recs[j], sep);
  }
  auto try_build = [&](unsigned split) {
    Fences lf{f.lower, sep->slice(), f.lower_inf, false};
    Fences rf{sep->slice(), f.upper, false, f.upper_inf};
    return build_leaf(dl, lf, recs, split, counter) &&
           build_leaf(dr, rf, recs + split, n - split, counter);
  };
  bool built = try_build(j);
  if (!built && !special) {
    // Variable-size records (or long separators): search for a split point
    // where both halves fit, nearest to the preferred one first.
    unsigned preferred = j;
    for (unsigned k = 1; k < 2 * n && !built; k++) {
      int cand = static_cast<int>(preferred) + ((k & 1) ? -static_cast<int>((k + 1) / 2) : static_cast<int>(k / 2));
      if (cand < 1 || cand >= static_cast<int>(n)) continue;
      j = static_cast<unsigned>(cand);
      separator_between(recs[j - 1], recs[j], sep);
      built = try_build(j);
    }
  }
  return built;
}

Status BTree::split_leaf(Path* path, Slice key, unsigned at) {
  unsigned d = path->depth;
  PageId leaf = path->ids[d - 1];
  unsigned n = extract(page(leaf), 0, &recs_);
  if (n == kExtractFailed) return Status::kOutOfMemory;
  const uint8_t* src = scratch_[0];
  PageTag src_tag = static_cast<PageTag>(src[0]);
  if (n == 0) {
    // Nothing to split: the layout cannot take the key; use a comparison-based leaf.
    if (src_tag == PageTag::kBasicLeaf || src_tag == PageTag::kFingerprintLeaf) return Status::kCorrupt;
    return convert_leaf(leaf, PageTag::kBasicLeaf) ? Status::kOk : Status::kCorrupt;
  }
  KeyBuffer sep;
  if (!split_images(src, recs_.data(), n, key, at, scratch_[1], scratch_[2], &sep)) return Status::kCorrupt;
  bool restarted;
  Status s = ensure_parent_space(path, d - 1, sep.len, &restarted);
  if (s != Status::kOk || restarted) return s;
  d = path->depth;
  return install_split(path->ids[d - 2], leaf, sep.slice());
}

// Dense leaf overflowing past its last slot (ascending inserts): keep every
// record, lower the upper fence to the last slot's key and give the keys
// above to a new leaf (paper, section 3.5, "Dense Leaf Split"). Fully dense
// leaves reserve room for that fence and change it in place; semi-dense
// leaves keep room for it (fence_reserve) and are rebuilt with it.
Status BTree::split_to_self(Path* path, Slice key, uint16_t vfield) {
  unsigned d = path->depth;
  PageId leaf = path->ids[d - 1];
  const uint8_t* src = page(leaf);
  bool fully = src[0] == static_cast<uint8_t>(PageTag::kFullyDenseLeaf);
  // The leaf keeps its slots up to the last one or, when a semi-dense leaf's
  // heap is full, up to its last record.
  int last = static_cast<int>(leaf::positions(src)) - 1;
  if (!fully && !SemiDenseLeaf{page(leaf)}.beyond_capacity(key)) last = leaf::prev_present(src, last);
  if (last < 0) return split_leaf(path, key);
  KeyBuffer sep;
  leaf::key_at(src, last, &sep);
  // A fully dense leaf too sparse to keep its layout (it could not become comparison-based
  // with its open fence) becomes comparison-based with the new one, and the keys above start
  // a comparison-based leaf: continued dense, decimal or hex string keys (10 or 16 of every 256
  // numeric values) made a chain of dense leaves of ~60 records a page each (ascending hex
  // counters after 100-byte prefixes: 417 pages against 258 under hints; a probe, session 31).
  const bool sparse = fully && !dense_enough(src);
  // The lower leaf first: if it cannot be built nothing has changed yet.
  if (sparse) {
    unsigned n = extract(src, 0, &recs_);
    if (n == kExtractFailed) return Status::kOutOfMemory;
    Fences lf = fences_of(scratch_[0]);
    lf.upper = sep.slice();
    lf.upper_inf = false;
    const Config saved = cfg_;
    cfg_.fully_dense_leaves = cfg_.semi_dense_leaves = false;
    const bool built = build_leaf(scratch_[1], lf, recs_.data(), n, kCounterDisabled);
    cfg_ = saved;
    if (!built) return split_leaf(path, key);
  } else if (fully) {
    memcpy(scratch_[1], src, kPageSize);
    FullyDenseLeaf{scratch_[1]}.set_upper_fence(sep.slice());
  } else {
    unsigned n = extract(src, 0, &recs_);
    if (n == kExtractFailed) return Status::kOutOfMemory;
    Fences lf = fences_of(scratch_[0]);
    lf.upper = sep.slice();
    lf.upper_inf = false;
    if (!SemiDenseLeaf::build(scratch_[1], lf, recs_.data(), n)) return split_leaf(path, key);
  }
  bool restarted;
  Status s = ensure_parent_space(path, d - 1, sep.len, &restarted);
  if (s != Status::kOk || restarted) return s;
  d = path->depth;
  // The keys above go to a new leaf: fully dense if the key has a slot in
  // one, else comparison-based (it becomes dense when it fills, if it can).
  Fences old = fences_of(src);
  Fences rf{sep.slice(), old.upper, false, old.upper_inf};
  bool dense = fully && !sparse && FullyDenseLeaf::build(scratch_[2], rf, nullptr, 0, key.len, vfield) &&
               FullyDenseLeaf{scratch_[2]}.index_of(key) >= 0;
  if (!dense && !build_leaf(scratch_[2], rf, nullptr, 0, kCounterDisabled)) return Status::kCorrupt;
  return install_split(path->ids[d - 2], leaf, sep.slice());
}

Status BTree::make_room(Path* path, Slice key, uint16_t vfield) {
  PageId leaf = path->ids[path->depth - 1];
  uint8_t* p = page(leaf);
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicLeaf:
    case PageTag::kFingerprintLeaf:
      // A comparison-based leaf about to split becomes dense if it can.
      if (cfg_.fully_dense_leaves && convert_leaf(leaf, PageTag::kFullyDenseLeaf, &key, vfield)) return Status::kOk;
      if (cfg_.semi_dense_leaves && convert_leaf(leaf, PageTag::kSemiDenseLeaf, &key, vfield)) return Status::kOk;
      // Neighbours with room take records first (core/tree/rebalance.h).
      if ((fill_.redistribute || fill_.edges) && rebalancer() &&
          rebalance_->before_split(path->ids, path->depth, key, vfield))
        return Status::kOk;
      return split_leaf(path, key);
    case PageTag::kSemiDenseLeaf:
    case PageTag::kFullyDenseLeaf: {
      bool fully = p[0] == static_cast<uint8_t>(PageTag::kFullyDenseLeaf);
      if (fully ? FullyDenseLeaf{p}.beyond_capacity(key, vfield) : SemiDenseLeaf{p}.beyond_capacity(key)) {
        if (!dense_enough(p) && convert_leaf(leaf, PageTag::kBasicLeaf)) return Status::kOk;
        return split_to_self(path, key, vfield);
      }
      if (!fully) {
        // A semi-dense leaf that has the key's slot is full: past its last
        // record (ascending inserts) it splits to self too, else at the median.
        SemiDenseLeaf sd{p};
        int i = sd.index_of(key);
        if (i >= 0) return sd.prev_present(static_cast<int>(sd.slot_count()) - 1) < i ? split_to_self(path, key, vfield)
                                                                                      : split_leaf(path, key);
      }
      // A key of another format (or value size) goes to a comparison-based leaf.
      if (convert_leaf(leaf, PageTag::kBasicLeaf)) return Status::kOk;
      return split_leaf(path, key);
    }
    default:
      return Status::kCorrupt;
  }
}

// ---------------------------------------------------------------- merges

// Merges the children at left_pos and left_pos + 1 of parent into the right
// one (which keeps its parent pointer) if the result fits.
bool BTree::merge_children(PageId parent, unsigned left_pos, bool any_fit) {
  BasicNode pn{page(parent)};
  if (left_pos >= pn.count()) return false;
  PageId left = pn.child(left_pos), right = pn.child(left_pos + 1);
  uint8_t* lp = page(left);
  uint8_t* rp = page(right);
  bool inner = lp[0] == static_cast<uint8_t>(PageTag::kBasicInner);
  if (!any_fit && content_bytes(lp) + content_bytes(rp) > kMergeThreshold) return false;
  // A pair of leaves whose merge did not fit is not tried again until it holds an eighth fewer
  // records: leaves that look underfull by their bytes but fit no layout together (sparse keys
  // in fully dense leaves with 1-byte values) were extracted and rebuilt in vain at every
  // delete, 44x a delete under `hints` (a probe, session 30). A merge put off so only waits.
  const uint32_t records = leaf::count(lp) + leaf::count(rp);
  // (a multiplicative hash's top bits: neighbours' ids differ by one, and left * 31 + right
  // put all of them in four slots)
  FailedMerge& memo = failed_merges_[((left * 0x9E3779B1u) ^ (right * 0x85EBCA77u)) >> 23];
  if (!inner && !any_fit && memo.left == left && memo.right == right && records > memo.records - memo.records / 8) return false;
  unsigned nl = extract(lp, 0, &recs_);
  if (nl == kExtractFailed) return false;  // out of memory: no merge, the tree stays valid
  unsigned nr = extract(rp, 1, &recs2_);
  if (nr == kExtractFailed || !reserve_checked(recs_, size_t{nl} + nr + 1)) return false;
  Fences lf = fences_of(scratch_[0]), rf = fences_of(scratch_[1]);
  Fences f{lf.lower, rf.upper, lf.lower_inf, rf.upper_inf};
  KeyBuffer sep;
  uint8_t child[4];
  if (inner) {
    // The parent's separator comes down between the two key sets.
    sep.len = pn.prefix_len() + pn.suffix(left_pos).len;
    memcpy(sep.data, pn.prefix(), pn.prefix_len());
    memcpy(sep.data + pn.prefix_len(), pn.suffix(left_pos).data, pn.suffix(left_pos).len);
    store32(child, BasicNode{scratch_[0]}.upper_child());
    recs_.push_back(RecordRef{sep.data, nullptr, child, static_cast<uint16_t>(sep.len), 0, 4});
  }
  recs_.insert(recs_.end(), recs2_.begin(), recs2_.begin() + nr);
  unsigned n = static_cast<unsigned>(recs_.size());
  (void)nl;
  bool ok;
  if (inner) {
    ok = BasicNode::build(scratch_[2], PageTag::kBasicInner, inner_flags(), f, cfg_.prefix_truncation, recs_.data(), n,
                          BasicNode{scratch_[1]}.upper_child(), kCounterDisabled);
  } else {
    uint8_t c = scratch_[1][hdr::kCounter];
    if (c == kCounterDisabled) c = scratch_[0][hdr::kCounter];
    ok = build_leaf(scratch_[2], f, recs_.data(), n, c);
  }
  if (!ok) {
    if (!inner && !any_fit) {
      memo = FailedMerge{left, right, records};
      failed_merge_attempts_++;
    }
    return false;
  }
  memcpy(page_mut(right), scratch_[2], kPageSize);
  page_mut(parent);
  pn.remove_at(left_pos);
  store_.release(left);
  version_++;
  return true;
}

// ---------------------------------------------------------------- inner rebalancing

// Rotation through the parent: the keys of two neighbouring inner nodes and
// the parent's separator between them are dealt out again, one moving up,
// so that both keep at least one. The node short of keys takes one, as
// close to a single borrowed separator as the pages allow.
bool BTree::rotate_children(PageId parent, unsigned left_pos) {
  BasicNode pn{page(parent)};
  if (left_pos >= pn.count()) return false;
  PageId left = pn.child(left_pos), right = pn.child(left_pos + 1);
  if (page(left)[0] != static_cast<uint8_t>(PageTag::kBasicInner)) return false;
  unsigned nl = extract(page(left), 0, &recs_);
  if (nl == kExtractFailed) return false;
  unsigned nr = extract(page(right), 1, &recs2_);
  if (nr == kExtractFailed || !reserve_checked(recs_, size_t{nl} + nr + 1)) return false;
  if (nl + nr < 2) return false;
  Fences lf = fences_of(scratch_[0]), rf = fences_of(scratch_[1]);
  KeyBuffer down;
  unsigned plen = pn.prefix_len();
  memcpy(down.data, pn.prefix(), plen);
  memcpy(down.data + plen, pn.suffix(left_pos).data, pn.suffix(left_pos).len);
  down.len = plen + pn.suffix(left_pos).len;
  uint8_t child[4];
  store32(child, BasicNode{scratch_[0]}.upper_child());
  recs_.push_back(RecordRef{down.data, nullptr, child, static_cast<uint16_t>(down.len), 0, 4});
  recs_.insert(recs_.end(), recs2_.begin(), recs2_.begin() + nr);
  unsigned n = static_cast<unsigned>(recs_.size());
  PageId upper = BasicNode{scratch_[1]}.upper_child();
  // Record j moves up: left takes [0, j), right (j, n).
  unsigned preferred = nl == 0 ? 1 : (nr == 0 ? n - 2 : n / 2);
  alignas(16) uint8_t right_img[kPageSize];
  KeyBuffer up;
  for (unsigned k = 0; k < 2 * n; k++) {
    int j = static_cast<int>(preferred) + ((k & 1) ? -static_cast<int>((k + 1) / 2) : static_cast<int>(k / 2));
    if (j < 1 || j > static_cast<int>(n) - 2) continue;
    up.assign(recs_[j], recs_[j].key_len());
    Fences l{lf.lower, up.slice(), lf.lower_inf, false};
    Fences r{up.slice(), rf.upper, false, rf.upper_inf};
    // The parent's separator changes length: it must still fit.
    Slice old_sep = pn.suffix(left_pos);
    if (up.len < plen || pn.entry_space(up.len - plen, 4) > pn.free_space_after_compaction() + pn.entry_space(old_sep.len, 4))
      continue;
    if (!BasicNode::build(scratch_[2], PageTag::kBasicInner, inner_flags(), l, cfg_.prefix_truncation, recs_.data(), j,
                          load32(recs_[j].val), kCounterDisabled) ||
        !BasicNode::build(right_img, PageTag::kBasicInner, inner_flags(), r, cfg_.prefix_truncation,
                          recs_.data() + j + 1, n - j - 1, upper, kCounterDisabled))
      continue;
    memcpy(page_mut(left), scratch_[2], kPageSize);
    memcpy(page_mut(right), right_img, kPageSize);
    page_mut(parent);
    store32(child, left);
    pn.remove_at(left_pos);
    pn.insert_at(left_pos, up.data + plen, up.len - plen, child, 4);
    version_++;
    return true;
  }
  return false;
}

// With long separators (1 KiB keys without prefix truncation) an inner node
// holds only one or two keys, and merging its children can leave it with
// none and no sibling it fits with. Every inner node below the root must
// keep a key: it borrows one through the parent, or merges with a neighbour
// if both fit one page (the parent, one key poorer, is next on the way up).
// Splits make key-less nodes too: a full inner node of two keys splits into
// one key, one moving up and none, before the separator that caused the
// split arrives (in either half). So the path's nodes and their neighbours
// are checked after structure modifications of inserts as well.
void BTree::fix_keyless_inner(Slice key) {
  Path path;
  descend(key, &path);
  for (unsigned d = path.depth - 1; d-- > 1;) {
    PageId parent = path.ids[d - 1];
    bool exact;
    unsigned at = BasicNode{page(parent)}.lower_bound(key.data, key.len, &exact);
    for (unsigned pos : {at, at - 1, at + 1}) {
      BasicNode pn{page(parent)};
      // On an asynchronous store only resident nodes are looked at, and fixed with resident
      // neighbours: this runs after the merges, and a page fault now would come in the
      // middle of a change (the write's prefetch covers the path and its neighbours as they
      // were before the merges moved the positions). A node the operation did not touch was
      // not made key-less by it; one left key-less is allowed (see below).
      auto here = [&](unsigned i) { return store_.resident(pn.child(i)); };
      if (pos > pn.count() || !here(pos) || page(pn.child(pos))[0] != static_cast<uint8_t>(PageTag::kBasicInner)) continue;
      BasicNode n{page(pn.child(pos))};
      if (n.count() > 0) continue;
      const bool left = pos > 0 && here(pos - 1), right = pos < pn.count() && here(pos + 1);
      bool fixed = (left && rotate_children(parent, pos - 1)) ||
                   (right && rotate_children(parent, pos)) ||
                   (left && merge_children(parent, pos - 1, true)) ||
                   (right && merge_children(parent, pos, true));
      // A merge moved the parent's positions: the parent is next. Without a
      // neighbour to borrow from or merge with (separators near 1 KiB: nodes
      // hold one key) the node stays key-less.
      if (fixed) break;
    }
  }
}

// ---------------------------------------------------------------- cursor

bool Cursor::enter_at(BTree::Descent kind, Slice key, bool scan_start) {
  if (!latching() || t_->store_.backed()) {  // (a store's cursors run exclusive: never latching)
    BTree::Path path;
    PageId id = kind == BTree::Descent::kTo      ? t_->descend(key, &path)
                : kind == BTree::Descent::kAfter ? t_->descend_after(key)
                                                 : t_->descend_edge(kind == BTree::Descent::kLast);
    return enter(id, scan_start);
  }
  for (unsigned tries = 0; tries < 64; tries++) {
    BTree::ParentRef parent;
    PageId id = t_->descend_shared(kind, key, &parent);
    if (id == kInvalidPageId) break;
    moved_ = false;
    if (enter(id, scan_start, &parent)) return true;
    if (!moved_) return false;
  }
  restart_ = true;  // the parent kept changing: exclusive
  release();
  return false;
}

bool Cursor::enter(PageId leaf, bool scan_start, const BTree::ParentRef* parent) {
  if (latching()) {
    // One leaf latched at a time: inner nodes above the leaves' parents do not change
    // under the shared tree latch, and a parent that did (phase 2c) is checked once the
    // leaf is latched, so the next leaf is found without holding this one.
    release();
    held_ = t_->latch_word(leaf);
    leaf_ver_ = PageLatch(held_, mode_->block).lock_shared();
    if (parent && !parent->holds()) {
      release();
      moved_ = true;
      return false;
    }
  } else {
    leaf_ver_ = t_->leaf_version(leaf);
  }
  // The operation counter steps once per scan (paper, section 5.1), on the
  // leaf where it starts: leaves reached by moving on, or by re-positioning
  // after a modification, belong to the same scan.
  if (scan_start && t_->cfg_.adaptive && !t_->on_scan(leaf, mode_)) {
    restart_ = true;
    release();
    return false;
  }
  leaf_ = leaf;
  uint8_t* p = t_->page(leaf);
  // Lazy sorting before scans (paper, section 3.4).
  // The sorted image is kept (marked dirty): a cursor's positions refer to it,
  // and a clean frame could be dropped and reloaded unsorted.
  if (p[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf) && !FingerprintLeaf{p}.is_sorted()) {
    // Shared with writers: the sort changes this leaf alone (no scratch, no
    // tree field), so it runs under the leaf's latch exclusive, and the cursor
    // latches it shared again. A writer may unsort it in between: a few tries,
    // then the exclusive tree latch.
    for (unsigned tries = 0; latching() && tries < 4; tries++) {
      std::atomic<uint64_t>* w = held_;
      release();
      PageLatch l(w, mode_->block);
      l.lock_exclusive();
      if (!FingerprintLeaf{p}.is_sorted()) {
        FingerprintLeaf{p}.sort();
        l.unlock_exclusive();
      } else {
        l.unlock_exclusive_unchanged();
      }
      held_ = w;
      leaf_ver_ = l.lock_shared();
      if (parent && !parent->holds()) {  // its range may have moved while it was let go
        release();
        moved_ = true;
        return false;
      }
      if (FingerprintLeaf{p}.is_sorted()) return true;
    }
    if (mode_ && mode_->shared) {  // a shared holder changes no page
      restart_ = true;
      release();
      return false;
    }
    FingerprintLeaf{t_->page_mut(leaf)}.sort();
  }
  return true;
}

Status Cursor::restart() {
  restart_ = false;
  release();
  // Positioned before: re-position from the last key returned (or the seek key).
  if (state_ != kUnpositioned) version_ = t_->version_ - 1;
  return Status::kRestart;
}

bool Cursor::settle_forward(int pos) {
  for (;;) {
    // A page that could not be read (poison frame) must not loop: it has no
    // records and no fences, so moving on would land on it again.
    if (t_->store_.failure() != Status::kOk) return false;
    const uint8_t* p = t_->page(leaf_);
    int q = leaf::next_present(p, pos);
    if (q < static_cast<int>(leaf::positions(p))) {
      pos_ = q;
      return true;
    }
    Fences f = fences_of(p);
    if (f.upper_inf) return false;
    fence_.assign(f.upper);
    if (!enter_at(BTree::Descent::kAfter, fence_.slice())) return false;
    // The leaf after fence_ ends past it, or the walk would come back here for ever (fences
    // that disagree with their parents: a damaged or crafted store; fuzz_crafted_pages).
    if (t_->store_.failure() != Status::kOk) return false;
    const Fences nf = fences_of(t_->page(leaf_));
    if (!nf.upper_inf && compare(nf.upper, fence_.slice()) <= 0) [[unlikely]] {
      t_->store_.note_corrupt(leaf_);
      return false;
    }
    pos = 0;
  }
}

bool Cursor::settle_backward(int pos) {
  for (;;) {
    // A page that could not be read (poison frame) must not loop: it has no
    // records and no fences, so moving on would land on it again.
    if (t_->store_.failure() != Status::kOk) return false;
    const uint8_t* p = t_->page(leaf_);
    int q = pos < 0 ? -1 : leaf::prev_present(p, pos);
    if (q >= 0) {
      pos_ = q;
      return true;
    }
    Fences f = fences_of(p);
    if (f.lower_inf) return false;
    fence_.assign(f.lower);
    if (!enter_at(BTree::Descent::kTo, fence_.slice())) return false;
    // The leaf holding fence_ starts below it (as settle_forward's check, the other way).
    if (t_->store_.failure() != Status::kOk) return false;
    const Fences nf = fences_of(t_->page(leaf_));
    if (!nf.lower_inf && compare(nf.lower, fence_.slice()) >= 0) [[unlikely]] {
      t_->store_.note_corrupt(leaf_);
      return false;
    }
    pos = static_cast<int>(leaf::positions(t_->page(leaf_))) - 1;
  }
}

Status Cursor::position(bool scan_start) {
  pending_advance_ = false;
  bool ok;
  if (anchor_edge_) {
    if (!enter_at(reverse_ ? BTree::Descent::kLast : BTree::Descent::kFirst, {}, scan_start)) return Status::kRestart;
    ok = reverse_ ? settle_backward(INT_MAX) : settle_forward(0);
  } else {
    if (!enter_at(BTree::Descent::kTo, anchor_.slice(), scan_start)) return Status::kRestart;
    bool exact;
    int pos = leaf::lower_bound(t_->page(leaf_), anchor_.slice(), &exact);
    if (!reverse_) {
      if (exact && !anchor_inclusive_) pos++;
      ok = settle_forward(pos);
    } else {
      if (!(exact && anchor_inclusive_)) pos--;
      ok = settle_backward(pos);
    }
  }
  if (restart_) return Status::kRestart;
  state_ = ok ? kOnRecord : kEnd;
  version_ = t_->version_;
  return ok ? Status::kOk : Status::kNotFound;
}

bool Cursor::leaf_unchanged() {
  // (On a store, the count of writes made under the shared latch: tree-wide.)
  if (!latching()) return t_->leaf_version(leaf_) == leaf_ver_;
  if (held_) return true;  // latched since it was entered: unchanged
  held_ = t_->latch_word(leaf_);
  if (PageLatch(held_, mode_->block).lock_shared() == leaf_ver_) return true;
  release();
  return false;
}

Status Cursor::seek(Slice key, uint32_t flags) {
  if (t_->broken_ != Status::kOk) return t_->broken_;
  t_->store_.begin_op();
  Status s = seek_attempt(key, flags);
  Status f = t_->store_.failure();
  if (f != Status::kOk) {
    state_ = kUnpositioned;
    return f;
  }
  return s;
}

Status Cursor::next(KeyBuffer* key, ValueRef* value) {
  if (t_->broken_ != Status::kOk) return t_->broken_;
  t_->store_.begin_op();
  return next_in_op(key, value);
}

Status Cursor::next_in_op(KeyBuffer* key, ValueRef* value) {
  Status s = next_attempt(key, value);
  Status f = t_->store_.failure();
  if (f != Status::kOk) {
    // Retry from the last key returned: the next call re-positions.
    if (state_ != kUnpositioned) version_ = t_->version_ - 1;
    return f;
  }
  return s;
}

Status Cursor::seek_attempt(Slice key, uint32_t flags) {
  reverse_ = flags & kSeekReverse;
  anchor_edge_ = flags & kSeekEdge;
  anchor_inclusive_ = !(flags & kSeekExclusive);
  if (!anchor_edge_) {
    if (key.len > kMaxKeySize) {
      // No stored key is longer: every key >= key is > its kMaxKeySize-byte
      // prefix, and every key <= key is <= that prefix.
      key.len = kMaxKeySize;
      anchor_inclusive_ = reverse_;
    }
    if (key.len) memcpy(anchor_.data, key.data, key.len);
    anchor_.len = key.len;
    anchor_leaf_ = kInvalidPageId;
  }
  Status s = position(true);
  return s == Status::kRestart ? restart() : s;
}

Status Cursor::next_attempt(KeyBuffer* key, ValueRef* value) {
  if (state_ == kUnpositioned) {
    anchor_edge_ = true;
    reverse_ = false;
    // next() without seek() starts a scan from the first key
    if (position(true) == Status::kRestart) return restart();
  } else if (t_->version_ != version_ || !leaf_unchanged()) {
    // the tree (or the leaf) changed: re-seek from the last key returned (or the seek key)
    if (position(false) == Status::kRestart) return restart();
  } else if (pending_advance_) {
    pending_advance_ = false;
    bool ok = reverse_ ? settle_backward(pos_ - 1) : settle_forward(pos_ + 1);
    if (restart_) return restart();
    state_ = ok ? kOnRecord : kEnd;
    version_ = t_->version_;
  }
  if (state_ != kOnRecord) return Status::kNotFound;
  const uint8_t* p = t_->page(leaf_);
  // Keys of one leaf share their prefix: after the first, copy only the rest.
  if (anchor_leaf_ == leaf_ && anchor_version_ == t_->version_ && anchor_leaf_ver_ == leaf_ver_) {
    leaf::key_tail_at(p, pos_, &anchor_);
  } else {
    leaf::key_at(p, pos_, &anchor_);
    anchor_leaf_ = leaf_;
    anchor_version_ = t_->version_;
    anchor_leaf_ver_ = leaf_ver_;
  }
  if (key) key->assign(anchor_.slice());
  if (value) *value = leaf::value_at(p, pos_);
  anchor_edge_ = false;
  anchor_inclusive_ = false;
  pending_advance_ = true;
  return Status::kOk;
}

}  // namespace adaptree
