// Leaf operations dispatched on the layout tag (byte 0): a switch, no virtual
// calls. Each case forwards to the layout's own file. Positions: basic and
// fingerprint leaves have one position per record (fingerprint leaves must be
// sorted before positions are used); dense leaves have one position per slot,
// which may be empty.
#pragma once
#include "core/layouts/basic_node.h"
#include "core/layouts/record.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/semi_dense_leaf.h"

namespace adaptree {
namespace leaf {

inline PageTag tag(const uint8_t* p) { return static_cast<PageTag>(p[0]); }
inline bool is_leaf(const uint8_t* p) { return p[0] >= 2 && p[0] <= 5; }
inline unsigned count(const uint8_t* p) { return load16(p + hdr::kCount); }

inline bool read_old(const uint8_t* vptr, uint16_t field, OldValue* old) {
  old->overflow = field & kOverflowFlag;
  old->first_page = old->overflow ? load32(vptr) : kInvalidPageId;
  return true;
}

// ---- basic leaf
inline bool basic_lookup(uint8_t* p, Slice key, ValueRef* out) {
  BasicNode n{p};
  bool exact;
  unsigned pos = n.lower_bound(key.data, key.len, &exact);
  if (!exact) return false;
  out->ptr = n.value(pos);
  out->field = n.value_field(pos);
  return true;
}

inline PutResult basic_upsert(uint8_t* p, Slice key, const uint8_t* v, uint16_t field, OldValue* old, Room room) {
  BasicNode n{p};
  bool exact;
  unsigned pos = n.lower_bound(key.data, key.len, &exact);
  if (exact) {
    OldValue o;
    read_old(n.value(pos), n.value_field(pos), &o);
    if (o.overflow && old->keep_overflow) return PutResult::kKeptOverflow;
    if (!n.replace_value(pos, v, field, room)) return PutResult::kNoSpace;
    *old = o;
    return PutResult::kUpdated;
  }
  unsigned plen = n.prefix_len();
  if (plen > key.len) [[unlikely]] return PutResult::kNoSpace;  // (BTree::set refuses such a key first)
  if (n.entry_space(key.len - plen, field & kValueLenMask) > n.free_space_after_compaction())
    return PutResult::kNoSpace;
  n.insert_at(pos, key.data + plen, key.len - plen, v, field, room);
  return PutResult::kInserted;
}

inline bool basic_remove(uint8_t* p, Slice key, OldValue* old) {
  BasicNode n{p};
  bool exact;
  unsigned pos = n.lower_bound(key.data, key.len, &exact);
  if (!exact) return false;
  const bool keep = old->keep_overflow;
  read_old(n.value(pos), n.value_field(pos), old);
  if (old->overflow && keep) return false;
  n.remove_at(pos);
  return true;
}

// ---- dispatch
inline bool lookup(uint8_t* p, Slice key, ValueRef* out) {
  switch (tag(p)) {
    case PageTag::kBasicLeaf: return basic_lookup(p, key, out);
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{p}.lookup(key, out);
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.lookup(key, out);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.lookup(key, out);
    default: return false;
  }
}

// The value of a slot of the basic or fingerprint layout (u16 heap offset, u16 key
// length, u16 value field), checked to lie inside the node.
inline Probe slot_value_checked(const uint8_t* p, const uint8_t* slot, ValueRef* out) {
  if (slot + 6 > p + kNodeSize) return Probe::kBad;
  const unsigned at = load16(slot) + load16(slot + 2);
  const uint16_t field = load16(slot + 4);
  if (!value_in_node(at, field)) return Probe::kBad;
  *out = {p + at, field};
  return Probe::kFound;
}

// lookup on a page that may be changing under the reader (an optimistic read, which
// validates the page's version after): each layout reads every field once and checks
// every offset to stay inside the node, so a torn image gives kBad or a wrong answer
// (which the validation discards), never a read outside the page.
inline Probe lookup_checked(uint8_t* p, Slice key, ValueRef* out) {
  switch (tag(p)) {
    case PageTag::kBasicLeaf: {
      BasicNode n{p};
      bool exact;
      unsigned pos = n.lower_bound<true>(key.data, key.len, &exact);
      if (pos == BasicNode::kBadImage) return Probe::kBad;
      if (!exact) return Probe::kAbsent;
      return slot_value_checked(p, n.slot(pos), out);  // (the flags may have changed since lower_bound)
    }
    case PageTag::kFingerprintLeaf: {
      FingerprintLeaf f{p};
      int i = f.find<true>(key);
      if (i == -2) return Probe::kBad;
      if (i < 0) return Probe::kAbsent;
      return slot_value_checked(p, f.slot(i), out);  // (the capacity may have changed since find)
    }
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.lookup_checked(key, out);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.lookup_checked(key, out);
    default: return Probe::kBad;
  }
}

inline PutResult upsert(uint8_t* p, Slice key, const uint8_t* v, uint16_t field, OldValue* old, Room room = Room::kCompact) {
  switch (tag(p)) {
    case PageTag::kBasicLeaf: return basic_upsert(p, key, v, field, old, room);
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{p}.upsert(key, v, field, old, room);
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.upsert(key, v, field, old);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.upsert(key, v, field, old);
    default: return PutResult::kNoSpace;
  }
}

inline bool remove(uint8_t* p, Slice key, OldValue* old) {
  switch (tag(p)) {
    case PageTag::kBasicLeaf: return basic_remove(p, key, old);
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{p}.remove(key, old);
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.remove(key, old);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.remove(key, old);
    default: return false;
  }
}

inline unsigned positions(const uint8_t* p) {
  switch (tag(p)) {
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{const_cast<uint8_t*>(p)}.slot_count();
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{const_cast<uint8_t*>(p)}.capacity();
    default: return count(p);
  }
}

// First present position >= pos, or positions(p).
inline int next_present(const uint8_t* p, int pos) {
  switch (tag(p)) {
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{const_cast<uint8_t*>(p)}.next_present(pos);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{const_cast<uint8_t*>(p)}.next_present(pos);
    default: return pos < static_cast<int>(count(p)) ? pos : static_cast<int>(count(p));
  }
}

// Last present position <= pos, or -1.
inline int prev_present(const uint8_t* p, int pos) {
  switch (tag(p)) {
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{const_cast<uint8_t*>(p)}.prev_present(pos);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{const_cast<uint8_t*>(p)}.prev_present(pos);
    default: return pos < static_cast<int>(count(p)) ? pos : static_cast<int>(count(p)) - 1;
  }
}

// First position whose key is >= key; *exact if a record with key is there.
inline int lower_bound(uint8_t* p, Slice key, bool* exact) {
  switch (tag(p)) {
    case PageTag::kBasicLeaf: return BasicNode{p}.lower_bound(key.data, key.len, exact);
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{p}.lower_bound(key, exact);
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.lower_bound(key, exact);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.lower_bound(key, exact);
    default: *exact = false; return 0;
  }
}

inline void key_at(const uint8_t* p, int pos, KeyBuffer* out) {
  uint8_t* q = const_cast<uint8_t*>(p);
  switch (tag(p)) {
    case PageTag::kBasicLeaf: {
      BasicNode n{q};
      unsigned plen = n.prefix_len();
      Slice s = n.suffix(pos);
      copy_small(out->data, n.prefix(), plen);
      copy_small(out->data + plen, s.data, s.len);
      out->len = plen + s.len;
      return;
    }
    case PageTag::kFingerprintLeaf: FingerprintLeaf{q}.key_at(pos, out); return;
    case PageTag::kSemiDenseLeaf: SemiDenseLeaf{q}.key_at(pos, out); return;
    case PageTag::kFullyDenseLeaf: FullyDenseLeaf{q}.key_at(pos, out); return;
    default: out->len = 0; return;
  }
}

// Writes the suffix of record pos after the node's prefix, which `out` already holds.
template <class Node>
inline void replace_suffix(Node node, int pos, KeyBuffer* out) {
  unsigned plen = node.prefix_len();
  Slice s = node.suffix(pos);
  copy_small(out->data + plen, s.data, s.len);
  out->len = plen + s.len;
}

// Like key_at, for a buffer that already holds a key of this leaf: only the
// bytes after the part all its keys share (prefix, non-numeric part) change.
inline void key_tail_at(const uint8_t* p, int pos, KeyBuffer* out) {
  uint8_t* q = const_cast<uint8_t*>(p);
  switch (tag(p)) {
    case PageTag::kBasicLeaf: replace_suffix(BasicNode{q}, pos, out); return;
    case PageTag::kFingerprintLeaf: replace_suffix(FingerprintLeaf{q}, pos, out); return;
    case PageTag::kFullyDenseLeaf: {
      FullyDenseLeaf d{q};
      unsigned n = d.key_len();
      if (n < 4) break;
      store_be32(out->data + n - 4, d.ref() + pos);
      out->len = n;
      return;
    }
    default:
      break;
  }
  key_at(p, pos, out);
}

inline ValueRef value_at(const uint8_t* p, int pos) {
  uint8_t* q = const_cast<uint8_t*>(p);
  switch (tag(p)) {
    case PageTag::kBasicLeaf: return {BasicNode{q}.value(pos), BasicNode{q}.value_field(pos)};
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{q}.value_at(pos);
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{q}.value_at(pos);
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{q}.value_at(pos);
    default: return {};
  }
}

}  // namespace leaf
}  // namespace adaptree
