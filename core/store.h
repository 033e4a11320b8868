// A persistent store: a BTree on a buffer pool backed by a pager. The top of
// the core: it knows the tree and the pagers, and what a commit must record
// of the tree (root, height, count, layout). Two kinds:
// - on Storage (files; sync): FilePager, commit() makes writes durable.
// - on an asynchronous host: AsyncPager; pages come in through supply() after
//   an operation returned kNeedPage, and commits go out through
//   commit_begin()/commit_end() (core/buffer/async_pager.h).
#pragma once
#include <memory>
#include <vector>

#include "core/buffer/async_pager.h"
#include "core/buffer/file_pager.h"
#include "core/tree/btree.h"

namespace adaptree {

struct StoreOptions {
  LayoutConfig layout = LayoutConfig::kAdaptive;  // for a new store
  uint64_t pool_bytes = 64ull << 20;              // at least 1 MiB
  bool create = true;
  uint64_t checkpoint_bytes = 64ull << 20;         // checkpoint when the log passes this
  // A commit's checkpoint writes the next log generation over the old one in place (the file
  // keeps its size while open) instead of cutting it first (FilePager::set_reuse_log).
  bool reuse_log = true;
  // A reader: opens the newest commit without writing anything (no recovery
  // writes, no creation), refuses writes and commits (kReadOnly).
  bool read_only = false;
  // With read_only: a log damaged part way (a frame that fails its checksum, intact commits
  // after it) ends at the damage, and the store opens as of the last commit before it
  // (FilePager::set_salvage) instead of failing with kCorrupt. Ignored on async hosts.
  bool salvage = false;
  // Where open met such damage (a log offset; 0: none), when not null. Set when open fails
  // with kCorrupt for it, and when a salvage stopped there.
  uint64_t* damaged_at = nullptr;
  // Commits log the changed bytes of a page (a delta) instead of its image
  // when that is smaller (docs/DECISIONS.md). Off: no delta frames (and, in a
  // store of format version 1, logs of version 1).
  bool log_deltas = true;
  // The page checksum of a store this call creates (an existing store keeps its
  // own): the newest format (2, page_hash) unless set to PageSum::kCrc32c
  // (format version 1, what stores written before it use: for their tests).
  PageSum new_format = PageSum::kHash;
  FilePager::Progress progress;
};

class Store {
 public:
  // Opens and recovers the store in storage (which must outlive it).
  static Status open(Storage* storage, const StoreOptions& o, std::unique_ptr<Store>* out);
  // Opens a store on an asynchronous host from its page 0 (kPageSize bytes),
  // or a new one (superblock null; nothing is stored before its first
  // commit). o.create and o.progress do not apply.
  static Status open_async(const uint8_t* superblock, const StoreOptions& o, std::unique_ptr<Store>* out);

  BTree& tree() { return *tree_; }
  bool is_async() const { return async_ != nullptr; }
  // Every write so far durable (one log flush). On failure the last commit
  // stays intact and the store refuses writes until reopened. Sync only.
  Status commit();
  // Commits nothing: checkpoints what is committed (used at close). Sync only.
  Status checkpoint();

  // Async: installs a page the host fetched (BufferPool::supply).
  Status supply(PageId id, const uint8_t* image);
  // Async: the page images of a commit of every write so far (AsyncPager);
  // writes are refused with kBusy until commit_end. commit_end(host status):
  // kOk makes the commit current; a failure keeps the previous one and the
  // store refuses writes (kReadOnly) until reopened.
  Status commit_begin(std::vector<uint8_t>* out, uint32_t* count);
  Status commit_end(Status host);
  // Async reader: drops every page in the pool and adopts the commit in
  // superblock (page 0, newer than the current one). Makes the store a
  // reader if it was not. Cursors re-seek after their last key.
  Status follow(const uint8_t* superblock);
  // Async reader (follow ran before): the same, but keeps the resident pages that the
  // commits since the current one did not write; `changed` (n ids) lists every page they
  // wrote. kInvalidArgument on a store that is not a reader yet.
  Status follow_changed(const uint8_t* superblock, const PageId* changed, uint32_t n);
  bool read_only() const { return async_ ? async_->read_only() : file_->read_only(); }
  // Sync: the log size past which a commit checkpoints (StoreOptions::checkpoint_bytes).
  Status set_checkpoint_bytes(uint64_t bytes) {
    if (!file_) return Status::kInvalidArgument;
    file_->set_checkpoint_bytes(bytes);
    return Status::kOk;
  }
  // Async: commit_begin adds each changed page's delta (AsyncPager::set_log_deltas).
  Status set_log_deltas(bool on, bool copies = false) {
    if (!async_) return Status::kInvalidArgument;
    async_->set_log_deltas(on, copies);
    return Status::kOk;
  }
  // Sync: StoreOptions::reuse_log.
  Status set_reuse_log(bool on) {
    if (!file_) return Status::kInvalidArgument;
    file_->set_reuse_log(on);
    return Status::kOk;
  }

  // The host's key and value encodings (StoreMeta): as the newest commit recorded them
  // (0 = none), or as set since; the next commit records what is set.
  uint16_t encodings() const { return static_cast<uint16_t>(key_encoding_ | (value_encoding_ << 8)); }
  void set_encodings(uint8_t key, uint8_t value) {
    key_encoding_ = key;
    value_encoding_ = value;
  }

  PagerStats pager_stats() const { return async_ ? async_->stats() : file_->stats(); }
  // Sync: a checkpoint after a commit that failed since the last call (the commit was durable).
  Status take_checkpoint_failure() { return file_ ? file_->take_checkpoint_failure() : Status::kOk; }
  // The store's format: the checksum its pages carry (format version 1 or 2).
  PageSum page_sum() const { return async_ ? async_->page_sum() : file_->page_sum(); }
  uint64_t sequence() const { return async_ ? async_->sequence() : file_->sequence(); }
  // Whether a commit now would make anything durable: dirty pages in the pool, pages a sync
  // store spilled into its log since its last commit, or a changed free-page list. (For a
  // store shared with workers, whose JavaScript objects each count only their own writes.)
  bool pending() const;
  // Pages spilled to the log since the last commit (a sync store): its checkpoint waits for the
  // next commit.
  bool spilled() const;

 private:
  // follow and follow_changed: keep the frames outside `changed` (keep) or drop them all.
  Status adopt_commit(const uint8_t* superblock, const PageId* changed, uint32_t n, bool keep);
  Store() = default;
  Status adopt(const StoreMeta& meta, PageBackend* backend, uint64_t pool_bytes);
  StoreMeta current_meta() const;
  uint64_t frames_ = 0;
  uint8_t key_encoding_ = 0;
  uint8_t value_encoding_ = 0;
  std::unique_ptr<FilePager> file_;
  std::unique_ptr<AsyncPager> async_;
  std::unique_ptr<BTree> tree_;
};

}  // namespace adaptree
