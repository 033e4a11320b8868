#include "core/buffer/page_store.h"

#include <cstdlib>

#include "core/page.h"

namespace adaptree {

PageStore::~PageStore() { clear(); }

void PageStore::clear() {
  for (uint8_t* c : chunks_) free(c);
  chunks_.clear();
  pages_.assign(1, nullptr);
  free_list_.clear();
}

Status PageStore::allocate(PageId* out) {
  if (free_list_.empty()) {
    if (uint64_t{pages_.size()} + kChunkPages >= (uint64_t{1} << 32)) return Status::kOutOfMemory;
    void* mem = nullptr;
    if (posix_memalign(&mem, kPageSize, size_t{kChunkPages} * kPageSize) != 0 || !mem)
      return Status::kOutOfMemory;
    chunks_.push_back(static_cast<uint8_t*>(mem));
    size_t first = pages_.size();
    for (uint32_t i = 0; i < kChunkPages; i++) pages_.push_back(static_cast<uint8_t*>(mem) + size_t{i} * kPageSize);
    // Hand out low ids first.
    for (uint32_t i = kChunkPages; i-- > 0;) {
      free_list_.push_back(static_cast<PageId>(first + i));
      pages_[first + i][0] = static_cast<uint8_t>(PageTag::kFree);
    }
  }
  *out = free_list_.back();
  free_list_.pop_back();
  return Status::kOk;
}

void PageStore::release(PageId id) {
  pages_[id][0] = static_cast<uint8_t>(PageTag::kFree);
  free_list_.push_back(id);
}

}  // namespace adaptree
