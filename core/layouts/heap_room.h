// Room in the heap of the slotted layouts (basic nodes and fingerprint leaves): a bitmap of
// the node's bytes in use (ByteMap), and making a gap of a given size between the slots and
// the heap by moving only the entries in the way (make_heap_gap), where a compaction moved
// every entry and a commit then logged the whole page.
//
// A slotted heap here: slot i at p + base + i * ss begins with u16 heap offset, u16 key
// suffix length, u16 value field (bit 15: an overflow reference); the entry is the suffix,
// then the value's bytes; the fences are entries too (header offsets and lengths).
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/layouts/node_common.h"

namespace adaptree {

// A node's bytes, one bit each: set where something lives.
struct ByteMap {
  static constexpr unsigned kWords = (kNodeSize + 63) / 64;
  uint64_t used[kWords] = {};

  void mark(unsigned off, unsigned len) {
    for (unsigned end = off + len < kNodeSize ? off + len : kNodeSize; off < end;) {
      unsigned b = off % 64, k = end - off < 64 - b ? end - off : 64 - b;
      used[off / 64] |= (k == 64 ? ~uint64_t{0} : ((uint64_t{1} << k) - 1)) << b;
      off += k;
    }
  }
  bool is_free(unsigned off, unsigned len) const {
    for (unsigned i = off; i < off + len; i++)
      if (used[i / 64] >> (i % 64) & 1) return false;
    return true;
  }
  // The first bit at or after `from` that is set (want = true) or clear; kNodeSize if none.
  unsigned next(unsigned from, bool want) const {
    for (unsigned w = from / 64; w < kWords && from < kNodeSize; w++, from = w * 64) {
      uint64_t bits = (want ? used[w] : ~used[w]) & (~uint64_t{0} << (from % 64));
      if (bits) {
        unsigned at = w * 64 + static_cast<unsigned>(__builtin_ctzll(bits));
        return at < kNodeSize ? at : kNodeSize;
      }
    }
    return kNodeSize;
  }
  struct Run {
    uint16_t lo, hi;
  };
  // The free runs [lo, hi) at or above `floor`, highest first, into out (at most max);
  // their number. The bytes below floor must be marked.
  unsigned runs_down(unsigned floor, Run* out, unsigned max) const {
    unsigned n = 0;
    for (unsigned end = kNodeSize; end > floor && n < max;) {
      // the highest free byte below end, then the lowest of its run
      unsigned hi = 0, w = (end - 1) / 64;
      for (uint64_t bits = ~used[w] & (end % 64 ? (uint64_t{1} << (end % 64)) - 1 : ~uint64_t{0});; bits = ~used[--w]) {
        if (bits) {
          hi = w * 64 + 64 - static_cast<unsigned>(__builtin_clzll(bits));
          break;
        }
        if (w == 0) break;
      }
      if (hi <= floor) break;
      unsigned lo = 0, below = hi - 1;
      w = below / 64;
      for (uint64_t bits = used[w] & ((uint64_t{1} << (below % 64)) - 1);; bits = used[--w]) {
        if (bits) {
          lo = w * 64 + 64 - static_cast<unsigned>(__builtin_clzll(bits));
          break;
        }
        if (w == 0) break;
      }
      out[n++] = {static_cast<uint16_t>(lo), static_cast<uint16_t>(hi)};
      end = lo;
    }
    return n;
  }
};

namespace heap_room {
// Live range r of a slotted heap: slot r, or the lower (r == n) or upper (r == n + 1) fence.
inline uint8_t* offset_field(uint8_t* p, unsigned base, unsigned ss, unsigned n, unsigned r) {
  return r < n ? p + base + r * ss : p + (r == n ? hdr::kLowerOff : hdr::kUpperOff);
}
inline unsigned length_of(const uint8_t* p, unsigned base, unsigned ss, unsigned n, unsigned r) {
  if (r < n) return load16(p + base + r * ss + 2) + (load16(p + base + r * ss + 4) & kValueLenMask);
  return load16(p + (r == n ? hdr::kLowerLen : hdr::kUpperLen));
}
// heap_start after a move: the lowest live byte; zero-length entries and fences sit there, as
// build() leaves them (an offset under slots that grow later reads as outside the heap).
inline void settle(uint8_t* p, unsigned base, unsigned ss, unsigned n) {
  unsigned hs = kNodeSize;
  for (unsigned r = 0; r < n + 2; r++) {
    unsigned off = load16(offset_field(p, base, ss, n, r));
    if (length_of(p, base, ss, n, r) != 0 && off < hs) hs = off;
  }
  for (unsigned r = 0; r < n + 2; r++)
    if (length_of(p, base, ss, n, r) == 0) store16(offset_field(p, base, ss, n, r), hs);
  store16(p + hdr::kHeapStart, hs);
}
}  // namespace heap_room

// The lowest live ranges, as few as give `bytes` of room above the slots, packed up against
// the next one: a compaction of the bottom of the heap only (of all of it when that is what
// it takes).
inline void compact_heap_bottom(uint8_t* p, unsigned base, unsigned ss, unsigned n, unsigned bytes) {
  using namespace heap_room;
  const unsigned slots_end = base + n * ss;
  struct Range {
    uint16_t off, len, who;
  };
  Range r[kNodeSize / 6 + 3];
  unsigned m = 0;
  for (unsigned i = 0; i < n + 2; i++) {
    unsigned len = length_of(p, base, ss, n, i);
    if (len) r[m++] = {static_cast<uint16_t>(load16(offset_field(p, base, ss, n, i))), static_cast<uint16_t>(len), static_cast<uint16_t>(i)};
  }
  std::sort(r, r + m, [](const Range& a, const Range& b) { return a.off < b.off; });
  unsigned k = 0, live = 0;
  while (k < m && r[k].off - slots_end - live < bytes) live += r[k++].len;
  unsigned top = k < m ? r[k].off : kNodeSize;
  for (unsigned i = k; i-- > 0;) {
    top -= r[i].len;
    memmove(p + top, p + r[i].off, r[i].len);
    store16(offset_field(p, base, ss, n, r[i].who), top);
  }
  settle(p, base, ss, n);
}

// Makes heap_start - slots_end at least `bytes` (the caller checked that the node has that
// room after a compaction): the live ranges that start below slots_end + bytes move to the
// tops of the highest free runs above it (planned first: nothing changes unless all find
// room), else compact_heap_bottom.
inline void make_heap_gap(uint8_t* p, unsigned base, unsigned ss, unsigned n, unsigned bytes) {
  using namespace heap_room;
  const unsigned floor = base + n * ss + bytes;
  if (floor > kNodeSize) return compact_heap_bottom(p, base, ss, n, bytes);
  ByteMap used;
  struct Move {
    uint16_t who, from, to, len;
  };
  Move mv[kNodeSize / 6 + 3];
  unsigned moves = 0, moving = 0;
  for (unsigned i = 0; i < n + 2; i++) {
    unsigned off = load16(offset_field(p, base, ss, n, i)), len = length_of(p, base, ss, n, i);
    if (len == 0) continue;
    used.mark(off, len);
    if (off < floor) {
      mv[moves++] = {static_cast<uint16_t>(i), static_cast<uint16_t>(off), 0, static_cast<uint16_t>(len)};
      moving += len;
    }
  }
  used.mark(0, floor);
  ByteMap::Run runs[kNodeSize / 6 + 8];
  const unsigned nruns = used.runs_down(floor, runs, sizeof runs / sizeof runs[0]);
  unsigned room = 0;
  for (unsigned r = 0; r < nruns; r++) room += runs[r].hi - runs[r].lo;
  bool placed = room >= moving;
  for (unsigned k = 0; k < moves && placed; k++) {
    placed = false;
    for (unsigned r = 0; r < nruns && !placed; r++) {
      if (unsigned{runs[r].hi} - runs[r].lo < mv[k].len) continue;
      runs[r].hi = static_cast<uint16_t>(runs[r].hi - mv[k].len);
      mv[k].to = runs[r].hi;
      placed = true;
    }
  }
  if (!placed) return compact_heap_bottom(p, base, ss, n, bytes);
  // The destinations are free bytes: no source is overwritten.
  for (unsigned k = 0; k < moves; k++) {
    memcpy(p + mv[k].to, p + mv[k].from, mv[k].len);
    store16(offset_field(p, base, ss, n, mv[k].who), mv[k].to);
  }
  settle(p, base, ss, n);
}

}  // namespace adaptree
