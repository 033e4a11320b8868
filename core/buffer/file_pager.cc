#include "core/buffer/file_pager.h"
#include "core/util/checked.h"

#include <algorithm>

#include "core/buffer/log_format.h"
#include "core/buffer/page_trailer.h"

namespace adaptree {

namespace {
constexpr uint32_t kWriteBuffer = 1 << 20;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}
}  // namespace

uint64_t new_salt(uint64_t previous, uint64_t seq) {
  // Distinct from the previous generation's salt (a log is cut back to its
  // header at every reset, so only the last generation's frames can linger).
  uint64_t local;
  return mix(previous + 0x9E3779B97F4A7C15ull + mix(seq) + reinterpret_cast<uintptr_t>(&local)) | 1;
}

PagerStats FilePager::stats() const {
  PagerStats st = stats_;
  s_->size(FileId::kLog, &st.log_bytes);
  s_->size(FileId::kData, &st.data_bytes);
  return st;
}

Status FilePager::reset_log() {
  salt_ = new_salt(salt_, seq_);
  uint8_t h[kLogHeaderSize] = {};
  memcpy(h, kLogMagic, 8);
  store32(h + 8, kFormatVersion);
  store32(h + 12, kPageSize);
  store64(h + 16, salt_);
  store64(h + 24, sb_seq_);
  store32(h + 32, checksum(h, 32));
  Status s = s_->truncate(FileId::kLog, kLogHeaderSize);
  if (s == Status::kOk) s = s_->write(FileId::kLog, 0, h, kLogHeaderSize);
  stats_.writes++;
  log_end_ = buf_start_ = kLogHeaderSize;
  buf_.clear();
  committed_.clear();
  pending_.clear();
  frames_since_commit_ = 0;
  return s;
}

Status FilePager::create_files(uint8_t layout) {
  // No superblock yet: the data file stays empty until the first checkpoint
  // writes page 0 whole, so a file that bears the magic is never shorter
  // than a page (a short one is damaged). Until then the log is the store.
  meta_ = StoreMeta{};
  meta_.layout = layout;
  Status s = s_->truncate(FileId::kData, 0);
  if (s == Status::kOk) s = s_->sync(FileId::kData);
  if (s != Status::kOk) return s;
  sb_seq_ = seq_ = 0;
  sb_slot_ = 1;  // the first checkpoint writes slot 0
  sb_written_ = false;
  s = reset_log();
  if (s == Status::kOk) s = s_->sync(FileId::kLog);
  stats_.syncs += 2;
  return s;
}

Status FilePager::log_checkpoint_seq(bool* valid, uint64_t* seq) {
  *valid = false;
  uint64_t lsize = 0;
  Status s = s_->size(FileId::kLog, &lsize);
  if (s != Status::kOk || lsize < kLogHeaderSize) return s;
  uint8_t h[kLogHeaderSize];
  s = s_->read_exact(FileId::kLog, 0, h, kLogHeaderSize);
  if (s != Status::kOk) return s;
  *valid = memcmp(h, kLogMagic, 8) == 0 && load32(h + 32) == checksum(h, 32) && load32(h + 8) == kFormatVersion &&
           load32(h + 12) == kPageSize;
  *seq = load64(h + 24);
  return Status::kOk;
}

Status FilePager::open(bool create, uint8_t layout, const Progress& progress, StoreMeta* meta,
                       std::vector<PageId>* free_ids) {
  uint64_t dsize = 0;
  if (read_only_) create = false;
  Status s = s_->size(FileId::kData, &dsize);
  if (s != Status::kOk) return s;
  if (dsize > 0 && dsize < kPageSize) {
    // Never written by a store (creation leaves the data file empty, the
    // first checkpoint writes page 0 whole): a truncated store or a foreign
    // file. Fewer than 8 bytes cannot be either: as an empty file.
    alignas(16) uint8_t head[8];
    uint32_t got;
    s = s_->read(FileId::kData, 0, head, 8, &got);
    if (s != Status::kOk) return s;
    if (got >= 8) return Status::kCorrupt;
  }
  int best = -1;
  uint64_t seq[2] = {0, 0};
  StoreMeta m[2];
  if (dsize >= kPageSize) {
    alignas(16) uint8_t page0[kPageSize];
    s = s_->read_exact(FileId::kData, 0, page0, kPageSize);
    stats_.reads++;
    if (s != Status::kOk) return s;
    SlotState st[2] = {decode_superblock(page0, &seq[0], &m[0]), decode_superblock(page0 + kSuperblockSlot, &seq[1], &m[1])};
    for (int i = 0; i < 2; i++)
      if (st[i] == SlotState::kValid && (best < 0 || seq[i] > seq[best])) best = i;
    if (best < 0 && (st[0] == SlotState::kVersion || st[1] == SlotState::kVersion)) return Status::kCorrupt;
  }
  if (best < 0) {
    // No superblock: nothing was checkpointed yet (or its first checkpoint
    // was cut short before page 0 was complete), so the log, whose header
    // then names checkpoint 0, holds every commit since creation. Without
    // one: a new store if the data file is empty, else not a store.
    bool log_ok;
    uint64_t log_sb = 0;
    s = log_checkpoint_seq(&log_ok, &log_sb);
    if (s != Status::kOk) return s;
    if (log_ok && log_sb != 0) return Status::kCorrupt;  // a checkpointed store that lost its superblock
    if (log_ok) {
      meta_ = StoreMeta{};
      meta_.layout = layout;
      sb_seq_ = seq_ = 0;
      sb_slot_ = 1;
      sb_written_ = false;
      s = recover_log(0, progress, &meta_);
      if (s != Status::kOk) return s;
      if (seq_ > 0) {
        *meta = meta_;
        return read_free_list(meta_, free_ids);
      }
    }
    if (dsize >= kPageSize) return Status::kCorrupt;  // foreign file, or both superblocks damaged
    if (!create) return Status::kNotFound;
    s = create_files(layout);
    if (s != Status::kOk) return s;
    *meta = meta_;
    free_ids->clear();
    return Status::kOk;
  }
  sb_written_ = true;
  sb_slot_ = best;
  sb_seq_ = seq_ = seq[best];
  meta_ = m[best];
  s = recover_log(sb_seq_, progress, &meta_);
  if (s != Status::kOk) return s;
  *meta = meta_;
  return read_free_list(meta_, free_ids);
}

bool FilePager::later_commits_intact(uint64_t from, uint64_t size, uint64_t after_seq) {
  // Frames start at multiples of 32 (header 64, frames 4128 and 64 bytes).
  unsigned found = 0;
  uint8_t c[kCommitFrameSize];
  for (uint64_t off = (from + 32) & ~uint64_t{31}; off + kCommitFrameSize <= size; off += 32) {
    uint32_t got;
    if (s_->read(FileId::kLog, off, c, kCommitFrameSize, &got) != Status::kOk || got < kCommitFrameSize) break;
    if (load32(c) != kFrameCommit || load64(c + 8) != salt_ || load32(c + 56) != checksum(c, 56)) continue;
    if (load64(c + 16) > after_seq && ++found >= 2) return true;
  }
  return false;
}

Status FilePager::recover_log(uint64_t sb_seq, const Progress& progress, StoreMeta* meta) {
  uint64_t lsize = 0;
  Status s = s_->size(FileId::kLog, &lsize);
  if (s != Status::kOk) return s;
  uint8_t h[kLogHeaderSize];
  bool header_ok = false;
  if (lsize >= kLogHeaderSize) {
    s = s_->read_exact(FileId::kLog, 0, h, kLogHeaderSize);
    if (s != Status::kOk) return s;
    header_ok = memcmp(h, kLogMagic, 8) == 0 && load32(h + 32) == checksum(h, 32) &&
                load32(h + 8) == kFormatVersion && load32(h + 12) == kPageSize;
  }
  // Without a valid header the log holds nothing committed: a checkpoint
  // writes the superblock before it starts a new log.
  if (!header_ok) {
    if (!read_only_) return reset_log();
    log_end_ = buf_start_ = lsize;  // a reader never appends
    return Status::kOk;
  }
  salt_ = load64(h + 16);
  uint64_t off = kLogHeaderSize, end = kLogHeaderSize;
  std::vector<std::pair<PageId, uint64_t>> batch;
  std::vector<uint8_t> frame;
  if (!resize_checked(frame, kPageFrameSize)) return Status::kOutOfMemory;
  uint64_t last_progress = 0;
  for (;;) {
    if (progress && off - last_progress >= (8u << 20)) {
      progress(off, lsize);
      last_progress = off;
    }
    if (off + kCommitFrameSize > lsize) break;
    uint32_t got;
    s = s_->read(FileId::kLog, off, frame.data(), kPageFrameHeader, &got);
    stats_.reads++;
    if (s != Status::kOk) return s;
    if (got < kPageFrameHeader || load64(frame.data() + 8) != salt_) break;
    uint32_t kind = load32(frame.data());
    bool ok = false;
    if (kind == kFramePage && off + kPageFrameSize <= lsize) {
      s = s_->read_exact(FileId::kLog, off + kPageFrameHeader, frame.data() + kPageFrameHeader, kPageSize);
      if (s != Status::kOk) return s;
      uint32_t crc = checksum(frame.data(), 24);
      crc = checksum_extend(crc, frame.data() + kPageFrameHeader, kPageSize);
      if (crc == load32(frame.data() + 24)) {
        ok = true;
        if (!push_checked(batch, std::pair<PageId, uint64_t>(load32(frame.data() + 4), off))) return Status::kOutOfMemory;
        off += kPageFrameSize;
      }
    } else if (kind == kFrameCommit) {
      s = s_->read_exact(FileId::kLog, off, frame.data(), kCommitFrameSize);
      if (s != Status::kOk) return s;
      const uint8_t* c = frame.data();
      if (load32(c + 56) == checksum(c, 56) && load32(c + 4) == batch.size()) {
        ok = true;
        uint64_t seq = load64(c + 16);
        if (seq > sb_seq) {
          if (seq != seq_ + 1) return Status::kCorrupt;  // a commit is missing
          if (!committed_.reserve(committed_.size() + batch.size())) return Status::kOutOfMemory;
          for (auto& e : batch) committed_.put(e.first, e.second);
          meta->decode(c + 24);
          seq_ = seq;
        }
        batch.clear();
        off += kCommitFrameSize;
        end = off;
      }
    }
    if (!ok) {
      if (later_commits_intact(off, lsize, seq_)) return Status::kCorrupt;
      break;
    }
  }
  // Cut the torn or uncommitted tail; new frames go right after the last commit.
  if (end < lsize && !read_only_) {
    s = s_->truncate(FileId::kLog, end);
    if (s != Status::kOk) return s;
  }
  log_end_ = buf_start_ = end;
  if (progress) progress(lsize, lsize);
  return Status::kOk;
}

Status FilePager::read_free_list(const StoreMeta& m, std::vector<PageId>* out) {
  out->clear();
  alignas(16) uint8_t pg[kPageSize];
  PageId id = m.free_head;
  uint64_t guard = 0;
  while (id != kInvalidPageId) {
    if (id >= m.page_count || ++guard > m.page_count) return Status::kCorrupt;
    Status s = load(id, pg);
    if (s == Status::kOk) s = decode_free_list_page(pg, m.page_count, out, &id);
    if (s != Status::kOk) return s;
  }
  if (out->size() != m.free_count) return Status::kCorrupt;
  return Status::kOk;
}

Status FilePager::read_log_image(uint64_t off, PageId id, uint8_t* frame) {
  alignas(16) uint8_t h[kPageFrameHeader];
  Status s = s_->read_exact(FileId::kLog, off, h, kPageFrameHeader);
  if (s == Status::kOk) s = s_->read_exact(FileId::kLog, off + kPageFrameHeader, frame, kPageSize);
  stats_.reads++;
  if (s != Status::kOk) return s;
  uint32_t crc = checksum_extend(checksum(h, 24), frame, kPageSize);
  if (load32(h) != kFramePage || load32(h + 4) != id || load64(h + 8) != salt_ || crc != load32(h + 24))
    return Status::kCorrupt;
  return page_intact(frame, id) ? Status::kOk : Status::kCorrupt;
}

Status FilePager::load(PageId id, uint8_t* frame) {
  // Frames still in the write buffer are flushed first: reads go to the file.
  if (!buf_.empty()) {
    Status s = flush_buffer();
    if (s != Status::kOk) return s;
  }
  if (const uint64_t* at = pending_.find(id)) return read_log_image(*at, id, frame);
  if (const uint64_t* at = committed_.find(id)) return read_log_image(*at, id, frame);
  uint32_t got;
  Status s = s_->read(FileId::kData, uint64_t{id} * kPageSize, frame, kPageSize, &got);
  stats_.reads++;
  if (s != Status::kOk) return s;
  if (got != kPageSize || !page_intact(frame, id)) return Status::kCorrupt;
  return Status::kOk;
}

void FilePager::page_frame_header(uint8_t* h, PageId id, const uint8_t* image) const {
  memset(h, 0, kPageFrameHeader);
  store32(h, kFramePage);
  store32(h + 4, id);
  store64(h + 8, salt_);
  store64(h + 16, seq_ + 1);
  store32(h + 24, checksum_extend(checksum(h, 24), image, kPageSize));
}

Status FilePager::flush_buffer() {
  if (buf_.empty()) return Status::kOk;
  Status s = s_->write(FileId::kLog, buf_start_, buf_.data(), static_cast<uint32_t>(buf_.size()));
  stats_.writes++;
  if (s != Status::kOk) return s;
  buf_start_ += buf_.size();
  buf_.clear();
  return Status::kOk;
}

Status FilePager::append(const uint8_t* p, uint32_t n) {
  if (!reserve_checked(buf_, buf_.size() + n)) {
    // No memory for the write buffer: write through it (flush what it holds, then p).
    Status s = flush_buffer();
    if (s != Status::kOk) return s;
    s = s_->write(FileId::kLog, buf_start_, p, n);
    stats_.writes++;
    if (s != Status::kOk) return s;
    buf_start_ += n;
    log_end_ += n;
    return Status::kOk;
  }
  buf_.insert(buf_.end(), p, p + n);
  log_end_ += n;
  return buf_.size() >= kWriteBuffer ? flush_buffer() : Status::kOk;
}

Status FilePager::spill(PageId id, uint8_t* frame) {
  if (read_only_) {
    // Only reads changed it (a sort, a conversion): drop the image; cursors re-seek.
    if (discard_version_) ++*discard_version_;
    return Status::kOk;
  }
  seal_page(frame, id);
  uint8_t h[kPageFrameHeader];
  page_frame_header(h, id, frame);
  uint64_t at = log_end_;
  if (!pending_.reserve(pending_.size() + 1)) return Status::kOutOfMemory;  // before anything is written
  Status s = append(h, kPageFrameHeader);
  if (s == Status::kOk) s = append(frame, kPageSize);
  if (s == Status::kOk) s = flush_buffer();
  if (s != Status::kOk) return s;
  pending_.put(id, at);  // reserved above: cannot fail
  frames_since_commit_++;
  return Status::kOk;
}

Status FilePager::commit(BufferPool& pool, StoreMeta meta) {
  if (read_only_) return Status::kReadOnly;
  Status s = Status::kOk;
  std::vector<std::pair<PageId, uint64_t>> written;
  // Every allocation of the commit happens here, before anything is written, so that
  // a commit without memory fails with kOutOfMemory having changed nothing, and one
  // that became durable can always record what it wrote.
  {
    size_t pages = size_t{pool.dirty_count()} + (pool.free_ids().size() + kFreeListCapacity - 1) / kFreeListCapacity;
    if (!reserve_checked(written, pages) || !committed_.reserve(committed_.size() + pending_.size() + pages))
      return Status::kOutOfMemory;
  }
  auto put_page = [&](PageId id, uint8_t* image) {
    if (s != Status::kOk) return;
    seal_page(image, id);
    uint8_t h[kPageFrameHeader];
    page_frame_header(h, id, image);
    written.emplace_back(id, log_end_);  // capacity reserved above
    s = append(h, kPageFrameHeader);
    if (s == Status::kOk) s = append(image, kPageSize);
    frames_since_commit_++;
  };
  pool.for_each_dirty(put_page);
  // The free-page list, rewritten when it changed: chain pages are free pages
  // themselves (the last ones of the list), and list themselves.
  const std::vector<PageId>& free_ids = pool.free_ids();
  if (pool.free_list_changed() || meta_.free_count != free_ids.size()) {
    PageId next = encode_free_list(free_ids, put_page);
    meta.free_head = next;
    meta.free_count = static_cast<uint32_t>(free_ids.size());
  } else {
    meta.free_head = meta_.free_head;
    meta.free_count = meta_.free_count;
  }
  meta.page_count = pool.page_count();
  if (s != Status::kOk) return s;
  uint8_t c[kCommitFrameSize] = {};
  store32(c, kFrameCommit);
  store32(c + 4, frames_since_commit_);
  store64(c + 8, salt_);
  store64(c + 16, seq_ + 1);
  meta.encode(c + 24);
  store32(c + 56, checksum(c, 56));
  s = append(c, kCommitFrameSize);
  if (s == Status::kOk) s = flush_buffer();
  if (s == Status::kOk) s = s_->sync(FileId::kLog);
  stats_.syncs++;
  if (s != Status::kOk) return s;
  // Durable.
  seq_++;
  stats_.commits++;
  meta_ = meta;
  pending_.for_each([&](PageId id, uint64_t off) { committed_.put(id, off); });  // reserved above
  for (auto& e : written) committed_.put(e.first, e.second);
  pending_.clear();
  frames_since_commit_ = 0;
  pool.mark_all_clean();
  pool.set_free_list_unchanged();
  if (log_end_ >= checkpoint_bytes_) {
    // The commit is durable; a checkpoint that finds no memory is simply left for later.
    Status c = checkpoint();
    return c == Status::kOutOfMemory ? Status::kOk : c;
  }
  return Status::kOk;
}

Status FilePager::checkpoint() {
  if (read_only_ || (committed_.empty() && sb_seq_ == seq_)) return Status::kOk;
  std::vector<std::pair<PageId, uint64_t>> pages;
  if (!reserve_checked(pages, committed_.size())) return Status::kOutOfMemory;
  committed_.for_each([&](PageId id, uint64_t off) { pages.emplace_back(id, off); });
  std::sort(pages.begin(), pages.end());
  alignas(16) uint8_t img[kPageSize];
  for (auto& e : pages) {
    Status s = read_log_image(e.second, e.first, img);
    if (s == Status::kOk) s = s_->write(FileId::kData, uint64_t{e.first} * kPageSize, img, kPageSize);
    stats_.writes++;
    if (s != Status::kOk) return s;
  }
  Status s = s_->sync(FileId::kData);
  stats_.syncs++;
  if (s != Status::kOk) return s;
  int target = 1 - sb_slot_;
  if (!sb_written_) {
    // The first superblock: page 0 whole (the data file was empty).
    alignas(16) uint8_t page0[kPageSize] = {};
    encode_superblock(page0 + (target == 0 ? 0 : kSuperblockSlot), seq_, meta_);
    s = s_->write(FileId::kData, 0, page0, kPageSize);
  } else {
    uint8_t slot[kSuperblockSize];
    encode_superblock(slot, seq_, meta_);
    s = s_->write(FileId::kData, target == 0 ? 0 : kSuperblockSlot, slot, kSuperblockSize);
  }
  if (s == Status::kOk) s = s_->sync(FileId::kData);
  stats_.syncs++;
  if (s != Status::kOk) return s;
  sb_slot_ = target;
  sb_seq_ = seq_;
  sb_written_ = true;
  stats_.checkpoints++;
  // The data file now holds everything: a new log generation (its header
  // reaches the disk with the next commit's flush; until then the old header
  // or old-salt frames are harmless, their commits are all <= sb_seq_).
  return reset_log();
}

}  // namespace adaptree
