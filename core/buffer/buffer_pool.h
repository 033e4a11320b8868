// The buffer pool: frames, the page table, clock eviction, dirty tracking and
// page allocation with a free-page list (the list is persisted by the pager at
// commit, core/buffer/file_pager.cc).
//
// Two modes, one interface for the tree:
// - memory (no backend): every page stays resident and never moves, so a
//   frame's index is its page id and the page table is the identity. This is
//   BTreeMap's storage.
// - backed (a PageBackend): a pool of a fixed number of frames; a page is
//   found through the hash page table, loaded on a miss, and frames are
//   reused by the clock (second chance). Dirty victims are spilled through the
//   backend first; a backend that refuses (the async pager: no-steal) keeps
//   them, and pages come in through supply() instead of load().
//
// Operations and eviction. Callers hold raw frame pointers for the length of
// one tree operation. The tree opens each operation with begin_op(); every
// frame fixed during it carries the operation's epoch and is not evicted
// until a later operation begins. If every frame is protected, the pool grows
// beyond its size for the moment rather than fail (the extra frames are the
// first to go later). Long walks (bulk load, overflow chains) call
// begin_op() themselves where they hold no pointers.
//
// Failures. page() never returns null: if a page cannot be produced (an
// asynchronous host must fetch it, I/O error, corruption) it returns a zeroed
// poison frame, which every node layout reads as an empty, unknown page, and
// records the failure; the operation's entry point checks failure() and
// returns it. Read operations change nothing before a failure; write
// operations fetch what they need first (BTree::prefetch_for_write).
#pragma once
#include <atomic>
#include <cassert>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/buffer/frame.h"
#include "core/buffer/page_backend.h"
#include "core/buffer/page_table.h"
#include "core/status.h"

namespace adaptree {

struct PoolStats {
  uint64_t hits = 0, misses = 0, evictions = 0, spills = 0;
};

class BufferPool {
 public:
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // Switches to backed mode over backend with `frames` frames. page_count is
  // the store's next new page id, free_ids its free pages. Drops all frames.
  void attach(PageBackend* backend, uint32_t frames, PageId page_count, std::vector<PageId> free_ids);
  // An async reader moves to a newer commit whose store ends at page_count and whose commits
  // since the one the frames hold wrote `changed` (n ids, any order, repeats allowed): those
  // frames and those of pages past the end are dropped, the others kept (their pages hold the
  // same bytes in the newer commit). The free list is the new commit's, loaded again.
  void follow_commit(PageId page_count, const PageId* changed, uint32_t n);
  bool backed() const { return backend_ != nullptr; }
  bool asynchronous() const { return async_; }
  // True once after the pool had to evict (the tree XMerges at its next
  // write: core/tree/rebalance.h); the flag is cleared.
  bool take_pressure() {
    bool p = pressure_;
    pressure_ = false;
    return p;
  }

  // Memory mode has no eviction and no failures: nothing to do, and so
  // nothing written by reads that hold a tree latch shared (tree_latch.h).
  void begin_op() {
    if (!backend_) return;
    epoch_++;
    failure_ = Status::kOk;
  }
  // Ends the protection of the frames fixed so far without starting a new
  // operation (the caller holds no page pointers). Not over an asynchronous
  // host: there a page evicted in the middle of an operation comes back only
  // after the operation has returned kNeedPage, so a write (which must not
  // fault once it changes something) and a retried read (which must get
  // further than its last attempt) keep every page they fixed; the pool
  // grows past its size for such an operation instead.
  void end_protection() {
    if (backend_ && !async_) epoch_++;
  }
  // kOk, or why a page() since begin_op() returned the poison frame;
  // missing_page() names the page for kNeedPage.
  Status failure() const { return failure_; }
  // A page that loaded but cannot be what the tree needs there (BTree::descend): the
  // operation fails with kCorrupt, as when a page's checksum fails.
  void note_corrupt(PageId id) { poison(Status::kCorrupt, id); }
  PageId missing_page() const { return missing_; }
  void clear_failure() { failure_ = Status::kOk; }


  // Every page of the store is resident and `frames` frames are free (the pool grows
  // first where it may): an operation that fixes only the store's pages and allocates
  // at most `frames` pages can neither miss nor evict, so a write needs no
  // prefetch_for_write (BTree::begin_write). Pigeonhole: the table holds distinct ids
  // below page_count_, never page 0 (the superblock), so page_count_ - 1 of them are all.
  bool all_resident_with_room(uint64_t frames) {
    if (!backend_ || table_.size() + 1 != page_count_) return false;
    assert(table_.find(0) == kNoFrame && "page 0 (the superblock) is never a frame");
    while (free_frames_.size() < frames) {
      if (frame_count_ >= target_frames_ || !grow()) return false;
    }
    return true;
  }

  // Frees frames (evicting, and spilling dirty pages, as a miss would) until `frames` are free
  // or the pool holds no more it may take from (pages this operation fixed stay): a write then
  // makes its change without evicting in the middle of it. kOk, or, when a spill was refused
  // (a full disk) and no clean frame was left to take, that failure, with nothing changed (the
  // page stays dirty and resident); it is not recorded as the operation's.
  Status make_room(uint32_t frames);

  // The page's bytes for reading (or for changes that may be lost, such as
  // the adaptive operation counter: a clean page is dropped, not written).
  uint8_t* page(PageId id) {
    if (!backend_) return data(id);
    return fix_backed(id);
  }
  // Memory mode only (!backed()): the page's bytes, no mode check. The
  // tree's lookup descends with this when the pool has no backend.
  uint8_t* memory_page(PageId id) const { return data(id); }
  // Memory mode, for an optimistic reader (BTree::get_optimistic), which may race
  // with the tree being freed: memory_page, or nullptr where a pointer it would load
  // through does not lie inside the wasm memory (a load there traps; natively, shared
  // trees are freed only once no thread calls).
  uint8_t* memory_page_checked(PageId id) const {
    uint8_t* const* table = frame_data_.data();
    if (!in_memory(table + id, sizeof(uint8_t*))) return nullptr;
    uint8_t* p = table[id];
    // (The page, and after its chunk's pages the state words: latch_word.)
    return in_memory(p, size_t{kChunkFrames} * (kPageSize + sizeof(uint64_t))) ? p : nullptr;
  }
  // From now on, grow() keeps the page-id arrays it replaces (readers without a latch may
  // be reading them). Under the tree's latch exclusive.
  void keep_replaced_arrays() {
    keep_replaced_ = true;
    table_.keep_replaced();
  }
  // A shared store, for an optimistic reader (BTree::get_optimistic): the frame holding
  // id as the page table shows it now (PageTable::find_unlatched), or kNoFrame. Its bytes
  // and latch: memory_page_checked(frame).
  FrameId resident_frame_unlatched(PageId id) const {
    FrameId f = table_.find_unlatched(id);
    return f < frame_count_ ? f : kNoFrame;
  }
  // Memory mode only: the page's state word (core/buffer/frame.h), its node
  // latch. In memory mode a page is a frame but has no FrameMeta (the rest of
  // it is eviction bookkeeping): the words of a chunk's 64 pages sit after the
  // pages, in the same allocation, so the word is found from the page pointer
  // without another load, lives as long as the page and never moves. Chunks are
  // added only by allocate(), which a tree calls under its latch exclusive.
  std::atomic<uint64_t>* latch_word(PageId id) const { return latch_of(data(id), id); }
  // The state word of frame f, whose bytes are at p (the words follow the chunk's pages).
  static std::atomic<uint64_t>* latch_of(uint8_t* p, FrameId f) {
    uint32_t i = f & (kChunkFrames - 1);
    return reinterpret_cast<std::atomic<uint64_t>*>(p + size_t{kChunkFrames - i} * kPageSize) + i;
  }
  // Memory mode only: the page's Contention Split counters (BTree), after the
  // chunk's latch words. Read and written only under the page's latch exclusive.
  uint64_t* contention_word(PageId id) const {
    return reinterpret_cast<uint64_t*>(latch_word(id) + kChunkFrames);
  }
  // The page's bytes for changing it: marks it dirty.
  uint8_t* page_mut(PageId id) {
    if (!backend_) return data(id);
    uint8_t* p = fix_backed(id);
    FrameId f = table_.find(id);
    if (f != kNoFrame && !frames_[f].dirty) {
      // before the first change: the pager may keep the base of a delta
      backend_->will_change(id, p, frames_[f].lossy);
      frames_[f].dirty = true;
      frames_[f].lossy = false;  // (only a clean frame's: it is written whole at commit)
    }
    return p;
  }
  // A change through page() that may be lost (the adaptive operation counter) was made to
  // id's frame: if the frame is clean it no longer matches its stored image (FrameMeta::lossy).
  // Every write through page() on a store must say so, or a delta would be logged against a
  // base that is not the stored page (Debug builds check it in FilePager::will_change).
  void note_lossy(PageId id) {
    if (!backend_) return;
    FrameId f = table_.find(id);
    if (f != kNoFrame && !frames_[f].dirty) frames_[f].lossy = true;
  }
  // id's frame when it holds exactly the page's stored image: resident, clean (written or
  // read since its last change), not changed through page() since (lossy), not being written.
  // Else null. A checkpoint copies such frames instead of reading their versions from the log.
  const uint8_t* stored_image(PageId id) const {
    if (!backend_) return nullptr;
    FrameId f = table_.find(id);
    if (f == kNoFrame || frames_[f].dirty || frames_[f].lossy || frames_[f].writing) return nullptr;
    return data_of(f);
  }
  // A store shared between threads, under its tree latch shared (docs/THREADS.md,
  // "Stores"): every call that loads, evicts or reassigns a frame, or marks one dirty,
  // holds the latch exclusive, so the page table and each frame's page, dirty flag and
  // latch word stand still meanwhile. Point reads and writes of resident pages find
  // their frames here (kNoFrame: not resident; the caller restarts exclusive).
  FrameId resident_frame(PageId id) const { return table_.find(id); }
  uint8_t* frame_bytes(FrameId f) const { return data_of(f); }
  // The frame's node latch (its chunk's state word, placed as latch_word's).
  std::atomic<uint64_t>* frame_latch(FrameId f) const { return latch_of(data_of(f), f); }
  // Dirty since the last commit: a write may change it without telling the pager.
  bool frame_dirty(FrameId f) const { return __atomic_load_n(&frames_[f].dirty, __ATOMIC_ACQUIRE); }
  // page_mut's first-change step for frame f under the tree latch held shared, by a caller
  // that holds f's node latch exclusive (phase 2c): the pager keeps the page's base for a
  // delta, then the frame is dirty. Under the pool's spin lock (the pager's copies are one
  // list). A synchronous store only: false on an asynchronous one (nothing changed).
  bool mark_dirty_shared(FrameId f) {
    if (!backend_ || async_) return false;
    if (frame_dirty(f)) return true;
    lock_alloc();
    FrameMeta& m = frames_[f];
    if (!m.dirty) {
      backend_->will_change(m.pid, data_of(f), m.lossy);
      m.lossy = false;
      __atomic_store_n(&m.dirty, true, __ATOMIC_RELEASE);
    }
    alloc_lock_.store(false, std::memory_order_release);
    return true;
  }
  // The clock's reference bit, set atomically and only when it is clear, so that
  // readers of a hot page do not bounce its line between cores.
  void reference(FrameId f) {
    bool* r = &frames_[f].referenced;
    if (!__atomic_load_n(r, __ATOMIC_RELAXED)) __atomic_store_n(r, true, __ATOMIC_RELAXED);
  }
  // reference(f) if f still holds page id (under the latch: the frame stands still).
  void reference_if_holds(FrameId f, PageId id) {
    if (f < frame_count_ && frames_[f].pid == id) reference(f);
  }
  // The pool evicted since the last write (XMerge runs at the next exclusive write).
  bool pressure() const { return pressure_; }
  // note_lossy() for a change made under the shared latch (the adaptive counter,
  // stepped atomically by several readers): the flag is set atomically.
  void note_lossy_shared(FrameId f) {
    if (!frames_[f].dirty) __atomic_store_n(&frames_[f].lossy, true, __ATOMIC_RELAXED);
  }
  // Pool hits under the shared latch (resident_frame): added once per call to
  // one of a few cache-line stripes, picked by the caller (stats() sums them).
  void add_shared_hits(uint32_t n, uintptr_t stripe) {
    shared_hits_[(stripe >> 6) & (kHitStripes - 1)].n.fetch_add(n, std::memory_order_relaxed);
  }
  // As page(), with the failure returned.
  Status fix(PageId id, uint8_t** out) {
    if (!valid(id)) return Status::kCorrupt;
    *out = page(id);
    return failure_;
  }
  // A page's bytes without making it resident: the frame if it is resident,
  // else scratch (kPageSize bytes) filled from storage. Long overflow chains
  // stream through here instead of through the pool. Valid until the next
  // call that fixes or allocates a page.
  Status view(PageId id, uint8_t* scratch, const uint8_t** out);
  bool resident(PageId id) const { return !backend_ || table_.find(id) != kNoFrame; }

  // Installs an image an asynchronous host fetched (after a kNeedPage): kOk
  // if the page is resident already (it is newer than any stored image) or
  // was installed clean; kCorrupt if the trailer (page id, CRC-32C) does not
  // match; kInvalidArgument for an id that is not a page of the store.
  Status supply(PageId id, const uint8_t* image);

  // The free-page list is not read yet (an async store opens with page 0
  // alone): load_free_list() reads its chain through page() before the first
  // write (it may return kNeedPage). live_pages() counts it already.
  void defer_free_list(PageId head, uint32_t count) {
    pending_free_head_ = head;
    pending_free_count_ = count;
    free_pending_ = count != 0 || head != kInvalidPageId;
  }
  bool free_list_pending() const { return free_pending_; }
  Status load_free_list();

  // Async commits (core/buffer/async_pager.h): begin_writing() marks every
  // dirty frame clean and "being written" (still not evictable: the host may
  // not have the image yet); a change meanwhile dirties it again.
  // end_writing(durable): done; if the write failed, those frames are dirty
  // again (their images are not stored).
  void begin_writing();
  void end_writing(bool durable);
  // Gives back the frames grown past the pool's size (whole chunks from the
  // end) whose pages are clean and not in use: after an async commit, the
  // dirty pages that made the pool grow are clean again.
  void shrink_to_target();

  // A new page (contents undefined, dirty) or kOutOfMemory.
  Status allocate(PageId* out);
  // Under the tree latch held shared (phase 2c: a map's leaf split, a store's 2-to-3
  // split): a new page (contents undefined, dirty; *page: its bytes), taken under the
  // pool's own spin lock. Memory mode: from the free list or the pool's unused frames.
  // A synchronous store: an id from the free list or the end, in a frame never used or
  // released (no eviction), entered into the page table in place (finds of other pages
  // beside it are not disturbed: it fills an empty slot, written in one store). False
  // where the pool would have to grow or evict, or the table to grow: the exclusive
  // latch does that (grow replaces the page-id array shared readers index).
  bool allocate_shared(PageId* out, uint8_t** page = nullptr);
  // Returns the page to the free list.
  void release(PageId id);
  // Page relocation (BTree::relocate, core/tree/relocate.cc), a backed pool only. copy_page_to:
  // `to`, a page the tree does not use (the caller keeps the free list: set_free_ids), gets a
  // dirty frame holding a copy of `from`'s bytes; `from` is unchanged and still fixed. The
  // failure (nothing changed) when either page cannot be had. forget_page: drops `from`'s frame
  // unwritten once nothing points to it, without listing it free.
  Status copy_page_to(PageId from, PageId to);
  void forget_page(PageId id) { drop_frame(id); }
  // Replaces the free list (ids: every free page, in the order allocate() should not mind;
  // it takes from the back). The end moves down at the next commit (trim_free_tail), and every
  // page may hold something else now (reuse_generation() changes: kept chain reads go).
  void set_free_ids(std::vector<PageId> ids) {
    free_ = std::move(ids);
    free_changed_ = true;
    tail_freed_ = true;
    reuse_gen_++;
  }
  // Store commits (FilePager, AsyncPager): when the highest page ids are free, the store ends
  // below them (page_count_ drops, they leave the free list) and a checkpoint can cut the data
  // file there. Only when the last page was freed since the last call (else O(1)) and the
  // free list is loaded; O(free ids). Returns the pages cut.
  uint32_t trim_free_tail();
  // Changes when every page may hold something else: all freed at once (clear), another
  // store's pages (attach: a reader following a newer commit). An overflow chain never
  // changes once written, and one freed by the tree drops what was kept of it
  // (BTree::free_chain), so a chain read or walked before is the same while this stays the
  // same (BTree's resumed chain reads and walks on asynchronous stores).
  uint64_t reuse_generation() const { return reuse_gen_; }
  // (page_count_ grows under the shared latch too: allocate_shared; atomic access there.)
  bool valid(PageId id) const { return id != kInvalidPageId && id < __atomic_load_n(&page_count_, __ATOMIC_RELAXED); }
  uint64_t live_pages() const { return page_count_ - 1 - free_.size() - (free_pending_ ? pending_free_count_ : 0); }
  PageId page_count() const { return __atomic_load_n(&page_count_, __ATOMIC_RELAXED); }
  uint64_t allocated_bytes() const { return uint64_t{chunks_.size()} * kChunkFrames * kPageSize; }
  // Every page free (memory mode: memory returned).
  void clear();

  // Dirty pages, for commit.
  template <class F>
  void for_each_dirty(F&& f) {
    for (FrameId i = 0; i < frame_count_; i++)
      if (frames_[i].dirty && frames_[i].pid != kInvalidPageId) f(frames_[i].pid, data_of(i));
  }
  void mark_all_clean() {
    for (FrameId i = 0; i < frame_count_; i++) frames_[i].dirty = false;
  }
  uint32_t dirty_count() const;
  uint32_t resident_count() const { return backend_ ? table_.size() : static_cast<uint32_t>(live_pages()); }
  uint32_t frame_count() const { return frame_count_; }
  uint32_t target_frames() const { return target_frames_; }
  std::vector<PageId>& free_ids() { return free_; }
  size_t free_count() const { return free_.size(); }
  // Free pages, counting a free list not read yet (defer_free_list): what stats report.
  size_t free_pages() const { return free_.size() + (free_pending_ ? pending_free_count_ : 0); }
  bool free_list_changed() const { return free_changed_; }
  void set_free_list_unchanged() { free_changed_ = false; }
  void set_free_list_changed() { free_changed_ = true; }
  PoolStats stats() const {
    PoolStats s = stats_;
    for (const HitStripe& h : shared_hits_) s.hits += h.n.load(std::memory_order_relaxed);
    return s;
  }
  uint64_t page_table_bytes() const { return table_.bytes(); }

 private:
  static constexpr uint32_t kChunkFrames = 64;
  // One pointer per frame (4 or 8 bytes per 4 KiB frame): a page lookup in
  // memory mode is one load, as it was before the pool had chunks.
  uint8_t* data_of(FrameId f) const { return frame_data_[f]; }
  // Memory mode: the frame index is the page id.
  uint8_t* data(PageId id) const { return data_of(id); }
  uint8_t* fix_backed(PageId id);
  uint8_t* poison(Status why, PageId id);
  // Drops page id's frame, if it has one, unwritten (the page is free).
  void drop_frame(PageId id);
  void install(FrameId f, PageId id, bool dirty);
  // A frame for a page: a free one, else the clock's victim among the frames not fixed
  // in the last keep_epochs operations (1: this one), else a new one past the target;
  // kNoFrame when memory cannot grow.
  // grow_when_refused: a page read (fix_backed) grows the pool rather than fail when the only
  // frames left are dirty ones whose spill the storage refused.
  FrameId take_frame(uint32_t keep_epochs = 1, bool grow_when_refused = false);
  // One eviction by the clock (take_frame's and make_room's): the frame it emptied (dirty pages
  // spilled first), or kNoFrame when every frame is fixed in the last keep_epochs operations,
  // being written, or dirty on a no-steal backend. An empty frame the sweep meets is returned
  // with take_empty (take_frame: none is listed free then), else passed over (make_room: it is
  // listed). A spill the storage refuses (a full disk) leaves its page dirty and resident; the
  // sweep goes on to a clean frame, trying no other spill, and *refused / *refused_pid say which.
  FrameId evict_one(uint32_t keep_epochs, bool take_empty, Status* refused, PageId* refused_pid);
  bool grow();  // one more chunk of frames
  void free_memory();

  PageBackend* backend_ = nullptr;
  bool async_ = false;  // backend_->asynchronous()
  uint64_t reuse_gen_ = 0;  // reuse_generation()
  std::vector<uint8_t*> chunks_;
  std::vector<uint8_t*> frame_data_;  // frame id -> its kPageSize bytes (in chunks_)
  // frame_data_'s earlier arrays once keep_replaced_arrays() was called (the tree is
  // shared: an optimistic reader, BTree::get_optimistic, may be reading one while grow()
  // replaces it), kept until the pool's memory is freed.
  bool keep_replaced_ = false;
  std::vector<std::vector<uint8_t*>> retired_;
  std::deque<FrameMeta> frames_;  // backed mode only (deque: FrameMeta does not move)
  uint32_t frame_count_ = 0;
  uint32_t target_frames_ = 0;
  std::vector<FrameId> free_frames_;
  PageTable table_;
  FrameId hand_ = 0;
  uint32_t epoch_ = 1;
  Status failure_ = Status::kOk;
  PageId missing_ = kInvalidPageId;
  alignas(16) uint8_t poison_[kPageSize];

  PageId page_count_ = 1;  // page 0 is the superblock
  std::vector<PageId> free_;
  bool free_changed_ = false;
  // The store's last page was freed since the last trim_free_tail (release, clear): only then
  // can the end move down, so commits skip the scan of the free list otherwise.
  bool tail_freed_ = false;
  bool free_pending_ = false;
  PageId pending_free_head_ = kInvalidPageId;
  uint32_t pending_free_count_ = 0;
  PoolStats stats_;
  struct alignas(64) HitStripe {
    std::atomic<uint64_t> n{0};
  };
  static constexpr unsigned kHitStripes = 8;
  HitStripe shared_hits_[kHitStripes];
  bool pressure_ = false;
  std::atomic<bool> alloc_lock_{false};  // allocate_shared, mark_dirty_shared
  void lock_alloc() {
    while (alloc_lock_.exchange(true, std::memory_order_acquire))
      while (alloc_lock_.load(std::memory_order_relaxed)) {
      }
  }
};

}  // namespace adaptree
