#include "core/buffer/page_bases.h"

#include <cassert>
#include <cstdlib>
#include <cstring>

#include "core/util/checked.h"

namespace adaptree {

PageBases::~PageBases() {
  for (uint8_t* c : chunks_) free(c);
}

void PageBases::keep(PageId id, const uint8_t* frame) {
  const LogRef* have = slots_.find(id);
  uint64_t idx = have ? have->off : used_;
  if (have) {
    LogRef r = *have;
    r.depth = 1;
    slots_.update(id, r);
  } else {
    if (used_ >= limit_) return;
    if (idx / kChunk >= chunks_.size()) {
      size_t bytes = size_t{kChunk} * kPageSize;
      if (!reserve_checked(chunks_, chunks_.size() + 1) || !can_allocate(bytes + (size_t{1} << 20))) return;
      uint8_t* chunk = static_cast<uint8_t*>(malloc(bytes));
      if (!chunk) return;
      chunks_.push_back(chunk);  // reserved above
    }
    LogRef r;
    r.off = idx;
    r.depth = 1;  // valid
    if (!slots_.put(id, r)) return;  // no memory: this page has no base
    used_++;
  }
  memcpy(chunks_[idx / kChunk] + (idx % kChunk) * kPageSize, frame, kPageSize);
}

void PageBases::keep_stored(PageId id, const uint8_t* frame, bool lossy, PageSum sum) {
  if (lossy) {
    if (!page_intact(frame, id, sum)) return;
  } else {
    assert(page_intact(frame, id, sum) && "a clean frame changed through page() without BufferPool::note_lossy");
  }
  keep(id, frame);
}

const uint8_t* PageBases::find(PageId id) const {
  const LogRef* r = slots_.find(id);
  if (!r || r->depth == 0) return nullptr;
  return chunks_[r->off / kChunk] + (r->off % kChunk) * kPageSize;
}

void PageBases::stale(PageId id) {
  if (const LogRef* b = slots_.find(id)) {
    LogRef s = *b;
    s.depth = 0;
    slots_.update(id, s);
  }
}

void PageBases::clear() {
  slots_.clear();
  used_ = 0;
  // Keep 1 MiB of copies for the next commit; give back the rest.
  while (chunks_.size() > 4) {
    free(chunks_.back());
    chunks_.pop_back();
  }
}

}  // namespace adaptree
