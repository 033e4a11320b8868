#include "core/layouts/semi_dense_leaf.h"

#include "core/layouts/dense_keys.h"

namespace adaptree {

int SemiDenseLeaf::index_of(Slice key) const {
  unsigned n = key_len();
  if (!dense::key_matches(key, n, nonnumeric())) return -1;
  uint32_t idx = dense::numeric(key.data, n) - ref();  // wraps for keys below ref
  return idx < slot_count() ? static_cast<int>(idx) : -1;
}

bool SemiDenseLeaf::lookup(Slice key, ValueRef* out) const {
  int i = index_of(key);
  if (i < 0) return false;
  unsigned off = load16(slot(i));
  if (!off) return false;
  *out = {p + off + 2, load16(p + off)};
  return true;
}

Probe SemiDenseLeaf::lookup_checked(Slice key, ValueRef* out) const {
  const unsigned n = key_len(), lower = load16(p + hdr::kLowerOff), slots = slot_count();
  if (key.len != n) return Probe::kAbsent;
  if (lower + dense::nonnumeric_len(n) > kNodeSize || kSlots + 2 * slots > kNodeSize) return Probe::kBad;
  if (!dense::key_matches(key, n, p + lower)) return Probe::kAbsent;
  uint32_t idx = dense::numeric(key.data, n) - ref();
  if (idx >= slots) return Probe::kAbsent;
  unsigned off = load16(slot(idx));
  if (!off) return Probe::kAbsent;
  if (off + 2 > kNodeSize) return Probe::kBad;
  uint16_t field = load16(p + off);
  if (!value_in_node(off + 2, field)) return Probe::kBad;
  *out = {p + off + 2, field};
  return Probe::kFound;
}

void SemiDenseLeaf::compact() {
  compact_heap(
      p, slot_count(), [&](unsigned i) { return load16(slot(i)) ? slot(i) : nullptr; },
      [&](const uint8_t* src, unsigned i) {
        return 2u + (load16(src + load16(src + kSlots + 2 * i)) & kValueLenMask);
      });
}

PutResult SemiDenseLeaf::upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old) {
  int i = index_of(key);
  if (i < 0) return PutResult::kNoSpace;
  unsigned vbytes = field & kValueLenMask;
  unsigned off = load16(slot(i));
  OldValue o;
  unsigned old_bytes = 0;
  if (off) {
    uint16_t of = load16(p + off);
    old_bytes = of & kValueLenMask;
    o.overflow = of & kOverflowFlag;
    o.first_page = o.overflow ? load32(p + off + 2) : kInvalidPageId;
    if (o.overflow && old->keep_overflow) return PutResult::kKeptOverflow;
    if (old_bytes == vbytes) {
      store16(p + off, field);
      memcpy(p + off + 2, v, vbytes);
      *old = o;
      return PutResult::kUpdated;
    }
    if (2 + vbytes > room() + 2 + old_bytes) return PutResult::kNoSpace;
    store16(p + hdr::kHeapUsed, heap_used() - 2 - old_bytes);
    store16(slot(i), 0);
  } else if (2 + vbytes > room()) {
    return PutResult::kNoSpace;
  }
  if (2 + vbytes > free_space()) compact();
  unsigned top = heap_start() - 2 - vbytes;
  store16(p + top, field);
  memcpy(p + top + 2, v, vbytes);
  store16(slot(i), top);
  store16(p + hdr::kHeapStart, top);
  store16(p + hdr::kHeapUsed, heap_used() + 2 + vbytes);
  if (off) {
    *old = o;
    return PutResult::kUpdated;
  }
  store16(p + hdr::kCount, count() + 1);
  return PutResult::kInserted;
}

bool SemiDenseLeaf::remove(Slice key, OldValue* old) {
  int i = index_of(key);
  if (i < 0) return false;
  unsigned off = load16(slot(i));
  if (!off) return false;
  uint16_t f = load16(p + off);
  const bool keep = old->keep_overflow;
  old->overflow = f & kOverflowFlag;
  old->first_page = old->overflow ? load32(p + off + 2) : kInvalidPageId;
  if (old->overflow && keep) return false;
  store16(p + hdr::kHeapUsed, heap_used() - 2 - (f & kValueLenMask));
  store16(slot(i), 0);
  store16(p + hdr::kCount, count() - 1);
  return true;
}

int SemiDenseLeaf::lower_bound(Slice key, bool* exact) const {
  uint64_t idx = dense::lower_index(key, key_len(), nonnumeric(), ref(), slot_count(), exact);
  if (*exact && !load16(slot(static_cast<unsigned>(idx)))) *exact = false;
  return static_cast<int>(idx);
}

int SemiDenseLeaf::next_present(int pos) const {
  int n = static_cast<int>(slot_count());
  while (pos < n && !load16(slot(pos))) pos++;
  return pos < n ? pos : n;
}

int SemiDenseLeaf::prev_present(int pos) const {
  if (pos >= static_cast<int>(slot_count())) pos = static_cast<int>(slot_count()) - 1;
  while (pos >= 0 && !load16(slot(pos))) pos--;
  return pos;
}

void SemiDenseLeaf::key_at(int pos, KeyBuffer* out) const {
  dense::encode(nonnumeric(), key_len(), ref() + pos, out->data);
  out->len = key_len();
}

unsigned SemiDenseLeaf::extract(RecordRef* out, uint8_t* arena) const {
  unsigned n = key_len(), m = dense::nonnumeric_len(n), w = dense::width(n), k = 0;
  for (unsigned i = 0, sc = slot_count(); i < sc; i++) {
    unsigned off = load16(slot(i));
    if (!off) continue;
    uint8_t full[kMaxKeySize];
    dense::encode(nonnumeric(), n, ref() + i, full);
    memcpy(arena + 4 * k, full + m, w);
    out[k] = RecordRef{nonnumeric(), arena + 4 * k, p + off + 2, static_cast<uint16_t>(m),
                       static_cast<uint16_t>(w), load16(p + off)};
    k++;
  }
  return k;
}

bool SemiDenseLeaf::beyond_capacity(Slice key) const {
  if (!dense::key_matches(key, key_len(), nonnumeric())) return false;
  uint32_t v = dense::numeric(key.data, key_len());
  return v >= ref() && v - ref() >= slot_count();
}

// Slots for a leaf whose fences allow more keys than fit: as many as the page
// holds once every slot has a value of the records' average size, keeping
// room to lower the upper fence to a key (split to self). Rounding the
// average down errs on the side of more slots: if values turn out larger, the
// heap fills first and the leaf splits to self at its last record.
uint64_t SemiDenseLeaf::capacity_for(const Fences& f, uint32_t klen, uint64_t entry_bytes, unsigned n) {
  uint32_t upper = f.upper_inf || f.upper.len < klen ? klen : f.upper.len;
  uint32_t fixed = kSlots + (f.lower_inf ? 0 : f.lower.len) + upper;
  if (fixed >= kNodeSize) return 0;
  uint64_t per_slot = 2 + (n ? entry_bytes / n : 2);
  uint64_t cap = (kNodeSize - fixed) / per_slot;
  return cap < kNodeSize / 2 ? cap : kNodeSize / 2;
}

bool SemiDenseLeaf::build(uint8_t* page, const Fences& f, const RecordRef* r, unsigned n) {
  if (n == 0) return false;
  uint32_t klen = r[0].key_len();
  uint32_t ref;
  uint64_t max;
  if (klen == 0 || !dense::reference(f, klen, &ref) || !dense::maximum(f, klen, &max) || max < ref) return false;
  uint32_t m = dense::nonnumeric_len(klen);
  uint64_t entries = 0;
  for (unsigned i = 0; i < n; i++) {
    if (r[i].key_len() != klen) return false;
    entries += 2 + r[i].value_bytes();
  }
  // One slot per key between the fences if they fit; otherwise the leaf
  // fills from the lower fence up to its capacity, like a fully dense leaf
  // (paper, section 3.5, "Dense Leaf Split"), so that ascending inserts
  // leave full leaves behind.
  uint64_t sc = max - ref + 1;
  uint32_t upper = f.upper_inf ? 0 : f.upper.len;
  uint64_t need = kSlots + fences_bytes(f) + entries + (upper < klen ? klen - upper : 0);  // + fence_reserve()
  if (sc > kNodeSize / 2 || need + 2 * sc > kNodeSize) {
    uint64_t cap = capacity_for(f, klen, entries, n);
    sc = cap < sc ? cap : sc;
  }
  if (sc == 0 || need + 2 * sc > kNodeSize) return false;
  for (unsigned i = 0; i < n; i++) {
    for (uint32_t b = 0; b < m; b++)
      if (r[i].key_byte(b) != f.lower.data[b]) return false;
    uint32_t v = r[i].numeric_tail();
    if (v < ref || v - ref >= sc) return false;
  }
  memset(page, 0, kSlots + 2 * sc);
  page[hdr::kTag] = static_cast<uint8_t>(PageTag::kSemiDenseLeaf);
  page[hdr::kCounter] = kCounterDisabled;
  store16(page + kSlotCount, static_cast<uint32_t>(sc));
  store16(page + kKeyLen, klen);
  store32(page + kRef, ref);
  uint32_t top = write_fences(page, f, kNodeSize);
  for (unsigned i = 0; i < n; i++) {
    uint32_t vb = r[i].value_bytes();
    top -= 2 + vb;
    store16(page + top, r[i].val_len);
    memcpy(page + top + 2, r[i].val, vb);
    store16(page + kSlots + 2 * (r[i].numeric_tail() - ref), top);
  }
  store16(page + hdr::kCount, n);
  store16(page + hdr::kHeapStart, top);
  store16(page + hdr::kHeapUsed, kNodeSize - top);
  return true;
}

}  // namespace adaptree
