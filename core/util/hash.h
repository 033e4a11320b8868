// Stable hash functions defined by this project (docs/ARCHITECTURE.md, decision 3):
// the same bytes give the same result natively and in wasm, on every standard
// library. Never use std::hash for anything stored or compared across builds.
//
// fingerprint(): one-byte hash of a (prefix-truncated) key for fingerprint
//   leaves. 64-bit multiply-xorshift over little-endian 8-byte words.
//   Test vectors: fingerprint("adaptree") = 91, fingerprint("") = 62,
//   fingerprint("ada") = 8.
// checksum(): CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial
//   value and final xor 0xFFFFFFFF), for log records, the superblock, and the
//   pages of stores of format version 1 (page_hash below for version 2). Implemented in util/crc32c.cc with one kernel per target, all
//   giving the same values (issue 10): wasm SIMD, 16 interleaved streams with
//   nibble tables (i8x16.swizzle); x86-64 with SSE4.2, the crc32 instruction
//   (3 streams); otherwise slicing-by-8.
//   Test vectors (tests/core/hash_test.cc asserts them and more, pinning the
//   format; the TS suite asserts the same values through the wasm export at_checksum):
//     checksum("")                  = 0x00000000
//     checksum("123456789")         = 0xE3069283   (the standard CRC-32C check value)
//     checksum("adaptree")          = 0x89A97C7E
//     checksum(bytes 0, 1, ..., 255) = 0x9C44184B
// page_hash(): the page checksum of stores of format version 2 (docs/FORMAT.md): NH (the
//   universal hash of UMAC: a sum of products of 32-bit words plus fixed keys) over 32-byte
//   blocks, per 4 KiB chunk, folded by MurmurHash3's fmix64; 32 bits out. In wasm it costs
//   about a tenth of CRC-32C (no CRC instruction there; SIMD has a 32x32->64 multiply). A
//   change to one 32-bit word always changes the 64-bit sum; the 32 bits kept then differ
//   but for chance (2^-32), as for any other damage. util/page_hash.cc has the definition.
//   Test vectors (tests/core/hash_test.cc pins page-sized ones; the TS suite asserts them
//   through at_page_hash):
//     page_hash("")                  = 0xA4AB2EEA
//     page_hash("adaptree")          = 0x7D4FA4D9
#pragma once
#include <cstdint>
#include <cstring>

namespace adaptree {

inline uint8_t fingerprint(const uint8_t* k, uint32_t len) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0xC2B2AE3D27D4EB4Full ^ (static_cast<uint64_t>(len) * kMul);
  while (len >= 8) {
    uint64_t w;
    memcpy(&w, k, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    k += 8;
    len -= 8;
  }
  if (len) {
    uint64_t w = 0;
    memcpy(&w, k, len);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  h *= 0xFF51AFD7ED558CCDull;
  return static_cast<uint8_t>(h >> 56);
}

// CRC-32C of (the bytes behind crc) followed by p[0, len).
uint32_t checksum_extend(uint32_t crc, const uint8_t* p, uint32_t len);

inline uint32_t checksum(const uint8_t* p, uint32_t len) { return checksum_extend(0, p, len); }

// CRC-32C of a followed by b, from checksum(a), checksum(b) and b's length: one pass
// over a page verifies both its own checksum and a log frame's that covers it.
uint32_t checksum_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// The page checksum of format version 2 (above).
uint32_t page_hash(const uint8_t* p, uint32_t len);

namespace detail {
// page_hash by plain 64-bit arithmetic, block by block: the definition the SIMD kernels match.
uint32_t page_hash_reference(const uint8_t* p, uint32_t len);
// The CRC-32C kernels on the raw register (no initial or final inversion), for the
// tests: every one gives the same values. checksum_extend uses crc32c_kernel_name()'s.
uint32_t crc32c_bytewise(uint32_t reg, const uint8_t* p, uint32_t len);
uint32_t crc32c_slice8(uint32_t reg, const uint8_t* p, uint32_t len);
// The wasm SIMD kernel's algorithm (16 streams, padded head, combine) run on a scalar
// model of the vector operations, so native tests cover its arithmetic and edge cases.
uint32_t crc32c_lanes_model(uint32_t reg, const uint8_t* p, uint32_t len);
// The SSE4.2 kernel where the CPU has it (x86-64), else nullptr.
using Crc32cKernel = uint32_t (*)(uint32_t reg, const uint8_t* p, uint32_t len);
Crc32cKernel crc32c_hardware();
// The register after `zeros` zero bytes: reg * x^(8 zeros) mod P.
uint32_t crc32c_shift(uint32_t reg, uint64_t zeros);
// The same by table lookups, 4 per 256 or 8 zero bytes (crc32c_shift's square-and-multiply
// costs ~1 us in wasm): for stretches known to be zero, such as the equal bytes of two pages
// (seal_page_from, core/buffer/page_trailer.h).
uint32_t crc32c_skip_zeros(uint32_t reg, uint32_t zeros);
// The register after p: what checksum_extend computes between its two inversions.
inline uint32_t crc32c_raw(uint32_t reg, const uint8_t* p, uint32_t len) { return ~checksum_extend(~reg, p, len); }
const char* crc32c_kernel_name();
}  // namespace detail

}  // namespace adaptree
