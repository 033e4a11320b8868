#include "core/buffer/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/buffer/page_trailer.h"
#include "core/buffer/superblock.h"
#include "core/layouts/validate.h"
#include "core/page.h"
#include "core/util/checked.h"

namespace adaptree {

BufferPool::~BufferPool() { free_memory(); }

void BufferPool::free_memory() {
  for (uint8_t* c : chunks_) free(c);
  chunks_.clear();
  frame_data_.clear();
  retired_.clear();
  frames_.clear();
  frame_count_ = 0;
  free_frames_.clear();
  table_.clear();
  hand_ = 0;
}

bool BufferPool::grow() {
  // The bookkeeping first (util/checked.h), so that nothing below can abort.
  uint32_t frames = frame_count_ + kChunkFrames;
  if (!reserve_checked(chunks_, chunks_.size() + 1)) return false;
  if (keep_replaced_ && frame_data_.size() + kChunkFrames > frame_data_.capacity()) {
    // A larger array beside the old one, which stays (retired_): no reader is left
    // holding freed memory.
    std::vector<uint8_t*> larger;
    if (!reserve_checked(larger, std::max<size_t>(2 * frame_data_.capacity(), frame_data_.size() + kChunkFrames)) ||
        !reserve_checked(retired_, retired_.size() + 1))
      return false;
    larger.assign(frame_data_.begin(), frame_data_.end());
    retired_.push_back(std::move(frame_data_));
    frame_data_ = std::move(larger);
  }
  if (backend_) {
    // frames_ is a deque (it allocates blocks of a few KiB and its map): a probe only.
    if (!reserve_checked(free_frames_, frames) || !table_.reserve(frames) ||
        !can_allocate(kChunkFrames * sizeof(FrameMeta) + 8192))
      return false;
  }
  void* mem = nullptr;
  // The pages, then their state words (latch_word), then their contention counters.
  constexpr size_t kChunkBytes = size_t{kChunkFrames} * kPageSize + kChunkFrames * 2 * sizeof(uint64_t);
  if (posix_memalign(&mem, kPageSize, kChunkBytes) != 0 || !mem) return false;
  // Zeroed: a node leaves the unused part of its page as it found it, and the page goes to
  // the files whole. Heap memory another store freed (its log buffer: commit frames of the
  // same salt) was written inside page images, and recovery, which looks for intact commits
  // past a torn tail, took them for the store's own: a crash left a store that opened as
  // kCorrupt, in 1 of ~100 runs of CrashAtEveryStorageOperationWhileTheEndIsCut (session 25).
  memset(mem, 0, size_t{kChunkFrames} * kPageSize);
  // A store's pool leaves 1 MiB of the heap to the rest (the pager's log index, at most
  // 16 bytes per page in a 64 MiB log, record scratch, output buffers): under a memory
  // budget it stops growing a little early and evicts, rather than taking the last bytes
  // and failing the next small allocation. (In memory mode a page is a frame: there the
  // pool takes what it can get.)
  if (backend_ && frame_count_ > 0 && !can_allocate(size_t{1} << 20)) {
    free(mem);
    return false;
  }
  auto* words = reinterpret_cast<std::atomic<uint64_t>*>(static_cast<uint8_t*>(mem) + size_t{kChunkFrames} * kPageSize);
  for (uint32_t i = 0; i < kChunkFrames; i++) new (words + i) std::atomic<uint64_t>(frame_state::make(0, 0));
  memset(static_cast<uint8_t*>(mem) + size_t{kChunkFrames} * kPageSize + kChunkFrames * sizeof(uint64_t), 0,
         kChunkFrames * sizeof(uint64_t));
  chunks_.push_back(static_cast<uint8_t*>(mem));
  for (uint32_t i = 0; i < kChunkFrames; i++) frame_data_.push_back(static_cast<uint8_t*>(mem) + size_t{i} * kPageSize);
  if (backend_) {
    for (uint32_t i = 0; i < kChunkFrames; i++) frames_.emplace_back();
    // Hand out low frames first.
    for (uint32_t i = kChunkFrames; i-- > 0;) free_frames_.push_back(frame_count_ + i);
    table_.reserve(frame_count_ + kChunkFrames);
  }
  frame_count_ += kChunkFrames;
  return true;
}

void BufferPool::attach(PageBackend* backend, uint32_t frames, PageId page_count, std::vector<PageId> free_ids) {
  free_memory();
  reuse_gen_++;
  backend_ = backend;
  async_ = backend && backend->asynchronous();
  target_frames_ = frames < kChunkFrames ? kChunkFrames : frames;
  table_.reserve(target_frames_);
  page_count_ = page_count;
  free_ = std::move(free_ids);
  tail_freed_ = true;  // (a store may have been written with free pages at its end: the first commit looks)
  free_changed_ = false;
  free_pending_ = false;
  memset(poison_, 0, sizeof poison_);
}

void BufferPool::follow_commit(PageId page_count, const PageId* changed, uint32_t n) {
  reuse_gen_++;
  // (page 0, the superblock, is never a frame: and the table's empty slots hold id 0)
  for (uint32_t i = 0; i < n; i++)
    if (changed[i] != kInvalidPageId) drop_frame(changed[i]);
  for (FrameId f = 0; f < frame_count_; f++) {
    PageId pid = frames_[f].pid;
    if (pid != kInvalidPageId && pid >= page_count) drop_frame(pid);
  }
  page_count_ = page_count;
  free_.clear();
  tail_freed_ = true;
  free_changed_ = false;
  free_pending_ = false;
}

void BufferPool::clear() {
  reuse_gen_++;
  if (!backend_) {
    free_memory();
    page_count_ = 1;
    free_.clear();
    return;
  }
  // Persistent: every page becomes free; frames are dropped unwritten.
  tail_freed_ = true;
  free_.clear();
  free_pending_ = false;
  for (PageId id = page_count_; id-- > 1;) free_.push_back(id);
  free_changed_ = true;
  for (FrameId f = 0; f < frame_count_; f++) {
    if (frames_[f].pid == kInvalidPageId) continue;
    frames_[f].pid = kInvalidPageId;
    frames_[f].dirty = false;
    frames_[f].writing = false;
    frames_[f].bump();
  }
  table_.clear();
  free_frames_.clear();
  for (FrameId f = frame_count_; f-- > 0;) free_frames_.push_back(f);
}

uint8_t* BufferPool::poison(Status why, PageId id) {
  if (failure_ == Status::kOk) {
    failure_ = why;
    missing_ = id;
  }
  memset(poison_, 0, sizeof poison_);
  return poison_;
}

FrameId BufferPool::take_frame(uint32_t keep_epochs, bool grow_when_refused) {
  // Below its size the pool grows; when memory (the budget) refuses, it evicts instead,
  // working as a smaller pool rather than failing the operation.
  if (free_frames_.empty() && frame_count_ < target_frames_ && !grow() && frame_count_ == 0) return kNoFrame;
  if (!free_frames_.empty()) {
    FrameId f = free_frames_.back();
    free_frames_.pop_back();
    return f;
  }
  pressure_ = true;  // full: a page freed by XMerge would have saved this eviction
  Status refused = Status::kOk;
  PageId refused_pid = kInvalidPageId;
  FrameId f = evict_one(keep_epochs, true, &refused, &refused_pid);
  if (f != kNoFrame) return f;
  // Only without a clean frame does a refused spill fail the call. (Failing at the first
  // refused spill, a read on a full disk failed with QUOTA_EXCEEDED while clean frames were
  // there to take: session 25.)
  // A page read then grows the pool past its size instead, where memory allows: the dirty pages
  // cannot leave, and a read on a full disk failed with QUOTA_EXCEEDED once every frame was dirty
  // (a probe's checkInvariants, session 30). Bounded: the next read takes the clean frame the
  // last one left. A new page (allocate) still fails: a write on a full disk fails cleanly.
  if (refused != Status::kOk && !(grow_when_refused && grow())) {
    poison(refused, refused_pid);
    return kNoFrame;
  }
  if (refused != Status::kOk) {
    f = free_frames_.back();
    free_frames_.pop_back();
    return f;
  }
  // Everything is protected or dirty on a no-steal backend: grow past the
  // target for now.
  if (!grow()) return kNoFrame;
  f = free_frames_.back();
  free_frames_.pop_back();
  return f;
}

FrameId BufferPool::evict_one(uint32_t keep_epochs, bool take_empty, Status* refused, PageId* refused_pid) {
  // Clock: two sweeps give every referenced frame its second chance.
  for (uint64_t step = 0; step < 2 * uint64_t{frame_count_} + 1; step++) {
    FrameId f = hand_;
    hand_ = hand_ + 1 >= frame_count_ ? 0 : hand_ + 1;
    FrameMeta& m = frames_[f];
    if (m.pid == kInvalidPageId) {
      if (take_empty) return f;
      continue;
    }
    if (epoch_ - m.epoch < keep_epochs) continue;  // in use by this operation (or the one before)
    if (m.writing) continue;                        // an async commit is writing its image
    if (m.referenced) {
      m.referenced = false;
      continue;
    }
    if (m.dirty) {
      if (*refused != Status::kOk) continue;
      Status s = backend_->spill(m.pid, data_of(f));
      if (s == Status::kNeedPage) continue;  // no-steal backend: keep it
      if (s != Status::kOk) {
        *refused = s;
        *refused_pid = m.pid;
        continue;
      }
      stats_.spills++;
      m.dirty = false;
    }
    table_.erase(m.pid);
    m.pid = kInvalidPageId;
    m.bump();
    stats_.evictions++;
    return f;
  }
  return kNoFrame;
}

Status BufferPool::make_room(uint32_t frames) {
  if (!backend_ || async_) return Status::kOk;
  Status refused = Status::kOk;
  PageId refused_pid = kInvalidPageId;
  while (free_frames_.size() < frames) {
    if (frame_count_ < target_frames_ && grow()) continue;
    // (frames already free, or fixed by this operation, are passed over)
    FrameId f = evict_one(1, false, &refused, &refused_pid);
    if (f == kNoFrame) return refused;  // kOk: the pool holds no more it may take from
    pressure_ = true;
    free_frames_.push_back(f);  // (room reserved by grow)
  }
  return Status::kOk;
}

uint8_t* BufferPool::fix_backed(PageId id) {
  FrameId f = table_.find(id);
  if (f != kNoFrame) {
    FrameMeta& m = frames_[f];
    m.epoch = epoch_;
    m.referenced = true;
    stats_.hits++;
    return data_of(f);
  }
  if (!valid(id)) return poison(Status::kCorrupt, id);
  stats_.misses++;
  // An asynchronous host answers later: take no frame (nothing is evicted).
  if (async_) return poison(Status::kNeedPage, id);
  f = take_frame(1, true);
  if (f == kNoFrame) return poison(failure_ != Status::kOk ? failure_ : Status::kOutOfMemory, id);
  uint8_t* d = data_of(f);
  Status s = backend_->load(id, d);
  // (A page whose checksum holds but whose offsets or counts would take a layout outside it:
  // corrupt too, see core/layouts/validate.h.)
  if (s == Status::kOk && !page_well_formed(d)) s = Status::kCorrupt;
  if (s != Status::kOk) {
    free_frames_.push_back(f);
    return poison(s, id);
  }
  install(f, id, false);
  table_.insert(id, f);
  return d;
}

void BufferPool::install(FrameId f, PageId id, bool dirty) {
  FrameMeta& m = frames_[f];
  m.pid = id;
  m.epoch = epoch_;
  m.referenced = true;
  m.dirty = dirty;
  m.lossy = false;  // a new image: as stored (or dirty)
  m.bump();
}

Status BufferPool::view(PageId id, uint8_t* scratch, const uint8_t** out) {
  if (!valid(id)) return Status::kCorrupt;
  if (!backend_) {
    *out = data(id);
    return Status::kOk;
  }
  FrameId f = table_.find(id);
  if (f != kNoFrame) {
    // Protected like a fixed page: a chain read again after a fault keeps
    // what it has read (an async host supplies one page per fault).
    frames_[f].epoch = epoch_;
    frames_[f].referenced = true;
    stats_.hits++;
    *out = data_of(f);
    return Status::kOk;
  }
  stats_.misses++;
  *out = scratch;
  Status s = backend_->load(id, scratch);
  if (s == Status::kOk && !page_well_formed(scratch)) s = Status::kCorrupt;
  // The caller returns kNeedPage; missing_page() names the page.
  if (s == Status::kNeedPage && failure_ == Status::kOk) missing_ = id;
  return s;
}

Status BufferPool::allocate(PageId* out) {
  PageId id;
  bool reused = !free_.empty();
  if (reused) {
    id = free_.back();
  } else {
    if (page_count_ == ~PageId{0}) return Status::kOutOfMemory;
    id = page_count_;
    // release() pushes onto free_ without allocating: room for every page id.
    if (!reserve_checked(free_, size_t{page_count_} + 1)) return Status::kOutOfMemory;
  }
  if (!backend_) {
    if (!reused && id >= frame_count_ && !grow()) return Status::kOutOfMemory;
  } else {
    FrameId f = table_.find(id);
    if (f == kNoFrame) {
      f = take_frame();
      if (f == kNoFrame) return failure_ != Status::kOk ? failure_ : Status::kOutOfMemory;
      table_.insert(id, f);
    }
    install(f, id, true);
  }
  if (reused) free_.pop_back();
  else page_count_++;
  free_changed_ = true;
  uint8_t* p = backend_ ? data_of(table_.find(id)) : data(id);
  p[0] = static_cast<uint8_t>(PageTag::kFree);
  *out = id;
  return Status::kOk;
}

bool BufferPool::allocate_shared(PageId* out, uint8_t** page) {
  if (async_) return false;
  lock_alloc();
  PageId id = kInvalidPageId;
  FrameId f = kNoFrame;
  const bool reused = !free_.empty();
  if (reused) id = free_.back();
  else if (page_count_ != ~PageId{0} && reserve_checked(free_, size_t{page_count_} + 1)) id = page_count_;
  if (id != kInvalidPageId) {
    if (!backend_) {
      if (!reused && id >= frame_count_) id = kInvalidPageId;
    } else if (free_frames_.empty() || !table_.has_room() || table_.find(id) != kNoFrame) {
      id = kInvalidPageId;  // (a free page still resident: allocate() reuses its frame)
    } else {
      f = free_frames_.back();
      free_frames_.pop_back();
      install(f, id, true);
      table_.insert(id, f);
    }
  }
  if (id != kInvalidPageId) {
    if (reused) free_.pop_back();
    else __atomic_store_n(&page_count_, id + 1, __ATOMIC_RELAXED);  // (valid() reads it beside)
    free_changed_ = true;
  }
  alloc_lock_.store(false, std::memory_order_release);
  if (id == kInvalidPageId) return false;
  uint8_t* p = backend_ ? data_of(f) : data(id);
  p[0] = static_cast<uint8_t>(PageTag::kFree);
  *out = id;
  if (page) *page = p;
  return true;
}

void BufferPool::drop_frame(PageId id) {
  FrameId f = table_.find(id);
  if (f == kNoFrame) return;
  table_.erase(id);
  frames_[f].pid = kInvalidPageId;
  frames_[f].dirty = false;
  frames_[f].writing = false;
  frames_[f].bump();
  free_frames_.push_back(f);
}

Status BufferPool::copy_page_to(PageId from, PageId to) {
  if (!backend_ || !valid(from) || !valid(to) || from == to) return Status::kInvalidArgument;
  // Room first (a spill the disk refuses fails the move before anything changed; the copy
  // must not grow the pool by every page a compact moves).
  Status room = make_room(2);
  if (room != Status::kOk) return room;
  const uint8_t* src = fix_backed(from);
  if (failure_ != Status::kOk) return failure_;
  FrameId f = table_.find(to);  // (a page of the free list's own chain may be resident)
  if (f == kNoFrame) {
    // (take_frame keeps the frames fixed in this operation: `from`'s stays)
    f = take_frame();
    if (f == kNoFrame) return failure_ != Status::kOk ? failure_ : Status::kOutOfMemory;
    table_.insert(to, f);
  }
  install(f, to, true);
  memcpy(data_of(f), src, kPageSize);
  return Status::kOk;
}

void BufferPool::release(PageId id) {
  if (!backend_) {
    data(id)[0] = static_cast<uint8_t>(PageTag::kFree);
  } else {
    drop_frame(id);  // its image no longer matters: dropped unwritten
  }
  free_.push_back(id);
  free_changed_ = true;
  if (id + 1 == page_count_) tail_freed_ = true;
}

uint32_t BufferPool::trim_free_tail() {
  if (!backend_ || !tail_freed_ || free_pending_ || free_.empty()) return 0;
  tail_freed_ = false;
  const PageId end = page_count_;
  if (std::find(free_.begin(), free_.end(), end - 1) == free_.end()) return 0;
  // The run of free ids that ends at the store's end is no longer than the free list: mark the
  // free ids in [end - n, end), walk down from the end, drop the run. O(free ids) and no sort
  // (sorting the list at every commit that frees the last page was O(n log n) for a list of a
  // million pages freed in the middle). Without memory for the marks the store keeps its end.
  const size_t n = std::min<size_t>(free_.size(), end - 1);  // (page 0 is never free)
  const PageId lo = end - static_cast<PageId>(n);
  std::vector<uint64_t> marks;
  if (!resize_checked(marks, (n + 63) / 64)) return 0;
  for (PageId id : free_) {
    if (id < lo || id >= end) continue;
    const size_t b = id - lo;
    marks[b >> 6] |= uint64_t{1} << (b & 63);
  }
  PageId cut = end;
  while (cut > lo) {
    const size_t b = cut - 1 - lo;
    if (!((marks[b >> 6] >> (b & 63)) & 1)) break;
    // A page freed by release() has no frame, but one of the free list's own pages read by
    // load_free_list() (the list is kept in free pages) may: it goes unwritten, as in
    // release() (a debug assert here failed on an async store, session 22).
    drop_frame(cut - 1);
    cut--;
  }
  free_.erase(std::remove_if(free_.begin(), free_.end(), [cut](PageId id) { return id >= cut; }), free_.end());
  __atomic_store_n(&page_count_, cut, __ATOMIC_RELAXED);
  return end - cut;
}

Status BufferPool::supply(PageId id, const uint8_t* image) {
  if (!backend_ || !valid(id)) return Status::kInvalidArgument;
  if (table_.find(id) != kNoFrame) return Status::kOk;  // resident: newer than any stored image
  if (!page_intact(image, id, backend_->page_sum()) || !page_well_formed(image)) return Status::kCorrupt;
  // No begin_op: the frames of the operation that faulted stay protected, so
  // its retry finds them and gets at least one page further. So do those of the
  // operation before it: a retried call may be two (an iterator's seek, then its
  // batch), and a page the seek fixed is needed again first (supplying pages for
  // the batch evicted the root, and the root's supply part of a value's chain:
  // a scan over two 20 MB values on a 1 MiB pool took 3584 faults).
  FrameId f = take_frame(2);
  if (f == kNoFrame) return failure_ != Status::kOk ? failure_ : Status::kOutOfMemory;
  memcpy(data_of(f), image, kPageSize);
  install(f, id, false);
  table_.insert(id, f);
  return Status::kOk;
}

Status BufferPool::load_free_list() {
  if (!free_pending_) return Status::kOk;
  std::vector<PageId> ids;
  ids.reserve(pending_free_count_);
  PageId id = pending_free_head_;
  uint64_t guard = 0;
  while (id != kInvalidPageId) {
    if (!valid(id) || ++guard > page_count_) return Status::kCorrupt;
    const uint8_t* pg = page(id);
    if (failure_ != Status::kOk) return failure_;
    Status s = decode_free_list_page(pg, page_count_, &ids, &id);
    if (s != Status::kOk) return s;
  }
  if (ids.size() != pending_free_count_) return Status::kCorrupt;
  free_ = std::move(ids);
  tail_freed_ = true;
  free_pending_ = false;
  return Status::kOk;
}

void BufferPool::begin_writing() {
  for (FrameId i = 0; i < frame_count_; i++) {
    FrameMeta& m = frames_[i];
    if (m.dirty && m.pid != kInvalidPageId) {
      m.dirty = false;
      m.writing = true;
    }
  }
}

void BufferPool::end_writing(bool durable) {
  for (FrameId i = 0; i < frame_count_; i++) {
    FrameMeta& m = frames_[i];
    if (!m.writing) continue;
    m.writing = false;
    if (!durable) m.dirty = true;
  }
}

void BufferPool::shrink_to_target() {
  if (!backend_) return;
  while (chunks_.size() > 1 && frame_count_ - kChunkFrames >= target_frames_) {
    FrameId first = frame_count_ - kChunkFrames;
    for (FrameId f = first; f < frame_count_; f++) {
      const FrameMeta& m = frames_[f];
      if (m.pid != kInvalidPageId && (m.dirty || m.writing || m.epoch == epoch_)) return;
    }
    for (FrameId f = first; f < frame_count_; f++) {
      if (frames_[f].pid == kInvalidPageId) continue;
      table_.erase(frames_[f].pid);
      stats_.evictions++;
    }
    free_frames_.erase(std::remove_if(free_frames_.begin(), free_frames_.end(), [&](FrameId f) { return f >= first; }),
                       free_frames_.end());
    for (uint32_t i = 0; i < kChunkFrames; i++) frames_.pop_back();
    free(chunks_.back());
    chunks_.pop_back();
    frame_data_.resize(first);
    frame_count_ = first;
    if (hand_ >= frame_count_) hand_ = 0;
  }
}

uint32_t BufferPool::dirty_count() const {
  uint32_t n = 0;
  for (FrameId i = 0; i < frame_count_ && backend_; i++) n += frames_[i].dirty && frames_[i].pid != kInvalidPageId;
  return n;
}

}  // namespace adaptree
