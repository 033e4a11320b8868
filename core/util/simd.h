// The one SIMD kernel: compare 16 (or 32 with AVX2) fingerprint bytes with a
// needle and return a bit mask of the matches. wasm SIMD128 in the wasm
// build, SSE2 (AVX2 with -march) natively, scalar otherwise.
#pragma once
#include <cstdint>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace adaptree {
namespace simd {

#if defined(__AVX2__) && !defined(__wasm_simd128__)
constexpr unsigned kMatchWidth = 32;
inline uint32_t match(const uint8_t* p, uint8_t needle) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(static_cast<char>(needle)))));
}
#else
constexpr unsigned kMatchWidth = 16;
inline uint32_t match(const uint8_t* p, uint8_t needle) {
#if defined(__wasm_simd128__)
  v128_t v = wasm_v128_load(p);
  return wasm_i8x16_bitmask(wasm_i8x16_eq(v, wasm_i8x16_splat(static_cast<int8_t>(needle))));
#elif defined(__SSE2__)
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(static_cast<char>(needle)))));
#else
  uint32_t m = 0;
  for (unsigned i = 0; i < 16; i++) m |= static_cast<uint32_t>(p[i] == needle) << i;
  return m;
#endif
}
#endif

}  // namespace simd
}  // namespace adaptree
