// Basic node: the comparison-based slotted page of the paper (section 2), used
// for every inner node and for comparison-based leaves. Prefix truncation,
// heads and hints (section 3.1-3.3) are switched per node by flags.
//
//   off  size field
//   0    1    tag: 1 inner, 2 leaf
//   1    1    flags: 1 heads, 2 hints, 4 lower fence -inf, 8 upper fence +inf
//   2    2    count: number of slots
//   4    2    heap_start: lowest heap offset in use (the heap grows down from the page end)
//   6    2    heap_used: live heap bytes (entries and fences); the rest is garbage until compaction
//   8    2    lower fence offset       10  2  lower fence length
//   12   2    upper fence offset       14  2  upper fence length
//   16   2    prefix length: common prefix of the fences, omitted from every stored key
//   18   1    operation counter (adaptive leaves: 0..3, 255 = disabled)
//   19   1    zero
//   20   4    upper child page id (inner nodes: child for keys > the last key), else 0
//   24   64   hints: 16 u32 heads sampled from the slots (only when flag hints is set)
//   24 or 88  slots, sorted by key, each:
//             +0 u16 heap offset of the entry, +2 u16 key suffix length,
//             +4 u16 value length (bit 15: the value is an overflow reference),
//             +6 u32 head (only when flag heads is set; unaligned)
// Heap entry: key suffix bytes (key minus prefix) then value bytes; in inner
// nodes the value is the u32 page id of the child holding keys <= the key.
#pragma once
#include <cstdint>

#include "core/layouts/node_common.h"

namespace adaptree {

struct BasicNode {
  static constexpr unsigned kUpperChild = 20;
  static constexpr unsigned kHintsOffset = 24;
  static constexpr unsigned kHintCount = 16;
  static constexpr unsigned kSlotsPlain = 24;
  static constexpr unsigned kSlotsHinted = kHintsOffset + 4 * kHintCount;

  uint8_t* p;

  unsigned count() const { return load16(p + hdr::kCount); }
  bool is_leaf() const { return p[0] == static_cast<uint8_t>(PageTag::kBasicLeaf); }
  bool has_heads() const { return p[hdr::kFlags] & kFlagHeads; }
  bool has_hints() const { return p[hdr::kFlags] & kFlagHints; }
  unsigned slot_base() const { return has_hints() ? kSlotsHinted : kSlotsPlain; }
  unsigned slot_size() const { return has_heads() ? 10 : 6; }
  uint8_t* slot(unsigned i) const { return p + slot_base() + i * slot_size(); }
  unsigned prefix_len() const { return load16(p + hdr::kPrefixLen); }
  const uint8_t* prefix() const { return p + load16(p + hdr::kLowerOff); }
  Slice suffix(unsigned i) const {
    const uint8_t* s = slot(i);
    return {p + load16(s), load16(s + 2)};
  }
  uint16_t value_field(unsigned i) const { return load16(slot(i) + 4); }
  const uint8_t* value(unsigned i) const {
    const uint8_t* s = slot(i);
    return p + load16(s) + load16(s + 2);
  }
  PageId upper_child() const { return load32(p + kUpperChild); }
  void set_upper_child(PageId c) { store32(p + kUpperChild, c); }
  PageId child(unsigned i) const { return i < count() ? load32(value(i)) : upper_child(); }
  void set_child(unsigned i, PageId c) {
    if (i < count()) store32(const_cast<uint8_t*>(value(i)), c);
    else set_upper_child(c);
  }
  uint32_t head(unsigned i) const { return load32(slot(i) + 6); }

  unsigned heap_start() const { return load16(p + hdr::kHeapStart); }
  unsigned heap_used() const { return load16(p + hdr::kHeapUsed); }
  unsigned free_space() const { return heap_start() - (slot_base() + count() * slot_size()); }
  unsigned free_space_after_compaction() const {
    return kNodeSize - heap_used() - (slot_base() + count() * slot_size());
  }
  // Bytes a page image needs for the live content (used for merge decisions and fill).
  unsigned used_bytes() const { return kNodeSize - free_space_after_compaction(); }
  unsigned entry_space(unsigned suffix_len, unsigned value_bytes) const {
    return slot_size() + suffix_len + value_bytes;
  }

  // Position of the first slot whose key is >= key (full key, prefix included:
  // the caller guarantees the key lies within the fences, so it has the prefix).
  // kChecked (an optimistic read: the page may be changing under the caller, who
  // validates its version after): every field is read once and every offset is
  // checked to stay inside the node; kBadImage where the image is inconsistent.
  template <bool kChecked = false>
  unsigned lower_bound(const uint8_t* key, uint32_t len, bool* exact) const;
  static constexpr unsigned kBadImage = ~0u;
  // Child page id to follow for key (inner nodes).
  PageId child_for(const uint8_t* key, uint32_t len) const {
    bool exact;
    return child(lower_bound(key, len, &exact));
  }
  // child_for on an image that may be changing (an optimistic read; see lower_bound):
  // kInvalidPageId where the image is inconsistent. The caller validates before it
  // follows the id.
  PageId child_for_checked(const uint8_t* key, uint32_t len) const {
    bool exact;
    unsigned pos = lower_bound<true>(key, len, &exact);
    return pos == kBadImage ? kInvalidPageId : child_checked(pos);
  }
  // child_after, checked as child_for_checked.
  PageId child_after_checked(const uint8_t* key, uint32_t len) const {
    bool exact;
    unsigned pos = lower_bound<true>(key, len, &exact);
    return pos == kBadImage ? kInvalidPageId : child_checked(pos + (exact ? 1 : 0));
  }
  // child(i) on an image that may be changing: kInvalidPageId where its slot or value
  // would lie outside the node.
  PageId child_checked(unsigned i) const {
    if (i >= count()) return upper_child();
    const uint8_t* s = slot(i);  // (the flags may have changed since lower_bound read them)
    if (s + 6 > p + kNodeSize) return kInvalidPageId;
    unsigned at = load16(s) + load16(s + 2);
    return at + 4 <= kNodeSize ? load32(p + at) : kInvalidPageId;
  }
  // Child for the keys strictly greater than key (used to find the next leaf).
  PageId child_after(const uint8_t* key, uint32_t len) const {
    bool exact;
    unsigned pos = lower_bound(key, len, &exact);
    return child(pos + (exact ? 1 : 0));
  }

  // Inserts (suffix, value) at pos; the caller checked entry_space() against
  // free_space_after_compaction(). Compacts the heap when needed.
  void insert_at(unsigned pos, const uint8_t* suffix, unsigned suffix_len, const uint8_t* value,
                 uint16_t value_field, Room room = Room::kCompact);
  void remove_at(unsigned pos);
  // Offset of the lowest gap in the heap (between heap_start and the page
  // end) that takes bytes, or -1.
  int find_hole(unsigned bytes) const;
  // Replaces the value of slot pos if the new one fits; false otherwise (node unchanged).
  bool replace_value(unsigned pos, const uint8_t* value, uint16_t value_field, Room room = Room::kCompact);
  void compact();
  void make_hints();
  void update_hints(unsigned pos);

  // Records of this node in key order; out must hold count() entries. The
  // refs point into this page.
  void extract(RecordRef* out) const;

  // Writes the node `fresh` (a compact image build() made) over this page, an earlier image
  // of a basic node with the same tag, layout flags and prefix length: the entries and
  // fences this page holds already with the same bytes stay where they are, the others go
  // into its free bytes. The page then differs from what it was in its slots, header and
  // what moved in, so a commit logs a delta of it instead of the whole page (a split or a
  // regroup rebuilt leaves whole: most of a commit's log bytes). The node is the same as
  // fresh for every reader (heap_used included). False, page unchanged, when the pages do
  // not match or the free bytes do not take the rest: the caller copies fresh.
  // reserve: bytes above the slots that the heap leaves free (make_gap).
  bool rebase(const uint8_t* fresh, unsigned reserve = 0);
  // Makes free_space() at least `bytes` (the caller checked free_space_after_compaction()):
  // the entries below that room move up into the heap's gaps and the others stay (rebase),
  // or, where the gaps do not take them, the heap is compacted. A compaction moved every
  // entry, and a commit then logged the whole page.
  void make_gap(unsigned bytes);
  // free_space() at least `bytes`, the way `room` says.
  void make_room(unsigned bytes, Room room) {
    if (room == Room::kMoveFew) make_gap(bytes);
    else compact();
  }
  // make_gap's way when the gaps do not take the entries: the lowest entries, as few as
  // give `bytes` of room above the slots, packed up against the next one (a compaction of
  // the bottom of the heap only; the whole heap when that is what it takes).
  void compact_bottom(unsigned bytes);

  // Size a node with these fences and records would need.
  static unsigned space_needed(uint8_t layout_flags, const Fences& f, uint32_t prefix_len,
                               const RecordRef* r, unsigned n);
  // Writes a node image into page (which must not overlap the records or
  // fences). Returns false, page undefined, if the records do not fit.
  static bool build(uint8_t* page, PageTag tag, uint8_t layout_flags, const Fences& f,
                    bool prefix_truncation, const RecordRef* r, unsigned n, PageId upper_child,
                    uint8_t counter);

 private:
  void search_hints(unsigned n, uint32_t key_head, unsigned* lo, unsigned* hi) const;
};

// The longest key a tree without prefix truncation (`baseline`) takes. Its nodes keep keys and
// fences whole, so an inner node must hold two fences and two separators (with their 6-byte
// slots and 4-byte children): else a node of one separator splits into two of none, and chains
// of one-child inner nodes grow the tree a level every few inserts (a probe, session 32: 872
// keys of 1020 bytes in five interleaved runs reached the height limit). With 4 KiB pages 1011.
constexpr uint32_t kMaxKeySizeUntruncated =
    (kNodeSize - BasicNode::kSlotsPlain - 2 * (6 + 4)) / 4 < kMaxKeySize
        ? (kNodeSize - BasicNode::kSlotsPlain - 2 * (6 + 4)) / 4
        : kMaxKeySize;

// (n: the count the caller read; the range stays inside [0, n].)
inline void BasicNode::search_hints(unsigned n, uint32_t key_head, unsigned* lo, unsigned* hi) const {
  if (n <= 2 * kHintCount) return;
  unsigned dist = n / (kHintCount + 1);
  const uint8_t* h = p + kHintsOffset;
  unsigned pos = 0;
  while (pos < kHintCount && load32(h + 4 * pos) < key_head) pos++;
  unsigned pos2 = pos;
  while (pos2 < kHintCount && load32(h + 4 * pos2) == key_head) pos2++;
  *lo = pos * dist;
  if (pos2 < kHintCount) *hi = (pos2 + 1) * dist;
}

template <bool kChecked>
inline unsigned BasicNode::lower_bound(const uint8_t* key, uint32_t len, bool* exact) const {
  const uint8_t flags = p[hdr::kFlags];
  const unsigned plen = prefix_len(), n = count();
  const unsigned base = (flags & kFlagHints) ? kSlotsHinted : kSlotsPlain;
  *exact = false;
  if constexpr (kChecked) {
    if (plen > len || base + n * ((flags & kFlagHeads) ? 10u : 6u) > kNodeSize) return kBadImage;
  } else if (plen > len) [[unlikely]] {
    // A key inside the fences has the prefix: this one was routed here by a damaged (or
    // crafted) parent. Any position is as wrong; this one reads nothing past the key.
    return 0;
  }
  key += plen;
  len -= plen;
  unsigned lo = 0, hi = n;
  const uint8_t* slots = p + base;
  if (flags & kFlagHeads) {
    uint32_t kh = head_of(key, len);
    if (flags & kFlagHints) search_hints(n, kh, &lo, &hi);
    while (lo < hi) {
      unsigned mid = (lo + hi) >> 1;
      const uint8_t* s = slots + mid * 10;
      uint32_t sh = load32(s + 6);
      if (kh < sh) {
        hi = mid;
      } else if (kh > sh) {
        lo = mid + 1;
      } else {
        unsigned slen = load16(s + 2);
        int c;
        if (len <= 4 && slen <= 4) {
          c = static_cast<int>(len) - static_cast<int>(slen);
        } else {
          unsigned off = load16(s);
          if constexpr (kChecked) {
            if (off + slen > kNodeSize) return kBadImage;
          }
          c = compare_bytes(key, len, p + off, slen);
        }
        if (c < 0) hi = mid;
        else if (c > 0) lo = mid + 1;
        else {
          *exact = true;
          return mid;
        }
      }
    }
    return lo;
  }
  while (lo < hi) {
    unsigned mid = (lo + hi) >> 1;
    const uint8_t* s = slots + mid * 6;
    unsigned off = load16(s), slen = load16(s + 2);
    if constexpr (kChecked) {
      if (off + slen > kNodeSize) return kBadImage;
    }
    int c = compare_bytes(key, len, p + off, slen);
    if (c < 0) hi = mid;
    else if (c > 0) lo = mid + 1;
    else {
      *exact = true;
      return mid;
    }
  }
  return lo;
}

}  // namespace adaptree
