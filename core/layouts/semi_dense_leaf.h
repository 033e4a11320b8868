// Semi-dense leaf (paper, section 3.5, "SDLs"): one 16-bit slot for every
// possible key between the fences (all keys have length n and share the
// non-numeric part held by the lower fence); a slot points to a
// length-prefixed value on the heap, 0 = no record. Keys are implicit.
// When the fences allow more keys than a page holds slots for, the slots
// cover the lowest keys only (capacity, as in fully dense leaves); a key past
// the last slot splits the leaf to self. So does a key past every record
// when the heap is full; to lower the upper fence to a key without moving
// anything, inserts leave room for a fence of key length.
//
//   off  size field
//   0    1    tag: 4
//   1    1    flags: 4 lower fence -inf, 8 upper fence +inf
//   2    2    count (records present)
//   4    2    heap_start (heap grows down from the page end)
//   6    2    heap_used: live heap bytes (entries and fences)
//   8    2    lower fence offset       10  2  lower fence length
//   12   2    upper fence offset       14  2  upper fence length
//   16   2    prefix length (0: keys are not stored)
//   18   1    operation counter (255: not used by dense leaves)
//   19   1    zero
//   20   2    slot count: keys ref .. ref + slot count - 1 (numeric parts) are possible
//   22   2    key length n
//   24   4    ref: numeric part of the reference key (smallest length-n key above the lower fence)
//   28   2*sc slots: u16 heap offset of the entry, 0 = absent
// Heap entry: u16 value length (bit 15 overflow reference), value bytes.
#pragma once
#include "core/layouts/record.h"
#include "core/layouts/node_common.h"

namespace adaptree {

struct SemiDenseLeaf {
  static constexpr unsigned kSlotCount = 20, kKeyLen = 22, kRef = 24, kSlots = 28;
  uint8_t* p;

  unsigned count() const { return load16(p + hdr::kCount); }
  unsigned slot_count() const { return load16(p + kSlotCount); }
  unsigned key_len() const { return load16(p + kKeyLen); }
  uint32_t ref() const { return load32(p + kRef); }
  const uint8_t* nonnumeric() const { return p + load16(p + hdr::kLowerOff); }
  uint8_t* slot(unsigned i) const { return p + kSlots + 2 * i; }
  unsigned heap_start() const { return load16(p + hdr::kHeapStart); }
  unsigned heap_used() const { return load16(p + hdr::kHeapUsed); }
  unsigned slots_end() const { return kSlots + 2 * slot_count(); }
  unsigned free_space() const { return heap_start() - slots_end(); }
  unsigned free_space_after_compaction() const { return kNodeSize - heap_used() - slots_end(); }
  unsigned used_bytes() const { return kNodeSize - free_space_after_compaction(); }
  // Bytes kept free so the upper fence can become a key (split to self).
  unsigned fence_reserve() const {
    unsigned ul = load16(p + hdr::kUpperLen);
    return key_len() > ul ? key_len() - ul : 0;
  }
  // Heap bytes an insert may use.
  unsigned room() const {
    unsigned f = free_space_after_compaction();
    return f > fence_reserve() ? f - fence_reserve() : 0;
  }

  // Slot index for key, or -1 if the key cannot be stored here.
  int index_of(Slice key) const;
  // True if key has this leaf's format but lies past the last slot.
  bool beyond_capacity(Slice key) const;
  bool lookup(Slice key, ValueRef* out) const;
  // lookup for an optimistic read (see Probe): every field read once, every offset checked.
  Probe lookup_checked(Slice key, ValueRef* out) const;
  PutResult upsert(Slice key, const uint8_t* v, uint16_t field, OldValue* old);
  bool remove(Slice key, OldValue* old);
  int lower_bound(Slice key, bool* exact) const;
  int next_present(int pos) const;
  int prev_present(int pos) const;
  void key_at(int pos, KeyBuffer* out) const;
  ValueRef value_at(int pos) const {
    const uint8_t* e = p + load16(slot(pos));
    return {e + 2, load16(e)};
  }
  void compact();
  // Records in key order; keys' numeric parts are written to arena (4 bytes each).
  unsigned extract(RecordRef* out, uint8_t* arena) const;
  // One slot per key between the fences, or, if those do not fit, the
  // capacity (capacity_for) counted from the lower fence. False if the
  // records do not qualify or fit.
  static bool build(uint8_t* page, const Fences& f, const RecordRef* r, unsigned n);
  // Slots that fill the page when every one holds an entry of the average
  // size of n entries totalling entry_bytes (2-byte length prefix included).
  static uint64_t capacity_for(const Fences& f, uint32_t klen, uint64_t entry_bytes, unsigned n);
};

}  // namespace adaptree
