// The B+-Tree: descent, split and merge, layout adaption, scans and cursors
// over page-sized nodes addressed by page id (paper sections 2, 3 and 5).
// Single-threaded and in memory for now: every page access goes through
// PageStore, and every operation returns a Status so that OLC restarts and
// page faults can later flow through the same paths.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/layouts/basic_node.h"
#include "core/layouts/node_common.h"
#include "core/layouts/record.h"
#include "core/buffer/buffer_pool.h"
#include "core/tree/overflow.h"
#include "core/tree/rebalance.h"
#include "core/tree/tree_latch.h"
#include "core/status.h"

namespace adaptree {

class Cursor;
struct SepList;  // bulk_load.cc

// How a call runs (core/tree/tree_latch.h, docs/THREADS.md). Without one, or
// not shared, a call may change pages as the paper's adaption does: the
// operation counter, a conversion, the lazy sort of a fingerprint leaf, any
// structure modification. Under a shared tree latch it must not change what
// other holders read without a latch: inner nodes, the tree's fields, the
// scratch, the free list. A read steps the counter atomically; a step that
// would convert a leaf (or a sort) changes nothing and returns kRestart; the
// caller then runs the call again under the exclusive latch with the same
// mode, whose `step` makes that run take the step the shared one drew (no
// second draw).
//
// With `leaves` (the tree is shared between threads: writers run beside
// readers) every leaf is read under its node latch shared and point writes
// (set, remove) run under the shared tree latch with the leaf's latch
// exclusive; on a store only where every page is resident (the node latch is
// its frame's word). A write that needs more than its leaf (a split, a conversion,
// overflow pages) changes nothing and returns kRestart; work that can wait
// (merging an underfull leaf, freeing a replaced overflow chain) is left in
// the mode for finish_shared() under the exclusive latch.
struct ReadMode {
  bool shared = false;
  bool step = false;
  // A shared run took the scan step (a cursor restarted later, for a sort): the
  // exclusive run must not take it again. One scan start per call of the C ABI.
  bool scanned = false;
  // Leaves are latched (the tree is shared: writers may change them meanwhile).
  bool leaves = false;
  // A shared write stepped its leaf's counter before it restarted: the
  // exclusive run does not step again.
  bool counted = false;
  // Left by a shared write for finish_shared(): merge key's leaf if it is
  // still underfull. (A write that would free an overflow chain runs exclusive.)
  bool rebalance = false;
  // Contention Split found the leaf contended: split it before this record
  // index (0: no split wanted).
  unsigned contention_split = 0;
  // An optimistic read drew the counter step (BTree::get_optimistic): the latched
  // run takes it without drawing again.
  bool drawn = false;
  // Tests: count every leaf latch this mode takes as contended.
  bool contended = false;
  XorShift32* rng = nullptr;  // shared: the calling context's own random source
  // A shared write that makes room in its leaf (phase 2c, BTree::make_room_shared)
  // works in the calling context's scratch: room for two leaves' records, and
  // 3 pages (a leaf's copy and two images). Without them such a write restarts exclusive.
  std::vector<RecordRef>* recs = nullptr;
  uint8_t* scratch = nullptr;
  // A store's write that regroups leaves under the shared latch runs the calling
  // context's own Rebalancer (its scratch; Rebalancer::bind). None: exclusive.
  Rebalancer* rebalancer = nullptr;
  // The calling context may block (a worker): a long wait for a leaf latch sleeps
  // (PageLatch) instead of spinning on.
  bool block = false;
  // get() under `leaves` answers kOk with the leaf latched shared, so that the
  // caller copies the value before a writer changes the page: release() then.
  std::atomic<uint64_t>* held = nullptr;

  bool pending() const { return rebalance || contention_split; }
  void release() {
    if (held) PageLatch(held).unlock_shared();
    held = nullptr;
  }
};

// The frames an optimistic read of a store went through, for the clock's reference bits
// and the pool's hit count: the read itself writes nothing, its caller has them set
// later under the latch (BTree::settle), a batch at a time.
struct TouchedFrames {
  static constexpr unsigned kMax = 16;
  FrameId frames[kMax];
  PageId pids[kMax];
  unsigned n = 0;
  uint32_t hits = 0, reads = 0;
  void note(FrameId f, PageId id) {
    for (unsigned i = 0; i < n; i++)
      if (frames[i] == f) return;
    if (n < kMax) {
      frames[n] = f;
      pids[n++] = id;
    }
  }
  // Settled every 64 reads, or sooner when they went through many frames.
  bool due() const { return n > kMax / 2 || reads >= 64; }
  void clear() { n = 0, hits = 0, reads = 0; }
};

class BTree {
 public:
  static constexpr unsigned kMaxHeight = 64;

  explicit BTree(LayoutConfig layout);
  ~BTree();
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  // Allocates the root; must succeed before any other call.
  Status init();
  // Takes over a stored tree (a store opened on a backed pool).
  void adopt(PageId root, unsigned height, uint64_t count);
  // Refuse writes from now on with kReadOnly (a failed commit: reopen).
  void refuse_writes(Status why) { read_only_ = why; }
  // While held, writes return kBusy (an async commit's page images are being
  // written: a change now would not be in them, and must not be lost).
  void hold_writes(bool held) { held_ = held; }
  // kOk, or why a write is refused now.
  Status writable() const {
    if (broken_ != Status::kOk) return broken_;
    // (kClosed: a shared store's owner is closing it; other threads' writes are refused as
    // CLOSED from then on, so that its last commit holds every write that was accepted)
    if (read_only_ != Status::kOk) return read_only_ == Status::kClosed ? Status::kClosed : Status::kReadOnly;
    return held_ ? Status::kBusy : Status::kOk;
  }
  // kOk, or the failure that left the tree in memory unusable.
  Status broken() const { return broken_; }
  // Contention Split (CIDR 2021, seed 002; docs/THREADS.md): writers under the
  // shared latch sample whether they waited for their leaf's latch, and a leaf
  // whose updates keep finding it taken splits between the two positions last
  // written. Off by default; set under the exclusive latch.
  void set_contention_split(bool on) { csplit_ = on; }
  // Room::kMoveFew: leaves short of room move only the entries in the way, and splits and
  // regroups rebase the pages they rewrite (BasicNode::rebase), so commits log small deltas of
  // them: for stores whose commits cost by their bytes (async stores). Before any write.
  void set_room(Room r) { room_ = r; }
  Room room() const { return room_; }
  bool contention_split() const { return csplit_; }
  uint64_t contention_splits() const { return csplits_; }
  // Leaf splits a shared map made under the shared tree latch (phase 2c).
  uint64_t shared_splits() const { return shared_splits_.load(std::memory_order_relaxed); }

  Status get(Slice key, ValueRef* out, ReadMode* mode = nullptr);
  // An optimistic point read (phase 2b, docs/THREADS.md) of a tree shared between
  // threads: writes no latch word and no page. `seq` is what latch.read_begin gave.
  // Descends with bounds-checked searches, validating the latch's sequence before it
  // follows each child id, and copies the value (at most kNodeSize bytes) to out before
  // it validates the leaf's version and the sequence. kOk (*out_len set) or kNotFound,
  // both validated; kRestart: run the read latched (an exclusive holder or a writer
  // of the leaf came in, a torn image, an overflow value, a store, or the adaptive
  // counter drew a step: then *drew, and the latched run takes it without a new draw).
  // A store's frames go to *touched (required for a store, ignored for a map).
  Status get_optimistic(Slice key, const TreeLatch& latch, uint64_t seq, XorShift32& rng, uint8_t* out,
                        uint32_t* out_len, bool* drew, TouchedFrames* touched = nullptr) const;
  // Under the latch (shared is enough): sets the reference bits of the frames in t that
  // still hold the pages noted there, adds its hits; clears t.
  void settle(TouchedFrames& t, uintptr_t stripe);
  Status contains(Slice key);
  // Upsert. Tree unchanged on error. With a shared mode (ReadMode::leaves, in
  // memory): kRestart, nothing changed, when the write needs the tree latch
  // exclusive; run it again so with the same mode.
  Status set(Slice key, Slice value, ReadMode* mode = nullptr);
  Status remove(Slice key, ReadMode* mode = nullptr);
  // Under the exclusive latch after a shared write that left work (pending()):
  // the merge of key's leaf, the overflow chain to free.
  Status finish_shared(Slice key, ReadMode* mode);
  Status clear();
  // Bulk load into an empty tree from strictly ascending keys: builds the
  // tree bottom-up with leaves and inner nodes filled densely. kInvalidArgument
  // if the tree is not empty or the keys are not strictly ascending.
  Status bulk_load(const Slice* keys, const Slice* values, size_t n);
  // Removes keys in a range; *removed counts them.
  Status delete_range(Slice lo, bool lo_none, bool lo_exclusive, Slice hi, bool hi_none,
                      bool hi_exclusive, uint64_t* removed);

  // Copies the value bytes of ref to out when it is an overflow reference, and
  // returns a slice of them (or of the page when inline).
  // kOutOfMemory (nothing changed) when buf cannot grow to the value's length.
  Status read_value(const ValueRef& ref, std::vector<uint8_t>* buf, Slice* out) const;
  // Whether an overflow reference's length could be a value of this store: no more than a
  // value may be (kMaxValueSize) nor than the store's pages can hold. A damaged or crafted
  // reference said 2 GB, and the read allocated (and zeroed) that before it found the chain
  // short (fuzz_crafted_pages). Inline values always are.
  bool value_length_ok(const ValueRef& ref) const {
    if (!ref.is_overflow()) return true;
    const uint64_t len = ref.length();
    return len <= kMaxValueSize && len <= uint64_t{store_.page_count()} * kOverflowCapacity;
  }
  // Copies the overflow value at ref (ref.length() bytes) to out. On an asynchronous store
  // a page fault keeps its place: the bytes read so far go to a buffer of the tree's own
  // (reads_), and the next read of the same chain goes on there, then copies it all to its
  // out.
  Status read_overflow(const ValueRef& ref, uint8_t* out) const;

  // count_ plus what writers under the shared latch counted in their stripes.
  uint64_t count() const {
    uint64_t n = count_;
    for (const CountStripe& c : counts_) n += static_cast<uint64_t>(c.n.load(std::memory_order_relaxed));
    return n;
  }
  uint64_t version() const { return version_; }
  // A store's point writes so far that ran under the shared latch (set_shared,
  // remove_shared): tree-wide, summed over the stripes.
  uint64_t shared_store_writes() const {
    uint64_t n = 0;
    for (const CountStripe& c : counts_) n += c.writes.load(std::memory_order_relaxed);
    return n;
  }
  // The version word, for a reader's pager: it bumps it when it drops a page a
  // read changed, so cursors re-seek (FilePager::set_read_only).
  uint64_t* version_word() { return &version_; }
  // Removals so far (remove, under either latch, and clear): a JavaScript iterator on a map
  // shared between threads reads it to drop a batch read before another thread removed
  // entries (its own removals it knows of). Bumped atomically, apart from version_ (which
  // optimistic readers validate against: a bump per shared remove would restart them).
  uint32_t* erase_epoch_word() { return &erase_epoch_; }
  unsigned height() const { return height_; }
  PageId root() const { return root_; }
  const Config& config() const { return cfg_; }
  LayoutConfig layout() const { return layout_; }
  // The longest key set() takes: kMaxKeySize, or kMaxKeySizeUntruncated without prefix
  // truncation (`baseline`; basic_node.h says why). Reads take any key up to kMaxKeySize.
  uint32_t max_key_size() const { return cfg_.prefix_truncation ? kMaxKeySize : kMaxKeySizeUntruncated; }
  BufferPool& store() const { return store_; }

  // Node fill (core/tree/rebalance.h): redistribution before splits and
  // XMerge under pool pressure, both on by default.
  void set_fill(const FillOptions& o) { fill_ = o; }
  const FillOptions& fill() const { return fill_; }
  FillStats fill_stats() const { return rebalance_ ? rebalance_->stats() : FillStats{}; }
  // XMerge over the whole tree on demand: packs groups of adjacent leaves
  // whose free space adds up to a page into one leaf less; *freed pages.
  Status compact(uint64_t* freed);
  // Pages compact() moved down into free ones since the tree was made (core/tree/relocate.cc).
  uint64_t relocated_pages() const { return relocated_pages_; }
  // Leaf merges tried and found not to fit since the tree was made (merge_children).
  uint64_t failed_merge_attempts() const { return failed_merge_attempts_; }

  // Copies page id's 4 KiB image to out (inspection: demo, diagnostics).
  // Stable across storage changes: it never hands out a pointer into a frame.
  Status copy_page(PageId id, uint8_t* out) const;

  // Invariant checker (core/invariants.cc): empty string if the tree is sound.
  std::string check() const;
  // The same with a status: kOk, kCorrupt with the violation in *err, or kOutOfMemory.
  Status check(std::string* err) const;

 private:
  friend class Cursor;
  friend class Rebalancer;
  struct Path {
    PageId ids[kMaxHeight];
    unsigned depth = 0;
  };

  uint8_t* page(PageId id) const { return store_.page(id); }
  // A leaf's latch version. On a store, the number of writes under the shared latch
  // so far, tree-wide: a store's cursors run exclusive, and between two of their calls
  // such a write may have changed any resident leaf (its frame's latch version would
  // not survive the page's eviction and reload).
  uint64_t leaf_version(PageId id) const {
    return store_.backed() ? shared_store_writes() : PageLatch(store_.latch_word(id)).version();
  }
  std::atomic<uint64_t>* latch_word(PageId id) const { return store_.latch_word(id); }

 public:
  // Tests (at_debug_latch 7): latches the first leaf exclusive and never releases it.
  void debug_latch_first_leaf() {
    static const uint8_t kNone[1] = {0};
    PageLatch(latch_word(leaf_for({kNone, 0}))).lock_exclusive();
  }

 private:
  // The leaf for key, under a shared latch: inner nodes (height_ - 1 levels)
  // do not change then, and the leaf's tag is not read before it is latched.
  PageId leaf_for(Slice key) const;
  Status get_latched(Slice key, ValueRef* out, ReadMode& mode);
  // Key's leaf under the shared tree latch: its id, bytes and node latch (not taken).
  // In memory, always; on a store (shared between threads), only if every page on the
  // way is resident and, for a write, the leaf's frame is dirty already (so the pager
  // need not be told) and no XMerge is due; else false: restart exclusive.
  // A leaf's parent as a descent under the shared tree latch found it: a shared write
  // may change it (phase 2c) under its latch, so its state word is kept as read, unlatched.
  struct ParentRef {
    std::atomic<uint64_t>* latch = nullptr;  // none: the leaf is the root
    uint64_t word = 0;
    uint8_t* page = nullptr;
    PageId id = kInvalidPageId;
    FrameId frame = kNoFrame;  // a store's
    // With the leaf latched: the parent has not changed since the descent, so the leaf
    // still holds the range the descent looked for (else the caller unlatches, retries).
    bool holds() const { return !latch || latch->load(std::memory_order_acquire) == word; }
  };
  struct SharedLeaf {
    PageId id;
    uint8_t* page;
    std::atomic<uint64_t>* latch;
    FrameId frame = kNoFrame;  // a store's frame holding it
    ParentRef parent;
  };
  // The leaf a descent under the shared tree latch of a map reaches (kTo: key's leaf;
  // kAfter: the leaf of the keys just above key; kFirst, kLast: the edges), its parent
  // in *parent: searched with the checked searches and validated before its child is
  // followed. kInvalidPageId: the parent stayed latched too long (run exclusive).
  enum class Descent { kTo, kAfter, kFirst, kLast };
  PageId descend_shared(Descent kind, Slice key, ParentRef* parent) const;
  bool shared_leaf(Slice key, bool write, const ReadMode& mode, SharedLeaf* out) const;
  bool latch_shared_leaf(Slice key, bool write, ReadMode& m, SharedLeaf* l, PageLatch* latch, bool* waited = nullptr);
  Status set_shared(Slice key, Slice value, ReadMode& m);
  // kNone: nothing changed, the exclusive run makes room; kBusy: nothing changed, another
  // thread held a page it needed (descend again, shared); kInserted; kMoved: records moved
  // but key did not fit after all.
  enum class SharedRoom { kNone, kBusy, kInserted, kMoved };
  SharedRoom make_room_shared(const SharedLeaf& l, Slice key, Slice value, ReadMode& m, OldValue* old,
                              PutResult* r);
  SharedRoom split_shared(const SharedLeaf& l, Slice key, Slice value, ReadMode& m, OldValue* old, PutResult* r);
  bool converts_for(uint8_t* dst, const Fences& f, const RecordRef* recs, unsigned n, Slice key, uint16_t vfield) const;
  std::atomic<uint64_t> shared_splits_{0};
  Status remove_shared(Slice key, ReadMode& m);
  // The merges after a remove left the leaf at the end of path underfull.
  Status rebalance(Path* path, Slice key);
  void set_count(uint64_t n) {
    count_ = n;
    for (CountStripe& c : counts_) c.n.store(0, std::memory_order_relaxed);
  }
  // new_pages: pages the write allocates besides splits (a new value's overflow chain).
  Status begin_write(Slice key, uint64_t new_pages = 0);
  Status end_write(Status s);
  Status prefetch_for_write(Slice key);
  // prefetch_for_write, then (a synchronous store) frames freed for what the change may
  // allocate. A failure (a spill on a full disk) changed nothing.
  Status prepare_change(Slice key);
  // Writes value's overflow chain into *chain; a failure leaves the tree as it was and the pool
  // without a failure (BTree::write_chain).
  Status write_chain(Slice key, Slice value, PageId* chain);
  // Collects the page ids of the chain at first (of `pages` pages) into walks_ (going on
  // from where a fault stopped the last walk of it), reading each page through view().
  Status walk_chain(PageId first, uint64_t pages);
  // Frees the chain at first: by the ids walk_chain collected for this write, else by
  // walking it (overflow_free; every page resident, or a synchronous store).
  Status free_chain(PageId first);
  Status set_attempt(Slice key, Slice value, ReadMode* mode);
  Status remove_attempt(Slice key, bool step);
  Status bulk_load_attempt(const Slice* keys, const Slice* values, size_t n);
  // A page the operation changes: dirty until the next commit writes it.
  uint8_t* page_mut(PageId id) const { return store_.page_mut(id); }
  PageId descend(Slice key, Path* path) const;
  PageId descend_after(Slice key) const;  // leaf holding the keys just above key
  PageId descend_edge(bool rightmost) const;

  // The leaf at the end of path cannot take key (with a value of vfield):
  // converts it to another layout or splits it (or its parents). kOk means
  // retry the operation from the root.
  Status make_room(Path* path, Slice key, uint16_t vfield);
  bool split_images(const uint8_t* src, const RecordRef* recs, unsigned n, Slice key, unsigned at, uint8_t* dl,
                    uint8_t* dr, KeyBuffer* sep);
  // at (1..records-1): split before that record (Contention Split), else where the layout prefers.
  Status split_leaf(Path* path, Slice key, unsigned at = 0);
  // After a shared write of key at record index pos of leaf id (latched exclusive).
  void note_contention(PageId id, uint8_t* p, Slice key, bool waited, ReadMode& m);
  // Dense leaf (fully or semi-dense) and a key past its last slot.
  Status split_to_self(Path* path, Slice key, uint16_t vfield);
  Status split_inner(Path* path, unsigned idx);
  Status ensure_parent_space(Path* path, unsigned child_idx, uint32_t sep_len, bool* restarted);
  void insert_separator(PageId parent, Slice sep, PageId left_child);
  Status install_split(PageId parent, PageId node, Slice sep);
  Status new_root(Path* path);
  // Releases every page below id (id itself stays). Only for nodes; the
  // caller frees overflow chains.
  void release_subtree(PageId id);
  // Merges two neighbouring children of parent; unless any_fit, only when
  // together they are mostly empty (kMergeThreshold).
  bool merge_children(PageId parent, unsigned left_pos, bool any_fit = false);
  // Leaf merges that did not fit, by pair and records then, in a table indexed by the pair
  // (merge_children tries a pair again once it holds an eighth fewer; a pair that lost its
  // slot is tried again). Under the tree latch exclusive, as every merge. 6 KiB a tree.
  struct FailedMerge {
    PageId left = kInvalidPageId, right = kInvalidPageId;
    uint32_t records = 0;
  };
  static constexpr unsigned kFailedMerges = 512;  // (merge_children indexes it by the top 9 bits of a hash)
  FailedMerge failed_merges_[kFailedMerges];
  uint64_t failed_merge_attempts_ = 0;
  // Redistributes the keys of two neighbouring inner children of parent so
  // that each keeps at least one (rotation through the parent).
  bool rotate_children(PageId parent, unsigned left_pos);
  // Gives every inner node below the root on key's path at least one key.
  void fix_keyless_inner(Slice key);
  // Bulk load's inner levels above children (key order, seps[i] between
  // children i and i + 1); allocated pages are appended to *pages.
  Status build_inner_levels(std::vector<PageId>& children, SepList& seps, std::vector<PageId>* pages,
                            PageId* root, unsigned* levels);

  // Key-adaption: writes the best layout for these records into dst.
  bool build_leaf(uint8_t* dst, const Fences& f, const RecordRef* r, unsigned n, uint8_t counter);
  bool convert_leaf(PageId leaf, PageTag target, const Slice* key = nullptr, uint16_t vfield = 0);
  static bool dense_enough(const uint8_t* leaf);
  // Builds the n records as a fully or semi-dense leaf (target) in dst: false where
  // that layout cannot hold them, or, with key, where the conversion would not make
  // room for key (convert_leaf's test; phase 2c asks it of a leaf it may redistribute).
  static bool dense_build(uint8_t* dst, PageTag target, const Fences& f, const RecordRef* recs, unsigned n,
                          const Slice* key, uint16_t vfield);
  // Records of a leaf or inner node (copied to scratch first), sorted; kExtractFailed
  // when the record scratch cannot grow (out of memory; nothing changed).
  static constexpr unsigned kExtractFailed = ~0u;
  unsigned extract(const uint8_t* page, unsigned scratch_slot, std::vector<RecordRef>* out);
  // Operation-adaption: counter step on a point op, or on the leaf where a scan starts.
  // The adaptive counter's point-operation step. Most leaves have no live
  // counter (0, or disabled in dense layouts), so that check is inline and the
  // rest (a random draw, maybe a conversion) is out of line.
  void on_point_op(PageId leaf) {
    const uint8_t* p = page(leaf);
    if (static_cast<int8_t>(p[hdr::kCounter]) > 0) on_point_op_counted(leaf);
  }
  void on_point_op_counted(PageId leaf);
  // The step itself, after a successful draw: count down, convert at zero.
  void point_step(PageId leaf, uint8_t* p);
  // Under a shared latch: the draw and the step without changing the layout;
  // false (nothing changed) when the step must convert the leaf, which needs
  // the exclusive latch.
  static bool point_step_shared(uint8_t* p, XorShift32& rng, bool drawn = false);
  // Would a point read of leaf p step its counter (one draw)? Only atomic loads.
  static bool point_step_draw(const uint8_t* p, XorShift32& rng);
  // A scan starts on leaf: false (nothing changed) when, under a shared latch,
  // the step must convert it.
  bool on_scan(PageId leaf, ReadMode* mode);

  uint8_t leaf_flags() const;
  uint8_t inner_flags() const;
  unsigned used_bytes(const uint8_t* p) const;
  unsigned content_bytes(const uint8_t* p) const;

  mutable BufferPool store_;
  Config cfg_;
  LayoutConfig layout_;
  PageId root_ = kInvalidPageId;
  uint64_t relocated_pages_ = 0;
  // compact()'s last step on a store: moves the live pages at its end into free ones below
  // (core/tree/relocate.cc); *reclaimed: pages that neither the tree nor the free list held.
  Status relocate(uint64_t* reclaimed);
  unsigned height_ = 1;
  // Records: changed by exclusive holders. Writers under the shared latch add
  // to a stripe instead (by leaf, so that two writers rarely share a line).
  uint64_t count_ = 0;
  struct alignas(64) CountStripe {
    std::atomic<int64_t> n{0};
    std::atomic<uint64_t> writes{0};  // a store's writes under the shared latch (leaf_version)
  };
  static constexpr unsigned kCountStripes = 8;
  CountStripe counts_[kCountStripes];
  // Bumped by every change under the exclusive latch (cursors compare it with
  // their leaf's latch version, which changes under the shared one).
  uint64_t version_ = 0;
  uint32_t erase_epoch_ = 0;  // erase_epoch_word()
  Status broken_ = Status::kOk;
  Status read_only_ = Status::kOk;
  bool csplit_ = false;
  // How full leaves make room, and whether splits and regroups rebase the pages they rewrite
  // (Room; set_room): kMoveFew on async stores.
  Room room_ = Room::kCompact;
  uint64_t csplits_ = 0;  // contention splits done (exclusive)
  bool held_ = false;
  XorShift32 rng_;
  FillOptions fill_;
  std::unique_ptr<Rebalancer> rebalance_;  // made on first use
  Rebalancer* rebalancer();

  // Overflow chains on an asynchronous store, where a page fault ends an operation and
  // the host retries it: a retry that had to walk the whole chain again needed every page
  // of it resident at once (the pool grew to the value's size, 20 MB for a 20 MB value).
  // Instead a read that faults keeps its place and the bytes it read, in a buffer of its
  // own (not the caller's, which other calls write meanwhile: a getMany, a commit's
  // images), and a write's prefetch keeps the ids it has collected of the chain it
  // replaces; the retry goes on from there. Several at once (operations interleave while
  // the host fetches pages, and each would else undo the other's progress for ever), at
  // most kChainsKept of each, the oldest dropped. A chain never changes once written, so an
  // entry holds until the tree frees its chain (free_chain drops it: its pages may hold
  // another value next) or the pool's reuse_generation() changes (every page at once).
  static constexpr size_t kChainsKept = 32;
  struct ChainRead {
    PageId first = kInvalidPageId, next = kInvalidPageId;
    uint64_t len = 0, done = 0, gen = 0;
    std::vector<uint8_t> bytes;  // [0, done) read
  };
  mutable std::vector<ChainRead> reads_;
  // The entry of reads_ that goes on with ref's chain, or nullptr (stale ones dropped).
  ChainRead* read_of(const ValueRef& ref) const;
  // Goes on with the kept read of ref's chain: kNotFound when there is none; kOk with the
  // value whole in *whole (the kept read then ends); kNeedPage when it stopped again.
  Status finish_kept_read(const ValueRef& ref, std::vector<uint8_t>* whole) const;
  void drop_read(size_t i) const { reads_.erase(reads_.begin() + static_cast<std::ptrdiff_t>(i)); }

 public:
  // Forgets every kept read and walk (their memory goes): the host calls it when no operation
  // that could go on with them is under way (a sync call on an asynchronous store that faulted,
  // a fetch that failed). Kept reads hold the value's whole length from their first fault.
  void drop_kept() {
    std::vector<ChainRead>().swap(reads_);
    std::vector<ChainWalk>().swap(walks_);
  }
  uint64_t kept_read_bytes() const {
    uint64_t n = 0;
    for (const ChainRead& r : reads_) n += r.bytes.capacity();
    return n;
  }

 private:
  // A value read_value handed out of a read's bytes: kept until the next read_value.
  mutable std::vector<uint8_t> handed_;
  struct ChainWalk {
    PageId first = kInvalidPageId, next = kInvalidPageId;
    uint64_t gen = 0;
    bool complete = false;
    std::vector<PageId> ids;
  };
  std::vector<ChainWalk> walks_;
  // The walk this write completed (free_chain frees by its ids); begin_write clears it.
  PageId ready_chain_ = kInvalidPageId;

  // Scratch space for structure modifications (no allocation per operation). Zeroed: a node
  // built here goes to a page whole, unused bytes and all, and from there to the store's files.
  alignas(16) uint8_t scratch_[3][kPageSize] = {};
  std::vector<RecordRef> recs_, recs2_;
  std::vector<uint8_t> arena_[3];
  KeyBuffer sep_;
};

// A cursor survives modifications of its tree: it keeps a copy of the last
// key it returned and the tree version; after a modification it re-seeks
// strictly after (reverse: before) that key.
class Cursor {
 public:
  explicit Cursor(BTree* tree) : t_(tree) {}
  // The mode of the calls that follow (one batch call of the C ABI); nullptr:
  // exclusive. Under a shared mode a call that must change a page (sort a
  // fingerprint leaf, convert one) returns kRestart with the cursor left to
  // re-position from its last key: run it again exclusive.
  void set_mode(ReadMode* mode) { mode_ = mode; }
  // Flags as in bindings/adaptree.h: 1 reverse, 2 exclusive, 4 edge.
  Status seek(Slice key, uint32_t flags);
  // Reads the current record (key into *key, value reference) and advances.
  Status next(KeyBuffer* key, ValueRef* value);
  // Reads records like repeated next() calls, leaf by leaf in tight loops,
  // while visit(key, value) returns true (core/scan.h).
  template <class Visit>
  Status for_each(Visit&& visit);
  BTree* tree() const { return t_; }
  // The key of the record last returned by next().
  const KeyBuffer& last_key() const { return anchor_; }
  void detach() { t_ = nullptr; }

 private:
  enum State : uint8_t { kUnpositioned, kOnRecord, kEnd };
  Status seek_attempt(Slice key, uint32_t flags);
  Status next_attempt(KeyBuffer* key, ValueRef* value);
  // next() inside an operation already begun (for_each).
  Status next_in_op(KeyBuffer* key, ValueRef* value);
  // scan_start: this positioning starts a scan (seek), so it steps the
  // operation counter; re-positioning after a modification does not.
  Status position(bool scan_start);
  bool settle_forward(int pos);
  bool settle_backward(int pos);
  // Makes leaf the current one; lazy-sorts fingerprint leaves. False under a
  // shared mode when the leaf must change first (restart_ is set).
  bool enter(PageId leaf, bool scan_start = false, const BTree::ParentRef* parent = nullptr);
  // Descends (kind, key: BTree::descend_shared) and enters the leaf. Under a leaves mode
  // the leaf's parent may change under its latch (phase 2c): the descent validates it,
  // and enter() checks it again once the leaf is latched; a leaf whose range moved
  // meanwhile is let go and the descent retried.
  bool enter_at(BTree::Descent kind, Slice key, bool scan_start = false);
  // After an attempt that met restart_: re-position from the last key next time.
  Status restart();
  // Under a leaves mode: the current leaf is held shared while its records are
  // read (values point into it); leaving it, or the end of the call, releases it.
  bool latching() const { return mode_ && mode_->shared && mode_->leaves; }
  // The cursor's leaf is as it was when positioned (latched first, if latching).
  bool leaf_unchanged();

 public:
  // Releases the leaf latch the cursor holds (the end of a C ABI call).
  void release() {
    if (held_) PageLatch(held_).unlock_shared();
    held_ = nullptr;
  }

 private:

  BTree* t_;
  ReadMode* mode_ = nullptr;
  bool restart_ = false;
  bool moved_ = false;  // enter(): the leaf's parent changed before it was latched
  uint64_t version_ = 0;
  uint64_t leaf_ver_ = 0;  // leaf_'s latch version when it was entered
  std::atomic<uint64_t>* held_ = nullptr;
  PageId leaf_ = kInvalidPageId;
  int pos_ = 0;
  State state_ = kUnpositioned;
  bool reverse_ = false;
  bool pending_advance_ = false;
  bool anchor_edge_ = true;
  bool anchor_inclusive_ = true;
  KeyBuffer anchor_;
  // anchor_ holds a key of this leaf, read at this tree version (its shared
  // prefix can be reused for the next key of the same leaf).
  PageId anchor_leaf_ = kInvalidPageId;
  uint64_t anchor_version_ = 0, anchor_leaf_ver_ = 0;
  KeyBuffer fence_;
};

constexpr uint32_t kSeekReverse = 1, kSeekExclusive = 2, kSeekEdge = 4;

}  // namespace adaptree
