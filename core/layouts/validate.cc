// page_well_formed: see validate.h. One pass over the slots, no key comparisons; what each
// check keeps inside the page is said beside it.
#include "core/layouts/validate.h"

#include "core/layouts/basic_node.h"
#include "core/layouts/dense_keys.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/semi_dense_leaf.h"
#include "core/buffer/superblock.h"
#include "core/tree/overflow.h"

namespace adaptree {

namespace {

// The fences (fences_of, write_fences, prefix()): an infinite fence has length 0, a finite
// one lies inside [heap_lo, kNodeSize) and fits a KeyBuffer. The prefix is the lower
// fence's first bytes (prefix()), so it is no longer than that fence. Returns the bytes
// the fences take (heap_used counts them).
bool fences_ok(const uint8_t* p, unsigned heap_lo, unsigned heap_hi, uint32_t* bytes) {
  const uint8_t fl = p[hdr::kFlags];
  const unsigned lo = load16(p + hdr::kLowerOff), ll = load16(p + hdr::kLowerLen);
  const unsigned uo = load16(p + hdr::kUpperOff), ul = load16(p + hdr::kUpperLen);
  const unsigned plen = load16(p + hdr::kPrefixLen);
  if (((fl & kFlagLowerInf) && ll != 0) || ((fl & kFlagUpperInf) && ul != 0)) return false;
  if (ll > kMaxKeySize || ul > kMaxKeySize || plen > ll) return false;
  if (ll != 0 && (lo < heap_lo || lo + ll > heap_hi)) return false;
  if (ul != 0 && (uo < heap_lo || uo + ul > heap_hi)) return false;
  *bytes = ll + ul;
  return true;
}

// A value field (u16: bit 15 an overflow reference of 8 bytes, else the inline length).
inline bool value_field_ok(uint16_t field) {
  return !(field & kOverflowFlag) || (field & kValueLenMask) == kOverflowRefSize;
}

// The slotted layouts (basic inner and leaf, fingerprint): the slot array [base, slots_end)
// below heap_start, every entry (key suffix, then value) between heap_start and the node's
// end, every full key (prefix + suffix) within kMaxKeySize, and the live bytes no more than
// heap_used, itself no more than the room below the slots: compaction packs the live bytes
// from the end of the node down (compact_heap) and inserts trust heap_used for the room.
bool slotted_ok(const uint8_t* p, unsigned base, unsigned slot_size, bool inner) {
  const unsigned n = load16(p + hdr::kCount);
  const uint64_t slots_end = base + uint64_t{n} * slot_size;
  if (slots_end > kNodeSize) return false;
  const unsigned hs = load16(p + hdr::kHeapStart), hu = load16(p + hdr::kHeapUsed);
  if (hs < slots_end || hs > kNodeSize || hu > kNodeSize - slots_end) return false;
  uint32_t live;
  if (!fences_ok(p, hs, kNodeSize, &live)) return false;
  const unsigned plen = load16(p + hdr::kPrefixLen);
  for (unsigned i = 0; i < n; i++) {
    const uint8_t* s = p + base + i * slot_size;
    const unsigned off = load16(s), sl = load16(s + 2);
    const uint16_t vf = load16(s + 4);
    const unsigned vb = vf & kValueLenMask;
    if (inner ? vf != 4 : !value_field_ok(vf)) return false;  // inner: a child page id
    if ((sl + vb != 0 && off < hs) || off + sl + vb > kNodeSize || plen + sl > kMaxKeySize) return false;
    live += sl + vb;
  }
  return live <= hu;
}

bool basic_ok(const uint8_t* p, bool inner) {
  BasicNode b{const_cast<uint8_t*>(p)};
  return slotted_ok(p, b.slot_base(), b.slot_size(), inner);
}

// Fingerprints [24, 24 + capacity) (searched 32 at a time), one per slot; the sorted range
// within the slots.
bool fingerprint_ok(const uint8_t* p) {
  FingerprintLeaf f{const_cast<uint8_t*>(p)};
  const unsigned cap = f.fp_capacity(), n = f.count();
  if (cap % FingerprintLeaf::kFpGrain != 0 || n > cap || f.sorted() > n) return false;
  return slotted_ok(p, FingerprintLeaf::kFingerprints + cap, FingerprintLeaf::kSlotSize, false);
}

// Keys are implicit: the lower fence's first key_len - 4 bytes and a numeric part. Their
// length fits a KeyBuffer, and the lower fence holds the non-numeric part (key_at copies it).
bool dense_key_ok(const uint8_t* p, unsigned key_len) {
  if (key_len == 0 || key_len > kMaxKeySize) return false;
  const uint32_t m = dense::nonnumeric_len(key_len);
  return m == 0 || (!(p[hdr::kFlags] & kFlagLowerInf) && load16(p + hdr::kLowerLen) >= m);
}

// Slots [28, 28 + 2 x slot count) of heap offsets (0: absent), each entry a u16 value field
// and the value, inside the node; count is the entries present (extract fills count records).
bool semi_dense_ok(const uint8_t* p) {
  SemiDenseLeaf d{const_cast<uint8_t*>(p)};
  const unsigned sc = d.slot_count(), slots_end = d.slots_end();
  if (slots_end > kNodeSize || !dense_key_ok(p, d.key_len())) return false;
  const unsigned hs = d.heap_start(), hu = d.heap_used();
  if (hs < slots_end || hs > kNodeSize || hu > kNodeSize - slots_end) return false;
  uint32_t live;
  if (!fences_ok(p, hs, kNodeSize, &live)) return false;
  unsigned present = 0;
  for (unsigned i = 0; i < sc; i++) {
    const unsigned off = load16(p + SemiDenseLeaf::kSlots + 2 * i);
    if (off == 0) continue;
    if (off < hs || off + 2 > kNodeSize) return false;
    const uint16_t vf = load16(p + off);
    const unsigned vb = vf & kValueLenMask;
    if (!value_field_ok(vf) || off + 2 + vb > kNodeSize) return false;
    live += 2 + vb;
    present++;
  }
  return present == d.count() && live <= hu;
}

// Bitmap [32, 32 + 8 x words), values [values offset, + capacity x value size), then the
// lower fence and the reserved upper fence area at the end of the node; count is the bits
// set, none past the capacity (the scans walk whole bitmap words).
bool fully_dense_ok(const uint8_t* p) {
  FullyDenseLeaf d{const_cast<uint8_t*>(p)};
  const unsigned cap = d.capacity(), vs = d.value_size(), reserve = load16(p + FullyDenseLeaf::kUpperReserve);
  const unsigned values = load16(p + FullyDenseLeaf::kValuesOff);
  if (!dense_key_ok(p, d.key_len()) || vs > kValueLenMask || reserve > kMaxKeySize || reserve > kNodeSize) return false;
  const unsigned words = (cap + 63) / 64;
  const uint64_t values_end = values + uint64_t{cap} * vs;
  if (values < FullyDenseLeaf::kBitmap + 8 * words || values_end > kNodeSize - reserve) return false;
  uint32_t fence_bytes;
  if (!fences_ok(p, static_cast<unsigned>(values_end), kNodeSize, &fence_bytes)) return false;
  // The upper fence stays in the reserved area (set_upper_fence writes up to `reserve` there),
  // the lower one below it.
  const unsigned lo = load16(p + hdr::kLowerOff), ll = load16(p + hdr::kLowerLen);
  const unsigned uo = load16(p + hdr::kUpperOff), ul = load16(p + hdr::kUpperLen);
  if (ul > reserve || (ul != 0 && uo < kNodeSize - reserve) || (ll != 0 && lo + ll > kNodeSize - reserve)) return false;
  unsigned present = 0;
  for (unsigned w = 0; w < words; w++) {
    uint64_t bits = load64(p + FullyDenseLeaf::kBitmap + 8 * w);
    if (w + 1 == words && cap % 64 != 0 && (bits >> (cap % 64)) != 0) return false;
    present += static_cast<unsigned>(__builtin_popcountll(bits));
  }
  return present == d.count();
}

}  // namespace

bool page_well_formed(const uint8_t* p) {
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kFree: return true;
    case PageTag::kBasicInner: return basic_ok(p, true);
    case PageTag::kBasicLeaf: return basic_ok(p, false);
    case PageTag::kFingerprintLeaf: return fingerprint_ok(p);
    case PageTag::kSemiDenseLeaf: return semi_dense_ok(p);
    case PageTag::kFullyDenseLeaf: return fully_dense_ok(p);
    case PageTag::kOverflow: return load32(p + 8) <= kOverflowCapacity;
  }
  return p[0] == kFreeListTag;  // (decode_free_list_page checks its contents)
}

}  // namespace adaptree
