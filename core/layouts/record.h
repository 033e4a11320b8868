// What a leaf hands out and takes back about one record: types of a record,
// not of the tree, so that layouts and the tree both stand on them.
#pragma once
#include <cstdint>

#include "core/layouts/node_common.h"

namespace adaptree {

// A value as stored in a leaf: inline bytes (ptr points into the page), or an
// overflow reference (ptr points to the 8-byte reference in the page).
struct ValueRef {
  const uint8_t* ptr = nullptr;
  uint16_t field = 0;  // length | kOverflowFlag
  bool is_overflow() const { return field & kOverflowFlag; }
  uint64_t length() const { return is_overflow() ? load32(ptr + 4) : (field & kValueLenMask); }
};

// Result of a lookup on a page that may be changing under the reader (an optimistic
// read, validated after: leaf::lookup_checked): kBad where the image is inconsistent.
enum class Probe : uint8_t { kAbsent, kFound, kBad };

// Does a value of `field` stored at offset off lie inside the node?
inline bool value_in_node(unsigned off, uint16_t field) {
  return off + ((field & kOverflowFlag) ? kOverflowRefSize : (field & kValueLenMask)) <= kNodeSize;
}

// Result of an insert into one leaf. kKeptOverflow: the key's record holds a value with
// overflow pages and OldValue::keep_overflow asked to leave such a record alone.
enum class PutResult : uint8_t { kInserted, kUpdated, kNoSpace, kKeptOverflow };


// The value a put or remove displaced (to free its overflow chain).
struct OldValue {
  bool overflow = false;
  PageId first_page = kInvalidPageId;
  // In: leave a record whose value has overflow pages as it is (a write under the shared tree
  // latch, which cannot free the chain: BTree::set_shared). upsert then answers kKeptOverflow;
  // remove answers false with `overflow` set.
  bool keep_overflow = false;
};

}  // namespace adaptree
