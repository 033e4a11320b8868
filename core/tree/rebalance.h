// Node fill: redistribution before a split and XMerge (issues #10 and #11).
//
// Both are one operation, `regroup`: the records of m adjacent leaves under one
// parent are dealt out again over m' leaves, evenly by bytes, with the
// shortest separators near the even cut points; the parent's m - 1
// separators between them are replaced by m' - 1 new ones.
// - Redistribution (m' = m): a full leaf shares its records with up to two
//   neighbours under the same parent instead of splitting (B*-Tree style), as
//   long as the group stays below kRedistributeFill after the insert; when no
//   group has room, two full leaves become three (2-to-3 split) where the
//   parent has room, else the tree's own split runs. Random loads fill leaves
//   to ~0.85 instead of ~0.70 (ln 2).
// - XMerge (m' = m - 1, Alhomssi and Leis, Contention and Space Management in B-Trees, CIDR 2021, section 4):
//   a group of 2..5 adjacent leaves whose free space adds up to a page packs
//   into one leaf less and frees a page. Run on demand over the whole tree
//   (compact), or on one random resident leaf when the buffer pool had to
//   evict (a store under memory pressure: the freed frame is the next one
//   taken, so that eviction is saved), touching resident pages only.
//
// Nothing changes unless the whole regroup fits: every new leaf image, the
// pending key in its leaf, the parent's new separators and any new page are
// checked or taken first. Otherwise the caller falls back (a split), and the
// tree is as it was.
#pragma once
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/layouts/node_common.h"
#include "core/status.h"

namespace adaptree {

class BTree;

// Per-tree switches; a tree is built with the defaults (both on).
struct FillOptions {
  // Redistribution and 2-to-3 splits before a leaf split. Off reproduces the
  // paper's (and the original core's) 1-to-2 splits.
  bool redistribute = true;
  // XMerge on one random resident leaf after the pool evicted (stores only).
  bool xmerge_on_pressure = true;
  // Appends past the tree's last leaf (prepends before its first): the full edge leaf
  // first fills its neighbour (an edge refill), else stays full and the key starts a new
  // leaf (an edge split; `redistribute` alone makes edge splits, no refills). A map has
  // this without redistribution: an edge leaf (one infinite fence) keeps whole keys, and
  // split in the middle it left half leaves that later appends never refilled: keys with
  // a 40-byte shared prefix inserted in order took 4-5x the pages of random order (19x
  // with 200 bytes; session 31).
  bool edges = true;
};

struct FillStats {
  uint64_t redistributions = 0;  // regroups m -> m before a split
  uint64_t shifts = 0;           // of which two basic leaves in place (no rebuild)
  uint64_t shared_shifts = 0;    // redistributions under the shared tree latch (phase 2c)
  uint64_t splits_2to3 = 0;      // 2 -> 3 splits
  uint64_t shared_splits_2to3 = 0;  // of which under the shared tree latch (phase 2c)
  uint64_t edge_splits = 0;      // appends past the last leaf: it stays full
  uint64_t edge_refills = 0;     // appends past the last leaf: its neighbour took records
  uint64_t inner_refills = 0;    // the same for inner nodes: refill_inner
  uint64_t xmerges = 0;          // groups packed into one leaf less
  uint64_t xmerge_attempts = 0;  // pressure-triggered attempts
  uint64_t regroup_calls = 0, before_split_calls = 0;
};

// The pages a Rebalancer may touch when it runs under the shared tree latch (phase 2c,
// BTree::make_room_shared): a leaf's parent and the leaves around it, all resident and
// latched exclusive by the caller (written in place; a clean one is marked dirty, the
// pager keeping its base, before its first change: BufferPool::mark_dirty_shared), and
// the pages allocated meanwhile (BufferPool::allocate_shared: dirty, frame kNoFrame here).
// Nothing else is at hand; nothing is released.
struct SharedGroup {
  static constexpr unsigned kMax = 8;
  PageId ids[kMax];
  uint8_t* pages[kMax];
  uint32_t frames[kMax];
  unsigned n = 0;
  void add(PageId id, uint8_t* p, uint32_t frame = ~uint32_t{0}) {
    ids[n] = id;
    pages[n] = p;
    frames[n++] = frame;
  }
  int index_of(PageId id) const {
    for (unsigned i = 0; i < n; i++)
      if (ids[i] == id) return static_cast<int>(i);
    return -1;
  }
  uint8_t* find(PageId id) const {
    int i = index_of(id);
    return i < 0 ? nullptr : pages[i];
  }
};

class Rebalancer {
 public:
  static constexpr unsigned kMaxGroup = 5;  // XMerge's K
  explicit Rebalancer(BTree* t) : t_(t) {}

  // A calling context's own Rebalancer (its scratch) for a structure change under the
  // shared tree latch: bound to tree t and the pages at hand for one before_split, then
  // absorb_into(t's own) adds what it counted there, atomically (several threads).
  void bind(BTree* t, const SharedGroup* g) {
    t_ = t;
    group_ = g;
  }
  void absorb_into(Rebalancer& main);
  // The pages the last bound run allocated (its new leaves).
  const SharedGroup& allocated() const { return allocated_; }

  // The leaf at the end of ids[0..depth) cannot take key (value field vfield):
  // redistributes or splits 2-to-3. True if the leaves changed (room was made,
  // or records moved so that ids[] may be stale: the caller descends again and
  // retries the insert), false if nothing changed (the caller splits).
  bool before_split(const PageId* ids, unsigned depth, Slice key, uint16_t vfield);

  // Inner node ids[idx] (0 < idx < depth - 1) is full and must split for a separator from
  // its child ids[idx + 1]. Where it lies at the tree's right (left) edge and that child is
  // its last (first), keys come in order there: its neighbour under the same parent takes
  // its first (last) entries, up to kFillSixteenths of a page, rotated through the parent
  // (an edge refill one level up). The edge node has one infinite fence, so no prefix:
  // split in the middle, it left nodes of one or two keys that later appends never came
  // back to (1000-byte prefixes in order: 240 inner pages and 8 levels, against 13 and 4
  // in random order; session 32). True if entries moved (the caller descends again),
  // false if nothing changed (the caller splits).
  bool refill_inner(const PageId* ids, unsigned depth, unsigned idx);

  // XMerge over every group of leaves in the tree (resident_only: of the
  // resident pages, for an asynchronous store); *freed counts pages freed.
  Status compact(bool resident_only, uint64_t* freed);
  // One pressure-triggered XMerge attempt at a random resident leaf (resident
  // pages only; nothing is loaded). True if a page was freed.
  bool xmerge_random(uint32_t r);
  // XMerge of the group that starts at child `first` of parent (up to K
  // children to its right): true if a page was freed.
  bool xmerge_at(PageId parent, unsigned first, bool resident_only);

  const FillStats& stats() const { return stats_; }

 private:
  // Deals the records of children [first, first + m) of parent over m_out
  // leaves. With key: the leaf that will hold key must have room for it.
  // edge = 1 (-1): one leaf into two where key lies past (before) every
  // record: the leaf keeps them all, key starts the new leaf. edge = 2 (-2):
  // the tree's last leaf and its left neighbour (first leaf and its right
  // neighbour), key past (before) every record: the neighbour takes what it
  // holds (refill_cut).
  bool regroup(PageId parent, unsigned first, unsigned m, unsigned m_out, const Slice* key, uint16_t vfield, int edge);
  // Redistribution of two basic leaves, children left and left + 1 of
  // parent, in place: the records that even them out move across their
  // boundary (slots and heap entries, the two fences and the parent's
  // separator change; nothing else is rewritten). A commit then logs small
  // deltas of both leaves instead of two rebuilt images, and no page is
  // copied or rebuilt. False, nothing changed, where a prefix would change,
  // the layouts differ or something does not fit: the caller regroups.
  // with_key: key (value field vfield) is pending in one of the two, counted
  // in the cut and sure to fit afterwards.
  bool shift(PageId parent, unsigned left, Slice key, uint16_t vfield, bool with_key);

  // shift() on pages at hand: pp the parent, lp and rp its children left and left + 1
  // (trunc: the tree's prefix truncation; recs: room for both leaves' records). Once
  // everything is known to fit, before the first change, before_change(arg) runs (shift
  // marks the three pages written there) and *key_left says whether key goes to the left
  // leaf.
  static bool shift_pages(uint8_t* pp, unsigned left, uint8_t* lp, uint8_t* rp, Slice key, uint16_t vfield,
                          bool with_key, bool trunc, std::vector<RecordRef>& recs, bool* key_left,
                          void (*before_change)(void*), void* arg, Room room = Room::kCompact);
  // Bytes a leaf's content needs (without its fences): merge and fill decisions.
  static unsigned leaf_content(const uint8_t* p);
  // A group of k leaves is redistributed only while it stays at most this full after
  // the insert (sixteenths of its pages: 0.9375): closer to 1 fills more but
  // redistributes again after a few inserts (each time rewriting the group).
  static constexpr unsigned kFillSixteenths = 15;
  // Estimated slot overhead of a record in a comparison-based leaf.
  static constexpr unsigned kSlotBytes = 10;

 private:
  bool build_refilled(uint8_t* d, const Fences& f, const RecordRef* r, unsigned cnt, uint8_t counter,
                      unsigned limit = kNodeSize * kFillSixteenths / 16);
  bool edge_position(const Slice* key, int edge, unsigned* kpos) const;
  bool refill_cut(const Slice* key, int edge, unsigned first_count);
  bool shift3(PageId parent, unsigned first, unsigned pos, Slice key, uint16_t vfield, bool* changed);
  bool grow_scratch();

  // Page access: the tree's pool (the exclusive latch), or the shared group.
  bool at_hand(PageId id) const;
  uint8_t* read(PageId id) const;
  uint8_t* write(PageId id) const;
  Status allocate(PageId* out);
  void bump_version() const;

  BTree* t_;
  const SharedGroup* group_ = nullptr;  // bound: under the shared latch
  SharedGroup allocated_;               // ... and the pages allocated there
  FillStats stats_;
  // Copies of the group's leaves and the images built; records point into src_.
  std::vector<uint8_t> src_, dst_, probe_;
  std::vector<uint8_t> arena_;
  std::vector<RecordRef> recs_;
  std::vector<uint8_t> src_of_;  // source leaf of each record
  KeyBuffer seps_[kMaxGroup];
  std::vector<uint32_t> cum_;
  unsigned refill_cut_ = 0;
  // before_split's edge regroups: how far from the leaf's end (start) the key may go (records),
  // and where it goes in an edge split.
  unsigned edge_slack_ = 0, split_slack_ = 0, edge_kpos_ = 0;
};

}  // namespace adaptree
