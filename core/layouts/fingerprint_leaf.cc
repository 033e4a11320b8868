#include "core/layouts/fingerprint_leaf.h"

#include "core/layouts/heap_room.h"

#include <algorithm>

#include "core/util/hash.h"
#include "core/util/simd.h"

namespace adaptree {

template <bool kChecked>
int FingerprintLeaf::find(Slice key) const {
  const unsigned plen = prefix_len(), n = count(), cap = fp_capacity();
  if constexpr (kChecked) {
    if (plen > key.len || n > cap || cap % simd::kMatchWidth != 0 || kFingerprints + cap + n * kSlotSize > kNodeSize)
      return -2;
  } else if (plen > key.len) [[unlikely]] {
    return -1;  // not a key of this leaf (see BasicNode::lower_bound)
  }
  const uint8_t* k = key.data + plen;
  uint32_t klen = key.len - plen;
  uint8_t fp = fingerprint(k, klen);
  const uint8_t* fps = p + kFingerprints;
  const uint8_t* slots = fps + cap;
  // The fingerprint area is a multiple of the SIMD width, so whole-vector
  // reads stay inside it; bits past count are masked off.
  for (unsigned base = 0; base < n; base += simd::kMatchWidth) {
    uint32_t m = simd::match(fps + base, fp);
    unsigned left = n - base;
    if (left < simd::kMatchWidth) m &= (1u << left) - 1;
    while (m) {
      unsigned i = base + __builtin_ctz(m);
      m &= m - 1;
      const uint8_t* s = slots + i * kSlotSize;
      if (load16(s + 2) != klen) continue;
      unsigned off = load16(s);
      if constexpr (kChecked) {
        if (off + klen > kNodeSize) return -2;
      }
      if (equal_bytes(p + off, k, klen)) return static_cast<int>(i);
    }
  }
  return -1;
}
template int FingerprintLeaf::find<false>(Slice) const;
template int FingerprintLeaf::find<true>(Slice) const;

bool FingerprintLeaf::lookup(Slice key, ValueRef* out) const {
  int i = find(key);
  if (i < 0) return false;
  *out = value_at(i);
  return true;
}

void FingerprintLeaf::make_gap(unsigned bytes) { make_heap_gap(p, kFingerprints + fp_capacity(), kSlotSize, count(), bytes); }

void FingerprintLeaf::compact() {
  unsigned cap = fp_capacity();
  compact_heap(
      p, count(), [&](unsigned i) { return p + kFingerprints + cap + i * kSlotSize; },
      [&](const uint8_t* src, unsigned i) {
        const uint8_t* s = src + kFingerprints + cap + i * kSlotSize;
        return static_cast<uint32_t>(load16(s + 2) + (load16(s + 4) & kValueLenMask));
      });
}

PutResult FingerprintLeaf::upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old, Room room) {
  unsigned vbytes = field & kValueLenMask;
  int i = find(key);
  unsigned plen = prefix_len();
  if (plen > key.len) [[unlikely]] return PutResult::kNoSpace;  // (BTree::set refuses such a key first)
  uint32_t klen = key.len - plen;
  if (i >= 0) {
    uint8_t* s = slot(i);
    uint16_t oldf = load16(s + 4);
    unsigned old_bytes = oldf & kValueLenMask;
    OldValue o;
    o.overflow = oldf & kOverflowFlag;
    o.first_page = o.overflow ? load32(p + load16(s) + klen) : kInvalidPageId;
    if (o.overflow && old->keep_overflow) return PutResult::kKeptOverflow;
    if (old_bytes == vbytes) {
      memcpy(p + load16(s) + klen, v, vbytes);
      store16(s + 4, field);
    } else {
      if (klen + vbytes > free_space_after_compaction() + klen + old_bytes) return PutResult::kNoSpace;
      store16(p + hdr::kHeapUsed, heap_used() - klen - old_bytes);
      store16(s + 2, 0);
      store16(s + 4, 0);
      if (klen + vbytes > free_space()) {
        if (room == Room::kMoveFew) make_gap(klen + vbytes);
        else compact();
        s = slot(i);
      }
      unsigned top = heap_start() - klen - vbytes;
      memcpy(p + top, key.data + plen, klen);
      memcpy(p + top + klen, v, vbytes);
      store16(s, top);
      store16(s + 2, klen);
      store16(s + 4, field);
      store16(p + hdr::kHeapStart, top);
      store16(p + hdr::kHeapUsed, heap_used() + klen + vbytes);
    }
    *old = o;
    return PutResult::kUpdated;
  }
  unsigned n = count(), cap = fp_capacity();
  unsigned grow = n == cap ? kFpGrain : 0;
  if (kSlotSize + klen + vbytes + grow > free_space_after_compaction()) return PutResult::kNoSpace;
  if (kSlotSize + klen + vbytes + grow > free_space()) {
    if (room == Room::kMoveFew) make_gap(kSlotSize + klen + vbytes + grow);
    else compact();
  }
  if (grow) {
    uint8_t* slots = p + kFingerprints + cap;
    memmove(slots + grow, slots, n * kSlotSize);
    memset(p + kFingerprints + cap, 0, grow);
    cap += grow;
    store16(p + kFpCapacity, cap);
  }
  unsigned top = heap_start() - klen - vbytes;
  memcpy(p + top, key.data + plen, klen);
  memcpy(p + top + klen, v, vbytes);
  uint8_t* s = p + kFingerprints + cap + n * kSlotSize;
  store16(s, top);
  store16(s + 2, klen);
  store16(s + 4, field);
  p[kFingerprints + n] = fingerprint(key.data + plen, klen);
  store16(p + hdr::kHeapStart, top);
  store16(p + hdr::kHeapUsed, heap_used() + klen + vbytes);
  store16(p + hdr::kCount, n + 1);
  return PutResult::kInserted;
}

bool FingerprintLeaf::remove(Slice key, OldValue* old) {
  int i = find(key);
  if (i < 0) return false;
  unsigned n = count();
  uint8_t* s = slot(i);
  uint16_t f = load16(s + 4);
  unsigned klen = load16(s + 2);
  const bool keep = old->keep_overflow;
  old->overflow = f & kOverflowFlag;
  old->first_page = old->overflow ? load32(p + load16(s) + klen) : kInvalidPageId;
  if (old->overflow && keep) return false;
  store16(p + hdr::kHeapUsed, heap_used() - klen - (f & kValueLenMask));
  memmove(s, s + kSlotSize, (n - i - 1) * kSlotSize);
  uint8_t* fps = p + kFingerprints;
  memmove(fps + i, fps + i + 1, n - i - 1);
  fps[n - 1] = 0;
  store16(p + hdr::kCount, n - 1);
  if (static_cast<unsigned>(i) < sorted()) store16(p + kSorted, sorted() - 1);
  return true;
}

namespace {
struct FpEntry {
  uint8_t slot[6];
  uint8_t fp;
};
}  // namespace

void FingerprintLeaf::sort() {
  unsigned n = count(), s0 = sorted();
  if (s0 == n) return;
  FpEntry entries[kNodeSize / 7 + 1];
  FpEntry merged[kNodeSize / 7 + 1];
  const uint8_t* fps = fingerprints();
  for (unsigned i = 0; i < n; i++) {
    memcpy(entries[i].slot, slot(i), kSlotSize);
    entries[i].fp = fps[i];
  }
  const uint8_t* page = p;
  auto less = [page](const FpEntry& a, const FpEntry& b) {
    return compare_bytes(page + load16(a.slot), load16(a.slot + 2), page + load16(b.slot), load16(b.slot + 2)) < 0;
  };
  std::sort(entries + s0, entries + n, less);
  std::merge(entries, entries + s0, entries + s0, entries + n, merged, less);
  uint8_t* f = p + kFingerprints;
  for (unsigned i = 0; i < n; i++) {
    memcpy(slot(i), merged[i].slot, kSlotSize);
    f[i] = merged[i].fp;
  }
  store16(p + kSorted, n);
}

int FingerprintLeaf::lower_bound(Slice key, bool* exact) const {
  unsigned plen = prefix_len();
  *exact = false;
  if (plen > key.len) [[unlikely]] return 0;  // (see BasicNode::lower_bound)
  const uint8_t* k = key.data + plen;
  uint32_t klen = key.len - plen;
  unsigned lo = 0, hi = count();
  *exact = false;
  while (lo < hi) {
    unsigned mid = (lo + hi) >> 1;
    const uint8_t* s = slot(mid);
    int c = compare_bytes(k, klen, p + load16(s), load16(s + 2));
    if (c < 0) hi = mid;
    else if (c > 0) lo = mid + 1;
    else {
      *exact = true;
      return mid;
    }
  }
  return lo;
}

void FingerprintLeaf::key_at(int pos, KeyBuffer* out) const {
  unsigned plen = prefix_len();
  Slice s = suffix(pos);
  memcpy(out->data, prefix(), plen);
  memcpy(out->data + plen, s.data, s.len);
  out->len = plen + s.len;
}

void FingerprintLeaf::extract(RecordRef* out) {
  sort();
  unsigned n = count(), plen = prefix_len();
  const uint8_t* pre = prefix();
  for (unsigned i = 0; i < n; i++) {
    const uint8_t* s = slot(i);
    uint16_t klen = load16(s + 2);
    out[i] = RecordRef{pre, p + load16(s), p + load16(s) + klen, static_cast<uint16_t>(plen), klen, load16(s + 4)};
  }
}

bool FingerprintLeaf::build(uint8_t* page, const Fences& f, bool prefix_truncation, const RecordRef* r, unsigned n,
                            uint8_t counter) {
  uint32_t plen = prefix_truncation ? fence_prefix_len(f) : 0;
  unsigned cap = (n / kFpGrain + 1) * kFpGrain;
  unsigned need = kFingerprints + n * kSlotSize + fences_bytes(f);
  for (unsigned i = 0; i < n; i++) {
    // A key shorter than the fences' common prefix lies outside them: records moved out of
    // pages that disagree with their parents (damaged or crafted). Not a leaf to build.
    if (r[i].key_len() < plen) [[unlikely]] return false;
    need += r[i].key_len() - plen + r[i].value_bytes();
  }
  if (need + cap > kNodeSize) {
    cap = ((n + kFpGrain - 1) / kFpGrain) * kFpGrain;
    if (cap == 0) cap = kFpGrain;
    if (need + cap > kNodeSize) return false;
  }
  memset(page, 0, kFingerprints + cap);
  page[hdr::kTag] = static_cast<uint8_t>(PageTag::kFingerprintLeaf);
  page[hdr::kCounter] = counter;
  store16(page + hdr::kPrefixLen, plen);
  store16(page + kFpCapacity, cap);
  uint32_t top = write_fences(page, f, kNodeSize);
  uint8_t* slots = page + kFingerprints + cap;
  for (unsigned i = 0; i < n; i++) {
    uint32_t klen = r[i].key_len() - plen, vbytes = r[i].value_bytes();
    top -= klen + vbytes;
    r[i].copy_key(plen, klen, page + top);
    memcpy(page + top + klen, r[i].val, vbytes);
    uint8_t* s = slots + i * kSlotSize;
    store16(s, top);
    store16(s + 2, klen);
    store16(s + 4, r[i].val_len);
    page[kFingerprints + i] = fingerprint(page + top, klen);
  }
  store16(page + hdr::kCount, n);
  store16(page + kSorted, n);
  store16(page + hdr::kHeapStart, top);
  store16(page + hdr::kHeapUsed, kNodeSize - top);
  return true;
}

}  // namespace adaptree
