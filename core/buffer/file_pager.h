// The pager of a store on files (storage.h): where each page's newest image
// is (the log, or its home in the data file), commits, checkpoints and
// recovery. It implements PageBackend for the buffer pool. Formats:
// superblock.h (data file page 0, free-page list), log_format.h (the log).
//
// Protocol (docs/DECISIONS.md, "Commits: a log of page images" and "Commits
// log deltas"):
// - commit: append every dirty page, the free-list chain when it changed,
//   and a commit frame with the StoreMeta; flush the log once. A dirty page
//   whose unchanged bytes were kept (will_change) is appended as a delta
//   against its newest logged version when that is smaller and its chain is
//   short enough, else as an image.
// - spill: a dirty page evicted before its commit is appended as a page frame
//   of the coming commit (no flush); reads find it there.
// - checkpoint (when the log passes checkpoint_bytes, and at close): append
//   an image of every page whose delta chain starts at the data file (a
//   checkpoint frame, flushed), copy the newest committed version of every
//   logged page to its home, flush the data file, write the older superblock
//   slot, flush, start a new log generation.
// - recovery (open): newest valid superblock, then every complete commit of
//   the log after it; the torn tail is cut off. A damaged frame followed by
//   two or more complete commits, or by one numbered two past the last good
//   one, cannot be a torn tail: kCorrupt.
// - creation writes no superblock: the data file stays empty and the log
//   holds the store until the first checkpoint writes page 0 whole. So a
//   data file shorter than a page that is not empty is damaged or foreign
//   (kCorrupt), and one without a valid superblock is read from the log
//   alone if the log names checkpoint 0.
// - a log without a valid header is reset only when its bytes can be our own
//   header cut short by a crash (log_may_be_a_torn_header); any other file
//   where the log goes is kCorrupt and left as it is.
#pragma once
#include <cstdint>
#include <functional>
#include "core/buffer/offset_map.h"
#include "core/buffer/page_bases.h"
#include <vector>

#include "core/buffer/buffer_pool.h"
#include "core/buffer/log_format.h"
#include "core/buffer/page_backend.h"
#include "core/buffer/storage.h"
#include "core/buffer/superblock.h"

namespace adaptree {

struct PagerStats {
  uint64_t reads = 0, writes = 0, syncs = 0, commits = 0, checkpoints = 0;
  uint64_t log_bytes = 0, data_bytes = 0;
  // Frames appended by commits (spills included, checkpoint images not) and
  // their bytes (commit frames included).
  uint64_t image_frames = 0, delta_frames = 0, commit_log_bytes = 0;
  // Images checkpoints appended for pages whose deltas start at the data file.
  uint64_t restated_pages = 0;
  // Page versions checkpoints took from the pool's clean frames instead of the log.
  uint64_t checkpoint_frames = 0;
  // Free pages at the store's end that commits cut off (BufferPool::trim_free_tail), and
  // checkpoints that then shortened the data file.
  uint64_t trimmed_pages = 0, data_truncations = 0;
  // Checkpoints after a commit that failed (the commit was durable; the log stays the store's
  // newest state and the next commit tries again).
  uint64_t checkpoint_failures = 0;
};

class FilePager : public PageBackend {
 public:
  using Progress = std::function<void(uint64_t done, uint64_t total)>;

  FilePager(Storage* s, uint64_t checkpoint_bytes) : s_(s), checkpoint_bytes_(checkpoint_bytes) {}

  // A reader (before open): recovery writes nothing (no log reset, the torn
  // tail is left for the writer to cut), there is no new store, commit is
  // kReadOnly and checkpoint does nothing. A dirty page (a fingerprint sort
  // or layout change a read made) is dropped when evicted, never written:
  // *version (the tree's) is bumped so that cursors re-seek by key instead of
  // trusting positions in an image that comes back unsorted.
  void set_read_only(uint64_t* version) {
    read_only_ = true;
    discard_version_ = version;
  }
  bool read_only() const { return read_only_; }
  // Salvage (a reader only, before open): where recovery meets a damaged frame with intact
  // commits after it (which opens as kCorrupt otherwise), the log ends there instead: the store
  // opens as of the last commit before the damage, the later ones unread. Nothing is written.
  void set_salvage() { salvage_ = true; }
  // The log offset of a damaged frame that intact commits follow, as open met it (kCorrupt, or
  // where a salvage stopped); 0 when there was none.
  uint64_t damaged_at() const { return damaged_at_; }
  // Pages spilled into the log since the last commit (Store::pending).
  uint32_t frames_since_commit() const { return frames_since_commit_; }
  // Checkpoint when the log passes this many bytes (after a commit).
  void set_checkpoint_bytes(uint64_t bytes) { checkpoint_bytes_ = bytes; }
  // Whether a commit's checkpoint writes the next log generation over the old one in place
  // (default) or cuts the log to its header first: storage whose truncation gives space back
  // and whose writes reuse nothing (a Durable Object's rows) only pays for a kept log.
  void set_reuse_log(bool on) { reuse_log_ = on; }
  // Whether commits may log deltas (before open; default on). Off, the pager
  // writes logs of version 1, as before deltas existed.
  void set_log_deltas(bool on) { deltas_ = on; }
  // At most this many pages of a commit keep their unchanged bytes for a delta.
  void set_base_limit(uint32_t pages) { bases_.set_limit(pages); }
  ~FilePager() override;

  // Recovers the store. *meta is the newest committed state (root 0: a new
  // store, created when create is set; kNotFound when there is none and
  // create is not set). *free_ids: the free-page list.
  Status open(bool create, uint8_t layout, const Progress& progress, StoreMeta* meta, std::vector<PageId>* free_ids);

  Status load(PageId id, uint8_t* frame) override;
  Status spill(PageId id, uint8_t* frame) override;
  void will_change(PageId id, const uint8_t* frame, bool lossy) override;
  PageSum page_sum() const override { return sum_; }
  // The format a store created by open() gets (default: the newest, format version 2);
  // an existing store keeps its own. For tests of version 1 stores.
  void set_new_format(PageSum sum) { new_sum_ = sum; }

  // Makes the pool's dirty pages and meta durable: one log flush.
  Status commit(BufferPool& pool, StoreMeta meta);
  // pool: where the newest committed version of a page may be at hand (BufferPool::stored_image)
  // instead of in the log; null: every version is read from the log. keep_log: the new log
  // generation overwrites the old one in place instead of a truncated file (a commit's
  // checkpoint: writes into blocks the file has, no size change to sync); else (close, an
  // explicit checkpoint) the log is cut to its header.
  Status checkpoint(const BufferPool* pool = nullptr, bool keep_log = false);

  uint64_t sequence() const { return seq_; }
  PagerStats stats() const;
  // The status of the newest checkpoint after a commit that failed since the last call (the
  // commit itself was durable and returned kOk), or kOk; the call clears it.
  Status take_checkpoint_failure() {
    Status s = checkpoint_failure_;
    checkpoint_failure_ = Status::kOk;
    return s;
  }

 private:
  Status create_files(uint8_t layout);
  Status recover_log(uint64_t sb_seq, const Progress& progress, StoreMeta* meta);
  // Intact commit frames past `from` that commit after `after_seq` (of this log's salt: two of
  // them, or one two ahead; with any_salt, for a log whose header is damaged: any one).
  bool later_commits_intact(uint64_t from, uint64_t size, uint64_t after_seq, bool any_salt = false);
  // Recovery met a damaged frame at off with intact commits after it: notes where, and says
  // whether to end the log there (a salvage) rather than refuse the store.
  bool damaged(uint64_t off);
  bool log_is_a_data_file(uint64_t lsize);
  // A log without a valid header: *ours when its bytes can be a header of ours that a crash cut
  // short (reset then), false when they are some other file's.
  Status log_may_be_a_torn_header(uint64_t lsize, bool* ours);
  Status reset_log(bool keep_file = false);
  // A log kept across a checkpoint (reset_log keep_file) ends in an older generation's frames:
  // cut them (at log_end_).
  Status cut_log_tail();
  // Whether the log has a valid header, the checkpoint it names and its version.
  Status log_checkpoint_seq(bool* valid, uint64_t* seq, uint32_t* version);
  Status read_log_image(uint64_t off, PageId id, uint8_t* frame);
  // The page version ref names: an image, or a delta chain applied to its root.
  Status read_version(const LogRef& ref, PageId id, uint8_t* frame);
  Status read_data_page(PageId id, uint8_t* frame);
  // The newest committed version of id (ref: where the log has it) for a checkpoint: pool's frame
  // when it holds the stored image and its trailer checks out, else read_version.
  Status committed_version(const BufferPool* pool, PageId id, const LogRef& ref, uint8_t* img);
  // Appends image (sealed) as the newest version of id: a delta against the
  // kept base when that is allowed and smaller, else an image. *ref: where.
  Status append_page(PageId id, const uint8_t* image, bool may_delta, LogRef* ref);
  // seq: of the commit the image belongs to (0: the coming one).
  Status append_image(PageId id, const uint8_t* image, LogRef* ref, uint64_t seq = 0);
  Status read_free_list(const StoreMeta& m, std::vector<PageId>* out);
  // Appends to the write buffer; flushes it to the log when large.
  Status append(const uint8_t* p, uint32_t n);
  Status flush_buffer();
  // Takes back what was appended to the log since it ended at `before` (a failed spill or
  // commit): out of the write buffer, and the log's end back there. Frames already written
  // through stay in the file beyond the end, a torn tail as after a crash.
  void unappend(uint64_t before);
  void page_frame_header(uint8_t* h, PageId id, const uint8_t* image, uint64_t seq) const;
  // A log page frame's checksum (header bytes [0, 24), then the image): format version 1, the
  // CRC-32C of both (from the image's trailer CRC); version 2, the CRC-32C of the header and
  // the image's 8-byte trailer, whose page_hash covers the rest (the reader checks it).
  uint32_t image_frame_sum(const uint8_t* h, const uint8_t* image) const;
  // A delta frame's checksum (header bytes [0, 56), then the n payload bytes): version 1, the
  // CRC-32C of both; version 2, the CRC-32C of the header and the payload's page_hash (LE).
  uint32_t delta_frame_sum(const uint8_t* d, uint32_t n) const;
  // The log may hold delta frames (version 2 or 3).
  bool log_deltas() const { return log_version_ != kLogVersionImages; }

  Storage* s_;
  uint64_t checkpoint_bytes_;
  bool reuse_log_ = true;
  Status checkpoint_failure_ = Status::kOk;
  // A checkpoint failed where going on could lose commits (starting the next log generation):
  // the commit that ran it reports the failure (the store then refuses writes).
  bool checkpoint_unsafe_ = false;
  // The log file holds an older generation's frames past log_end_ (reset_log keep_file).
  bool log_tail_ = false;
  bool read_only_ = false;
  bool salvage_ = false;
  uint64_t damaged_at_ = 0;
  uint64_t* discard_version_ = nullptr;
  uint64_t salt_ = 0;
  uint64_t seq_ = 0;          // newest durable commit
  uint64_t sb_seq_ = 0;       // commit the data file holds
  int sb_slot_ = 0;           // slot holding sb_seq_
  bool sb_written_ = false;   // the data file has page 0 (else the first checkpoint writes it whole)
  StoreMeta meta_;            // newest durable meta
  uint64_t log_end_ = 0;      // where the next frame goes (after the buffer)
  uint64_t buf_start_ = 0;    // log offset of buf_[0]
  std::vector<uint8_t> buf_;
  uint32_t frames_since_commit_ = 0;
  OffsetMap committed_;  // page id -> newest committed version in the log
  OffsetMap pending_;    // page id -> image appended for the coming commit (spills)
  bool deltas_ = true;   // commits may log deltas
  uint32_t log_version_ = 1;  // of the current log (log_format.h): deltas in versions 2 and 3
  PageSum sum_ = PageSum::kHash;      // the store's format version
  PageSum new_sum_ = PageSum::kHash;  // a new store's
  // Bases of deltas: the bytes of each dirty page before its first change, while they
  // equal the page's newest logged (or data file) version (stale once the page is spilled).
  PageBases bases_;
  std::vector<uint8_t> delta_buf_, chain_buf_;
  std::vector<uint8_t> frame_buf_;  // a log page frame read whole (read_log_image)
  mutable PagerStats stats_;
};

// The salt of the next log generation (not for security: tells generations apart).
uint64_t new_salt(uint64_t previous, uint64_t seq);

}  // namespace adaptree
