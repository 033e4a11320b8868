// Logic shared by every node layout, written once: byte-order helpers, key
// comparison, heads, the common header prefix, fences, prefix bytes, the
// record view used to move records between nodes (split, merge, conversion,
// bulk load) and heap compaction for the slotted layouts.
//
// Common header prefix of every node page (all layouts keep these offsets):
//   off size field
//   0   1    layout tag (PageTag)
//   1   1    flags: 1 heads, 2 hints, 4 lower fence is -inf, 8 upper fence is +inf
//   2   2    count (records, or keys in inner nodes)
//   4   2    layout specific (slotted layouts: heap_start)
//   6   2    layout specific (slotted layouts: heap_used)
//   8   2    lower fence offset   10 2 lower fence length
//   12  2    upper fence offset   14 2 upper fence length
//   16  2    prefix length (bytes every key shares with both fences, omitted from stored keys)
//   18  1    operation counter (adaptive; 0..3, 255 = disabled)
//   19  1    zero
// Fences are stored untruncated. A node holds the keys k with lower < k <= upper;
// a fence flagged infinite has length 0 and is not compared.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/config.h"
#include "core/page.h"

namespace adaptree {

constexpr uint8_t kFlagHeads = 1;
constexpr uint8_t kFlagHints = 2;
constexpr uint8_t kFlagLowerInf = 4;
constexpr uint8_t kFlagUpperInf = 8;

constexpr uint8_t kCounterDisabled = 255;
constexpr uint8_t kCounterMax = 3;

namespace hdr {
constexpr unsigned kTag = 0, kFlags = 1, kCount = 2, kHeapStart = 4, kHeapUsed = 6, kLowerOff = 8,
                   kLowerLen = 10, kUpperOff = 12, kUpperLen = 14, kPrefixLen = 16, kCounter = 18,
                   kCommonSize = 20;
}

// Value lengths stored in leaves: bit 15 marks an overflow reference
// (u32 first overflow page, u32 value length) instead of inline bytes.
constexpr uint16_t kOverflowFlag = 0x8000;
constexpr uint16_t kValueLenMask = 0x7fff;
constexpr uint32_t kOverflowRefSize = 8;
// A value is stored inline if it is no larger than an overflow reference would
// be, or if key + value take at most kInlineRecordMax: what an empty leaf between
// two maximal fences (kMaxKeySize each) still takes, in every comparison-based
// layout (tests/core/medium_values_test.cc). A value past it goes to an overflow
// chain, at least a page. (The limit was a quarter page: a 1.3 KB value then cost a
// 4 KiB page, 3.2x its bytes, where SQLite keeps rows up to ~4 KB in its leaves.)
//
// Why any inline record can be placed. A leaf that cannot take a record splits
// (BTree::split_leaf) and the insert tries again in the half the key falls in:
// - One record and the new key: each gets a leaf of its own, between fences of at
//   most kMaxKeySize, which takes any inline record.
// - n >= 2 records: every 2-way split fits, whatever the records' sizes. The
//   separator between records j and j + 1 is the shortest prefix of key j + 1 above
//   key j, so no longer than either key + 1. The lower half trades the upper fence
//   for it (it is no longer than record j + 1, which leaves), the upper half the
//   lower fence (no longer than record j, which leaves, + 1, and the slot record j
//   frees is more than that byte). Under prefix truncation the records lose the
//   fences' common prefix, which both fences and the separator carry whole; the
//   halves' prefixes are no shorter. So each half needs no more than the leaf did,
//   in the leaf's layout. (A half build_leaf puts in a layout with a larger header, a
//   fingerprint leaf's half made basic, needs up to ~64 bytes more: the value of the
//   record that leaves pays for it unless that value is tiny, which no limit on
//   values changes; split_images then tries the other split points.)
constexpr uint32_t kInlineAlways = 16;
constexpr uint32_t kInlineRecordMax = kNodeSize - 2 * kMaxKeySize - 128;
static_assert(kInlineRecordMax > kNodeSize / 4 && kInlineRecordMax <= kValueLenMask);
inline bool value_is_inline(uint32_t key_len, uint64_t value_len) {
  return value_len <= kInlineAlways || key_len + value_len <= kInlineRecordMax;
}

// Bytes copy_small copies inline; past this, memcpy. In wasm every memcpy is memory.copy, a
// call out of the module (V8: memory_copy_wrapper, then libc memmove) that cost more than the
// copy for URL-sized keys: memmove was ~22% of an iteration over urls.
constexpr uint32_t kCopyInlineMax = 128;

// Starts the loads of a node's first `lines` cache lines at once (its header, hints and first
// slots), before the search that would otherwise miss on them one after another. Each load is
// independent of the others; the sum only keeps them from being dropped.
inline void touch_lines(const uint8_t* p, unsigned lines) {
  uint32_t acc = 0;
  for (unsigned i = 0; i < lines; i++) acc += p[i * 64];
  __asm__ volatile("" : : "r"(acc));
}

// memcpy for the keys and small values of the hot paths (dst and src do not overlap): no call
// up to kCopyInlineMax bytes. 17 bytes and up go in 16-byte pieces, the last one overlapping.
inline void copy_small(uint8_t* dst, const uint8_t* src, uint32_t n) {
  if (n > 16 && n <= kCopyInlineMax) {
    for (uint32_t i = 0; i + 16 < n; i += 16) {
      uint64_t a = load64(src + i), b = load64(src + i + 8);
      store64(dst + i, a);
      store64(dst + i + 8, b);
    }
    uint64_t a = load64(src + n - 16), b = load64(src + n - 8);
    store64(dst + n - 16, a);
    store64(dst + n - 8, b);
  } else if (n >= 8 && n <= 16) {
    uint64_t a = load64(src), b = load64(src + n - 8);
    store64(dst, a);
    store64(dst + n - 8, b);
  } else if (n >= 4 && n < 8) {
    uint32_t a = load32(src), b = load32(src + n - 4);
    store32(dst, a);
    store32(dst + n - 4, b);
  } else if (n < 4) {
    for (uint32_t i = 0; i < n; i++) dst[i] = src[i];
  } else {
    memcpy(dst, src, n);
  }
}

struct Slice {
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

// Lexicographic comparison, 8 bytes at a time (big-endian compare of the
// first differing word); inline because keys are short and wasm's libc
// memcmp compares byte by byte behind a call.
inline int compare_bytes(const uint8_t* a, uint32_t alen, const uint8_t* b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = load64(a + i), y = load64(b + i);
    if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
  }
  if (i + 4 <= n) {
    uint32_t x = load32(a + i), y = load32(b + i);
    if (x != y) return __builtin_bswap32(x) < __builtin_bswap32(y) ? -1 : 1;
    i += 4;
  }
  for (; i < n; i++)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return (alen > blen) - (alen < blen);
}
inline bool equal_bytes(const uint8_t* a, const uint8_t* b, uint32_t n) {
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    if (load64(a + i) != load64(b + i)) return false;
  if (i + 4 <= n) {
    if (load32(a + i) != load32(b + i)) return false;
    i += 4;
  }
  for (; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}
inline int compare(Slice a, Slice b) { return compare_bytes(a.data, a.len, b.data, b.len); }

inline uint32_t common_prefix(const uint8_t* a, uint32_t alen, const uint8_t* b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen, i = 0;
  while (i + 8 <= n) {
    uint64_t x = load64(a + i) ^ load64(b + i);
    if (x) return i + (__builtin_ctzll(x) >> 3);
    i += 8;
  }
  while (i < n && a[i] == b[i]) i++;
  return i;
}

// The head of a key: its first 4 bytes as a big-endian integer, zero padded,
// so that comparing heads as integers orders keys like memcmp does (ties need
// the full key).
inline uint32_t head_of(const uint8_t* k, uint32_t len) {
  if (len >= 4) return load_be32(k);
  uint32_t h = 0;
  for (uint32_t i = 0; i < len; i++) h |= static_cast<uint32_t>(k[i]) << (24 - 8 * i);
  return h;
}

struct Fences {
  Slice lower, upper;
  bool lower_inf = true, upper_inf = true;
};

inline Fences fences_of(const uint8_t* page) {
  Fences f;
  f.lower_inf = page[hdr::kFlags] & kFlagLowerInf;
  f.upper_inf = page[hdr::kFlags] & kFlagUpperInf;
  f.lower = {page + load16(page + hdr::kLowerOff), load16(page + hdr::kLowerLen)};
  f.upper = {page + load16(page + hdr::kUpperOff), load16(page + hdr::kUpperLen)};
  return f;
}

inline uint8_t fence_flags(const Fences& f) {
  return (f.lower_inf ? kFlagLowerInf : 0) | (f.upper_inf ? kFlagUpperInf : 0);
}

// Bytes shared by every key in (lower, upper]: the common prefix of the fences.
inline uint32_t fence_prefix_len(const Fences& f) {
  if (f.lower_inf || f.upper_inf) return 0;
  return common_prefix(f.lower.data, f.lower.len, f.upper.data, f.upper.len);
}

// Is key inside (lower, upper]?
inline bool key_in_fences(const Fences& f, Slice k) {
  if (!f.lower_inf && compare(k, f.lower) <= 0) return false;
  if (!f.upper_inf && compare(k, f.upper) > 0) return false;
  return true;
}

// A record being moved between nodes. The full key is pre ++ suf (pre is the
// source node's prefix, taken from its lower fence). val_len carries the
// overflow flag; for inner nodes the value is the 4-byte child page id.
struct RecordRef {
  const uint8_t* pre;
  const uint8_t* suf;
  const uint8_t* val;
  uint16_t pre_len;
  uint16_t suf_len;
  uint16_t val_len;

  uint32_t key_len() const { return pre_len + suf_len; }
  uint32_t value_bytes() const { return val_len & kValueLenMask; }
  uint8_t key_byte(uint32_t i) const { return i < pre_len ? pre[i] : suf[i - pre_len]; }
  // Copies key bytes [from, from + n) to dst.
  void copy_key(uint32_t from, uint32_t n, uint8_t* dst) const {
    if (from < pre_len) {
      uint32_t a = pre_len - from < n ? pre_len - from : n;
      memcpy(dst, pre + from, a);
      dst += a;
      n -= a;
      from = pre_len;
    }
    if (n) memcpy(dst, suf + (from - pre_len), n);
  }
  uint32_t head_at(uint32_t from) const {
    uint8_t b[4] = {0, 0, 0, 0};
    uint32_t len = key_len();
    uint32_t n = from < len ? (len - from < 4 ? len - from : 4) : 0;
    copy_key(from, n, b);
    return load_be32(b);
  }
  uint32_t numeric_tail() const;  // big-endian value of the last min(4, len) bytes
};

inline uint32_t RecordRef::numeric_tail() const {
  uint32_t len = key_len();
  uint32_t w = len < 4 ? len : 4;
  uint8_t b[4] = {0, 0, 0, 0};
  copy_key(len - w, w, b + (4 - w));
  return load_be32(b);
}

int compare_records(const RecordRef& a, const RecordRef& b);
uint32_t common_prefix_records(const RecordRef& a, const RecordRef& b);
int compare_record_key(const RecordRef& a, Slice k);

// Copy of a full key in a fixed buffer (fences, separators, cursor anchors).
struct KeyBuffer {
  uint8_t data[kMaxKeySize];
  uint32_t len = 0;
  Slice slice() const { return {data, len}; }
  void assign(Slice s) { memcpy(data, s.data, s.len); len = s.len; }
  void assign(const RecordRef& r, uint32_t n) { r.copy_key(0, n, data); len = n; }
};

// Fence storage used by the slotted layouts (basic, fingerprint, semi-dense):
// both fences are written to the top of the heap at initialisation.
// Returns the new heap_start.
inline uint32_t write_fences(uint8_t* page, const Fences& f, uint32_t heap_start) {
  uint32_t ul = f.upper_inf ? 0 : f.upper.len, ll = f.lower_inf ? 0 : f.lower.len;
  heap_start -= ul;
  if (ul) memmove(page + heap_start, f.upper.data, ul);
  store16(page + hdr::kUpperOff, heap_start);
  store16(page + hdr::kUpperLen, ul);
  heap_start -= ll;
  if (ll) memmove(page + heap_start, f.lower.data, ll);
  store16(page + hdr::kLowerOff, heap_start);
  store16(page + hdr::kLowerLen, ll);
  page[hdr::kFlags] = (page[hdr::kFlags] & ~(kFlagLowerInf | kFlagUpperInf)) | fence_flags(f);
  return heap_start;
}

inline uint32_t fences_bytes(const Fences& f) {
  return (f.lower_inf ? 0 : f.lower.len) + (f.upper_inf ? 0 : f.upper.len);
}

// How a slotted leaf short of contiguous room makes it: kCompact repacks the whole heap (one
// pass; every entry moves, so a commit logs the page whole), kMoveFew moves only the entries in
// the way (make_gap: more work, a small delta). Async stores (IndexedDB, Durable Objects), whose
// commits cost by their bytes, use kMoveFew; maps and file stores kCompact (session 24: on node
// files kMoveFew and rebased regroups cost a 1000-record commit +20% CPU for a third fewer log
// bytes, which the page cache and one fdatasync do not charge for).
enum class Room : uint8_t { kCompact, kMoveFew };

// Heap compaction for slotted layouts, written once: every live heap entry is
// repacked at the end of the page, fences first. slot_entry(i) returns a
// pointer to the u16 heap-offset field of slot i (or nullptr for an empty
// slot) and entry_len(src, i) the entry's size in bytes, read from src, an
// unmodified copy of the page.
template <class SlotEntry, class EntryLen>
void compact_heap(uint8_t* page, unsigned slots, SlotEntry slot_entry, EntryLen entry_len) {
  alignas(16) uint8_t copy[kPageSize];
  memcpy(copy, page, kPageSize);
  Fences f = fences_of(copy);
  uint32_t top = write_fences(page, f, kNodeSize);
  for (unsigned i = 0; i < slots; i++) {
    uint8_t* off_field = slot_entry(i);
    if (!off_field) continue;
    uint32_t len = entry_len(static_cast<const uint8_t*>(copy), i);
    top -= len;
    memcpy(page + top, copy + load16(off_field), len);
    store16(off_field, top);
  }
  store16(page + hdr::kHeapStart, top);
  store16(page + hdr::kHeapUsed, kNodeSize - top);
}

// A small deterministic PRNG for the operation counter's probabilities.
struct XorShift32 {
  uint32_t s = 0x9E3779B9u;
  uint32_t next() {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
  }
};

}  // namespace adaptree
