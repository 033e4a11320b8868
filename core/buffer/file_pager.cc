#include "core/buffer/file_pager.h"
#include "core/layouts/validate.h"
#include "core/util/checked.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#ifndef __wasm__
#include <chrono>
#endif
#include <cstdlib>

#include "core/buffer/log_format.h"
#include "core/buffer/page_delta.h"
#include "core/buffer/page_trailer.h"

namespace adaptree {

namespace {
constexpr uint32_t kWriteBuffer = 1 << 20;

uint32_t round_frame(uint32_t n) { return (n + kFrameAlign - 1) & ~(kFrameAlign - 1); }

// A header that is ours (magic and checksum): *ok, or kCorrupt for a log
// format this build does not know (never read as something else, never reset).
Status check_log_header(const uint8_t* h, bool* ok, uint32_t* version) {
  *ok = memcmp(h, kLogMagic, 8) == 0 && load32(h + 32) == checksum(h, 32);
  if (!*ok) return Status::kOk;
  *version = load32(h + 8);
  if ((*version != kLogVersionImages && *version != kLogVersionDeltas && *version != kLogVersionHashed) ||
      load32(h + 12) != kPageSize)
    return Status::kCorrupt;
  return Status::kOk;
}

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
  // header at every reset, so only the last generation's frames can linger), and
  // from other stores' of this process: a stack address alone gave every store of
  // a process the same salts (of a wasm instance too, which has no address
  // randomization, nor a clock: the module imports nothing).
  static std::atomic<uint64_t> stores{0};
  uint64_t local;
  uint64_t when = 0;
#ifndef __wasm__
  when = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
#endif
  return mix(previous + 0x9E3779B97F4A7C15ull + mix(seq) + reinterpret_cast<uintptr_t>(&local) +
             mix(when + mix(stores.fetch_add(1, std::memory_order_relaxed)))) | 1;
}

PagerStats FilePager::stats() const {
  PagerStats st = stats_;
  s_->size(FileId::kLog, &st.log_bytes);
  s_->size(FileId::kData, &st.data_bytes);
  return st;
}

Status FilePager::reset_log(bool keep_file) {
  salt_ = new_salt(salt_, seq_);
  uint8_t h[kLogHeaderSize] = {};
  memcpy(h, kLogMagic, 8);
  log_version_ = sum_ == PageSum::kHash ? kLogVersionHashed : deltas_ ? kLogVersionDeltas : kLogVersionImages;
  store32(h + 8, log_version_);
  store32(h + 12, kPageSize);
  store64(h + 16, salt_);
  store64(h + 24, sb_seq_);
  store32(h + 32, checksum(h, 32));
  // Kept: the old generation's frames stay behind the new one's until overwritten; their salt
  // ends recovery's walk (and a torn tail of the new one is cut at the next open).
  Status s = keep_file ? Status::kOk : s_->truncate(FileId::kLog, kLogHeaderSize);
  if (s == Status::kOk) s = s_->write(FileId::kLog, 0, h, kLogHeaderSize);
  log_tail_ = keep_file;
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
  sum_ = new_sum_;
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

Status FilePager::log_checkpoint_seq(bool* valid, uint64_t* seq, uint32_t* version) {
  *valid = false;
  uint64_t lsize = 0;
  Status s = s_->size(FileId::kLog, &lsize);
  if (s != Status::kOk || lsize < kLogHeaderSize) return s;
  uint8_t h[kLogHeaderSize];
  s = s_->read_exact(FileId::kLog, 0, h, kLogHeaderSize);
  if (s != Status::kOk) return s;
  s = check_log_header(h, valid, version);
  *seq = load64(h + 24);
  return s;
}

Status FilePager::open(bool create, uint8_t layout, const Progress& progress, StoreMeta* meta,
                       std::vector<PageId>* free_ids) {
  uint64_t dsize = 0;
  if (read_only_) create = false;
  Status s = s_->size(FileId::kData, &dsize);
  if (s != Status::kOk) return s;
  // Never written by a store (creation leaves the data file empty, the first
  // checkpoint writes page 0 whole, a cut leaves whole pages): a truncated store
  // or a foreign file, of any length (a 7-byte file of the user's was taken for
  // an empty one and overwritten).
  if (dsize > 0 && dsize < kPageSize) return Status::kCorrupt;
  int best = -1;
  uint64_t seq[2] = {0, 0};
  uint32_t version[2] = {0, 0};
  StoreMeta m[2];
  if (dsize >= kPageSize) {
    alignas(16) uint8_t page0[kPageSize];
    s = s_->read_exact(FileId::kData, 0, page0, kPageSize);
    stats_.reads++;
    if (s != Status::kOk) return s;
    SlotState st[2] = {decode_superblock(page0, &seq[0], &m[0], &version[0]),
                       decode_superblock(page0 + kSuperblockSlot, &seq[1], &m[1], &version[1])};
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
    uint32_t log_version = 0;
    s = log_checkpoint_seq(&log_ok, &log_sb, &log_version);
    if (s != Status::kOk) return s;
    if (log_ok && log_sb != 0) return Status::kCorrupt;  // a checkpointed store that lost its superblock
    if (log_ok) {
      // The log's version says the store's format (its pages' checksum).
      sum_ = log_version == kLogVersionHashed ? PageSum::kHash : PageSum::kCrc32c;
      meta_ = StoreMeta{};
      meta_.layout = layout;
      sb_seq_ = seq_ = 0;
      sb_slot_ = 1;
      sb_written_ = false;
      s = recover_log(0, progress, &meta_);
      if (s != Status::kOk) return s;
      if (seq_ == 0 && damaged_at_ != 0) return Status::kCorrupt;  // (salvage: nothing before it)
      if (seq_ > 0) {
        *meta = meta_;
        return read_free_list(meta_, free_ids);
      }
    }
    if (dsize >= kPageSize) return Status::kCorrupt;  // foreign file, or both superblocks damaged
    // An empty data file and a log whose header is damaged but holds commits: the store,
    // damaged (it was taken for a new one and reset: every commit lost). A log that is no
    // header of ours, even a torn one: another file of that name (a new store 'app' beside a
    // user's 'app-log' wrote its header over the user's 800 KB: a new-user probe, session 25).
    if (!log_ok) {
      uint64_t lsize = 0;
      s = s_->size(FileId::kLog, &lsize);
      if (s != Status::kOk) return s;
      if (later_commits_intact(kLogHeaderSize - 32, lsize, 0, true) || log_is_a_data_file(lsize)) return Status::kCorrupt;
      bool ours = false;
      s = log_may_be_a_torn_header(lsize, &ours);
      if (s != Status::kOk) return s;
      if (!ours) return Status::kCorrupt;
    }
    if (!create) return Status::kNotFound;
    s = create_files(layout);
    if (s != Status::kOk) return s;
    *meta = meta_;
    free_ids->clear();
    return Status::kOk;
  }
  sb_written_ = true;
  sb_slot_ = best;
  sum_ = static_cast<PageSum>(version[best]);
  sb_seq_ = seq_ = seq[best];
  meta_ = m[best];
  s = recover_log(sb_seq_, progress, &meta_);
  if (s != Status::kOk) return s;
  *meta = meta_;
  return read_free_list(meta_, free_ids);
}

Status FilePager::log_may_be_a_torn_header(uint64_t lsize, bool* ours) {
  // What a crash can leave of a header we write (log_format.h): creation writes it into a new,
  // empty log (cut to kLogHeaderSize, then written) and syncs it before any frame; a
  // checkpoint writes its new header over the old one, whose magic is the same. So our header,
  // torn, starts with the whole magic, or is a file of at most kLogHeaderSize bytes holding a
  // prefix of the magic and then zeros (the write did not reach past it). Nothing else is
  // ours to reset.
  *ours = true;
  if (lsize == 0) return Status::kOk;
  uint8_t h[kLogHeaderSize];
  const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(lsize, kLogHeaderSize));
  Status s = s_->read_exact(FileId::kLog, 0, h, n);
  stats_.reads++;
  if (s != Status::kOk) return s;
  uint32_t magic = 0;
  while (magic < n && magic < 8 && h[magic] == static_cast<uint8_t>(kLogMagic[magic])) magic++;
  if (magic == 8) return Status::kOk;
  if (lsize > kLogHeaderSize) {
    *ours = false;
    return Status::kOk;
  }
  for (uint32_t i = magic; i < n; i++) {
    if (h[i] != 0) {
      *ours = false;
      break;
    }
  }
  return Status::kOk;
}

bool FilePager::log_is_a_data_file(uint64_t lsize) {
  // A log whose header is not a log's, holding a store's superblock: another store's data file
  // (stores named 'a' and 'a-log' side by side: the backends refuse that pair when they see
  // a-log's own log, and this is for when they cannot). Not to be reset as a new log.
  if (lsize < kPageSize) return false;
  alignas(16) uint8_t page0[kPageSize];
  if (s_->read_exact(FileId::kLog, 0, page0, kPageSize) != Status::kOk) return false;
  uint64_t q;
  StoreMeta m;
  uint32_t v;
  return decode_superblock(page0, &q, &m, &v) == SlotState::kValid ||
         decode_superblock(page0 + kSuperblockSlot, &q, &m, &v) == SlotState::kValid;
}

bool FilePager::later_commits_intact(uint64_t from, uint64_t size, uint64_t after_seq, bool any_salt) {
  // Frames start at multiples of 32 (header 64, frames 4128 and 64 bytes). Read in chunks: the
  // rest of a log kept across checkpoints can be tens of MiB of an older generation.
  constexpr uint32_t kChunk = 64 << 10;
  std::vector<uint8_t> buf;
  if (!resize_checked(buf, kChunk + kCommitFrameSize)) return false;
  unsigned found = 0;
  for (uint64_t at = (from + 32) & ~uint64_t{31}; at + kCommitFrameSize <= size; at += kChunk) {
    const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(kChunk + kCommitFrameSize, size - at));
    uint32_t got;
    if (s_->read(FileId::kLog, at, buf.data(), want, &got) != Status::kOk) break;
    for (uint32_t i = 0; i + kCommitFrameSize <= got && i < kChunk; i += 32) {
      const uint8_t* c = buf.data() + i;
      if (load32(c) != kFrameCommit || (!any_salt && load64(c + 8) != salt_) || load32(c + 56) != checksum(c, 56)) continue;
      // Commit after_seq + 2 is only written once after_seq + 1 is durable: the
      // damaged frame before it is not the torn tail of a commit in flight.
      uint64_t seq = load64(c + 16);
      if (any_salt) {
        if (seq > after_seq) return true;
        continue;
      }
      if (seq >= after_seq + 2 || (seq > after_seq && ++found >= 2)) return true;
    }
    if (got < want) break;
  }
  return false;
}

bool FilePager::damaged(uint64_t off) {
  damaged_at_ = off;
  return salvage_ && read_only_;
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
    uint32_t version = 0;
    s = check_log_header(h, &header_ok, &version);
    if (s != Status::kOk) return s;
    // A log of another format than the data file's is not this store's.
    if (header_ok && (version == kLogVersionHashed) != (sum_ == PageSum::kHash)) return Status::kCorrupt;
    if (header_ok) log_version_ = version;
  }
  // Without a valid header the log holds nothing committed: a checkpoint
  // writes the superblock before it starts a new log, and the header is only
  // written then (a torn write of it leaves the older generation's frames,
  // whose commits the superblock covers). An intact commit past the
  // superblock's means the header was damaged later: not a log to reset
  // (session 23: one flipped byte of it dropped every commit since the last
  // checkpoint, silently).
  if (!header_ok) {
    if (later_commits_intact(kLogHeaderSize - 32, lsize, sb_seq, true)) return Status::kCorrupt;
    if (log_is_a_data_file(lsize)) return Status::kCorrupt;
    // Another file where the log should be (the store's log replaced by a user's file of that
    // name): not ours to reset (it was, silently).
    bool ours = false;
    s = log_may_be_a_torn_header(lsize, &ours);
    if (s != Status::kOk) return s;
    if (!ours) return Status::kCorrupt;
    if (!read_only_) return reset_log();
    log_end_ = buf_start_ = lsize;  // a reader never appends
    return Status::kOk;
  }
  salt_ = load64(h + 16);
  const bool v2 = log_deltas();
  uint64_t off = kLogHeaderSize, end = kLogHeaderSize;
  std::vector<std::pair<PageId, LogRef>> batch;
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
    if (got < kPageFrameHeader) break;
    if (load64(frame.data() + 8) != salt_) {
      // The end of this generation, or a frame whose salt a flipped bit changed.
      if (later_commits_intact(off, lsize, seq_) && !damaged(off)) return Status::kCorrupt;
      break;
    }
    uint32_t kind = load32(frame.data());
    bool ok = false;
    if (kind == kFramePage && off + kPageFrameSize <= lsize) {
      s = s_->read_exact(FileId::kLog, off + kPageFrameHeader, frame.data() + kPageFrameHeader, kPageSize);
      if (s != Status::kOk) return s;
      const uint8_t* image = frame.data() + kPageFrameHeader;
      if (image_frame_sum(frame.data(), image) == load32(frame.data() + 24) &&
          (sum_ == PageSum::kCrc32c || page_intact(image, load32(frame.data() + 4), sum_))) {
        ok = true;
        LogRef r;
        r.off = off;
        r.size = kPageFrameSize;
        if (!push_checked(batch, std::pair<PageId, LogRef>(load32(frame.data() + 4), r))) return Status::kOutOfMemory;
        off += kPageFrameSize;
      }
    } else if (kind == kFrameDelta && v2 && off + kDeltaFrameHeader <= lsize) {
      uint8_t* d = frame.data();
      s = s_->read_exact(FileId::kLog, off + kPageFrameHeader, d + kPageFrameHeader, kDeltaFrameHeader - kPageFrameHeader);
      if (s != Status::kOk) return s;
      uint32_t n = load32(d + 44), depth = load16(d + 48);
      uint32_t size = kDeltaFrameHeader + n <= kPageSize ? round_frame(kDeltaFrameHeader + n) : 0;
      if (size != 0 && off + size <= lsize && depth >= 1 && depth <= kMaxDeltaChain && load64(d + 24) < off) {
        s = s_->read_exact(FileId::kLog, off + kDeltaFrameHeader, d + kDeltaFrameHeader, n);
        if (s != Status::kOk) return s;
        if (delta_frame_sum(d, n) == load32(d + 56)) {
          ok = true;
          LogRef r;
          r.off = off;
          r.size = size;
          r.depth = static_cast<uint16_t>(depth);
          r.data_root = d[50] & 1;
          r.chain = load32(d + 52);
          if (!push_checked(batch, std::pair<PageId, LogRef>(load32(d + 4), r))) return Status::kOutOfMemory;
          off += size;
        }
      }
    } else if (kind == kFrameCommit || (kind == kFrameCheckpoint && v2)) {
      s = s_->read_exact(FileId::kLog, off, frame.data(), kCommitFrameSize);
      if (s != Status::kOk) return s;
      const uint8_t* c = frame.data();
      if (load32(c + 56) == checksum(c, 56) && load32(c + 4) == batch.size()) {
        ok = true;
        uint64_t seq = load64(c + 16);
        if (seq > sb_seq) {
          // A commit follows the previous one; a checkpoint's images restate the newest.
          if (seq != (kind == kFrameCommit ? seq_ + 1 : seq_)) {
            if (damaged(off)) break;
            return Status::kCorrupt;
          }
          if (!committed_.reserve(committed_.size() + batch.size())) return Status::kOutOfMemory;
          for (auto& e : batch) committed_.put(e.first, e.second);
          if (kind == kFrameCommit) meta->decode(c + 24);
          seq_ = seq;
        }
        batch.clear();
        off += kCommitFrameSize;
        end = off;
      }
    }
    if (!ok) {
      if (later_commits_intact(off, lsize, seq_) && !damaged(off)) return Status::kCorrupt;
      break;
    }
  }
  // Cut the torn or uncommitted tail; new frames go right after the last commit.
  if (end < lsize && !read_only_) {
    s = s_->truncate(FileId::kLog, end);
    if (s != Status::kOk) return s;
  }
  log_tail_ = false;
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
  // Header and image in one read (a cold page from the log took two storage calls).
  if (frame_buf_.size() < kPageFrameSize && !resize_checked(frame_buf_, kPageFrameSize)) return Status::kOutOfMemory;
  const uint8_t* h = frame_buf_.data();
  Status s = s_->read_exact(FileId::kLog, off, frame_buf_.data(), kPageFrameSize);
  stats_.reads++;
  if (s != Status::kOk) return s;
  memcpy(frame, h + kPageFrameHeader, kPageSize);
  // One pass over the page: its own checksum (bytes up to its trailer's); version 1 extends
  // that CRC by the trailer's 4 bytes to the whole page's and combines it with the header's.
  const uint32_t own = adaptree::page_sum(frame, sum_);
  const uint32_t crc = sum_ == PageSum::kHash
                           ? image_frame_sum(h, frame)
                           : checksum_combine(checksum(h, 24), checksum_extend(own, frame + kNodeSize + 4, 4), kPageSize);
  if (load32(h) != kFramePage || load32(h + 4) != id || load64(h + 8) != salt_ || crc != load32(h + 24))
    return Status::kCorrupt;
  return load32(frame + kNodeSize) == id && load32(frame + kNodeSize + 4) == own ? Status::kOk : Status::kCorrupt;
}

Status FilePager::read_data_page(PageId id, uint8_t* frame) {
  uint32_t got;
  Status s = s_->read(FileId::kData, uint64_t{id} * kPageSize, frame, kPageSize, &got);
  stats_.reads++;
  if (s != Status::kOk) return s;
  if (got != kPageSize || !page_intact(frame, id, sum_)) return Status::kCorrupt;
  return Status::kOk;
}

Status FilePager::read_version(const LogRef& ref, PageId id, uint8_t* frame) {
  if (ref.depth == 0) return read_log_image(ref.off, id, frame);
  if (ref.depth > kMaxDeltaChain || ref.chain > kPageSize || ref.size > ref.chain) return Status::kCorrupt;
  if (chain_buf_.size() < kPageSize && !resize_checked(chain_buf_, kPageSize)) return Status::kOutOfMemory;
  // Back along the chain to its root, each delta into chain_buf_ (at[d]: delta d).
  uint32_t at[kMaxDeltaChain + 1];
  uint32_t pos = ref.chain;
  uint64_t off = ref.off;
  uint32_t size = ref.size;
  bool data_root = false;
  uint64_t root_off = 0;
  for (uint32_t d = ref.depth; d >= 1; d--) {
    if (size < kDeltaFrameHeader || size > pos || off == 0) return Status::kCorrupt;
    pos -= size;
    uint8_t* h = chain_buf_.data() + pos;
    Status s = s_->read_exact(FileId::kLog, off, h, size);
    stats_.reads++;
    if (s != Status::kOk) return s;
    uint32_t n = load32(h + 44);
    if (load32(h) != kFrameDelta || load32(h + 4) != id || load64(h + 8) != salt_ || load16(h + 48) != d ||
        kDeltaFrameHeader + n > size || delta_frame_sum(h, n) != load32(h + 56))
      return Status::kCorrupt;
    at[d] = pos;
    uint64_t prev = load64(h + 24);
    uint32_t prev_size = load32(h + 32);
    if (d == 1) {
      data_root = h[50] & 1;
      if (data_root ? (prev != 0 || prev_size != 0) : (prev == 0 || prev_size != kPageFrameSize)) return Status::kCorrupt;
      root_off = prev;
    } else if (prev >= off) {
      return Status::kCorrupt;
    }
    off = prev;
    size = prev_size;
  }
  if (pos != 0) return Status::kCorrupt;
  Status s = data_root ? read_data_page(id, frame) : read_log_image(root_off, id, frame);
  if (s != Status::kOk) return s;
  for (uint32_t d = 1; d <= ref.depth; d++) {
    const uint8_t* h = chain_buf_.data() + at[d];
    if (load32(frame + kNodeSize + 4) != load32(h + 36)) return Status::kCorrupt;  // not its base
    if (!apply_delta(h + kDeltaFrameHeader, load32(h + 44), frame)) return Status::kCorrupt;
    if (!page_intact(frame, id, sum_) || load32(frame + kNodeSize + 4) != load32(h + 40)) return Status::kCorrupt;
  }
  return Status::kOk;
}

Status FilePager::load(PageId id, uint8_t* frame) {
  // Frames still in the write buffer are flushed first: reads go to the file.
  if (!buf_.empty()) {
    Status s = flush_buffer();
    if (s != Status::kOk) return s;
  }
  if (const LogRef* at = pending_.find(id)) return read_version(*at, id, frame);
  if (const LogRef* at = committed_.find(id)) return read_version(*at, id, frame);
  return read_data_page(id, frame);
}

void FilePager::will_change(PageId id, const uint8_t* frame, bool lossy) {
  if (read_only_ || !deltas_ || !log_deltas()) return;
  bases_.keep_stored(id, frame, lossy, sum_);
}

FilePager::~FilePager() = default;


Status FilePager::append_image(PageId id, const uint8_t* image, LogRef* ref, uint64_t seq) {
  uint8_t h[kPageFrameHeader];
  page_frame_header(h, id, image, seq ? seq : seq_ + 1);
  *ref = LogRef{};
  ref->off = log_end_;
  ref->size = kPageFrameSize;
  Status s = append(h, kPageFrameHeader);
  if (s == Status::kOk) s = append(image, kPageSize);
  return s;
}

Status FilePager::append_page(PageId id, const uint8_t* image, bool may_delta, LogRef* ref) {
  const uint8_t* base = may_delta && log_deltas() ? bases_.find(id) : nullptr;
  if (base) {
    // The version the delta applies to: a spilled image of this commit, else
    // the newest committed frame, else the data file's page.
    LogRef prev;
    const LogRef* p = pending_.find(id);
    if (!p) p = committed_.find(id);
    if (p) prev = *p;
    bool usable = (p || sb_written_) && prev.depth < kMaxDeltaChain && prev.chain + kDeltaFrameHeader + kFrameAlign <= kPageSize;
    if (usable && (delta_buf_.size() >= kPageSize || resize_checked(delta_buf_, kPageSize))) {
      uint32_t room = kPageSize - prev.chain;  // the whole chain stays within a page
      uint8_t* d = delta_buf_.data();
      // A delta of more than half a page (a page rebuilt: a split, a regroup, a compaction)
      // is logged as the image instead: about as many bytes, and the next changes start a
      // chain of their own rather than finding it full (an image at the next commit). The
      // browser suite's load, 100k records in commits of 1000: 126.3 -> 119.4 MB of log.
      const uint32_t limit = std::min(room & ~(kFrameAlign - 1), kMaxDeltaFrame) - kDeltaFrameHeader;
      uint32_t n = encode_delta(base, image, d + kDeltaFrameHeader, limit);
      if (n != ~0u) {
        uint32_t size = round_frame(kDeltaFrameHeader + n);
        memset(d, 0, kDeltaFrameHeader);
        memset(d + kDeltaFrameHeader + n, 0, size - kDeltaFrameHeader - n);
        store32(d, kFrameDelta);
        store32(d + 4, id);
        store64(d + 8, salt_);
        store64(d + 16, seq_ + 1);
        store64(d + 24, p ? prev.off : 0);
        store32(d + 32, p ? prev.size : 0);
        store32(d + 36, load32(base + kNodeSize + 4));
        store32(d + 40, load32(image + kNodeSize + 4));
        store32(d + 44, n);
        LogRef r;
        r.off = log_end_;
        r.size = size;
        r.depth = static_cast<uint16_t>(prev.depth + 1);
        r.data_root = p ? (prev.depth == 0 ? 0 : prev.data_root) : 1;
        r.chain = prev.chain + size;
        store16(d + 48, r.depth);
        d[50] = r.data_root;
        store32(d + 52, r.chain);
        store32(d + 56, delta_frame_sum(d, n));
        *ref = r;
        stats_.delta_frames++;
        return append(d, size);
      }
    }
  }
  stats_.image_frames++;
  return append_image(id, image, ref);
}

void FilePager::page_frame_header(uint8_t* h, PageId id, const uint8_t* image, uint64_t seq) const {
  memset(h, 0, kPageFrameHeader);
  store32(h, kFramePage);
  store32(h + 4, id);
  store64(h + 8, salt_);
  store64(h + 16, seq);
  store32(h + 24, image_frame_sum(h, image));
}

uint32_t FilePager::image_frame_sum(const uint8_t* h, const uint8_t* image) const {
  if (sum_ == PageSum::kHash) return checksum_extend(checksum(h, 24), image + kNodeSize, 8);
  // image is sealed (every caller seals it or read it verified): its trailer holds the CRC of
  // its bytes up to there, so the whole page's is 4 bytes away. A trailer that did not match
  // would give a frame checksum that does not match the bytes either: read as corrupt.
  const uint32_t page = checksum_extend(load32(image + kNodeSize + 4), image + kNodeSize + 4, 4);
  return checksum_combine(checksum(h, 24), page, kPageSize);
}

uint32_t FilePager::delta_frame_sum(const uint8_t* d, uint32_t n) const {
  if (sum_ == PageSum::kCrc32c) return checksum_extend(checksum(d, 56), d + kDeltaFrameHeader, n);
  uint8_t le[4];
  store32(le, page_hash(d + kDeltaFrameHeader, n));
  return checksum_extend(checksum(d, 56), le, 4);
}

void FilePager::unappend(uint64_t before) {
  if (buf_start_ <= before) {
    buf_.resize(before - buf_start_);
  } else {  // (some of it written through: the next frames go over it)
    buf_.clear();
    buf_start_ = before;
  }
  log_end_ = before;
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
  assert(page_well_formed(frame) && "a page the core wrote that the pool would refuse to load");
  seal_page(frame, id, sum_);
  if (!pending_.reserve(pending_.size() + 1)) return Status::kOutOfMemory;  // before anything is written
  uint64_t before = log_end_;
  LogRef at;
  stats_.image_frames++;
  Status s = append_image(id, frame, &at);
  if (s == Status::kOk) s = flush_buffer();
  if (s != Status::kOk) {
    // The frame goes: the page stays dirty in the pool, and the store goes on (a spill that
    // fails on a full disk fails the write that needed it, BTree::begin_write). Left in the
    // buffer, the next flush wrote it ahead of the next commit's frames, which then did not
    // match its count: recovery dropped that commit.
    unappend(before);
    stats_.image_frames--;
    return s;
  }
  stats_.commit_log_bytes += log_end_ - before;
  pending_.put(id, at);  // reserved above: cannot fail
  // Its newest version is this image now: a base kept for it is stale (it
  // is kept again, from this image, when the page changes next).
  bases_.stale(id);
  frames_since_commit_++;
  return Status::kOk;
}

Status FilePager::commit(BufferPool& pool, StoreMeta meta) {
  if (read_only_) return Status::kReadOnly;
  Status s = Status::kOk;
  uint64_t before = log_end_;
  const uint32_t frames_before = frames_since_commit_;
  // A commit that fails takes its frames back, as a failed spill does. Left in the write
  // buffer, the next page read flushed them (FilePager::load), the commit frame among them:
  // on a full disk every read of a page not in the pool then failed with QUOTA_EXCEEDED, and
  // once there was room again the failed commit was written whole and was there after
  // reopening (a new-user probe, session 27).
  auto failed = [&](Status st) {
    unappend(before);
    frames_since_commit_ = frames_before;
    return st;
  };
  std::vector<std::pair<PageId, LogRef>> written;
  // Every allocation of the commit happens here, before anything is written, so that
  // a commit without memory fails with kOutOfMemory having changed nothing, and one
  // that became durable can always record what it wrote.
  {
    size_t pages = size_t{pool.dirty_count()} + (pool.free_ids().size() + kFreeListCapacity - 1) / kFreeListCapacity;
    if (!reserve_checked(written, pages) || !committed_.reserve(committed_.size() + pending_.size() + pages))
      return Status::kOutOfMemory;
  }
  bool may_delta = true;
  auto put_page = [&](PageId id, uint8_t* image) {
    if (s != Status::kOk) return;
    // What the pool would refuse when it reads the page back (core/layouts/validate.h).
    assert(page_well_formed(image) && "a page the core wrote that the pool would refuse to load");
    // Version 1, from its delta base where it has one (the stored version): the CRC of the
    // bytes that changed instead of a pass over the page (that pass was 13% of a batched load).
    // Version 2: page_hash costs a seventh of that CRC pass in wasm; no base needed.
    const uint8_t* base = sum_ == PageSum::kCrc32c && log_deltas() ? bases_.find(id) : nullptr;
    if (base) {
      seal_page_from(image, id, base);
      assert(page_intact(image, id, sum_) && "seal_page_from on a base that is not the stored version");
    } else {
      seal_page(image, id, sum_);
    }
    LogRef ref;
    s = append_page(id, image, may_delta, &ref);
    written.emplace_back(id, ref);  // capacity reserved above
    frames_since_commit_++;
  };
  // Free pages at the end of the store leave it (a checkpoint then cuts the data file there):
  // deleting what was written last gives its room back.
  stats_.trimmed_pages += pool.trim_free_tail();
  pool.for_each_dirty(put_page);
  // The free-page list, rewritten when it changed: chain pages are free pages
  // themselves (the last ones of the list), and list themselves.
  const std::vector<PageId>& free_ids = pool.free_ids();
  if (pool.free_list_changed() || meta_.free_count != free_ids.size()) {
    may_delta = false;  // chain pages are written whole (they are not in the pool, no base is kept)
    PageId next = encode_free_list(free_ids, put_page);
    meta.free_head = next;
    meta.free_count = static_cast<uint32_t>(free_ids.size());
  } else {
    meta.free_head = meta_.free_head;
    meta.free_count = meta_.free_count;
  }
  meta.page_count = pool.page_count();
  if (s != Status::kOk) return failed(s);
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
  if (s != Status::kOk) return failed(s);
  // Durable.
  stats_.commit_log_bytes += log_end_ - before;
  bases_.clear();
  seq_++;
  stats_.commits++;
  meta_ = meta;
  pending_.for_each([&](PageId id, const LogRef& r) { committed_.put(id, r); });  // reserved above
  for (auto& e : written) committed_.put(e.first, e.second);
  pending_.clear();
  frames_since_commit_ = 0;
  pool.mark_all_clean();
  pool.set_free_list_unchanged();
  if (log_end_ >= checkpoint_bytes_) {
    // The commit is durable, whatever the checkpoint does: one that fails (a full disk, an
    // I/O error on the data file) leaves the log the store's newest state and is tried again
    // after the next commit. It reported its failure as the commit's, which then was durable
    // all the same (a new-user probe, session 23: a rejected batch was there after reopening,
    // and the store had turned read-only for nothing). Only a failure while starting the next
    // log generation is the commit's to report: writing on could then lose commits.
    checkpoint_unsafe_ = false;
    Status c = checkpoint(&pool, reuse_log_);
    if (c != Status::kOk && checkpoint_unsafe_) return c;
    if (c != Status::kOk && c != Status::kOutOfMemory) {
      stats_.checkpoint_failures++;
      checkpoint_failure_ = c;
    }
  }
  return Status::kOk;
}

Status FilePager::committed_version(const BufferPool* pool, PageId id, const LogRef& ref, uint8_t* img) {
  // A batched load's checkpoint read every page's delta chain back from the log (~10% of its
  // time in Node) while the pool held them all, clean.
  const uint8_t* f = pool ? pool->stored_image(id) : nullptr;
  if (!f || !page_intact(f, id, sum_)) return read_version(ref, id, img);
  memcpy(img, f, kPageSize);
#ifndef NDEBUG
  alignas(16) uint8_t logged[kPageSize];
  const uint64_t reads = stats_.reads;      // (a check, not the checkpoint's work: not counted)
  Status s = read_version(ref, id, logged);  // (storage may fail here, in fault tests: nothing to compare)
  assert((s != Status::kOk || memcmp(logged, img, kPageSize) == 0) && "a clean frame that is not the committed version");
  stats_.reads = reads;
#endif
  stats_.checkpoint_frames++;
  return Status::kOk;
}

Status FilePager::cut_log_tail() {
  if (!log_tail_) return Status::kOk;
  Status s = flush_buffer();  // (spilled frames of the next commit stay: the cut is after them)
  if (s == Status::kOk) s = s_->truncate(FileId::kLog, log_end_);
  if (s == Status::kOk) log_tail_ = false;
  return s;
}

Status FilePager::checkpoint(const BufferPool* pool, bool keep_log) {
  if (read_only_) return Status::kOk;
  // Nothing to fold (the last commit checkpointed): a close still cuts the older generation's
  // frames that a kept log holds behind the current one.
  if (committed_.empty() && sb_seq_ == seq_) return keep_log ? Status::kOk : cut_log_tail();
  // Spilled images of a commit to come: the checkpoint waits for that commit.
  if (frames_since_commit_ != 0) return Status::kOk;
  std::vector<std::pair<PageId, LogRef>> pages;
  if (!reserve_checked(pages, committed_.size())) return Status::kOutOfMemory;
  // (Pages past the store's end were freed and cut since they were logged: not copied.)
  committed_.for_each([&](PageId id, const LogRef& r) {
    if (id < meta_.page_count) pages.emplace_back(id, r);
  });
  std::sort(pages.begin(), pages.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  alignas(16) uint8_t img[kPageSize];
  // Deltas whose chain starts at a data file page lose their base when the
  // copy below overwrites that page (a torn write): first an image of each
  // such page in the log, under a checkpoint frame, flushed.
  uint32_t restated = 0;
  // A failure before the checkpoint frame is durable: the log goes on from where it was (the
  // frames written past it are a torn tail to the next open, and the next commit's overwrite
  // them); committed_ still names the versions it did.
  const uint64_t log_before = log_end_;
  auto unwind = [&](Status s) {
    buf_.clear();
    buf_start_ = log_end_ = log_before;
    // (best effort: what it wrote is a tail no commit frame of this salt follows)
    if (s_->truncate(FileId::kLog, log_before) == Status::kOk) log_tail_ = false;
    return s;
  };
  assert(buf_.empty() && buf_start_ == log_end_ && "a checkpoint starts after a commit's flush");
  for (auto& e : pages) {
    if (e.second.depth == 0 || !e.second.data_root) continue;
    Status s = committed_version(pool, e.first, e.second, img);
    if (s == Status::kOk) s = append_image(e.first, img, &e.second, seq_);  // restates commit seq_
    if (s != Status::kOk) return unwind(s);
    restated++;
  }
  if (restated > 0) {
    uint8_t c[kCommitFrameSize] = {};
    store32(c, kFrameCheckpoint);
    store32(c + 4, restated);
    store64(c + 8, salt_);
    store64(c + 16, seq_);
    meta_.encode(c + 24);
    store32(c + 56, checksum(c, 56));
    Status s = append(c, kCommitFrameSize);
    if (s == Status::kOk) s = flush_buffer();
    if (s == Status::kOk) s = s_->sync(FileId::kLog);
    stats_.syncs++;
    if (s != Status::kOk) return unwind(s);
    for (auto& e : pages) committed_.update(e.first, e.second);
    stats_.restated_pages += restated;
  }
  for (auto& e : pages) {
    Status s = committed_version(pool, e.first, e.second, img);
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
    encode_superblock(page0 + (target == 0 ? 0 : kSuperblockSlot), seq_, meta_, static_cast<uint32_t>(sum_));
    s = s_->write(FileId::kData, 0, page0, kPageSize);
  } else {
    uint8_t slot[kSuperblockSize];
    encode_superblock(slot, seq_, meta_, static_cast<uint32_t>(sum_));
    s = s_->write(FileId::kData, target == 0 ? 0 : kSuperblockSlot, slot, kSuperblockSize);
  }
  if (s == Status::kOk) s = s_->sync(FileId::kData);
  stats_.syncs++;
  if (s != Status::kOk) return s;
  sb_slot_ = target;
  sb_seq_ = seq_;
  sb_written_ = true;
  stats_.checkpoints++;
  // The superblock is durable: pages past the store's end (cut by trim_free_tail) go. A
  // failure here loses nothing (the file stays longer than the store, as after a crash here).
  uint64_t have = 0;
  const uint64_t end = uint64_t{meta_.page_count} * kPageSize;
  if (s_->size(FileId::kData, &have) == Status::kOk && have > end && s_->truncate(FileId::kData, end) == Status::kOk)
    stats_.data_truncations++;
  checkpoint_unsafe_ = true;  // (cleared by the caller: a failure from here on is the commit's)
  // The data file now holds everything: a new log generation (its header
  // reaches the disk with the next commit's flush; until then the old header
  // or old-salt frames are harmless, their commits are all <= sb_seq_). Kept
  // bases stay valid: the data file's pages are the versions they copy.
  return reset_log(keep_log);
}

}  // namespace adaptree
