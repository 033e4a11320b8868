// Overflow pages hold value bytes that do not fit inline in a leaf, as a
// chain of pages. The leaf stores an 8-byte reference (u32 first page id,
// u32 value length) with the overflow flag set in its value length.
//
//   off  size field
//   0    1    tag: 6 (overflow)
//   1    3    zero
//   4    4    next page id in the chain (0 = last page)
//   8    4    bytes of value data in this page
//   12   ...  value data
#pragma once
#include <cstdint>

#include "core/buffer/buffer_pool.h"
#include "core/status.h"

namespace adaptree {

constexpr uint32_t kOverflowHeader = 12;
constexpr uint32_t kOverflowCapacity = kNodeSize - kOverflowHeader;

// Chains can be far larger than the buffer pool: writing releases each page's
// protection as soon as it is written (the caller must hold no page pointers),
// reading and freeing stream pages through BufferPool::view.
//
// Writes len bytes into a new chain; on failure nothing stays allocated.
Status overflow_write(BufferPool& store, const uint8_t* data, uint64_t len, PageId* first);
// Copies the chain's bytes into out (which holds len bytes).
Status overflow_read(BufferPool& store, PageId first, uint64_t len, uint8_t* out);
// The same from page *id on, *done bytes of out being there already; where a page cannot be
// read (an asynchronous store's kNeedPage), *id and *done say where to go on.
Status overflow_read_from(BufferPool& store, PageId* id, uint64_t len, uint8_t* out, uint64_t* done);
Status overflow_free(BufferPool& store, PageId first);
uint64_t overflow_pages(uint64_t len);

}  // namespace adaptree
