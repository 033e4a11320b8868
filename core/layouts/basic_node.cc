#include "core/layouts/basic_node.h"

#include "core/layouts/heap_room.h"

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

void BasicNode::make_gap(unsigned bytes) { make_heap_gap(p, slot_base(), slot_size(), count(), bytes); }

void BasicNode::compact_bottom(unsigned bytes) { compact_heap_bottom(p, slot_base(), slot_size(), count(), bytes); }

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
  ByteMap used;
  unsigned n = count();
  for (unsigned i = 0; i < n; i++) {
    const uint8_t* s = slot(i);
    used.mark(load16(s), load16(s + 2) + (load16(s + 4) & kValueLenMask));
  }
  used.mark(load16(p + hdr::kLowerOff), load16(p + hdr::kLowerLen));
  used.mark(load16(p + hdr::kUpperOff), load16(p + hdr::kUpperLen));
  auto next = [&](unsigned from, bool want) { return used.next(from, want); };
  for (unsigned at = next(heap_start(), false); at < kNodeSize;) {
    unsigned end = next(at, true);
    if (end - at >= bytes) return static_cast<int>(at);
    at = next(end, false);
  }
  return -1;
}

void BasicNode::insert_at(unsigned pos, const uint8_t* suffix, unsigned suffix_len, const uint8_t* value,
                          uint16_t value_field, Room room) {
  unsigned vbytes = value_field & kValueLenMask;
  unsigned need = entry_space(suffix_len, vbytes), ss = slot_size();
  // Short of contiguous room: a gap the heap has (entries that moved out or
  // were replaced) takes the entry if it can, which changes a few bytes of
  // the page where a compaction would move the whole heap (and a commit would
  // then log the page whole).
  int hole = -1;
  if (need > free_space() && (free_space() < ss || (hole = find_hole(suffix_len + vbytes)) < 0)) make_room(need, room);
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

bool BasicNode::replace_value(unsigned pos, const uint8_t* value, uint16_t value_field, Room room) {
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
    make_room(klen + new_bytes, room);
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

bool BasicNode::rebase(const uint8_t* fresh, unsigned reserve) {
  constexpr uint8_t kLayout = kFlagHeads | kFlagHints;
  BasicNode f{const_cast<uint8_t*>(fresh)};
  if (p[hdr::kTag] != fresh[hdr::kTag] || (p[hdr::kFlags] & kLayout) != (fresh[hdr::kFlags] & kLayout) ||
      prefix_len() != f.prefix_len())
    return false;
  const unsigned n = f.count(), on = count(), ss = slot_size(), base = slot_base();
  // Nothing of the heap below `floor`: the new slots and the room reserved above them.
  const unsigned slots_end = base + n * ss, floor = slots_end + reserve;
  if (floor > kNodeSize || base + on * ss > kNodeSize) return false;
  for (unsigned j = 0; j < on; j++)  // (a damaged image: nothing of it is read past the node)
    if (uint32_t{load16(slot(j))} + load16(slot(j) + 2) + (value_field(j) & kValueLenMask) > kNodeSize) return false;
  constexpr unsigned kNone = 0xffff;
  ByteMap used;
  // 1. Entries this page holds with the same bytes, matched in key order (both sorted, the
  //    same prefix: suffixes compare as the keys do). An old entry inside the new slots moves.
  uint16_t at[kNodeSize / 6 + 1];
  bool kept[kNodeSize / 6 + 1];
  for (unsigned i = 0, j = 0; i < n; i++) {
    at[i] = kNone;
    kept[i] = false;
    Slice k = f.suffix(i);
    const unsigned vb = f.value_field(i) & kValueLenMask;
    while (j < on) {
      Slice o = suffix(j);
      int c = memcmp(o.data, k.data, o.len < k.len ? o.len : k.len);
      if (c == 0) c = o.len < k.len ? -1 : o.len > k.len ? 1 : 0;
      if (c > 0) break;
      j++;
      if (c < 0) continue;
      const unsigned off = load16(slot(j - 1));
      if (value_field(j - 1) == f.value_field(i) && k.len + vb > 0 && off >= floor && off + k.len + vb <= kNodeSize &&
          memcmp(value(j - 1), f.value(i), vb) == 0 && used.is_free(off, k.len + vb)) {
        at[i] = static_cast<uint16_t>(off);
        kept[i] = true;
        used.mark(off, k.len + vb);
      }
      break;
    }
  }
  // 2. The fences: where this page has the same bytes, else placed as entries are.
  unsigned fence_at[2], fence_len[2];
  bool fence_kept[2] = {false, false};
  for (unsigned u = 0; u < 2; u++) {
    const unsigned off_f = u ? hdr::kUpperOff : hdr::kLowerOff, len_f = u ? hdr::kUpperLen : hdr::kLowerLen;
    fence_len[u] = load16(fresh + len_f);
    fence_at[u] = kNone;
    const unsigned old = load16(p + off_f);
    if (fence_len[u] == 0 || load16(p + len_f) != fence_len[u] || old < floor || old + fence_len[u] > kNodeSize ||
        memcmp(p + old, fresh + load16(fresh + off_f), fence_len[u]) != 0 || !used.is_free(old, fence_len[u]))
      continue;
    fence_at[u] = old;
    fence_kept[u] = true;
    used.mark(old, fence_len[u]);
  }
  // 3. The rest into the free bytes above the slots: each at the top of the highest free
  //    run that takes it (the heap grows down: the room below it stays for slots and inserts).
  used.mark(0, floor);
  ByteMap::Run runs[kNodeSize / 6 + 8];
  const unsigned nruns = used.runs_down(floor, runs, sizeof runs / sizeof runs[0]);
  auto place = [&](unsigned len) -> unsigned {
    for (unsigned r = 0; r < nruns; r++) {
      if (unsigned{runs[r].hi} - runs[r].lo < len) continue;
      runs[r].hi = static_cast<uint16_t>(runs[r].hi - len);
      return runs[r].hi;
    }
    return kNone;
  };
  for (unsigned u = 0; u < 2; u++) {
    if (fence_len[u] == 0 || fence_at[u] != kNone) continue;
    if ((fence_at[u] = place(fence_len[u])) == kNone) return false;
  }
  for (unsigned i = 0; i < n; i++) {
    const unsigned len = f.suffix(i).len + (f.value_field(i) & kValueLenMask);
    if (at[i] != kNone || len == 0) continue;
    if ((at[i] = static_cast<uint16_t>(place(len))) == kNone) return false;
  }
  // 4. Write: the header and hints as fresh has them, the slots, what moved, the fences.
  unsigned hs = kNodeSize;
  for (unsigned i = 0; i < n; i++) {
    const unsigned len = f.suffix(i).len + (f.value_field(i) & kValueLenMask);
    if (len == 0) continue;
    const unsigned off = at[i];
    if (!kept[i]) memcpy(p + off, fresh + load16(f.slot(i)), len);
    if (off < hs) hs = off;
  }
  for (unsigned u = 0; u < 2; u++) {
    if (fence_len[u] == 0) continue;
    const unsigned off_f = u ? hdr::kUpperOff : hdr::kLowerOff;
    if (!fence_kept[u]) memcpy(p + fence_at[u], fresh + load16(fresh + off_f), fence_len[u]);
    if (fence_at[u] < hs) hs = fence_at[u];
  }
  memcpy(p, fresh, base);
  for (unsigned i = 0; i < n; i++) {
    uint8_t* s = p + base + i * ss;
    memcpy(s, f.slot(i), ss);
    const unsigned len = f.suffix(i).len + (f.value_field(i) & kValueLenMask);
    store16(s, len == 0 ? hs : at[i]);
  }
  store16(p + hdr::kLowerOff, fence_len[0] ? fence_at[0] : hs);
  store16(p + hdr::kUpperOff, fence_len[1] ? fence_at[1] : hs);
  store16(p + hdr::kHeapStart, hs);
  return true;
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
