// Fully dense leaf (paper, section 3.5, "FDLs"): all keys have length n and
// share the non-numeric part held by the lower fence, all values have the
// same size and are inline. A bitmap says which keys are present and the
// values form a plain array indexed by numeric offset from the reference key.
// The capacity is what fits in the page, even when the fences allow more
// keys; inserting past it splits "to self" (a new leaf takes the keys above
// the last slot). Space for an upper fence of length n is reserved so the
// upper fence can be lowered without moving anything.
//
//   off  size field
//   0    1    tag: 5
//   1    1    flags: 4 lower fence -inf, 8 upper fence +inf
//   2    2    count (records present)
//   4    2    capacity: slots for numeric parts ref .. ref + capacity - 1
//   6    2    value size (bytes of every value)
//   8    2    lower fence offset       10  2  lower fence length
//   12   2    upper fence offset       14  2  upper fence length
//   16   2    prefix length (0: keys are not stored)
//   18   1    operation counter (255: not used by dense leaves)
//   19   1    zero
//   20   2    key length n
//   22   2    bytes reserved for the upper fence (>= n)
//   24   4    ref: numeric part of the reference key
//   28   2    offset of the value array
//   30   2    zero
//   32   ...  presence bitmap, u64 words (bit i of word i/64 = slot i present)
//   then      values: capacity * value size bytes (garbage where absent)
//   page end  upper fence (reserved area), below it the lower fence
#pragma once
#include "core/layouts/record.h"
#include "core/layouts/node_common.h"

namespace adaptree {

struct FullyDenseLeaf {
  static constexpr unsigned kCapacity = 4, kValueSize = 6, kKeyLen = 20, kUpperReserve = 22, kRef = 24,
                            kValuesOff = 28, kBitmap = 32;
  uint8_t* p;

  unsigned count() const { return load16(p + hdr::kCount); }
  unsigned capacity() const { return load16(p + kCapacity); }
  unsigned value_size() const { return load16(p + kValueSize); }
  unsigned key_len() const { return load16(p + kKeyLen); }
  uint32_t ref() const { return load32(p + kRef); }
  const uint8_t* nonnumeric() const { return p + load16(p + hdr::kLowerOff); }
  bool present(unsigned i) const { return (load64(p + kBitmap + 8 * (i >> 6)) >> (i & 63)) & 1; }
  uint8_t* value_ptr(unsigned i) const { return p + load16(p + kValuesOff) + i * value_size(); }
  unsigned used_bytes() const;

  // Slot for key, or -1 if it does not have this leaf's format or lies past the capacity.
  int index_of(Slice key) const {
    unsigned n = key_len();
    if (key.len != n || (n > 4 && !equal_bytes(key.data, nonnumeric(), n - 4))) return -1;
    uint32_t v = (n >= 4 ? load_be32(key.data + n - 4) : numeric_short(key.data, n)) - ref();
    return v < capacity() ? static_cast<int>(v) : -1;
  }
  bool lookup(Slice key, ValueRef* out) const {
    int i = index_of(key);
    if (i < 0 || !present(i)) return false;
    *out = {value_ptr(i), static_cast<uint16_t>(value_size())};
    return true;
  }
  // lookup for an optimistic read (see Probe): every field read once, every offset checked.
  Probe lookup_checked(Slice key, ValueRef* out) const {
    const unsigned n = key_len(), lower = load16(p + hdr::kLowerOff), cap = capacity(), vs = value_size(),
                   values = load16(p + kValuesOff);
    if (key.len != n) return Probe::kAbsent;
    if (n > 4 && lower + (n - 4) > kNodeSize) return Probe::kBad;
    if (n > 4 && !equal_bytes(key.data, p + lower, n - 4)) return Probe::kAbsent;
    uint32_t v = (n >= 4 ? load_be32(key.data + n - 4) : numeric_short(key.data, n)) - ref();
    if (v >= cap) return Probe::kAbsent;
    if (kBitmap + 8 * (v >> 6) + 8 > kNodeSize || uint64_t{values} + uint64_t{v + 1} * vs > kNodeSize ||
        vs > kValueLenMask)
      return Probe::kBad;
    if (!((load64(p + kBitmap + 8 * (v >> 6)) >> (v & 63)) & 1)) return Probe::kAbsent;
    *out = {p + values + v * vs, static_cast<uint16_t>(vs)};
    return Probe::kFound;
  }
  PutResult upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old);
  bool remove(Slice key, OldValue* old);
  // True if key has this leaf's format and value size but lies past the last slot.
  bool beyond_capacity(Slice key, uint16_t field) const;
  int lower_bound(Slice key, bool* exact) const;
  int next_present(int pos) const;
  int prev_present(int pos) const;
  void key_at(int pos, KeyBuffer* out) const;
  ValueRef value_at(int pos) const { return {value_ptr(pos), static_cast<uint16_t>(value_size())}; }
  // Key of the last slot: the upper fence after a split to self.
  void last_slot_key(KeyBuffer* out) const { key_at(static_cast<int>(capacity()) - 1, out); }
  // Lowers the upper fence (len <= reserved bytes).
  void set_upper_fence(Slice s);
  unsigned extract(RecordRef* out, uint8_t* arena) const;

  // Builds a fully dense leaf; key_len/value_size describe the records (and
  // are required when n == 0). False if the records do not qualify or fit.
  static bool build(uint8_t* page, const Fences& f, const RecordRef* r, unsigned n, uint32_t key_len,
                    uint32_t value_size);
  // Largest i such that r[0, i) could form a fully dense leaf above lower fence
  // f.lower (used for the partition-aware split).
  static unsigned dense_prefix(const Fences& f, const RecordRef* r, unsigned n);
  static unsigned capacity_for(uint32_t lower_len, uint32_t reserve, uint32_t value_size);

 private:
  static uint32_t numeric_short(const uint8_t* k, unsigned n) {
    uint32_t v = 0;
    for (unsigned i = 0; i < n; i++) v = (v << 8) | k[i];
    return v;
  }
};

}  // namespace adaptree
