#include "core/tree/overflow.h"

#include <cstring>

#include "core/page.h"

namespace adaptree {

uint64_t overflow_pages(uint64_t len) { return len == 0 ? 1 : (len + kOverflowCapacity - 1) / kOverflowCapacity; }

Status overflow_write(BufferPool& store, const uint8_t* data, uint64_t len, PageId* first) {
  uint64_t pages = overflow_pages(len);
  PageId prev = kInvalidPageId;
  *first = kInvalidPageId;
  // Build the chain back to front so every page is complete when linked.
  for (uint64_t i = pages; i-- > 0;) {
    PageId id;
    Status s = store.allocate(&id);
    if (s != Status::kOk) {
      if (prev != kInvalidPageId) overflow_free(store, prev);
      return s;
    }
    uint8_t* pg = store.page_mut(id);
    uint64_t off = i * kOverflowCapacity;
    uint32_t n = static_cast<uint32_t>(len - off < kOverflowCapacity ? len - off : kOverflowCapacity);
    memset(pg, 0, kOverflowHeader);
    pg[0] = static_cast<uint8_t>(PageTag::kOverflow);
    store32(pg + 4, prev);
    store32(pg + 8, n);
    if (n) memcpy(pg + kOverflowHeader, data + off, n);
    prev = id;
    store.end_protection();
  }
  *first = prev;
  return Status::kOk;
}

Status overflow_read(BufferPool& store, PageId id, uint64_t len, uint8_t* out) {
  uint64_t done = 0;
  return overflow_read_from(store, &id, len, out, &done);
}

Status overflow_read_from(BufferPool& store, PageId* at, uint64_t len, uint8_t* out, uint64_t* at_done) {
  alignas(16) uint8_t scratch[kPageSize];
  PageId id = *at;
  uint64_t done = *at_done;
  while (done < len) {
    const uint8_t* pg;
    Status s = store.view(id, scratch, &pg);
    if (s != Status::kOk) {
      *at = id;
      *at_done = done;
      return s;
    }
    if (pg[0] != static_cast<uint8_t>(PageTag::kOverflow)) return Status::kCorrupt;
    uint32_t n = load32(pg + 8);
    // (n == 0 short of the length: no progress, a chain that loops would read for ever)
    if (n == 0 || n > kOverflowCapacity || n > len - done) return Status::kCorrupt;
    memcpy(out + done, pg + kOverflowHeader, n);
    done += n;
    id = load32(pg + 4);
    if (done < len && id == kInvalidPageId) return Status::kCorrupt;
  }
  // The value's last page ends the chain (one that goes on loops, or is damaged).
  if (len > 0 && id != kInvalidPageId) return Status::kCorrupt;
  *at = id;
  *at_done = done;
  return Status::kOk;
}

Status overflow_free(BufferPool& store, PageId first) {
  // The whole chain first: a page that cannot be read, or a chain longer than the store
  // (it loops), fails before any page is freed (freeing a loop put the same ids on the free
  // list again and again). Then the same walk frees. (No list of the ids: this also frees
  // what a write out of memory had allocated.)
  alignas(16) uint8_t scratch[kPageSize];
  uint64_t pages = 0;
  for (PageId id = first; id != kInvalidPageId;) {
    const uint8_t* pg;
    Status s = store.view(id, scratch, &pg);
    if (s != Status::kOk) return s;
    if (pg[0] != static_cast<uint8_t>(PageTag::kOverflow) || ++pages > store.page_count()) return Status::kCorrupt;
    id = load32(pg + 4);
  }
  for (PageId id = first; id != kInvalidPageId;) {
    const uint8_t* pg;
    Status s = store.view(id, scratch, &pg);
    if (s != Status::kOk) return s;
    PageId next = load32(pg + 4);
    store.release(id);
    id = next;
  }
  return Status::kOk;
}

}  // namespace adaptree
