// Bases of page deltas: the bytes of each page a commit changes, as they were before its
// first change (the page's newest stored version), kept so that the commit can log the
// change as a delta (FilePager's log; AsyncPager's output for IndexedDB's frames).
//
// A copy is kept per page and stays in its slot for the whole commit: stale() marks it
// unusable (FilePager: the page was spilled since) and the next keep() of the page fills
// the same slot again. Copies live in chunks of kChunk pages, at most `limit` pages in all
// (later pages have no base: they are logged as images), each chunk allocated only while
// 1 MiB of the heap stays free beside it (as the pool's own frames).
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer/offset_map.h"
#include "core/buffer/page_trailer.h"
#include "core/page.h"

namespace adaptree {

class PageBases {
 public:
  PageBases() = default;
  PageBases(const PageBases&) = delete;
  PageBases& operator=(const PageBases&) = delete;
  ~PageBases();

  void set_limit(uint32_t pages) { limit_ = pages; }
  // Copies frame as id's base (into its slot if it has one). No copy (and no error) when
  // the limit is reached or memory is short: the page then has no base.
  void keep(PageId id, const uint8_t* frame);
  // keep(), for a clean frame about to change (PageBackend::will_change): a frame changed
  // through BufferPool::page() since (lossy) is the stored version only if its trailer says
  // so; one that was not is (Debug builds check it, so that a write through page() without
  // BufferPool::note_lossy fails the tests instead of giving a delta a base that a reader
  // would not find). No checksum pass otherwise: a CRC of every page a commit changed was 13%
  // of a batched load.
  void keep_stored(PageId id, const uint8_t* frame, bool lossy, PageSum sum);
  // id's base, or null (none kept, or stale).
  const uint8_t* find(PageId id) const;
  // id's base is no longer its stored version (its slot stays id's).
  void stale(PageId id);
  // Forgets every base (a commit is durable); keeps 1 MiB of chunks for the next commit.
  void clear();

 private:
  static constexpr uint32_t kChunk = 64;
  // LogRef::off: the copy's index; depth 1 while it is valid, 0 stale.
  OffsetMap slots_;
  std::vector<uint8_t*> chunks_;
  uint32_t used_ = 0;
  uint32_t limit_ = 4096;
};

}  // namespace adaptree
