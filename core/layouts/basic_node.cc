#include "core/layouts/basic_node.h"

#include <algorithm>

namespace adaptree {

void BasicNode::make_hints() {
  if (!has_hints()) return;
  unsigned n = count();
  unsigned dist = n / (kHintCount + 1);
  for (unsigned i = 0; i < kHintCount; i++)
    store32(p + kHintsOffset + 4 * i, n > 2 * kHintCount ? head(dist * (i + 1)) : 0);
}

// After an insert at pos only the hints sampled at or after pos change, unless
// the sampling distance changed (section 3.3).
void BasicNode::update_hints(unsigned pos) {
  if (!has_hints()) return;
  unsigned n = count();
  if (n <= 2 * kHintCount) return;
  unsigned dist = n / (kHintCount + 1);
  unsigned begin = 0;
  if (n > 2 * kHintCount + 1 && (n - 1) / (kHintCount + 1) == dist && pos / dist > 1)
    begin = pos / dist - 1;
  for (unsigned i = begin; i < kHintCount; i++) store32(p + kHintsOffset + 4 * i, head(dist * (i + 1)));
}

void BasicNode::compact() {
  unsigned ss = slot_size(), base = slot_base();
  compact_heap(
      p, count(), [&](unsigned i) { return p + base + i * ss; },
      [&](const uint8_t* src, unsigned i) {
        const uint8_t* s = src + base + i * ss;
        return static_cast<uint32_t>(load16(s + 2) + (load16(s + 4) & kValueLenMask));
      });
}

int BasicNode::find_hole(unsigned bytes) const {
  // The first gap between live heap ranges (entries and fences), from heap_start up, that
  // takes bytes: the ranges are marked in a bitmap of the node's bytes (one bit each), then
  // its runs of clear bits are walked. (It sorted the ranges by offset before: a sort of
  // ~100 entries on every insert into a leaf with garbage, 2.5% of a store's random inserts
  // in wasm.)
  if (bytes == 0) return static_cast<int>(heap_start());
  constexpr unsigned kWords = (kNodeSize + 63) / 64;
  uint64_t used[kWords] = {};
  auto mark = [&](unsigned off, unsigned len) {
    unsigned end = off + len < kNodeSize ? off + len : kNodeSize;
    while (off < end) {
      unsigned b = off % 64, k = end - off < 64 - b ? end - off : 64 - b;
      used[off / 64] |= (k == 64 ? ~uint64_t{0} : ((uint64_t{1} << k) - 1)) << b;
      off += k;
    }
  };
  unsigned n = count();
  for (unsigned i = 0; i < n; i++) {
    const uint8_t* s = slot(i);
    mark(load16(s), load16(s + 2) + (load16(s + 4) & kValueLenMask));
  }
  mark(load16(p + hdr::kLowerOff), load16(p + hdr::kLowerLen));
  mark(load16(p + hdr::kUpperOff), load16(p + hdr::kUpperLen));
  // The first bit at or after `from` that is set (want = true) or clear; kNodeSize if none.
  auto next = [&](unsigned from, bool want) -> unsigned {
    for (unsigned w = from / 64; w < kWords && from < kNodeSize; w++, from = w * 64) {
      uint64_t bits = (want ? used[w] : ~used[w]) & (~uint64_t{0} << (from % 64));
      if (bits) {
        unsigned at = w * 64 + static_cast<unsigned>(__builtin_ctzll(bits));
        return at < kNodeSize ? at : kNodeSize;
      }
    }
    return kNodeSize;
  };
  for (unsigned at = next(heap_start(), false); at < kNodeSize;) {
    unsigned end = next(at, true);
    if (end - at >= bytes) return static_cast<int>(at);
    at = next(end, false);
  }
  return -1;
}

void BasicNode::insert_at(unsigned pos, const uint8_t* suffix, unsigned suffix_len, const uint8_t* value,
                          uint16_t value_field) {
  unsigned vbytes = value_field & kValueLenMask;
  unsigned need = entry_space(suffix_len, vbytes), ss = slot_size();
  // Short of contiguous room: a gap the heap has (entries that moved out or
  // were replaced) takes the entry if it can, which changes a few bytes of
  // the page where a compaction would move the whole heap (and a commit would
  // then log the page whole).
  int hole = -1;
  if (need > free_space() && (free_space() < ss || (hole = find_hole(suffix_len + vbytes)) < 0)) compact();
  unsigned n = count();
  uint8_t* s = slot(pos);
  memmove(s + ss, s, (n - pos) * ss);
  unsigned top = hole >= 0 ? static_cast<unsigned>(hole) : heap_start() - suffix_len - vbytes;
  memcpy(p + top, suffix, suffix_len);
  memcpy(p + top + suffix_len, value, vbytes);
  store16(s, top);
  store16(s + 2, suffix_len);
  store16(s + 4, value_field);
  if (has_heads()) store32(s + 6, head_of(suffix, suffix_len));
  if (hole < 0) store16(p + hdr::kHeapStart, top);
  store16(p + hdr::kHeapUsed, heap_used() + suffix_len + vbytes);
  store16(p + hdr::kCount, n + 1);
  update_hints(pos);
}

void BasicNode::remove_at(unsigned pos) {
  unsigned n = count(), ss = slot_size();
  uint8_t* s = slot(pos);
  store16(p + hdr::kHeapUsed, heap_used() - load16(s + 2) - (load16(s + 4) & kValueLenMask));
  memmove(s, s + ss, (n - pos - 1) * ss);
  store16(p + hdr::kCount, n - 1);
  make_hints();
}

bool BasicNode::replace_value(unsigned pos, const uint8_t* value, uint16_t value_field) {
  uint8_t* s = slot(pos);
  unsigned old_bytes = load16(s + 4) & kValueLenMask, new_bytes = value_field & kValueLenMask;
  unsigned klen = load16(s + 2);
  if (old_bytes == new_bytes) {
    memcpy(p + load16(s) + klen, value, new_bytes);
    store16(s + 4, value_field);
    return true;
  }
  // The old entry becomes garbage; the new one needs a fresh heap entry.
  if (klen + new_bytes > free_space_after_compaction() + klen + old_bytes) return false;
  store16(p + hdr::kHeapUsed, heap_used() - klen - old_bytes);
  store16(s + 4, 0);  // the entry is dead: compaction must not copy it
  uint8_t key_copy[kMaxKeySize];
  memcpy(key_copy, p + load16(s), klen);
  store16(s + 2, 0);
  if (klen + new_bytes > free_space()) {
    compact();
    s = slot(pos);
  }
  unsigned top = heap_start() - klen - new_bytes;
  memcpy(p + top, key_copy, klen);
  memcpy(p + top + klen, value, new_bytes);
  store16(s, top);
  store16(s + 2, klen);
  store16(s + 4, value_field);
  store16(p + hdr::kHeapStart, top);
  store16(p + hdr::kHeapUsed, heap_used() + klen + new_bytes);
  return true;
}

void BasicNode::extract(RecordRef* out) const {
  unsigned n = count(), plen = prefix_len();
  const uint8_t* pre = prefix();
  for (unsigned i = 0; i < n; i++) {
    const uint8_t* s = slot(i);
    uint16_t klen = load16(s + 2);
    out[i] = RecordRef{pre, p + load16(s), p + load16(s) + klen, static_cast<uint16_t>(plen), klen,
                       load16(s + 4)};
  }
}

unsigned BasicNode::space_needed(uint8_t layout_flags, const Fences& f, uint32_t prefix_len,
                                 const RecordRef* r, unsigned n) {
  unsigned ss = (layout_flags & kFlagHeads) ? 10 : 6;
  unsigned total = ((layout_flags & kFlagHints) ? kSlotsHinted : kSlotsPlain) + fences_bytes(f) + n * ss;
  for (unsigned i = 0; i < n; i++) total += r[i].key_len() - prefix_len + r[i].value_bytes();
  return total;
}

bool BasicNode::build(uint8_t* page, PageTag tag, uint8_t layout_flags, const Fences& f,
                      bool prefix_truncation, const RecordRef* r, unsigned n, PageId upper_child,
                      uint8_t counter) {
  uint32_t plen = prefix_truncation ? fence_prefix_len(f) : 0;
  // (a key shorter than the prefix lies outside the fences: see FingerprintLeaf::build)
  for (unsigned i = 0; i < n; i++)
    if (r[i].key_len() < plen) [[unlikely]] return false;
  if (space_needed(layout_flags, f, plen, r, n) > kNodeSize) return false;
  memset(page, 0, kSlotsHinted);
  page[hdr::kTag] = static_cast<uint8_t>(tag);
  page[hdr::kFlags] = layout_flags & (kFlagHeads | kFlagHints);
  page[hdr::kCounter] = counter;
  store16(page + hdr::kPrefixLen, plen);
  uint32_t top = write_fences(page, f, kNodeSize);
  BasicNode node{page};
  node.set_upper_child(upper_child);
  unsigned base = node.slot_base(), ss = node.slot_size();
  for (unsigned i = 0; i < n; i++) {
    uint32_t klen = r[i].key_len() - plen, vbytes = r[i].value_bytes();
    top -= klen + vbytes;
    r[i].copy_key(plen, klen, page + top);
    memcpy(page + top + klen, r[i].val, vbytes);
    uint8_t* s = page + base + i * ss;
    store16(s, top);
    store16(s + 2, klen);
    store16(s + 4, r[i].val_len);
    if (ss == 10) store32(s + 6, head_of(page + top, klen));
  }
  store16(page + hdr::kCount, n);
  store16(page + hdr::kHeapStart, top);
  store16(page + hdr::kHeapUsed, kNodeSize - top);
  node.make_hints();
  return true;
}

}  // namespace adaptree
