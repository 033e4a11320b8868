// Compile-time constants and the run-time layout configuration
// (docs/ARCHITECTURE.md, decision 10). The named configurations are the paper's
// ablation steps (btrees-are-back-sigmod25, section 4); each one adds to the
// previous, except that the three alternative leaf layouts each stand on
// `hints`.
#pragma once
#include <cstdint>

#ifndef ADAPTREE_PAGE_SIZE
#define ADAPTREE_PAGE_SIZE 4096
#endif

namespace adaptree {

constexpr uint32_t kPageSize = ADAPTREE_PAGE_SIZE;
static_assert(kPageSize >= 4096 && kPageSize <= 32768 && (kPageSize & (kPageSize - 1)) == 0,
              "page offsets are 16-bit: page size must be a power of two in [4 KiB, 32 KiB]");

// Every page ends in a trailer that only storage reads and writes (core/buffer/
// page_trailer.h: the page id and a CRC-32C); node layouts use the bytes before it.
constexpr uint32_t kPageTrailerSize = 8;
constexpr uint32_t kNodeSize = kPageSize - kPageTrailerSize;

// Largest key accepted by set(); longer keys are Status::kKeyTooLarge.
constexpr uint32_t kMaxKeySize = 1024;
// Largest value accepted (values past the inline limit live in overflow pages).
constexpr uint64_t kMaxValueSize = 1ull << 30;  // 1 GiB

using PageId = uint32_t;            // page ids, never pointers, inside pages
constexpr PageId kInvalidPageId = 0;  // page 0 is reserved (future superblock)

// Ids are part of the C ABI and of the TS API: append only.
enum class LayoutConfig : uint8_t {
  kBaseline = 0,     // slotted pages, binary search on full keys
  kPrefix = 1,       // + prefix truncation with fences
  kHeads = 2,        // + 4-byte heads in slots
  kHints = 3,        // + 16-entry hint array
  kFingerprint = 4,  // hints in inner nodes, fingerprinting leaves
  kSemiDense = 5,    // hints + semi-dense leaves where keys allow
  kFullyDense = 6,   // hints + fully dense leaves where keys allow
  kAdaptive = 7,     // section 5: key- and operation-adaption (default)
};
constexpr uint8_t kLayoutConfigCount = 8;

struct Config {
  bool prefix_truncation;
  bool heads;
  bool hints;
  bool fingerprint_leaves;
  bool semi_dense_leaves;
  bool fully_dense_leaves;
  bool adaptive;

  static Config of(LayoutConfig c);
};

inline Config Config::of(LayoutConfig c) {
  Config k{false, false, false, false, false, false, false};
  switch (c) {
    case LayoutConfig::kAdaptive: k.adaptive = k.fingerprint_leaves = k.fully_dense_leaves = true; [[fallthrough]];
    case LayoutConfig::kHints: k.hints = true; [[fallthrough]];
    case LayoutConfig::kHeads: k.heads = true; [[fallthrough]];
    case LayoutConfig::kPrefix: k.prefix_truncation = true; [[fallthrough]];
    case LayoutConfig::kBaseline: break;
    case LayoutConfig::kFingerprint: k = of(LayoutConfig::kHints); k.fingerprint_leaves = true; break;
    case LayoutConfig::kSemiDense: k = of(LayoutConfig::kHints); k.semi_dense_leaves = true; break;
    case LayoutConfig::kFullyDense: k = of(LayoutConfig::kHints); k.fully_dense_leaves = true; break;
  }
  return k;
}

}  // namespace adaptree
