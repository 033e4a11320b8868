#include "core/layouts/fully_dense_leaf.h"

#include <initializer_list>

#include "core/layouts/dense_keys.h"

namespace adaptree {

namespace {
constexpr unsigned kMaxCapacity = 65535;
unsigned bitmap_bytes(unsigned cap) { return 8 * ((cap + 63) / 64); }
}  // namespace

unsigned FullyDenseLeaf::capacity_for(uint32_t lower_len, uint32_t reserve, uint32_t value_size) {
  if (kBitmap + lower_len + reserve + 8 >= kNodeSize) return 0;
  uint32_t limit = kNodeSize - lower_len - reserve;  // values and bitmap must end below this
  uint64_t avail = limit - kBitmap;
  uint64_t cap = avail * 8 / (8 * uint64_t{value_size} + 1);
  if (cap > kMaxCapacity) cap = kMaxCapacity;
  while (cap > 0 && kBitmap + bitmap_bytes(static_cast<unsigned>(cap)) + cap * value_size > limit) cap--;
  return static_cast<unsigned>(cap);
}

unsigned FullyDenseLeaf::used_bytes() const {
  return kBitmap + bitmap_bytes(capacity()) + count() * value_size() + load16(p + hdr::kLowerLen) +
         load16(p + kUpperReserve);
}

PutResult FullyDenseLeaf::upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old) {
  if (field != value_size()) return PutResult::kNoSpace;  // also rejects overflow references
  int i = index_of(key);
  if (i < 0) return PutResult::kNoSpace;
  memcpy(value_ptr(i), v, field);
  *old = OldValue{};
  if (present(i)) return PutResult::kUpdated;
  uint8_t* w = p + kBitmap + 8 * (i >> 6);
  store64(w, load64(w) | (uint64_t{1} << (i & 63)));
  store16(p + hdr::kCount, count() + 1);
  return PutResult::kInserted;
}

bool FullyDenseLeaf::remove(Slice key, OldValue* old) {
  int i = index_of(key);
  if (i < 0 || !present(i)) return false;
  uint8_t* w = p + kBitmap + 8 * (i >> 6);
  store64(w, load64(w) & ~(uint64_t{1} << (i & 63)));
  store16(p + hdr::kCount, count() - 1);
  *old = OldValue{};
  return true;
}

bool FullyDenseLeaf::beyond_capacity(Slice key, uint16_t field) const {
  if (field != value_size() || !dense::key_matches(key, key_len(), nonnumeric())) return false;
  uint32_t v = dense::numeric(key.data, key_len());
  return v >= ref() && v - ref() >= capacity();
}

int FullyDenseLeaf::lower_bound(Slice key, bool* exact) const {
  uint64_t idx = dense::lower_index(key, key_len(), nonnumeric(), ref(), capacity(), exact);
  if (*exact && !present(static_cast<unsigned>(idx))) *exact = false;
  return static_cast<int>(idx);
}

int FullyDenseLeaf::next_present(int pos) const {
  int cap = static_cast<int>(capacity());
  if (pos >= cap) return cap;
  unsigned word = pos >> 6;
  uint64_t bits = load64(p + kBitmap + 8 * word) & (~uint64_t{0} << (pos & 63));
  unsigned words = (cap + 63) / 64;
  for (;;) {
    if (bits) {
      int i = static_cast<int>(word * 64 + __builtin_ctzll(bits));
      return i < cap ? i : cap;
    }
    if (++word >= words) return cap;
    bits = load64(p + kBitmap + 8 * word);
  }
}

int FullyDenseLeaf::prev_present(int pos) const {
  int cap = static_cast<int>(capacity());
  if (pos >= cap) pos = cap - 1;
  if (pos < 0) return -1;
  int word = pos >> 6;
  unsigned sh = 63 - (pos & 63);
  uint64_t bits = (load64(p + kBitmap + 8 * word) << sh) >> sh;
  for (;;) {
    if (bits) return word * 64 + 63 - __builtin_clzll(bits);
    if (--word < 0) return -1;
    bits = load64(p + kBitmap + 8 * word);
  }
}

void FullyDenseLeaf::key_at(int pos, KeyBuffer* out) const {
  dense::encode(nonnumeric(), key_len(), ref() + pos, out->data);
  out->len = key_len();
}

void FullyDenseLeaf::set_upper_fence(Slice s) {
  memcpy(p + load16(p + hdr::kUpperOff), s.data, s.len);
  store16(p + hdr::kUpperLen, s.len);
  p[hdr::kFlags] &= ~kFlagUpperInf;
}

unsigned FullyDenseLeaf::extract(RecordRef* out, uint8_t* arena) const {
  unsigned n = key_len(), m = dense::nonnumeric_len(n), w = dense::width(n), k = 0, vs = value_size();
  for (int i = next_present(0), cap = static_cast<int>(capacity()); i < cap; i = next_present(i + 1)) {
    uint8_t full[kMaxKeySize];
    dense::encode(nonnumeric(), n, ref() + i, full);
    memcpy(arena + 4 * k, full + m, w);
    out[k] = RecordRef{nonnumeric(), arena + 4 * k, value_ptr(i), static_cast<uint16_t>(m), static_cast<uint16_t>(w),
                       static_cast<uint16_t>(vs)};
    k++;
  }
  return k;
}

bool FullyDenseLeaf::build(uint8_t* page, const Fences& f, const RecordRef* r, unsigned n, uint32_t klen,
                           uint32_t vs) {
  if (klen == 0 || klen > kMaxKeySize || vs > kValueLenMask) return false;
  uint32_t ref;
  uint64_t max;
  if (!dense::reference(f, klen, &ref) || !dense::maximum(f, klen, &max) || max < ref) return false;
  uint32_t reserve = f.upper_inf || f.upper.len < klen ? klen : f.upper.len;
  uint32_t lower_len = f.lower_inf ? 0 : f.lower.len;
  uint64_t cap = capacity_for(lower_len, reserve, vs);
  if (cap > max - ref + 1) cap = max - ref + 1;
  if (cap == 0) return false;
  uint32_t m = dense::nonnumeric_len(klen);
  for (unsigned i = 0; i < n; i++) {
    if (r[i].key_len() != klen || r[i].val_len != vs) return false;
    uint32_t v = r[i].numeric_tail();
    if (v < ref || v - ref >= cap) return false;
  }
  // Keys are sorted, so comparing the first and last record's non-numeric
  // part with the lower fence covers all of them.
  for (unsigned i : {0u, n ? n - 1 : 0u}) {
    if (i >= n) break;
    for (uint32_t b = 0; b < m; b++)
      if (r[i].key_byte(b) != f.lower.data[b]) return false;
  }
  unsigned c = static_cast<unsigned>(cap);
  unsigned values = kBitmap + bitmap_bytes(c);
  memset(page, 0, values);
  page[hdr::kTag] = static_cast<uint8_t>(PageTag::kFullyDenseLeaf);
  page[hdr::kFlags] = fence_flags(f);
  page[hdr::kCounter] = kCounterDisabled;
  store16(page + kCapacity, c);
  store16(page + kValueSize, vs);
  store16(page + kKeyLen, klen);
  store16(page + kUpperReserve, reserve);
  store32(page + kRef, ref);
  store16(page + kValuesOff, values);
  uint32_t upper_off = kNodeSize - reserve, lower_off = upper_off - lower_len;
  uint32_t ul = f.upper_inf ? 0 : f.upper.len;
  if (ul) memmove(page + upper_off, f.upper.data, ul);
  if (lower_len) memmove(page + lower_off, f.lower.data, lower_len);
  store16(page + hdr::kUpperOff, upper_off);
  store16(page + hdr::kUpperLen, ul);
  store16(page + hdr::kLowerOff, lower_off);
  store16(page + hdr::kLowerLen, lower_len);
  for (unsigned i = 0; i < n; i++) {
    unsigned idx = r[i].numeric_tail() - ref;
    memcpy(page + values + idx * vs, r[i].val, vs);
    uint8_t* w = page + kBitmap + 8 * (idx >> 6);
    store64(w, load64(w) | (uint64_t{1} << (idx & 63)));
  }
  store16(page + hdr::kCount, n);
  return true;
}

unsigned FullyDenseLeaf::dense_prefix(const Fences& f, const RecordRef* r, unsigned n) {
  if (n == 0) return 0;
  uint32_t klen = r[0].key_len(), vs = r[0].val_len, ref;
  uint64_t max;
  if (klen == 0 || (vs & kOverflowFlag) || !dense::reference(f, klen, &ref)) return 0;
  Fences open = f;
  open.upper_inf = true;
  if (!dense::maximum(open, klen, &max)) return 0;
  uint64_t cap = capacity_for(f.lower_inf ? 0 : f.lower.len, klen, vs);
  uint32_t m = dense::nonnumeric_len(klen);
  unsigned i = 0;
  for (; i < n; i++) {
    const RecordRef& x = r[i];
    if (x.key_len() != klen || x.val_len != vs) break;
    bool same = true;
    for (uint32_t b = 0; b < m && same; b++) same = x.key_byte(b) == f.lower.data[b];
    if (!same) break;
    uint32_t v = x.numeric_tail();
    if (v < ref || v - ref >= cap) break;
  }
  return i;
}

}  // namespace adaptree
