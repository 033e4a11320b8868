// The one place that maps a page id to its bytes (ARCHITECTURE.md, decision 1:
// no pointers in pages). In memory for now: pages live in 64-page chunks and
// freed ids are reused. The buffer manager will replace this class; its
// resolve() will then be able to answer RESTART or NEED_PAGE, which is why
// callers go through fix() and propagate the Status.
#pragma once
#include <cstdint>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace adaptree {

class PageStore {
 public:
  PageStore() = default;
  ~PageStore();
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  // A fresh page (contents undefined) or kOutOfMemory.
  Status allocate(PageId* out);
  // Returns the page to the free list; its tag becomes PageTag::kFree.
  void release(PageId id);
  // The page's bytes; id must be live. In memory this cannot fail.
  uint8_t* page(PageId id) const { return pages_[id]; }
  Status fix(PageId id, uint8_t** out) const {
    if (id == kInvalidPageId || id >= pages_.size()) return Status::kCorrupt;
    *out = pages_[id];
    return Status::kOk;
  }
  bool valid(PageId id) const { return id != kInvalidPageId && id < pages_.size(); }

  uint64_t live_pages() const { return pages_.size() - 1 - free_list_.size(); }
  uint64_t allocated_bytes() const { return chunks_.size() * uint64_t{kChunkPages} * kPageSize; }
  // Frees every page.
  void clear();

 private:
  static constexpr uint32_t kChunkPages = 64;
  std::vector<uint8_t*> pages_{nullptr};  // index = page id; id 0 is reserved
  std::vector<uint8_t*> chunks_;
  std::vector<PageId> free_list_;
};

}  // namespace adaptree
