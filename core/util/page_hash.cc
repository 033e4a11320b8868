// page_hash (util/hash.h): NH over 32-byte blocks with fixed keys, per 4 KiB chunk, each
// chunk's 64-bit sum folded into the state by MurmurHash3's fmix64. One definition, three
// ways to compute it that give the same values: wasm SIMD (i64x2.extmul of the 32-bit lanes),
// SSE2 (pmuludq), and plain 64-bit arithmetic (the reference; the tests compare all of them).
#include <array>

#include "core/page.h"
#include "core/util/hash.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace adaptree {
namespace {

constexpr uint32_t kChunk = 4096;
constexpr uint32_t kBlock = 32;
constexpr uint64_t kSeed = 0x6565727470616461ull;  // "adaptree", little-endian

// K[2i], K[2i+1]: the low and high halves of SplitMix64's i-th output from kSeed.
constexpr std::array<uint32_t, kChunk / 4> make_keys() {
  std::array<uint32_t, kChunk / 4> k{};
  uint64_t s = kSeed;
  for (uint32_t i = 0; i < kChunk / 8; i++) {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    k[2 * i] = static_cast<uint32_t>(z);
    k[2 * i + 1] = static_cast<uint32_t>(z >> 32);
  }
  return k;
}
alignas(16) constexpr std::array<uint32_t, kChunk / 4> kKeys = make_keys();

inline uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ull;
  k ^= k >> 33;
  return k;
}

// One block's NH term: sum over t < 4 of (w[t] + K[t]) * (w[t+4] + K[t+4]), the additions
// mod 2^32, the products and the sum mod 2^64.
inline uint64_t block_scalar(const uint8_t* p, const uint32_t* k) {
  uint64_t s = 0;
  for (int t = 0; t < 4; t++) {
    const uint32_t x = load32(p + 4 * t) + k[t], y = load32(p + 16 + 4 * t) + k[t + 4];
    s += static_cast<uint64_t>(x) * y;
  }
  return s;
}

// The sum of the NH terms of `blocks` whole blocks at p, keys from k.
inline uint64_t blocks_scalar(const uint8_t* p, const uint32_t* k, uint32_t blocks) {
  uint64_t s = 0;
  for (uint32_t b = 0; b < blocks; b++) s += block_scalar(p + kBlock * b, k + 8 * b);
  return s;
}

inline uint64_t blocks_fast(const uint8_t* p, const uint32_t* k, uint32_t blocks) {
#if defined(__wasm_simd128__)
  v128_t a0 = wasm_i64x2_const(0, 0), a1 = wasm_i64x2_const(0, 0);
  for (uint32_t b = 0; b < blocks; b++) {
    const v128_t x = wasm_i32x4_add(wasm_v128_load(p + kBlock * b), wasm_v128_load(k + 8 * b));
    const v128_t y = wasm_i32x4_add(wasm_v128_load(p + kBlock * b + 16), wasm_v128_load(k + 8 * b + 4));
    a0 = wasm_i64x2_add(a0, wasm_u64x2_extmul_low_u32x4(x, y));
    a1 = wasm_i64x2_add(a1, wasm_u64x2_extmul_high_u32x4(x, y));
  }
  const v128_t a = wasm_i64x2_add(a0, a1);
  return static_cast<uint64_t>(wasm_i64x2_extract_lane(a, 0)) + static_cast<uint64_t>(wasm_i64x2_extract_lane(a, 1));
#elif defined(__SSE2__)
  __m128i a0 = _mm_setzero_si128(), a1 = _mm_setzero_si128();
  for (uint32_t b = 0; b < blocks; b++) {
    const __m128i x = _mm_add_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kBlock * b)),
                                    _mm_load_si128(reinterpret_cast<const __m128i*>(k + 8 * b)));
    const __m128i y = _mm_add_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kBlock * b + 16)),
                                    _mm_load_si128(reinterpret_cast<const __m128i*>(k + 8 * b + 4)));
    a0 = _mm_add_epi64(a0, _mm_mul_epu32(x, y));                                        // lanes 0, 2
    a1 = _mm_add_epi64(a1, _mm_mul_epu32(_mm_srli_epi64(x, 32), _mm_srli_epi64(y, 32)));  // lanes 1, 3
  }
  const __m128i a = _mm_add_epi64(a0, a1);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(a)) + static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)));
#else
  return blocks_scalar(p, k, blocks);
#endif
}

template <bool kFast>
uint32_t page_hash_impl(const uint8_t* p, uint32_t len) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
  for (uint32_t at = 0; at < len; at += kChunk) {
    const uint32_t n = len - at < kChunk ? len - at : kChunk;
    const uint32_t whole = n / kBlock;
    uint64_t acc = kFast ? blocks_fast(p + at, kKeys.data(), whole) : blocks_scalar(p + at, kKeys.data(), whole);
    if (n % kBlock) {
      // The last block, zero-padded (the length in h tells the padding from zero bytes).
      alignas(16) uint8_t tail[kBlock] = {};
      memcpy(tail, p + at + kBlock * whole, n % kBlock);
      acc += block_scalar(tail, kKeys.data() + 8 * whole);
    }
    h = fmix64(h + acc);
  }
  if (len == 0) h = fmix64(h);
  return static_cast<uint32_t>(h);
}

}  // namespace

uint32_t page_hash(const uint8_t* p, uint32_t len) { return page_hash_impl<true>(p, len); }

namespace detail {
uint32_t page_hash_reference(const uint8_t* p, uint32_t len) { return page_hash_impl<false>(p, len); }
}  // namespace detail

}  // namespace adaptree
