// Fingerprinting leaf (paper, section 3.4): an array of one-byte key hashes
// searched with SIMD locates point lookups without comparisons; inserts
// append to an unsorted range, which is sorted and merged into the sorted
// range lazily before scans and splits. Keys are prefix-truncated; the
// fingerprint hashes the truncated key.
//
//   off  size field
//   0    1    tag: 3
//   1    1    flags: 4 lower fence -inf, 8 upper fence +inf
//   2    2    count
//   4    2    heap_start (heap grows down from the page end)
//   6    2    heap_used: live heap bytes (entries and fences)
//   8    2    lower fence offset       10  2  lower fence length
//   12   2    upper fence offset       14  2  upper fence length
//   16   2    prefix length
//   18   1    operation counter (0..3, 255 = disabled)
//   19   1    zero
//   20   2    sorted: slots [0, sorted) are in key order, [sorted, count) unsorted
//   22   2    fingerprint capacity (bytes reserved for fingerprints, multiple of 32)
//   24   cap  fingerprints, one per slot
//   24+cap    slots: u16 heap offset, u16 key suffix length, u16 value length (bit 15 overflow)
// Heap entry: key suffix bytes, value bytes.
#pragma once
#include "core/layouts/record.h"
#include "core/layouts/node_common.h"

namespace adaptree {

struct FingerprintLeaf {
  static constexpr unsigned kSorted = 20, kFpCapacity = 22, kFingerprints = 24, kSlotSize = 6,
                            kFpGrain = 32;
  uint8_t* p;

  unsigned count() const { return load16(p + hdr::kCount); }
  unsigned sorted() const { return load16(p + kSorted); }
  unsigned fp_capacity() const { return load16(p + kFpCapacity); }
  const uint8_t* fingerprints() const { return p + kFingerprints; }
  uint8_t* slot(unsigned i) const { return p + kFingerprints + fp_capacity() + i * kSlotSize; }
  unsigned prefix_len() const { return load16(p + hdr::kPrefixLen); }
  const uint8_t* prefix() const { return p + load16(p + hdr::kLowerOff); }
  Slice suffix(unsigned i) const {
    const uint8_t* s = slot(i);
    return {p + load16(s), load16(s + 2)};
  }
  unsigned heap_start() const { return load16(p + hdr::kHeapStart); }
  unsigned heap_used() const { return load16(p + hdr::kHeapUsed); }
  unsigned slots_end() const { return kFingerprints + fp_capacity() + count() * kSlotSize; }
  unsigned free_space() const { return heap_start() - slots_end(); }
  unsigned free_space_after_compaction() const { return kNodeSize - heap_used() - slots_end(); }
  unsigned used_bytes() const { return kNodeSize - free_space_after_compaction(); }

  // Slot index of key, or -1 (SIMD fingerprint search; any order). kChecked (an
  // optimistic read, see BasicNode::lower_bound): every field read once and every
  // offset checked to stay inside the node; -2 where the image is inconsistent.
  template <bool kChecked = false>
  int find(Slice key) const;
  bool lookup(Slice key, ValueRef* out) const;
  PutResult upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old, Room room = Room::kCompact);
  bool remove(Slice key, OldValue* old);
  // Sorts the unsorted range into the sorted one (before scans and splits).
  void sort();
  bool is_sorted() const { return sorted() == count(); }
  // Requires is_sorted().
  int lower_bound(Slice key, bool* exact) const;
  void key_at(int pos, KeyBuffer* out) const;
  ValueRef value_at(int pos) const {
    const uint8_t* s = slot(pos);
    return {p + load16(s) + load16(s + 2), load16(s + 4)};
  }
  void compact();
  // Makes free_space() at least `bytes` by moving only the entries in the way (heap_room.h);
  // the caller checked free_space_after_compaction().
  void make_gap(unsigned bytes);
  // Records in key order (sorts first).
  void extract(RecordRef* out);
  static bool build(uint8_t* page, const Fences& f, bool prefix_truncation, const RecordRef* r, unsigned n,
                    uint8_t counter);
};

}  // namespace adaptree
