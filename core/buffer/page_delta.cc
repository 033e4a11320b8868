// Page deltas of the log (docs/FORMAT.md, "Delta frame"): the runs that turn a base
// page image into a new one.
#include "core/buffer/page_delta.h"

#include <algorithm>
#include <cstring>

#include "core/page.h"

namespace adaptree {

namespace {

// Where img's changed bytes may come from in base: the base's 8-byte strings at 4-byte aligned
// offsets, hashed (the newest offset per slot wins); looked up at every byte, so a match is
// found within 3 bytes of its start (and extended back). Built for long stretches only (a page
// rebuilt).
struct Anchors {
  static constexpr uint32_t kBits = 11;
  uint16_t at[1u << kBits];
  static uint32_t slot(uint64_t x) { return static_cast<uint32_t>((x * 0x9E3779B97F4A7C15ull) >> (64 - kBits)); }
  void build(const uint8_t* base) {
    memset(at, 0xFF, sizeof at);
    for (uint32_t j = 0; j + 8 <= kPageSize; j += 4) at[slot(load64(base + j))] = static_cast<uint16_t>(j);
  }
};

// Appends a literal run of img[start, end); false when it would pass limit.
inline bool literal(const uint8_t* img, uint32_t start, uint32_t end, uint8_t* out, uint32_t* n, uint32_t limit) {
  const uint32_t len = end - start;
  if (*n + 4 + len > limit) return false;
  store16(out + *n, start);
  store16(out + *n + 2, len);
  memcpy(out + *n + 4, img + start, len);
  *n += 4 + len;
  return true;
}

// The length of the common prefix of a[0, n) and b[0, n), 8 bytes a step.
inline uint32_t common_bytes(const uint8_t* a, const uint8_t* b, uint32_t n) {
  uint32_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const uint64_t x = load64(a + k) ^ load64(b + k);
    if (x != 0) return k + (static_cast<uint32_t>(__builtin_ctzll(x)) >> 3);
  }
  while (k < n && a[k] == b[k]) k++;
  return k;
}

// Shifts tried in a short stretch (an insert or delete moving a slot array by a slot or two).
constexpr int32_t kShifts[] = {2, 4, 6, 8, 10, 12, 16, -2, -4, -6, -8, -10, -12, -16};
// Matches are looked for every kStep bytes (and extended back): a match of kMinCopy + kStep - 1
// bytes is always found; a byte-by-byte search cost more than the log bytes it saved (but for
// the anchors, which only match at their own alignment).
constexpr uint32_t kStep = 4;
// Small shifts are tried in the first kNear bytes of a literal (where an insert's new slot
// ends and the shifted ones begin); the anchors after them (a literal that long is no shift).
constexpr uint32_t kNear = 32;
// Stretches at least this long (a page rebuilt: a compaction, a regroup) also search the whole
// base (Anchors).
constexpr uint32_t kAnchorStretch = 1024;

// The runs of one changed stretch [start, end) (it begins and ends on changed bytes): copy
// runs where its bytes match base's elsewhere for at least kMinCopy bytes, literal runs between.
// words: every run's ends on 4-byte boundaries (copies shrink to them; their sources move along).
bool encode_stretch(const uint8_t* base, const uint8_t* img, uint32_t start, uint32_t end, bool words, Anchors* anchors,
                    bool* built, int32_t* last_shift, uint8_t* out, uint32_t* n, uint32_t limit) {
  uint32_t lit = start, i = start;
  const bool search = end - start >= kAnchorStretch;
  while (i + 8 <= end) {
    // Candidates: the shift of the last copy (a shifted slot array goes on), small shifts (near
    // the stretch's start), then the anchors (long stretches, further on; a match found there
    // extends back to the literal's start).
    uint32_t src = ~0u;
    const uint64_t want = load64(img + i);
    const int64_t prev = static_cast<int64_t>(i) - *last_shift;
    if (*last_shift != 0 && prev >= 0 && prev + 8 <= kPageSize && load64(base + prev) == want) {
      src = static_cast<uint32_t>(prev);
    } else if (lit == start && i - lit < kNear) {
      for (int32_t d : kShifts) {
        const int64_t from = static_cast<int64_t>(i) - d;
        if (from >= 0 && from + 8 <= kPageSize && load64(base + from) == want) {
          src = static_cast<uint32_t>(from);
          break;
        }
      }
    }
    if (src == ~0u && search && i - lit >= kNear) {
      if (!*built) {
        anchors->build(base);
        *built = true;
      }
      const uint32_t a = anchors->at[Anchors::slot(want)];
      if (a != 0xFFFF && a != i && load64(base + a) == want) src = a;
    }
    const uint32_t step = search && i - lit >= kNear ? 1 : kStep;
    if (src == ~0u) {
      i += step;
      continue;
    }
    // Extend back (not past the pending literal's start) and forward (not past the page; past
    // the stretch only while the bytes differ at their own offset: equal ones need no run).
    uint32_t d = i, s = src;
    while (d >= lit + 8 && s >= 8 && load64(img + d - 8) == load64(base + s - 8)) d -= 8, s -= 8;
    while (d > lit && s > 0 && img[d - 1] == base[s - 1]) d--, s--;
    const uint32_t room = std::min(end - i, kPageSize - src);
    uint32_t e = i + common_bytes(img + i, base + src, room);
    if (words) {
      const uint32_t da = (d + 3) & ~3u, ea = e & ~3u;
      s += da - d;
      d = da;
      e = ea > d ? ea : d;
    }
    if (e - d < kMinCopy) {
      i += step;
      continue;
    }
    if (d > lit && !literal(img, lit, d, out, n, limit)) return false;
    if (*n + kCopyRunSize > limit) return false;
    store16(out + *n, d);
    store16(out + *n + 2, (e - d) | kCopyRun);
    store16(out + *n + 4, s);
    store16(out + *n + 6, 0);
    *n += kCopyRunSize;
    *last_shift = static_cast<int32_t>(d) - static_cast<int32_t>(s);
    // The next literal starts at the next changed byte (those equal at their own offset after
    // the copy need nothing).
    lit = e + common_bytes(img + e, base + e, end - e);
    if (words) lit &= ~3u;
    i = lit;
  }
  return lit >= end || literal(img, lit, end, out, n, limit);
}

}  // namespace

uint32_t encode_delta(const uint8_t* base, const uint8_t* img, uint8_t* out, uint32_t limit, bool words, bool copies) {
  // 8 bytes at a time (a byte loop over an insert's shifted slots cost 12% of a batched load):
  // a run is a stretch of differing 8-byte words, trimmed to its first and last differing
  // byte, and ends at the next equal word (so it may hold up to 14 equal bytes inside, where
  // a new run's 4-byte header would save at most 10). Page images are little-endian: the
  // lowest set byte of x = a ^ b is the first differing one.
  static_assert(kPageSize % 8 == 0 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  static_assert(kPageSize <= kCopyRun, "run lengths and the copy flag share 16 bits");
  uint32_t n = 0, i = 0;
  Anchors anchors;
  bool built = false;
  int32_t last_shift = 0;
  while ((i = next_diff_word(base, img, i, kPageSize)) < kPageSize) {
    uint64_t x = load64(base + i) ^ load64(img + i);
    uint32_t start = i + (static_cast<uint32_t>(__builtin_ctzll(x)) >> 3);
    uint64_t last = x;
    uint32_t last_at = i;
    for (i += 8; i < kPageSize; i += 8) {
      uint64_t y = load64(base + i) ^ load64(img + i);
      if (y == 0) break;
      last = y;
      last_at = i;
    }
    uint32_t end = last_at + 8 - (static_cast<uint32_t>(__builtin_clzll(last)) >> 3);
    if (words) {  // (within the 8-byte words the run began and ended in: runs never meet)
      start &= ~3u;
      end = (end + 3) & ~3u;
    }
    if (copies && end - start >= kMinCopy) {
      if (!encode_stretch(base, img, start, end, words, &anchors, &built, &last_shift, out, &n, limit)) return ~0u;
      continue;
    }
    if (!literal(img, start, end, out, &n, limit)) return ~0u;
  }
  return n;
}

bool apply_delta(const uint8_t* p, uint32_t n, uint8_t* page, bool copies_allowed) {
  // First every run is checked (a malformed delta changes nothing), and whether any is a copy
  // run: those read the base as it was before any run, so the page is copied first.
  const uint8_t* const end = p + n;
  bool copies = false;
  for (const uint8_t* q = p; q < end;) {
    if (end - q < 4) return false;
    const uint32_t at = load16(q), word = load16(q + 2), len = word & ~uint32_t{kCopyRun};
    if (len == 0 || at + len > kPageSize) return false;
    if (word & kCopyRun) {
      if (!copies_allowed || end - q < kCopyRunSize || load16(q + 4) + len > kPageSize || load16(q + 6) != 0) return false;
      copies = true;
      q += kCopyRunSize;
    } else {
      if (static_cast<uint32_t>(end - q - 4) < len) return false;
      q += 4 + len;
    }
  }
  alignas(16) uint8_t base[kPageSize];
  if (copies) memcpy(base, page, kPageSize);
  while (p < end) {
    const uint32_t at = load16(p), word = load16(p + 2), len = word & ~uint32_t{kCopyRun};
    if (word & kCopyRun) {
      memcpy(page + at, base + load16(p + 4), len);
      p += kCopyRunSize;
    } else {
      memcpy(page + at, p + 4, len);
      p += 4 + len;
    }
  }
  return true;
}

}  // namespace adaptree
