// The pager of a store on an asynchronous host (IndexedDB, Durable Objects'
// async storage, a network): the host keeps page images by page id and the
// core never calls it. It implements PageBackend for the buffer pool.
//
// Protocol (docs/DECISIONS.md, "Async commits: no-steal, whole page sets"):
// - load: always kNeedPage. The operation stops having changed nothing
//   (reads check failure(); writes run BTree::prefetch_for_write first), the
//   host fetches the image and hands it in with BufferPool::supply, and the
//   operation runs again.
// - spill: always refused (no-steal). There is no log to put a dirty page in
//   before its commit, and its home must keep the committed image until the
//   commit lands, so dirty pages stay in the pool; when every frame is dirty
//   the pool grows past its size (OUT_OF_MEMORY only when memory cannot grow)
//   and shrinks back when commit_end has made them clean.
// - commit: commit_begin emits page 0 (superblock) and then every dirty page
//   and the free-list chain if it changed, each sealed (page_trailer.h); the
//   host writes them all or none; commit_end says which. Page 0 holds two
//   superblock slots as on files (superblock.h), both written with the new
//   superblock (see commit_begin), so the pages are those of a data file.
// - open: page 0 alone (the newest valid slot); the free-page list is read
//   before the first write (BufferPool::load_free_list).
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer/buffer_pool.h"
#include "core/buffer/file_pager.h"
#include "core/buffer/page_bases.h"
#include "core/buffer/page_backend.h"
#include "core/buffer/superblock.h"

namespace adaptree {

class AsyncPager : public PageBackend {
 public:
  // superblock: page 0's kPageSize bytes, or null for a new store. *meta is
  // the newest committed state (root 0 for a new store). kCorrupt when
  // neither slot is valid.
  // new_format: the page checksum of a new store (superblock null).
  Status open(const uint8_t* superblock, uint8_t layout, StoreMeta* meta, PageSum new_format = PageSum::kHash);

  Status load(PageId id, uint8_t* frame) override;
  Status spill(PageId id, uint8_t* frame) override;
  // Keeps the page's committed image as the base of its delta (set_log_deltas).
  void will_change(PageId id, const uint8_t* frame, bool lossy) override;
  bool asynchronous() const override { return true; }
  PageSum page_sum() const override { return sum_; }

  // A reader (FilePager::set_read_only): a dirty page (changed by a read:
  // a sort, a conversion) is dropped when evicted and *version bumped, so
  // the pool does not grow with them; the store refuses commits.
  void set_read_only(uint64_t* version) {
    read_only_ = true;
    discard_version_ = version;
  }
  bool read_only() const { return read_only_; }

  // Whether commit_begin follows the images with each page's delta against its
  // previous committed image (a host that logs deltas: IndexedDB's frames). The bases
  // are copies made as a commit first changes each page (PageBases), at most
  // set_base_limit pages.
  // copies: the deltas may hold copy runs (page_delta.h; a host that applies them).
  void set_log_deltas(bool on, bool copies = false) {
    deltas_ = on;
    copies_ = on && copies;
    if (!on) bases_.clear();
  }
  void set_base_limit(uint32_t pages) { bases_.set_limit(pages); }

  // The images of a commit of meta into *out, `*count` times [u32 page id]
  // [kPageSize image], page 0 first; with set_log_deltas, then an entry per image
  // (bindings/adaptree.h, at_store_commit_begin). Until commit_end the emitted frames
  // are not evicted. kInvalidArgument if a commit is already in flight.
  Status commit_begin(BufferPool& pool, StoreMeta meta, std::vector<uint8_t>* out, uint32_t* count);
  // host: kOk if the host stored every image durably, else why not (then
  // none of them counts: the pages are dirty again and the state stays at
  // the previous commit). Returns host (kIoError for a non-error non-OK).
  Status commit_end(BufferPool& pool, Status host);
  bool committing() const { return committing_; }

  uint64_t sequence() const { return seq_; }
  // reads: pages supplied; writes: images emitted; data_bytes: committed pages.
  PagerStats stats() const {
    PagerStats s = stats_;
    s.data_bytes = seq_ ? uint64_t{meta_.page_count} * kPageSize : 0;
    return s;
  }
  void count_supply() { stats_.reads++; }

 private:
  alignas(16) uint8_t page0_[kPageSize] = {};  // the stored page 0
  uint64_t seq_ = 0;                           // newest durable commit
  PageSum sum_ = PageSum::kHash;               // the store's format version
  StoreMeta meta_;                             // its meta
  bool committing_ = false;
  bool read_only_ = false;
  uint64_t* discard_version_ = nullptr;
  StoreMeta pending_meta_;
  alignas(16) uint8_t pending_page0_[kPageSize] = {};
  bool pending_free_written_ = false;
  bool deltas_ = false;
  bool copies_ = false;  // (set_log_deltas)
  PageBases bases_;                  // (set_log_deltas)
  std::vector<uint8_t> delta_out_;   // a commit's delta entries, then appended to its output
  PagerStats stats_;
};

}  // namespace adaptree
