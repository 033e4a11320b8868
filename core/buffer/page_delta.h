// Page deltas of the log (docs/FORMAT.md, "Delta frame"): a delta frame's payload is runs
// of (u16 offset, u16 length, bytes) that turn a base page image into the new one. Any
// split into runs decodes the same; encode_delta picks one that is quick to find.
#pragma once
#include <cstdint>

#include "core/page.h"
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace adaptree {

// The offset of the first 8-byte word in [from, end) where a and b differ, or end (both
// multiples of 8). In wasm 64 bytes a step with SIMD: most of a page a commit seals and
// encodes is unchanged, and the word loop over it was most of seal_page_from's own time.
inline uint32_t next_diff_word(const uint8_t* a, const uint8_t* b, uint32_t from, uint32_t end) {
#if defined(__wasm_simd128__)
  for (; from + 64 <= end; from += 64) {
    const v128_t x0 = wasm_v128_xor(wasm_v128_load(a + from), wasm_v128_load(b + from));
    const v128_t x1 = wasm_v128_xor(wasm_v128_load(a + from + 16), wasm_v128_load(b + from + 16));
    const v128_t x2 = wasm_v128_xor(wasm_v128_load(a + from + 32), wasm_v128_load(b + from + 32));
    const v128_t x3 = wasm_v128_xor(wasm_v128_load(a + from + 48), wasm_v128_load(b + from + 48));
    if (wasm_v128_any_true(wasm_v128_or(wasm_v128_or(x0, x1), wasm_v128_or(x2, x3)))) break;
  }
#endif
  while (from < end && load64(a + from) == load64(b + from)) from += 8;
  return from;
}

// A run is (u16 offset, u16 length, length bytes): the bytes at [offset, offset + length).
// With kCopyRun set in its length word it is a *copy run* (u16 offset, u16 length | kCopyRun,
// u16 source, u16 zero): the bytes the base held at [source, source + length), whatever earlier
// runs of the same delta wrote there. An insert shifts a leaf's slots and a compaction moves
// its records: copy runs say so in 8 bytes where a plain run repeats them (IndexedDB frames
// 'ATL3': the async pager's deltas with set_log_deltas(on, copies); the file log has none, see
// docs/DECISIONS.md). 8 bytes, not 6: word runs stay on 4-byte boundaries.
constexpr uint16_t kCopyRun = 0x8000;
constexpr uint32_t kCopyRunSize = 8;
// Matches shorter than this stay literal bytes (a copy run costs 8 bytes, and the literal run
// it splits another 4).
constexpr uint32_t kMinCopy = 16;

// The runs where img differs from base (both kPageSize bytes) into out; the payload's size,
// or ~0u when it would pass limit. words: every run starts and ends on a 4-byte boundary
// (IndexedDB's frames copy their runs a word at a time, docs/FORMAT.md). copies: the runs may
// be copy runs (above), found by matching img's changed bytes against the base's.
uint32_t encode_delta(const uint8_t* base, const uint8_t* img, uint8_t* out, uint32_t limit, bool words = false,
                      bool copies = false);

// Applies runs [p, p + n) to page; false when they are malformed (a run out of the page,
// a zero length, a cut run, a copy from outside the page, a copy run where copies_allowed is
// not set: the file log's deltas have none), and then the page is unchanged.
bool apply_delta(const uint8_t* p, uint32_t n, uint8_t* page, bool copies_allowed = false);

}  // namespace adaptree
