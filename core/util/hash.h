// Stable hash functions defined by this project (docs/ARCHITECTURE.md, decision 3):
// the same bytes give the same result natively and in wasm, on every standard
// library. Never use std::hash for anything stored or compared across builds.
//
// fingerprint(): one-byte hash of a (prefix-truncated) key for fingerprint
//   leaves. 64-bit multiply-xorshift over little-endian 8-byte words.
//   Test vectors: fingerprint("adaptree") = 91, fingerprint("") = 62,
//   fingerprint("ada") = 8.
// checksum(): CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial
//   value and final xor 0xFFFFFFFF), slicing-by-8, for page checksums.
//   Test vectors (tests/core/hash_test.cc asserts them; the TS suite asserts
//   the same values through the wasm export at_checksum):
//     checksum("")                  = 0x00000000
//     checksum("123456789")         = 0xE3069283   (the standard CRC-32C check value)
//     checksum("adaptree")          = 0x89A97C7E
//     checksum(bytes 0, 1, ..., 255) = 0x9C44184B
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

namespace detail {
// CRC-32C lookup tables for slicing-by-8 (plain array: the wasm build may
// compile with an older default -std, so no inline variables here).
struct Crc32cTables {
  uint32_t t[8][256];
};
constexpr Crc32cTables make_crc32c_tables() {
  Crc32cTables x{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    x.t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int s = 1; s < 8; s++) x.t[s][i] = (x.t[s - 1][i] >> 8) ^ x.t[0][x.t[s - 1][i] & 0xff];
  return x;
}
constexpr Crc32cTables kCrc32c = make_crc32c_tables();
}  // namespace detail

// CRC-32C of (the bytes behind crc) followed by p[0, len).
inline uint32_t checksum_extend(uint32_t crc, const uint8_t* p, uint32_t len) {
  const auto& t = detail::kCrc32c.t;
  uint32_t c = crc ^ 0xFFFFFFFFu;
  while (len >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c ^ 0xFFFFFFFFu;
}

inline uint32_t checksum(const uint8_t* p, uint32_t len) { return checksum_extend(0, p, len); }

}  // namespace adaptree
