#include "core/tree/rebalance.h"

#include <cstring>

#include "core/layouts/leaf.h"
#include "core/layouts/separator.h"
#include "core/tree/btree.h"
#include "core/util/checked.h"

namespace adaptree {

namespace {
// XMerge frees a page only when the group's free bytes exceed a page by this
// much per leaf (fences and headers of the packed leaves).
constexpr unsigned kXMergeMarginPerLeaf = 64;
const uint8_t kZeros[kPageSize] = {};

bool is_leaf_page(const uint8_t* p) { return leaf::is_leaf(p); }
}  // namespace

unsigned Rebalancer::leaf_content(const uint8_t* p) {
  uint8_t* q = const_cast<uint8_t*>(p);
  unsigned used;
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicLeaf: used = BasicNode{q}.used_bytes(); break;
    case PageTag::kFingerprintLeaf: used = FingerprintLeaf{q}.used_bytes(); break;
    case PageTag::kSemiDenseLeaf: used = SemiDenseLeaf{q}.used_bytes(); break;
    case PageTag::kFullyDenseLeaf: used = FullyDenseLeaf{q}.used_bytes(); break;
    default: return kNodeSize;
  }
  unsigned fences = load16(p + hdr::kLowerLen) + load16(p + hdr::kUpperLen);
  return used > fences ? used - fences : 0;
}

bool Rebalancer::at_hand(PageId id) const {
  return group_ ? group_->find(id) != nullptr : t_->store_.resident(id);
}
uint8_t* Rebalancer::read(PageId id) const {
  if (!group_) return t_->page(id);
  uint8_t* p = group_->find(id);
  return p ? p : allocated_.find(id);
}
// Under the shared latch a group's page is written in place, marked dirty first if it is
// clean (the caller holds its latch; a synchronous store: make_room_shared checks).
uint8_t* Rebalancer::write(PageId id) const {
  if (!group_) return t_->page_mut(id);
  int i = group_->index_of(id);
  if (i >= 0 && group_->frames[i] != kNoFrame) t_->store_.mark_dirty_shared(group_->frames[i]);
  return read(id);
}
Status Rebalancer::allocate(PageId* out) {
  if (!group_) return t_->store_.allocate(out);
  uint8_t* p;
  if (allocated_.n == SharedGroup::kMax || !t_->store_.allocate_shared(out, &p)) return Status::kOutOfMemory;
  allocated_.add(*out, p);
  return Status::kOk;
}
void Rebalancer::bump_version() const {
  if (group_) __atomic_fetch_add(&t_->version_, 1, __ATOMIC_RELAXED);
  else t_->version_++;
}

void Rebalancer::absorb_into(Rebalancer& main) {
  FillStats& a = stats_;
  FillStats& b = main.stats_;
  auto add = [](uint64_t* to, uint64_t* from) {
    if (*from) __atomic_fetch_add(to, *from, __ATOMIC_RELAXED);
    *from = 0;
  };
  // Made under the shared latch: counted as such too.
  if (a.redistributions) __atomic_fetch_add(&b.shared_shifts, a.redistributions, __ATOMIC_RELAXED);
  if (a.splits_2to3) __atomic_fetch_add(&b.shared_splits_2to3, a.splits_2to3, __ATOMIC_RELAXED);
  add(&b.redistributions, &a.redistributions);
  add(&b.shifts, &a.shifts);
  add(&b.splits_2to3, &a.splits_2to3);
  add(&b.edge_splits, &a.edge_splits);
  add(&b.edge_refills, &a.edge_refills);
  add(&b.inner_refills, &a.inner_refills);
  add(&b.xmerges, &a.xmerges);
  add(&b.xmerge_attempts, &a.xmerge_attempts);
  add(&b.regroup_calls, &a.regroup_calls);
  add(&b.before_split_calls, &a.before_split_calls);
  group_ = nullptr;
  allocated_.n = 0;
}

bool Rebalancer::grow_scratch() {
  if (src_.size() >= size_t{kMaxGroup} * kPageSize) return true;
  return resize_checked(src_, size_t{kMaxGroup} * kPageSize) && resize_checked(dst_, size_t{kMaxGroup} * kPageSize) &&
         resize_checked(probe_, kPageSize) && resize_checked(arena_, size_t{kMaxGroup} * (4 * kPageSize + 4));
}

// ---------------------------------------------------------------- regroup

// A leaf of an edge refill, as BTree::build_leaf chooses, but comparison-based where a dense
// layout would take more than kFillSixteenths of the page or be too sparse to keep (its range
// spans the new fence: ascending keys such as decimal strings leave gaps). False if it
// does not fit within kFillSixteenths.
bool Rebalancer::build_refilled(uint8_t* d, const Fences& f, const RecordRef* r, unsigned cnt, uint8_t counter,
                                unsigned limit) {
  BTree& t = *t_;
  auto within = [d, limit]() { return leaf_content(d) + load16(d + hdr::kLowerLen) + load16(d + hdr::kUpperLen) <= limit; };
  if (t.build_leaf(d, f, r, cnt, counter)) {
    const bool dense = d[0] == static_cast<uint8_t>(PageTag::kFullyDenseLeaf) ||
                       d[0] == static_cast<uint8_t>(PageTag::kSemiDenseLeaf);
    if (!dense) return within();
    if (BTree::dense_enough(d) && within()) return true;
  }
  if (!t.cfg_.fully_dense_leaves && !t.cfg_.semi_dense_leaves) return false;
  const Config saved = t.cfg_;
  t.cfg_.fully_dense_leaves = t.cfg_.semi_dense_leaves = false;
  const bool ok = t.build_leaf(d, f, r, cnt, counter);
  t.cfg_ = saved;
  return ok && within();
}

// Where key goes among recs_[0, n): the first record not below it; false if key is one of
// them (an update: no edge split or refill for it) or lies farther from the edge (edge > 0:
// the end; < 0: the start) than edge_slack_ records (a refill) or split_slack_ (an edge split).
bool Rebalancer::edge_position(const Slice* key, int edge, unsigned* kpos) const {
  const unsigned n = static_cast<unsigned>(recs_.size());
  unsigned lo = 0, hi = n;
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    if (compare_record_key(recs_[mid], *key) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && compare_record_key(recs_[lo], *key) == 0) return false;
  *kpos = lo;
  const unsigned slack = edge == 1 || edge == -1 ? split_slack_ : edge_slack_;
  return edge > 0 ? lo + slack >= n : lo <= slack;
}

// The cut of an edge refill (regroup, edge = +-2): the group is a leaf where keys come in
// order (the tree's last, or an append point inside it; the tree's first) and its left (right)
// neighbour, its records recs_[0, n) (the neighbour's are the first nl (the last n - nl)), key
// past (before) all of them or within edge_slack_ of that. The
// neighbour takes as many of the edge leaf's records as it holds at most kFillSixteenths
// full with its new fence: they lose the prefix that fence gives, which the edge leaf
// (one infinite fence, no prefix) could not. Sets refill_cut_ (records [0, cut) go left);
// false if the neighbour takes none.
bool Rebalancer::refill_cut(const Slice* key, int edge, unsigned first_count) {
  BTree& t = *t_;
  const unsigned n = static_cast<unsigned>(recs_.size());
  RecordRef kr{key->data, nullptr, nullptr, static_cast<uint16_t>(key->len), 0, 0};
  const unsigned nl = first_count;  // records of the group's first leaf
  if (nl == 0 || nl >= n) return false;
  // The key goes at the edge leaf's end (start), or near it: records before (after) it may
  // move; the key and those after (before) it stay.
  unsigned kpos;
  if (!edge_position(key, edge, &kpos)) return false;
  if (edge > 0 ? kpos <= nl : kpos >= nl) return false;
  const Fences lo_f = fences_of(src_.data()), hi_f = fences_of(src_.data() + kPageSize);
  uint8_t* d = dst_.data();
  const uint8_t counter = src_.data()[static_cast<size_t>(edge > 0 ? 0 : 1) * kPageSize + hdr::kCounter];
  // The neighbour's fences with cut c (records [0, c) go left); its separator in seps_[0].
  auto fences_at = [&](unsigned c) {
    KeyBuffer& sep = seps_[0];
    if (edge > 0) separator_between(recs_[c - 1], c < kpos ? recs_[c] : kr, &sep);
    else separator_between(c > kpos ? recs_[c - 1] : kr, recs_[c], &sep);
    Fences f;
    f.lower_inf = edge > 0 ? lo_f.lower_inf : false;
    f.lower = edge > 0 ? lo_f.lower : sep.slice();
    f.upper_inf = edge > 0 ? false : hi_f.upper_inf;
    f.upper = edge > 0 ? sep.slice() : hi_f.upper;
    return f;
  };
  // Bytes of the neighbour with cut c as a basic leaf (BasicNode::space_needed from sums of
  // the records' key and value bytes): a binary search over these builds nothing. A build
  // at every step cost ascending inserts 2x in wasm (build_leaf: heads, dense attempts).
  if (!resize_checked(cum_, size_t{n} + 1)) return false;
  cum_[0] = 0;
  for (unsigned i = 0; i < n; i++) cum_[i + 1] = cum_[i] + recs_[i].key_len() + recs_[i].value_bytes();
  const uint8_t flags = t.leaf_flags();
  const unsigned ss = (flags & kFlagHeads) ? 10 : 6;
  const unsigned base = (flags & kFlagHints) ? BasicNode::kSlotsHinted : BasicNode::kSlotsPlain;
  constexpr unsigned kLimit = kNodeSize * kFillSixteenths / 16;
  auto estimate_fits = [&](unsigned c) {
    const Fences f = fences_at(c);
    const uint32_t plen = t.cfg_.prefix_truncation ? fence_prefix_len(f) : 0;
    const unsigned from = edge > 0 ? 0 : c, cnt = edge > 0 ? c : n - c;
    const uint64_t bytes = uint64_t{base} + fences_bytes(f) + uint64_t{cnt} * ss + (cum_[from + cnt] - cum_[from]) -
                           uint64_t{cnt} * plen;
    return bytes <= kLimit;
  };
  auto builds = [&](unsigned c) {
    const Fences f = fences_at(c);
    return build_refilled(d, f, edge > 0 ? recs_.data() : recs_.data() + c, edge > 0 ? c : n - c, counter);
  };
  // The most records the neighbour takes by the estimate, fewer while the leaf as built (a
  // fingerprint leaf's larger slots) does not fit: the largest (smallest) c past nl.
  unsigned c;
  if (edge > 0) {
    unsigned lo = nl, hi = kpos;
    while (lo < hi) {
      unsigned mid = lo + (hi - lo + 1) / 2;
      if (estimate_fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    c = lo;
    while (c > nl && !builds(c)) c = nl + (c - nl) / 2;
    if (c == nl) return false;
  } else {
    unsigned lo = kpos, hi = nl;
    while (lo < hi) {
      unsigned mid = lo + (hi - lo) / 2;
      if (estimate_fits(mid)) hi = mid;
      else lo = mid + 1;
    }
    c = lo;
    while (c < nl && !builds(c)) c = nl - (nl - c) / 2;
    if (c == nl) return false;
  }
  refill_cut_ = c;
  fences_at(c);  // (seps_[0]: the cut's separator)
  return true;
}

bool Rebalancer::regroup(PageId parent, unsigned first, unsigned m, unsigned m_out, const Slice* key, uint16_t vfield,
                         int edge) {
  BTree& t = *t_;
  stats_.regroup_calls++;
  if (m < 1 || m > kMaxGroup || m_out < 1 || m_out > kMaxGroup) return false;
  // Under the shared latch no page is released, and at most one allocated (so a failed
  // allocation leaves nothing to give back).
  if (group_ && (m_out < m || m_out > m + 1)) return false;
  if (!grow_scratch()) return false;
  BasicNode pn{read(parent)};
  if (first + m - 1 > pn.count()) return false;
  PageId ids[kMaxGroup];
  recs_.clear();
  src_of_.clear();
  // 1. The group's records, in key order (each leaf is a copy: fingerprint
  //    leaves sort theirs, dense leaves spell their keys out into the arena).
  for (unsigned i = 0; i < m; i++) {
    ids[i] = pn.child(first + i);
    uint8_t* s = src_.data() + size_t{i} * kPageSize;
    if (group_ && !at_hand(ids[i])) return false;
    memcpy(s, read(ids[i]), kPageSize);
    if (!is_leaf_page(s)) return false;
    unsigned n = leaf::count(s);
    size_t base = recs_.size();
    if (!resize_checked(recs_, base + n) || !resize_checked(src_of_, base + n)) return false;
    uint8_t* arena = arena_.data() + size_t{i} * (4 * kPageSize + 4);
    unsigned got = n;
    switch (static_cast<PageTag>(s[0])) {
      case PageTag::kBasicLeaf: BasicNode{s}.extract(recs_.data() + base); break;
      case PageTag::kFingerprintLeaf: FingerprintLeaf{s}.extract(recs_.data() + base); break;
      case PageTag::kSemiDenseLeaf: got = SemiDenseLeaf{s}.extract(recs_.data() + base, arena); break;
      case PageTag::kFullyDenseLeaf: got = FullyDenseLeaf{s}.extract(recs_.data() + base, arena); break;
      default: return false;
    }
    if (got != n) return false;
    for (unsigned j = 0; j < n; j++) src_of_[base + j] = static_cast<uint8_t>(i);
  }
  unsigned n = static_cast<unsigned>(recs_.size());
  if (edge == 2 || edge == -2) {
    if (!key || m != 2 || m_out != 2 || n < 2) return false;
    if (!refill_cut(key, edge, leaf::count(src_.data()))) return false;
  } else if (edge != 0) {
    // An append (prepend) past every record of a leaf, or near the end (start) of the tree's
    // last (first) leaf: the leaf keeps the records before (after) the key, and the key starts
    // a new leaf beside it with those after (before) it.
    if (!key || m != 1 || m_out != 2 || n == 0) return false;
    RecordRef kr{key->data, nullptr, nullptr, static_cast<uint16_t>(key->len), 0, 0};
    if (!edge_position(key, edge, &edge_kpos_)) return false;
    if (edge > 0 ? edge_kpos_ == 0 : edge_kpos_ == n) return false;
    if (edge > 0) separator_between(recs_[edge_kpos_ - 1], kr, &seps_[0]);
    else separator_between(kr, recs_[edge_kpos_], &seps_[0]);
  } else if (n < m_out) {
    return false;  // every leaf keeps a record
  }
  Fences lo_f = fences_of(src_.data()), hi_f = fences_of(src_.data() + size_t{m - 1} * kPageSize);

  // 2. Cut points, even by estimated bytes (the pending key counted where it goes).
  unsigned kpos = n, key_bytes = 0;
  if (key) {
    key_bytes = key->len + (vfield & kValueLenMask) + kSlotBytes;
    unsigned lo = 0, hi = n;
    while (lo < hi) {
      unsigned mid = (lo + hi) / 2;
      if (compare_record_key(recs_[mid], *key) < 0) lo = mid + 1;
      else hi = mid;
    }
    kpos = lo;
  }
  if (!resize_checked(cum_, size_t{n} + 1)) return false;
  cum_[0] = 0;
  for (unsigned i = 0; i < n; i++)
    cum_[i + 1] = cum_[i] + recs_[i].key_len() + recs_[i].value_bytes() + kSlotBytes + (i == kpos ? key_bytes : 0);
  uint64_t total = cum_[n] + (kpos == n ? key_bytes : 0);
  unsigned cut[kMaxGroup + 1];
  cut[0] = 0;
  cut[m_out] = n;
  if (edge == 1 || edge == -1) cut[1] = edge_kpos_;
  if (edge == 2 || edge == -2) cut[1] = refill_cut_;
  unsigned per_leaf = n / m_out;
  unsigned w = per_leaf / 32;  // as choose_split_point: n/16 keys around the even cut
  for (unsigned q = 1; q < m_out && edge == 0; q++) {
    uint64_t target = total * q / m_out;
    unsigned b = 1;
    {
      unsigned lo = 1, hi = n - 1;
      while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (cum_[mid] < target) lo = mid + 1;
        else hi = mid;
      }
      b = lo;
    }
    unsigned lo = b > w ? b - w : 1, hi = b + w;
    if (lo < cut[q - 1] + 1) lo = cut[q - 1] + 1;
    unsigned max_cut = n - (m_out - q);  // leaves a record for each later leaf
    if (hi > max_cut) hi = max_cut;
    if (lo > hi) {
      if (cut[q - 1] + 1 > max_cut) return false;
      lo = hi = cut[q - 1] + 1 > b ? cut[q - 1] + 1 : (b > max_cut ? max_cut : b);
    }
    // The shortest separator in [lo, hi]: the first record that differs from
    // the window's first in the byte past the window's common prefix.
    unsigned j = lo;
    if (lo < hi) {
      uint32_t common = common_prefix_records(recs_[lo - 1], recs_[hi]);
      const RecordRef& low = recs_[lo - 1];
      j = hi;
      for (unsigned c = lo; c <= hi; c++) {
        if (low.key_len() <= common || recs_[c].key_len() <= common ||
            recs_[c].key_byte(common) != low.key_byte(common)) {
          j = c;
          break;
        }
      }
    }
    cut[q] = j;
    separator_between(recs_[j - 1], recs_[j], &seps_[q - 1]);
  }

  const bool refill = edge == 2 || edge == -2;
  // 3. The new leaves, built aside. An edge split whose full leaf does not
  //    take its new fence (no prefix truncation) gives a few records along.
  int key_leaf = -1;
  for (unsigned shift = 0;; shift++) {
    if ((edge == 1 || edge == -1) && shift > 0) {
      if (shift > 8 || shift >= n) return false;
      if (edge > 0 ? shift >= edge_kpos_ : edge_kpos_ + shift >= n) return false;
      cut[1] = edge > 0 ? edge_kpos_ - shift : edge_kpos_ + shift;
      separator_between(recs_[cut[1] - 1], recs_[cut[1]], &seps_[0]);
    }
    bool built = true;
    key_leaf = -1;
    for (unsigned q = 0; q < m_out && built; q++) {
      Fences f;
      f.lower_inf = q == 0 ? lo_f.lower_inf : false;
      f.lower = q == 0 ? lo_f.lower : seps_[q - 1].slice();
      f.upper_inf = q == m_out - 1 ? hi_f.upper_inf : false;
      f.upper = q == m_out - 1 ? hi_f.upper : seps_[q].slice();
      unsigned from = cut[q], cnt = cut[q + 1] - cut[q];
      uint8_t counter = src_.data()[static_cast<size_t>(cnt ? src_of_[from] : 0) * kPageSize + hdr::kCounter];
      uint8_t* d = dst_.data() + size_t{q} * kPageSize;
      // (an edge refill's neighbour as refill_cut built it; the edge leaf may be full)
      if (refill && (edge > 0 ? q == 0 : q == 1)) built = build_refilled(d, f, recs_.data() + from, cnt, counter);
      // An edge split's leaf that keeps the records (its fences now closed: no key comes past
      // them) is dense only where dense enough: built dense for its ~30 records of 100-byte keys
      // it took a page for slots that stay empty (ascending hex counters: 417 pages against
      // 258 under hints; a probe, session 31).
      else if ((edge == 1 && q == 0) || (edge == -1 && q == 1))
        built = build_refilled(d, f, recs_.data() + from, cnt, counter, kNodeSize);
      else built = t.build_leaf(d, f, recs_.data() + from, cnt, counter);
      // Operation adaption turns a fingerprint leaf back into a basic one on
      // scans: it must still fit that layout (larger slots, hints), or it
      // stays a fingerprint leaf for good.
      if (built && t.cfg_.adaptive && d[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf)) {
        uint32_t plen = t.cfg_.prefix_truncation ? fence_prefix_len(f) : 0;
        built = BasicNode::space_needed(t.leaf_flags(), f, plen, recs_.data() + from, cnt) <= kNodeSize;
      }
      if (key && key_in_fences(f, *key)) key_leaf = static_cast<int>(q);
    }
    if (built) break;
    if (edge != 1 && edge != -1) return false;
  }
  // The pending insert must fit where it goes, or this was for nothing.
  if (key) {
    if (key_leaf < 0) return false;
    memcpy(probe_.data(), dst_.data() + static_cast<size_t>(key_leaf) * kPageSize, kPageSize);
    OldValue old;
    if (leaf::upsert(probe_.data(), *key, kZeros, vfield, &old) == PutResult::kNoSpace) return false;
  }

  // 4. The parent takes m_out - 1 separators for the m - 1 it gives up.
  unsigned plen = pn.prefix_len();
  uint64_t need = 0, have = pn.free_space_after_compaction();
  for (unsigned i = 0; i + 1 < m; i++) have += pn.entry_space(pn.suffix(first + i).len, 4);
  for (unsigned q = 0; q + 1 < m_out; q++) {
    if (seps_[q].len < plen) return false;
    need += pn.entry_space(seps_[q].len - plen, 4);
  }
  if (need > have) return false;
  // Every separator count change keeps a key in the parent (or the root goes).
  unsigned parent_keys = pn.count() - (m - 1) + (m_out - 1);
  if (parent_keys == 0 && parent != t.root_) return false;

  // 5. Pages: the last leaf keeps its id (the parent's entry after the group
  //    points to it); the others reuse the group's ids, new or freed as needed.
  PageId out_ids[kMaxGroup];
  unsigned reuse = m - 1 < m_out - 1 ? m - 1 : m_out - 1;
  for (unsigned q = 0; q < reuse; q++) out_ids[q] = ids[q];
  for (unsigned q = reuse; q + 1 < m_out; q++) {
    Status s = allocate(&out_ids[q]);
    if (s != Status::kOk) {
      for (unsigned r = reuse; r < q; r++) t.store_.release(out_ids[r]);
      return false;
    }
  }
  out_ids[m_out - 1] = ids[m - 1];
  // The parent pointer again: an allocation may have moved nothing (frames
  // of this operation stay put), but read it fresh for the change.
  pn = BasicNode{write(parent)};
  // With Room::kMoveFew a page that held a leaf before takes its new one rebased
  // (BasicNode::rebase): the records it keeps keep their bytes, and a commit logs a delta of it.
  const bool rebase = t.room_ == Room::kMoveFew;
  for (unsigned q = 0; q < m_out; q++) {
    uint8_t* d = write(out_ids[q]);
    const uint8_t* img = dst_.data() + size_t{q} * kPageSize;
    if (!rebase || (q >= reuse && q != m_out - 1) || !is_basic_tag(d[0]) || !BasicNode{d}.rebase(img)) memcpy(d, img, kPageSize);
  }
  for (unsigned i = 0; i + 1 < m; i++) pn.remove_at(first);
  for (unsigned q = 0; q + 1 < m_out; q++) {
    uint8_t child[4];
    store32(child, out_ids[q]);
    pn.insert_at(first + q, seps_[q].data + plen, seps_[q].len - plen, child, 4);
  }
  for (unsigned i = reuse; i + 1 < m; i++) t.store_.release(ids[i]);
  if (parent_keys == 0) {
    // The root lost its last key: its only child is the new root.
    PageId child = pn.upper_child();
    t.store_.release(parent);
    t.root_ = child;
    t.height_--;
  }
  bump_version();
  return true;
}

// ---------------------------------------------------------------- shift

namespace {
// Sets a basic node's lower (upper) fence to f, a finite key: written at the
// top of the heap (compacted first if needed), the old one becomes garbage.
// The caller checked that the prefix length stays and that the bytes fit.
void set_fence(BasicNode n, bool upper, Slice f, Room room) {
  unsigned off_at = upper ? hdr::kUpperOff : hdr::kLowerOff, len_at = upper ? hdr::kUpperLen : hdr::kLowerLen;
  if (n.free_space() < f.len) n.make_room(f.len, room);
  unsigned top = n.heap_start() - f.len;
  memcpy(n.p + top, f.data, f.len);
  store16(n.p + hdr::kHeapUsed, n.heap_used() - load16(n.p + len_at) + f.len);
  store16(n.p + off_at, top);
  store16(n.p + len_at, f.len);
  store16(n.p + hdr::kHeapStart, top);
  n.p[hdr::kFlags] &= static_cast<uint8_t>(~(upper ? kFlagUpperInf : kFlagLowerInf));
}
}  // namespace

bool Rebalancer::shift(PageId parent, unsigned left, Slice key, uint16_t vfield, bool with_key) {
  BTree& t = *t_;
  BasicNode pn{read(parent)};
  if (left >= pn.count()) return false;
  PageId lid = pn.child(left), rid = pn.child(left + 1);
  if (!at_hand(lid) || !at_hand(rid)) return false;
  struct Ids {
    const Rebalancer* r;
    PageId parent, lid, rid;
  } ids{this, parent, lid, rid};
  // (On a store write() marks them dirty, and returns the bytes read() did.)
  auto mark = [](void* a) {
    Ids* i = static_cast<Ids*>(a);
    i->r->write(i->parent);
    i->r->write(i->lid);
    i->r->write(i->rid);
  };
  if (!shift_pages(pn.p, left, read(lid), read(rid), key, vfield, with_key, t.cfg_.prefix_truncation, recs_, nullptr,
                   mark, &ids, t.room_))
    return false;
  bump_version();
  stats_.shifts++;
  return true;
}

bool Rebalancer::shift_pages(uint8_t* pp, unsigned left, uint8_t* lp, uint8_t* rp, Slice key, uint16_t vfield,
                             bool with_key, bool trunc, std::vector<RecordRef>& recs_, bool* key_left,
                             void (*before_change)(void*), void* arg, Room room) {
  BasicNode pn{pp}, L{lp}, R{rp};
  if (left >= pn.count()) return false;
  const PageId lid = pn.child(left);
  constexpr uint8_t kLayout = kFlagHeads | kFlagHints;
  if (L.p[0] != static_cast<uint8_t>(PageTag::kBasicLeaf) || R.p[0] != static_cast<uint8_t>(PageTag::kBasicLeaf) ||
      (L.p[hdr::kFlags] & kLayout) != (R.p[hdr::kFlags] & kLayout))
    return false;
  unsigned nl = L.count(), nr = R.count(), n = nl + nr, ss = L.slot_size();
  if (n < 2 || !resize_checked(recs_, n)) return false;
  L.extract(recs_.data());
  R.extract(recs_.data() + nl);
  // The even cut by bytes, the pending key counted where it goes: the first
  // c records stay left.
  unsigned kpos = n;
  if (with_key) {
    unsigned lo = 0, hi = n;
    while (lo < hi) {
      unsigned mid = (lo + hi) / 2;
      if (compare_record_key(recs_[mid], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    kpos = lo;
  }
  unsigned vbytes = vfield & kValueLenMask;
  uint64_t key_bytes = with_key ? key.len + vbytes + ss : 0, total = key_bytes;
  for (unsigned i = 0; i < n; i++) total += recs_[i].key_len() + recs_[i].value_bytes() + ss;
  uint64_t acc = 0;
  unsigned c = 0;
  while (c < n - 1) {
    uint64_t next = acc + recs_[c].key_len() + recs_[c].value_bytes() + ss + (c == kpos ? key_bytes : 0);
    if (2 * next > total) break;
    acc = next;
    c++;
  }
  if (c == 0) c = 1;
  if (c == nl) return false;  // already even: only a split makes room
  KeyBuffer sep;
  separator_between(recs_[c - 1], recs_[c], &sep);
  Slice s = sep.slice();
  // Both prefixes must stay (stored keys are suffixes after them).
  Fences lf = fences_of(L.p), rf = fences_of(R.p);
  if (lf.upper_inf || rf.lower_inf) return false;
  Fences nlf = lf, nrf = rf;
  nlf.upper = s;
  nrf.lower = s;
  unsigned lplen = L.prefix_len(), rplen = R.prefix_len();
  if ((trunc ? fence_prefix_len(nlf) : 0) != lplen || (trunc ? fence_prefix_len(nrf) : 0) != rplen) return false;
  // Room: the receiver takes the records and its new fence; the pending key
  // must fit where it goes.
  bool to_right = c < nl;
  unsigned from = to_right ? c : nl, to = to_right ? nl : c;
  unsigned dplen = to_right ? rplen : lplen;  // the receiver's prefix
  uint64_t moved = 0;
  for (unsigned i = from; i < to; i++) {
    if (recs_[i].key_len() < dplen) return false;
    moved += ss + recs_[i].key_len() - dplen + recs_[i].value_bytes();
  }
  // (Old fences are not counted as freed: they stay until the new ones are written.)
  uint64_t lfree = L.free_space_after_compaction(), rfree = R.free_space_after_compaction();
  uint64_t given = 0;  // bytes the giver's entries and slots took there
  for (unsigned i = from; i < to; i++) given += ss + recs_[i].key_len() - (to_right ? lplen : rplen) + recs_[i].value_bytes();
  uint64_t& dfree = to_right ? rfree : lfree;
  uint64_t& sfree = to_right ? lfree : rfree;
  if (dfree < moved + s.len || sfree + given < s.len) return false;
  dfree -= moved + s.len;
  sfree += given - s.len;
  const bool key_left_of = compare(key, s) <= 0;
  unsigned kplen = key_left_of ? lplen : rplen;
  if (with_key && (key.len < kplen || (key_left_of ? lfree : rfree) < ss + key.len - kplen + vbytes)) return false;
  // The parent's separator between them.
  unsigned pplen = pn.prefix_len();
  if (s.len < pplen) return false;
  if (pn.free_space_after_compaction() + pn.entry_space(pn.suffix(left).len, 4) < pn.entry_space(s.len - pplen, 4))
    return false;

  // Everything fits: change the three pages.
  if (key_left) *key_left = key_left_of;
  if (before_change) before_change(arg);
  BasicNode dst = to_right ? R : L, src = to_right ? L : R;
  unsigned k = to - from, dn = dst.count();
  if (dst.free_space() < moved + s.len) dst.make_room(moved + s.len, room);  // the records refer to src only
  // Receiver: the slots open at its front (to the right) or its end (to the left).
  unsigned at = to_right ? 0 : dn;
  if (to_right) memmove(dst.slot(k), dst.slot(0), dn * ss);
  unsigned top = dst.heap_start(), used = dst.heap_used();
  for (unsigned j = 0; j < k; j++) {
    const RecordRef& r = recs_[from + j];
    unsigned kl = r.key_len() - dplen, vb = r.value_bytes();
    top -= kl + vb;
    r.copy_key(dplen, kl, dst.p + top);
    memcpy(dst.p + top + kl, r.val, vb);
    uint8_t* sl = dst.slot(at + j);
    store16(sl, top);
    store16(sl + 2, kl);
    store16(sl + 4, r.val_len);
    if (dst.has_heads()) store32(sl + 6, head_of(dst.p + top, kl));
    used += kl + vb;
  }
  store16(dst.p + hdr::kHeapStart, top);
  store16(dst.p + hdr::kHeapUsed, used);
  store16(dst.p + hdr::kCount, dn + k);
  // Giver: its slots close (the heap entries become garbage).
  unsigned sn = src.count(), gone = 0;
  unsigned first = to_right ? sn - k : 0;
  for (unsigned j = 0; j < k; j++) {
    const uint8_t* sl = src.slot(first + j);
    gone += load16(sl + 2) + (load16(sl + 4) & kValueLenMask);
  }
  if (!to_right) memmove(src.slot(0), src.slot(k), (sn - k) * ss);
  store16(src.p + hdr::kHeapUsed, src.heap_used() - gone);
  store16(src.p + hdr::kCount, sn - k);
  set_fence(L, true, s, room);
  set_fence(R, false, s, room);
  L.make_hints();
  R.make_hints();
  uint8_t child[4];
  store32(child, lid);
  pn.remove_at(left);
  pn.insert_at(left, s.data + pplen, s.len - pplen, child, 4);
  return true;
}

// Three leaves first..first+2 around the full one at pos, as two shifts: the
// pair away from it first (its neighbour makes room), then the pair with it.
// *changed: the first shift moved records even if the second did not; the
// caller's path may then lead to the wrong leaf for key.
bool Rebalancer::shift3(PageId parent, unsigned first, unsigned pos, Slice key, uint16_t vfield, bool* changed) {
  unsigned far = pos == first ? first + 1 : first, near = pos == first ? first : first + 1;
  if (pos == first + 1) far = first + 1, near = first;  // the middle one gives both ways
  *changed = shift(parent, far, key, vfield, false);
  return shift(parent, near, key, vfield, true);
}

// ---------------------------------------------------------------- redistribution

bool Rebalancer::before_split(const PageId* ids, unsigned depth, Slice key, uint16_t vfield) {
  stats_.before_split_calls++;
  if (depth < 2) return false;
  BTree& t = *t_;
  PageId parent = ids[depth - 2], leaf_id = ids[depth - 1];
  BasicNode pn{read(parent)};
  bool exact;
  unsigned pos = pn.lower_bound(key.data, key.len, &exact);
  unsigned c = pn.count();
  if (pos > c || pn.child(pos) != leaf_id) return false;
  // Content of the leaves pos-2 .. pos+2 (resident ones only: a store does not
  // read pages to redistribute, and an asynchronous one cannot).
  constexpr unsigned kNone = ~0u;
  unsigned content[5];
  for (int d = -2; d <= 2; d++) {
    int q = static_cast<int>(pos) + d;
    content[d + 2] = kNone;
    if (q < 0 || q > static_cast<int>(c)) continue;
    PageId id = pn.child(static_cast<unsigned>(q));
    if (!at_hand(id)) continue;
    const uint8_t* p = read(id);
    if (!is_leaf_page(p)) return false;
    content[d + 2] = leaf_content(p);
  }
  // Appends past the tree's last record (prepends before its first) fill
  // leaves completely: the full leaf stays as it is. With `edges`, also appends past the last
  // record of any (basic) leaf (an append point inside the tree: one per tenant whose keys come
  // in order), and keys near the end (start) of the tree's last (first) leaf (keys that come
  // nearly in order: batches written in reverse, several producers), which split in the middle
  // left leaves that later keys never came back to (2-10x the pages of a random order; a
  // probe, session 31).
  const uint8_t* lp = read(leaf_id);
  Fences lf = fences_of(lp);
  const unsigned ne = leaf::count(lp);
  bool at_end = lf.upper_inf, at_start = lf.lower_inf;
  edge_slack_ = split_slack_ = 0;
  if (t.fill_.edges && ne > 0) {
    // Keys near the ends of the tree's first and last leaves count as appends (prepends).
    // (a refill only: split there, the leaf kept the records before the key, and keys that came
    // after it in order but sort before the records after it, "b:10" after "b:1".."b:9",
    // never came back to it; 1066 pages against 865 without, 800-byte values)
    if (lf.upper_inf || lf.lower_inf) edge_slack_ = ne / 2;
    const bool fingerprint = lp[0] == static_cast<uint8_t>(PageTag::kFingerprintLeaf);
    if ((lp[0] == static_cast<uint8_t>(PageTag::kBasicLeaf) || fingerprint) && grow_scratch() &&
        resize_checked(recs_, ne)) {
      // The leaf's records in key order (a fingerprint leaf's from a copy: it sorts as it
      // extracts; a basic leaf's refer to the page, which nothing here changes).
      if (fingerprint) {
        uint8_t* s = src_.data();
        memcpy(s, lp, kPageSize);
        FingerprintLeaf{s}.extract(recs_.data());
      } else {
        BasicNode{const_cast<uint8_t*>(lp)}.extract(recs_.data());
      }
      const RecordRef kr{key.data, nullptr, nullptr, static_cast<uint16_t>(key.len), 0, 0};
      unsigned kp = 0, hi = ne;
      while (kp < hi) {
        unsigned mid = (kp + hi) / 2;
        if (compare_record_key(recs_[mid], key) < 0) kp = mid + 1;
        else hi = mid;
      }
      const bool exact = kp < ne && compare_record_key(recs_[kp], key) == 0;
      if (!exact && kp == ne) at_end = true;
      // (not a key before the first record of a leaf inside the tree: it lies at the end of the
      // leaf before just as well, and split off there alone it left leaves of one record where
      // keys come in order as strings ("b:10" after "b:1".."b:9"): 800-byte values, 1192 pages
      // against 940 without edges, now 911)
      if (!exact && kp >= 4 && kp < ne && !lf.upper_inf) {
        // An append point inside the leaf (a stream of keys, one of several: tenants): the key
        // ends a run of at least a quarter of the records that share more of it than the record
        // after it does. (Random keys make runs of one or two.)
        const uint32_t next = common_prefix_records(kr, recs_[kp]);
        unsigned run = 0;
        for (unsigned i = kp; i-- > 0 && common_prefix_records(kr, recs_[i]) > next;) run++;
        if (run >= 4 && run * 4 >= ne) {
          // (not keys of several partitions, partition ++ counter: the tree's partition-aware
          // split below keeps them apart, paper section 4.6)
          const unsigned dp = t.cfg_.fully_dense_leaves ? FullyDenseLeaf::dense_prefix(lf, recs_.data(), ne) : 0;
          if (!(dp >= ne / 2 && dp < ne)) {
            at_end = true;
            edge_slack_ = split_slack_ = ne - kp;
          }
        }
      }
    }
  }
  if ((at_end || at_start) && ne > 0) {
    // First the neighbour takes what it can: with both fences finite there, the records
    // lose their shared prefix (content[] counts the bytes the leaves take now).
    constexpr unsigned kRoomy = kNodeSize * kFillSixteenths / 16 - kNodeSize / 16;
    if (t.fill_.edges && at_end && pos > 0 && content[1] != kNone && content[1] < kRoomy &&
        regroup(parent, pos - 1, 2, 2, &key, vfield, 2)) {
      stats_.edge_refills++;
      return true;
    }
    if (t.fill_.edges && at_start && pos < c && content[3] != kNone && content[3] < kRoomy &&
        regroup(parent, pos, 2, 2, &key, vfield, -2)) {
      stats_.edge_refills++;
      return true;
    }
    if (at_end && regroup(parent, pos, 1, 2, &key, vfield, 1)) {
      stats_.edge_splits++;
      return true;
    }
    if (at_start && regroup(parent, pos, 1, 2, &key, vfield, -1)) {
      stats_.edge_splits++;
      return true;
    }
  }
  if (!t.fill_.redistribute) return false;  // (edges only: a map's default)
  // Keys of several partitions in the leaf (partition ++ counter, paper
  // section 4.6): the tree's partition-aware split keeps them apart better
  // than any regroup.
  if (t.cfg_.fully_dense_leaves && grow_scratch()) {
    uint8_t* s = src_.data();
    memcpy(s, lp, kPageSize);
    unsigned n = leaf::count(s);
    if (n > 1 && resize_checked(recs_, n)) {
      if (s[0] == static_cast<uint8_t>(PageTag::kBasicLeaf)) BasicNode{s}.extract(recs_.data());
      else FingerprintLeaf{s}.extract(recs_.data());
      unsigned dp = FullyDenseLeaf::dense_prefix(fences_of(s), recs_.data(), n);
      if (dp >= n / 2 && dp < n) return false;
    }
  }
  uint64_t key_bytes = key.len + (vfield & kValueLenMask) + kSlotBytes;
  // Redistribution: the smallest group (2, then 3 leaves) around the leaf
  // that stays below the fill limit, the emptiest such group first.
  for (unsigned k = 2; k <= 3; k++) {
    int best = -1;
    uint64_t best_sum = 0;
    for (int a = static_cast<int>(pos) - static_cast<int>(k) + 1; a <= static_cast<int>(pos); a++) {
      if (a < 0 || a + static_cast<int>(k) - 1 > static_cast<int>(c)) continue;
      uint64_t sum = key_bytes;
      bool ok = true;
      for (unsigned i = 0; i < k; i++) {
        unsigned v = content[a + i - static_cast<int>(pos) + 2];
        if (v == kNone) ok = false;
        sum += v;
      }
      if (!ok || sum * 16 > uint64_t{k} * kNodeSize * kFillSixteenths) continue;
      if (best < 0 || sum < best_sum) best = a, best_sum = sum;
    }
    if (best < 0) continue;
    bool shifted = false;
    if ((k == 2 && shift(parent, static_cast<unsigned>(best), key, vfield, true)) ||
        (k == 3 && shift3(parent, static_cast<unsigned>(best), pos, key, vfield, &shifted)) ||
        regroup(parent, static_cast<unsigned>(best), k, k, &key, vfield, 0)) {
      stats_.redistributions++;
      return true;
    }
    // Half of a three-leaf shift happened: the leaves' fences moved, so the
    // key may now belong to a neighbour and ids[] is stale. The caller must
    // descend again rather than split the leaf it has (that split built a
    // leaf whose fences crossed: fuzz input, 1 KiB keys).
    if (shifted) return true;
  }
  // 2-to-3 split with the emptier neighbour.
  int nb = -1;
  if (content[1] != kNone) nb = static_cast<int>(pos) - 1;
  if (content[3] != kNone && (nb < 0 || content[3] < content[1])) nb = static_cast<int>(pos) + 1;
  if (nb >= 0) {
    unsigned a = static_cast<unsigned>(nb) < pos ? static_cast<unsigned>(nb) : pos;
    if (regroup(parent, a, 2, 3, &key, vfield, 0)) {
      stats_.splits_2to3++;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------- inner refill

bool Rebalancer::refill_inner(const PageId* ids, unsigned depth, unsigned idx) {
  BTree& t = *t_;
  if (group_ || idx == 0 || idx + 1 >= depth || !grow_scratch()) return false;
  const PageId parent = ids[idx - 1], node = ids[idx], below = ids[idx + 1];
  const uint8_t* np = read(node);
  const uint8_t* pp = read(parent);
  if (np[0] != static_cast<uint8_t>(PageTag::kBasicInner) || pp[0] != static_cast<uint8_t>(PageTag::kBasicInner))
    return false;
  BasicNode en{const_cast<uint8_t*>(np)}, pn{const_cast<uint8_t*>(pp)};
  const Fences ef = fences_of(np);
  const unsigned pc = pn.count(), ne = en.count();
  // right: the node is the tree's last at its level and the split child its last; left: first.
  const bool right = ef.upper_inf && en.upper_child() == below;
  const bool left = !right && ef.lower_inf && ne > 0 && en.child(0) == below;
  if (!(right || left) || pc == 0 || ne == 0) return false;
  if (right ? pn.upper_child() != node : pn.child(0) != node) return false;
  const unsigned pslot = right ? pc - 1 : 0;  // the parent's key between the node and its neighbour
  const PageId nb = right ? pn.child(pc - 1) : pn.child(1);
  if (!at_hand(nb)) return false;
  const uint8_t* bp = read(nb);
  if (bp[0] != static_cast<uint8_t>(PageTag::kBasicInner)) return false;
  // Copies: the lower of the two nodes in src_ page 0, the upper in page 1, the parent in 2.
  uint8_t* lo = src_.data();
  uint8_t* hi = lo + kPageSize;
  uint8_t* pc_copy = lo + 2 * kPageSize;
  memcpy(lo, right ? bp : np, kPageSize);
  memcpy(hi, right ? np : bp, kPageSize);
  memcpy(pc_copy, pp, kPageSize);
  BasicNode ln{lo}, hn{hi}, pcn{pc_copy};
  const unsigned nl = ln.count(), nh = hn.count(), n = nl + 1 + nh;
  // The two nodes' entries in key order with the parent's key between them, whose child is
  // the lower node's upper child: entries [0, m) go to the lower node, m's key to the parent
  // (its child the lower node's upper child), (m, n) to the upper node. m = nl: as they are.
  if (!resize_checked(recs_, n)) return false;
  ln.extract(recs_.data());
  uint8_t lower_upper[4];
  store32(lower_upper, ln.upper_child());
  const Slice ps = pcn.suffix(pslot);
  recs_[nl] = RecordRef{pcn.prefix(), ps.data, lower_upper, static_cast<uint16_t>(pcn.prefix_len()),
                        static_cast<uint16_t>(ps.len), 4};
  hn.extract(recs_.data() + nl + 1);
  const Fences lf = fences_of(lo), hf = fences_of(hi);
  const uint8_t flags = t.inner_flags();
  KeyBuffer& sep = seps_[0];
  auto lower_fences = [&](unsigned m) {
    sep.assign(recs_[m], recs_[m].key_len());
    return Fences{lf.lower, sep.slice(), lf.lower_inf, false};
  };
  auto upper_fences = [&](unsigned m) {
    sep.assign(recs_[m], recs_[m].key_len());
    return Fences{sep.slice(), hf.upper, false, hf.upper_inf};
  };
  constexpr unsigned kLimit = kNodeSize * kFillSixteenths / 16;
  // The neighbour's bytes with cut m: it grows with its entries (right: m up; left: m down).
  auto fits = [&](unsigned m) {
    const Fences f = right ? lower_fences(m) : upper_fences(m);
    const uint32_t plen = t.cfg_.prefix_truncation ? fence_prefix_len(f) : 0;
    return right ? BasicNode::space_needed(flags, f, plen, recs_.data(), m) <= kLimit
                 : BasicNode::space_needed(flags, f, plen, recs_.data() + m + 1, n - m - 1) <= kLimit;
  };
  uint8_t* dl = dst_.data();
  uint8_t* dh = dl + kPageSize;
  uint8_t* dp = dl + 2 * kPageSize;
  auto builds = [&](unsigned m) {
    const PageId mid_child = load32(recs_[m].val);
    Fences f = lower_fences(m);
    if (!BasicNode::build(dl, PageTag::kBasicInner, flags, f, t.cfg_.prefix_truncation, recs_.data(), m, mid_child,
                          kCounterDisabled))
      return false;
    f = upper_fences(m);
    return BasicNode::build(dh, PageTag::kBasicInner, flags, f, t.cfg_.prefix_truncation, recs_.data() + m + 1,
                            n - m - 1, hn.upper_child(), kCounterDisabled);
  };
  unsigned m;
  if (right) {
    // The most entries the lower neighbour takes: the largest m in (nl, n).
    if (!fits(nl + 1)) return false;
    unsigned a = nl + 1, b = n - 1;
    while (a < b) {
      unsigned mid = a + (b - a + 1) / 2;
      if (fits(mid)) a = mid;
      else b = mid - 1;
    }
    m = a;
    while (m > nl + 1 && !builds(m)) m = nl + 1 + (m - nl - 1) / 2;
  } else {
    // The most entries the upper neighbour takes: the smallest m in [0, nl).
    if (!fits(nl - 1)) return false;
    unsigned a = 0, b = nl - 1;
    while (a < b) {
      unsigned mid = a + (b - a) / 2;
      if (fits(mid)) b = mid;
      else a = mid + 1;
    }
    m = a;
    while (m < nl - 1 && !builds(m)) m = nl - 1 - (nl - 1 - m) / 2;
  }
  if (!builds(m)) return false;
  // The parent: the new key (in sep: builds(m) assigned it last) in place of the old one.
  memcpy(dp, pp, kPageSize);
  BasicNode pd{dp};
  const unsigned plen = pd.prefix_len();
  if (sep.len < plen) return false;
  uint8_t child[4];
  store32(child, pd.child(pslot));
  pd.remove_at(pslot);
  if (pd.entry_space(sep.len - plen, 4) > pd.free_space_after_compaction()) return false;
  pd.insert_at(pslot, sep.data + plen, sep.len - plen, child, 4);
  // (Room::kMoveFew: rebased, as regroup's pages, for a commit's deltas)
  const PageId lo_id = right ? nb : node, hi_id = right ? node : nb;
  const PageId out_ids[3] = {lo_id, hi_id, parent};
  for (unsigned q = 0; q < 3; q++) {
    uint8_t* d = write(out_ids[q]);
    const uint8_t* img = dl + size_t{q} * kPageSize;
    if (t.room_ != Room::kMoveFew || !BasicNode{d}.rebase(img)) memcpy(d, img, kPageSize);
  }
  stats_.inner_refills++;
  bump_version();
  return true;
}

// ---------------------------------------------------------------- XMerge

bool Rebalancer::xmerge_at(PageId parent, unsigned first, bool resident_only) {
  BTree& t = *t_;
  BasicNode pn{t.page(parent)};
  unsigned c = pn.count();
  if (first > c) return false;
  uint64_t free_sum = 0;
  unsigned x = 0;
  // Grow the group to the right until its free space adds up to a page.
  while (x < kMaxGroup && first + x <= c) {
    PageId id = pn.child(first + x);
    if (resident_only && !t.store_.resident(id)) break;
    const uint8_t* p = t.page(id);
    if (!is_leaf_page(p)) return false;
    free_sum += kNodeSize - leaf_content(p);
    x++;
    if (x >= 2 && free_sum >= kNodeSize + uint64_t{x} * kXMergeMarginPerLeaf) break;
  }
  if (x < 2 || free_sum < kNodeSize + uint64_t{x} * kXMergeMarginPerLeaf) return false;
  if (!regroup(parent, first, x, x - 1, nullptr, 0, 0)) return false;
  stats_.xmerges++;
  return true;
}

bool Rebalancer::xmerge_random(uint32_t r) {
  BTree& t = *t_;
  if (t.height_ < 2) return false;
  stats_.xmerge_attempts++;
  // Down a random path through resident pages only.
  PageId id = t.root_, parent = kInvalidPageId;
  unsigned pos = 0;
  for (unsigned level = 0; level < BTree::kMaxHeight; level++) {
    if (!t.store_.resident(id)) return false;
    uint8_t* p = t.page(id);
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) break;
    BasicNode n{p};
    parent = id;
    pos = r % (n.count() + 1);
    r = r / (n.count() + 1) * 2654435761u + 0x9E3779B9u;
    id = n.child(pos);
  }
  if (parent == kInvalidPageId || !t.store_.resident(id) || !is_leaf_page(t.page(id))) return false;
  // The group starts at the leaf or up to K-1 leaves to its left.
  unsigned back = r % kMaxGroup;
  unsigned first = pos > back ? pos - back : 0;
  return xmerge_at(parent, first, true);
}

Status Rebalancer::compact(bool resident_only, uint64_t* freed) {
  BTree& t = *t_;
  *freed = 0;
  if (t.height_ < 2) return Status::kOk;
  // A page that could not be had (no frame at the memory budget, a spill that failed) before a
  // group changed: nothing changed, so the failure is the call's, not the tree's (end_write
  // would mark the tree broken: every later call, reads too, failed with OUT_OF_MEMORY even after
  // the budget was raised, and the writes since the last commit were lost; session 23's probe).
  auto clean = [&t]() {
    Status f = t.store_.failure();
    t.store_.clear_failure();
    return f;
  };
  // The parents of leaves, in key order.
  std::vector<PageId> level{t.root_}, next;
  for (unsigned h = t.height_; h > 2; h--) {
    next.clear();
    for (PageId id : level) {
      if (resident_only && !t.store_.resident(id)) continue;
      const uint8_t* p = t.page(id);
      if (t.store_.failure() != Status::kOk) return t.store_.failure() == Status::kCorrupt ? t.store_.failure() : clean();
      if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) return Status::kCorrupt;
      BasicNode n{const_cast<uint8_t*>(p)};
      if (!reserve_checked(next, next.size() + n.count() + 1)) return Status::kOutOfMemory;
      for (unsigned i = 0; i <= n.count(); i++) next.push_back(n.child(i));
    }
    level.swap(next);
  }
  for (PageId parent : level) {
    for (unsigned pos = 0;; pos++) {
      if (t.height_ < 2) break;  // the root went: one leaf is left
      const uint8_t* pp = t.page(parent);
      if (t.store_.failure() != Status::kOk) return t.store_.failure() == Status::kCorrupt ? t.store_.failure() : clean();
      if (pos > BasicNode{const_cast<uint8_t*>(pp)}.count()) break;
      // A long pass over a store lets go of the pages it has passed.
      t.store_.end_protection();
      if (resident_only && !t.store_.resident(parent)) break;
      // After a merge the same start takes in the leaves to its right.
      bool merged = xmerge_at(parent, pos, resident_only);
      if (merged) {
        (*freed)++;
        pos--;
      }
      // (a group that did not change failed before it changed: regroup reads and allocates
      // first; one that changed and then failed is the tree's failure)
      if (t.store_.failure() != Status::kOk) return merged || t.store_.failure() == Status::kCorrupt ? t.store_.failure() : clean();
    }
  }
  return Status::kOk;
}

// ---------------------------------------------------------------- BTree::compact

Status BTree::compact(uint64_t* freed) {
  *freed = 0;
  Status w = writable();
  if (w != Status::kOk) return w;
  store_.begin_op();
  if (store_.backed()) {
    Status s = store_.load_free_list();
    if (s != Status::kOk) return s;
  }
  Rebalancer* r = rebalancer();
  if (!r) return Status::kOutOfMemory;
  // An asynchronous store merges what is resident (nothing is fetched).
  Status s = r->compact(store_.asynchronous(), freed);
  if (s != Status::kOk) return end_write(s);
  // Then the live pages at the store's end move down into the room merges and deletes left.
  uint64_t reclaimed = 0;
  s = relocate(&reclaimed);
  *freed += reclaimed;
  return end_write(s);
}

}  // namespace adaptree
