// What the buffer pool asks of the storage below it (core/buffer/file_pager.h
// for files, async_pager.h for asynchronous hosts). The pool knows frames and
// page ids; a backend knows where page images live. Neither knows keys.
#pragma once
#include <cstdint>

#include "core/buffer/page_trailer.h"
#include "core/config.h"
#include "core/status.h"

namespace adaptree {

class PageBackend {
 public:
  virtual ~PageBackend() = default;
  // Reads page id's image into frame (kPageSize bytes) and verifies it.
  // kNeedPage: an asynchronous host must fetch it first (the operation
  // restarts); kCorrupt: bad checksum or wrong page; kIoError.
  virtual Status load(PageId id, uint8_t* frame) = 0;
  // Writes a dirty page out so that its frame can be reused. kNeedPage means
  // "not possible" (no-steal backends keep dirty pages until commit).
  virtual Status spill(PageId id, uint8_t* frame) = 0;
  // True when load() can only answer kNeedPage (an asynchronous host hands
  // pages in through BufferPool::supply): the pool then takes no frame for a
  // miss, so a fault evicts nothing.
  virtual bool asynchronous() const { return false; }
  // The checksum the store's page trailers carry (its format version): what the pool checks
  // supplied images against.
  virtual PageSum page_sum() const = 0;
  // A clean frame is about to change (BufferPool::page_mut, the first change
  // since the page was loaded or last written): frame still holds its bytes
  // as they were. The file pager keeps a copy to log the change as a delta.
  // lossy: the frame was changed through BufferPool::page() since (FrameMeta::lossy);
  // otherwise it is the stored image.
  virtual void will_change(PageId id, const uint8_t* frame, bool lossy) {
    (void)id;
    (void)frame;
    (void)lossy;
  }
};

}  // namespace adaptree
