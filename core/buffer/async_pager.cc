#include "core/buffer/async_pager.h"

#include <cassert>
#include <cstring>

#include "core/buffer/page_delta.h"
#include "core/buffer/page_trailer.h"
#include "core/util/checked.h"

namespace adaptree {

Status AsyncPager::open(const uint8_t* superblock, uint8_t layout, StoreMeta* meta, PageSum new_format) {
  if (!superblock) {
    // A new store: nothing is stored until its first commit (page 0 comes
    // with it, so a store without page 0 has never committed).
    memset(page0_, 0, kPageSize);
    sum_ = new_format;  // new stores: format version 2 unless asked otherwise
    meta_ = StoreMeta{};
    meta_.layout = layout;
    seq_ = 0;
    *meta = meta_;
    return Status::kOk;
  }
  uint64_t seq[2] = {0, 0};
  uint32_t version[2] = {0, 0};
  StoreMeta m[2];
  SlotState st[2] = {decode_superblock(superblock, &seq[0], &m[0], &version[0]),
                     decode_superblock(superblock + kSuperblockSlot, &seq[1], &m[1], &version[1])};
  int best = -1;
  for (int i = 0; i < 2; i++)
    if (st[i] == SlotState::kValid && (best < 0 || seq[i] > seq[best])) best = i;
  if (best < 0) return Status::kCorrupt;  // not a store, or both slots damaged
  memcpy(page0_, superblock, kPageSize);
  sum_ = static_cast<PageSum>(version[best]);
  seq_ = seq[best];
  meta_ = m[best];
  *meta = meta_;
  return Status::kOk;
}

Status AsyncPager::load(PageId, uint8_t*) { return Status::kNeedPage; }

Status AsyncPager::spill(PageId, uint8_t*) {
  if (!read_only_) return Status::kNeedPage;  // no-steal
  if (discard_version_) ++*discard_version_;  // a reader's change: dropped
  return Status::kOk;
}

void AsyncPager::will_change(PageId id, const uint8_t* frame, bool lossy) {
  if (!deltas_ || read_only_) return;
  bases_.keep_stored(id, frame, lossy, sum_);
}

Status AsyncPager::commit_begin(BufferPool& pool, StoreMeta meta, std::vector<uint8_t>* out, uint32_t* count) {
  if (read_only_) return Status::kReadOnly;
  if (committing_) return Status::kInvalidArgument;
  out->clear();
  // Room for every image first (page 0, the dirty pages, the free list's chain as it is now:
  // trimming only shortens it): out of memory is kOutOfMemory before anything changes. The
  // resizes below stay within it (one trapped in operator new at the memory budget: every
  // store and map on the instance poisoned, session 22).
  const size_t most = 1 + size_t{pool.dirty_count()} + (pool.free_ids().size() + kFreeListCapacity - 1) / kFreeListCapacity;
  if (!reserve_checked(*out, most * (4 + kPageSize))) return Status::kOutOfMemory;
  out->resize(4 + kPageSize);  // page 0 goes first, filled in below
  uint32_t n = 1;
  // The delta entries (set_log_deltas): page 0 has none. Memory short for them: no entries
  // at all (the host diffs the pages itself), never a failed commit.
  constexpr uint32_t kNoDelta = 0xFFFFFFFF, kMaxDelta = 2048;
  bool entries = deltas_ && reserve_checked(delta_out_, most * 12);
  delta_out_.clear();
  auto entry = [&](PageId id, const uint8_t* image) {
    const uint8_t* base = image ? bases_.find(id) : nullptr;
    size_t at = delta_out_.size();
    uint32_t size = kNoDelta;
    if (base && resize_checked(delta_out_, at + 12 + kMaxDelta)) {
      size = encode_delta(base, image, delta_out_.data() + at + 12, kMaxDelta, true, copies_);
      memcpy(delta_out_.data() + at + 4, base + kNodeSize, 8);
    }
    if (size == kNoDelta && !resize_checked(delta_out_, at + 4)) return false;
    store32(delta_out_.data() + at, size);
    delta_out_.resize(at + (size == kNoDelta ? 4 : 12 + size));
    return true;
  };
  if (entries) entries = entry(0, nullptr);  // page 0
  auto put = [&](PageId id, uint8_t* image) {
    seal_page(image, id, sum_);
    size_t at = out->size();
    assert(at + 4 + kPageSize <= out->capacity());
    out->resize(at + 4 + kPageSize);
    store32(out->data() + at, id);
    memcpy(out->data() + at + 4, image, kPageSize);
    n++;
    if (entries) entries = entry(id, image);
  };
  // Free pages at the end leave the store (as FilePager::commit does): the host drops the
  // records past page_count at its next checkpoint (indexeddb).
  stats_.trimmed_pages += pool.trim_free_tail();
  pool.for_each_dirty(put);
  // The free-page list as the file pager writes it (superblock.h). Not read
  // yet (no write since open): unchanged.
  const std::vector<PageId>& free_ids = pool.free_ids();
  pending_free_written_ = false;
  if (!pool.free_list_pending() && (pool.free_list_changed() || meta_.free_count != free_ids.size())) {
    meta.free_head = encode_free_list(free_ids, put);
    meta.free_count = static_cast<uint32_t>(free_ids.size());
    pending_free_written_ = true;
    pool.set_free_list_unchanged();  // as the frames: a change from now on is the next commit's
  } else {
    meta.free_head = meta_.free_head;
    meta.free_count = meta_.free_count;
  }
  meta.page_count = pool.page_count();
  // Page 0: both slots get the new superblock. Unlike a checkpoint on files
  // (older slot only: a torn write there leaves the other, and the log
  // replays the rest) the host writes page 0 whole with the pages it names,
  // which overwrite the previous commit's pages in place: falling back to a
  // previous superblock (one slot damaged) would mix two commits.
  memcpy(pending_page0_, page0_, kPageSize);
  encode_superblock(pending_page0_, seq_ + 1, meta, static_cast<uint32_t>(sum_));
  encode_superblock(pending_page0_ + kSuperblockSlot, seq_ + 1, meta, static_cast<uint32_t>(sum_));
  store32(out->data(), 0);
  memcpy(out->data() + 4, pending_page0_, kPageSize);
  if (entries && reserve_checked(*out, out->size() + delta_out_.size()))
    out->insert(out->end(), delta_out_.begin(), delta_out_.end());
  pending_meta_ = meta;
  pool.begin_writing();
  committing_ = true;
  *count = n;
  stats_.writes += n;
  return Status::kOk;
}

Status AsyncPager::commit_end(BufferPool& pool, Status host) {
  if (!committing_) return Status::kInvalidArgument;
  committing_ = false;
  if (host != Status::kOk) {
    pool.end_writing(false);
    if (pending_free_written_) pool.set_free_list_changed();
    return is_error(host) ? host : Status::kIoError;
  }
  pool.end_writing(true);
  pool.shrink_to_target();  // no-steal growth is over: its pages are clean now
  bases_.clear();           // (a failed commit keeps them: they are still the committed images)
  memcpy(page0_, pending_page0_, kPageSize);
  seq_++;
  meta_ = pending_meta_;
  stats_.commits++;
  stats_.syncs++;
  return Status::kOk;
}

}  // namespace adaptree
