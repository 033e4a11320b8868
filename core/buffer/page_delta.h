// Page deltas of the log (docs/FORMAT.md, "Delta frame"): a delta frame's payload is runs
// of (u16 offset, u16 length, bytes) that turn a base page image into the new one. Any
// split into runs decodes the same; encode_delta picks one that is quick to find.
#pragma once
#include <cstdint>

namespace adaptree {

// The runs where img differs from base (both kPageSize bytes) into out; the payload's size,
// or ~0u when it would pass limit.
uint32_t encode_delta(const uint8_t* base, const uint8_t* img, uint8_t* out, uint32_t limit);

// Applies runs [p, p + n) to page; false when they are malformed (a run out of the page,
// a zero length, a cut run).
bool apply_delta(const uint8_t* p, uint32_t n, uint8_t* page);

}  // namespace adaptree
