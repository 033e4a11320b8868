// The superblock: page 0 of the data file, and the commit record of the log.
//
// What a commit makes durable besides page images is one StoreMeta (32 bytes):
//
//   off size field
//   0   4    root page id (0: the store has no tree yet)
//   4   4    tree height
//   8   8    record count
//   16  4    page count: the next new page id (the data file's high-water mark)
//   20  4    first page of the free-page list chain (0: no free pages)
//   24  4    free pages
//   28  1    layout configuration (core/config.h LayoutConfig)
//   29  1    key encoding the host recorded (0: none recorded; the core only keeps it)
//   30  1    value encoding the host recorded (0: none recorded)
//   31  1    zero
//
// Page 0 of the data file holds two superblock slots, at byte 0 and byte 2048;
// a checkpoint writes the older one, so a torn superblock write leaves the
// other intact. A slot (little-endian):
//
//   off size field
//   0   8    magic "ADAPTREE"
//   8   4    format version: 1, pages sealed with CRC-32C; 2, with page_hash (page_trailer.h)
//   12  4    page size (4096)
//   16  8    commit sequence number the data file holds
//   24  32   StoreMeta
//   56  4    CRC-32C of bytes [0, 56)
//
// The free-page list chain: pages tagged kFreeList (7), each
//   0 1 tag, 1 3 zero, 4 4 next chain page (0: last), 8 4 ids in this page,
//   12 ... u32 page ids
// Chain pages list themselves too: after a commit they are free again, and
// only the next commit (which writes a new chain) may reuse them.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/page.h"
#include "core/status.h"
#include "core/util/checked.h"
#include "core/util/hash.h"

namespace adaptree {

// Format versions (the page checksum: PageSum). New stores are version 2.
constexpr uint32_t kFormatVersionCrc = 1, kFormatVersionHash = 2;
constexpr uint32_t kSuperblockSlot = 2048;
constexpr uint32_t kSuperblockSize = 60;
constexpr uint8_t kFreeListTag = 7;
constexpr uint32_t kFreeListHeader = 12;
constexpr uint32_t kFreeListCapacity = (kNodeSize - kFreeListHeader) / 4;
constexpr char kStoreMagic[8] = {'A', 'D', 'A', 'P', 'T', 'R', 'E', 'E'};

struct StoreMeta {
  PageId root = kInvalidPageId;
  uint32_t height = 1;
  uint64_t count = 0;
  PageId page_count = 1;
  PageId free_head = kInvalidPageId;
  uint32_t free_count = 0;
  uint8_t layout = 7;
  // The host's key and value encodings (its own numbering; 0 = not recorded, as in
  // stores written before they were): opaque to the core, kept so that a store opened
  // with other encodings than it was written with is refused with a clear error.
  uint8_t key_encoding = 0;
  uint8_t value_encoding = 0;

  void encode(uint8_t* p) const {
    memset(p, 0, 32);
    store32(p, root);
    store32(p + 4, height);
    store64(p + 8, count);
    store32(p + 16, page_count);
    store32(p + 20, free_head);
    store32(p + 24, free_count);
    p[28] = layout;
    p[29] = key_encoding;
    p[30] = value_encoding;
  }
  void decode(const uint8_t* p) {
    root = load32(p);
    height = load32(p + 4);
    count = load64(p + 8);
    page_count = load32(p + 16);
    free_head = load32(p + 20);
    free_count = load32(p + 24);
    layout = p[28];
    key_encoding = p[29];
    value_encoding = p[30];
  }
};

inline void encode_superblock(uint8_t* slot, uint64_t seq, const StoreMeta& m, uint32_t version) {
  memset(slot, 0, kSuperblockSize);
  memcpy(slot, kStoreMagic, 8);
  store32(slot + 8, version);
  store32(slot + 12, kPageSize);
  store64(slot + 16, seq);
  m.encode(slot + 24);
  store32(slot + 56, checksum(slot, 56));
}

enum class SlotState { kValid, kBadChecksum, kForeign, kVersion };

inline SlotState decode_superblock(const uint8_t* slot, uint64_t* seq, StoreMeta* m, uint32_t* version) {
  if (memcmp(slot, kStoreMagic, 8) != 0) return SlotState::kForeign;
  if (load32(slot + 56) != checksum(slot, 56)) return SlotState::kBadChecksum;
  *version = load32(slot + 8);
  if ((*version != kFormatVersionCrc && *version != kFormatVersionHash) || load32(slot + 12) != kPageSize)
    return SlotState::kVersion;
  *seq = load64(slot + 16);
  m->decode(slot + 24);
  return SlotState::kValid;
}

// One chain page of the free-page list: appends its ids to *out and sets
// *next. kCorrupt if it is not a chain page or names a page out of range.
inline Status decode_free_list_page(const uint8_t* pg, PageId page_count, std::vector<PageId>* out, PageId* next) {
  uint32_t n = load32(pg + 8);
  if (pg[0] != kFreeListTag || n > kFreeListCapacity) return Status::kCorrupt;
  for (uint32_t i = 0; i < n; i++) {
    PageId f = load32(pg + kFreeListHeader + 4 * i);
    if (f == kInvalidPageId || f >= page_count) return Status::kCorrupt;
    if (!push_checked(*out, f)) return Status::kOutOfMemory;
  }
  *next = load32(pg + 4);
  return Status::kOk;
}

// Writes the chain of the free-page list ids: put(id, image) for each chain
// page (unsealed, kPageSize bytes; the chain pages are the last ids of the
// list, and list themselves). Returns the first chain page (0: empty list).
// Both pagers write it this way, so their page images are the same.
template <class Put>
PageId encode_free_list(const std::vector<PageId>& ids, Put&& put) {
  size_t n = ids.size();
  size_t chain = (n + kFreeListCapacity - 1) / kFreeListCapacity;
  alignas(16) uint8_t pg[kPageSize];
  PageId next = kInvalidPageId;
  for (size_t c = chain; c-- > 0;) {
    PageId id = ids[n - 1 - c];
    memset(pg, 0, kPageSize);
    pg[0] = kFreeListTag;
    store32(pg + 4, next);
    size_t from = c * kFreeListCapacity, to = from + kFreeListCapacity < n ? from + kFreeListCapacity : n;
    store32(pg + 8, static_cast<uint32_t>(to - from));
    for (size_t i = from; i < to; i++) store32(pg + kFreeListHeader + 4 * (i - from), ids[i]);
    put(id, pg);
    next = id;
  }
  return next;
}

}  // namespace adaptree
