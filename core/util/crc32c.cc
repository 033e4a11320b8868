// CRC-32C kernels (util/hash.h, checksum). All compute the same function; which one
// runs depends on the target:
//
//   wasm + SIMD128  inputs of 2 KiB and more: 16 streams, one per vector lane. A
//                   4096-byte chunk is cut into 16 streams of 256 bytes; 16 bytes of
//                   each stream are loaded, transposed (lane k = stream k), and each
//                   byte advances all 16 registers at once with the bytewise CRC step,
//                   its 256-entry table split into two 16-entry nibble tables per
//                   register byte (i8x16.swizzle is a 16-entry byte lookup). The 16
//                   registers are then combined: reg = reg * x^(8*256) ^ next, with a
//                   4-table lookup for the multiplication. Why: slicing-by-8 in wasm runs
//                   ~5 instructions per byte (V8 cannot fold the table base and index
//                   scaling into one addressing mode); this runs ~2.
//                   An input whose length is not a multiple of 4096 starts with a partial
//                   chunk padded in front with zeros: zero bytes leave a zero register
//                   unchanged, so the incoming register is XORed into the first 4 real
//                   bytes instead (as slicing does) and every lane starts at zero.
//   x86-64 SSE4.2   the crc32 instruction, 3 streams of 256 bytes combined the same way.
//   otherwise       slicing-by-8 (also for short inputs everywhere).
#include <cstring>

#include "core/util/hash.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(ADAPTREE_CRC_PORTABLE)
#include <nmmintrin.h>
#define ADAPTREE_CRC_SSE42 1
#endif

namespace adaptree {
namespace detail {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Slice8Tables {
  uint32_t t[8][256];
};
constexpr Slice8Tables make_slice8() {
  Slice8Tables x{};
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    x.t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int s = 1; s < 8; s++) x.t[s][i] = (x.t[s - 1][i] >> 8) ^ x.t[0][x.t[s - 1][i] & 0xff];
  return x;
}
constexpr Slice8Tables kSlice8 = make_slice8();

// GF(2)[x] mod P on reflected registers: bit 31 is x^0, bit 0 is x^31.
constexpr uint32_t gf_mul(uint32_t a, uint32_t b) {
  uint32_t r = 0;
  for (int i = 0; i < 32; i++) {
    r ^= (0u - (b >> 31)) & a;  // b's coefficient of x^i
    b <<= 1;
    a = (a >> 1) ^ ((0u - (a & 1)) & kPoly);  // a *= x
  }
  return r;
}
constexpr uint32_t x_pow_8n(uint64_t n) {  // x^(8n) mod P
  uint32_t r = 0x80000000u, sq = 0x00800000u;  // x^0, x^8
  while (n) {
    if (n & 1) r = gf_mul(r, sq);
    sq = gf_mul(sq, sq);
    n >>= 1;
  }
  return r;
}

// reg * x^(8*256) mod P (the register after 256 zero bytes) as 4 byte lookups.
constexpr uint32_t kStream = 256;
struct ShiftTables {
  uint32_t s[4][256];
};
constexpr ShiftTables make_shift() {
  ShiftTables t{};
  const uint32_t k = x_pow_8n(kStream);
  for (int b = 0; b < 4; b++)
    for (uint32_t v = 0; v < 256; v++) t.s[b][v] = gf_mul(v << (8 * b), k);
  return t;
}
constexpr ShiftTables kShift = make_shift();
inline uint32_t shift_stream(uint32_t r) {
  return kShift.s[0][r & 0xff] ^ kShift.s[1][(r >> 8) & 0xff] ^ kShift.s[2][(r >> 16) & 0xff] ^ kShift.s[3][r >> 24];
}

// The bytewise table split by nibble, per register byte: T[x] = T[x & 15] ^ T[x & 0xf0]
// (the table is linear), byte b of T[n] in lo[b][n], byte b of T[n << 4] in hi[b][n].
struct NibbleTables {
  alignas(16) uint8_t lo[4][16];
  alignas(16) uint8_t hi[4][16];
};
constexpr NibbleTables make_nibbles() {
  NibbleTables n{};
  for (int b = 0; b < 4; b++)
    for (uint32_t i = 0; i < 16; i++) {
      n.lo[b][i] = static_cast<uint8_t>(kSlice8.t[0][i] >> (8 * b));
      n.hi[b][i] = static_cast<uint8_t>(kSlice8.t[0][i << 4] >> (8 * b));
    }
  return n;
}
constexpr NibbleTables kNibbles = make_nibbles();

constexpr uint32_t kLanes = 16;
constexpr uint32_t kChunk = kLanes * kStream;  // 4096
constexpr uint32_t kPadMin = kChunk / 2;      // a shorter partial chunk goes to slicing-by-8
alignas(16) const uint8_t kZeros[kStream] = {};

inline uint32_t slice8(uint32_t c, const uint8_t* p, uint32_t len) {
  const auto& t = kSlice8.t;
  while (len >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c;
}

// ---- the 16-stream kernel, written once over a vector-operations policy O
template <class O>
uint32_t lanes_chunk(const uint8_t* const* base, uint32_t reg) {
  using V = typename O::V;
  const V tl0 = O::load(kNibbles.lo[0]), tl1 = O::load(kNibbles.lo[1]), tl2 = O::load(kNibbles.lo[2]),
          tl3 = O::load(kNibbles.lo[3]);
  const V th0 = O::load(kNibbles.hi[0]), th1 = O::load(kNibbles.hi[1]), th2 = O::load(kNibbles.hi[2]),
          th3 = O::load(kNibbles.hi[3]);
  const V m = O::splat(0x0f);
  // lane 0 starts from reg, the others from zero
  V c0 = O::lane0(reg & 0xff), c1 = O::lane0((reg >> 8) & 0xff), c2 = O::lane0((reg >> 16) & 0xff),
    c3 = O::lane0(reg >> 24);
  for (uint32_t off = 0; off < kStream; off += 16) {
    V r[kLanes], d[kLanes];
    for (uint32_t k = 0; k < kLanes; k++) r[k] = O::load(base[k] + off);
    O::transpose(r, d);
    for (uint32_t j = 0; j < 16; j++) {
      // c = (c >> 8) ^ T[(c ^ byte) & 0xff], on the register's 4 byte-vectors
      const V x = O::bxor(c0, d[j]);
      const V lo = O::band(x, m);
      const V hi = O::band(O::shr4(x), m);
      c0 = O::bxor(c1, O::bxor(O::swizzle(tl0, lo), O::swizzle(th0, hi)));
      c1 = O::bxor(c2, O::bxor(O::swizzle(tl1, lo), O::swizzle(th1, hi)));
      c2 = O::bxor(c3, O::bxor(O::swizzle(tl2, lo), O::swizzle(th2, hi)));
      c3 = O::bxor(O::swizzle(tl3, lo), O::swizzle(th3, hi));
    }
  }
  uint32_t regs[kLanes];
  O::lane_registers(c0, c1, c2, c3, regs);
  uint32_t out = regs[0];
  for (uint32_t k = 1; k < kLanes; k++) out = shift_stream(out) ^ regs[k];
  return out;
}

template <class O>
uint32_t lanes_update(uint32_t reg, const uint8_t* p, uint32_t len) {
  const uint8_t* base[kLanes];
  const uint32_t h = len % kChunk;
  if (h >= kPadMin) {
    // The partial chunk first, as a full one with z leading zeros: lanes wholly in the
    // padding read kZeros, the lane where the data starts (and the next one, when the
    // register's 4 bytes reach into it) read a copy with the register folded in.
    const uint32_t z = kChunk - h, kz = z / kStream, zz = z % kStream;
    const uint32_t span = zz + 4 > kStream ? 2 * kStream : kStream;
    alignas(16) uint8_t scratch[2 * kStream];
    for (uint32_t k = 0; k < kz; k++) base[k] = kZeros;
    memset(scratch, 0, zz);
    memcpy(scratch + zz, p, span - zz);
    for (uint32_t i = 0; i < 4; i++) scratch[zz + i] ^= static_cast<uint8_t>(reg >> (8 * i));
    base[kz] = scratch;
    for (uint32_t k = kz + 1; k < kLanes; k++) base[k] = p + kStream * k - z;
    if (span > kStream) base[kz + 1] = scratch + kStream;
    reg = lanes_chunk<O>(base, 0);
    p += h;
    len -= h;
  } else if (h) {
    reg = slice8(reg, p, h);
    p += h;
    len -= h;
  }
  for (; len; p += kChunk, len -= kChunk) {
    for (uint32_t k = 0; k < kLanes; k++) base[k] = p + kStream * k;
    reg = lanes_chunk<O>(base, reg);
  }
  return reg;
}

// A scalar model of the vector operations (wasm semantics), for native tests.
struct ModelOps {
  struct V {
    uint8_t b[16];
  };
  static V load(const uint8_t* p) {
    V v;
    memcpy(v.b, p, 16);
    return v;
  }
  static V splat(uint8_t x) {
    V v;
    memset(v.b, x, 16);
    return v;
  }
  static V lane0(uint32_t x) {
    V v = splat(0);
    v.b[0] = static_cast<uint8_t>(x);
    return v;
  }
  static V bxor(V a, V b) {
    for (int i = 0; i < 16; i++) a.b[i] ^= b.b[i];
    return a;
  }
  static V band(V a, V b) {
    for (int i = 0; i < 16; i++) a.b[i] &= b.b[i];
    return a;
  }
  static V shr4(V a) {
    for (int i = 0; i < 16; i++) a.b[i] = static_cast<uint8_t>(a.b[i] >> 4);
    return a;
  }
  static V swizzle(V t, V i) {  // i8x16.swizzle: an index of 16 or more gives 0
    V r;
    for (int k = 0; k < 16; k++) r.b[k] = i.b[k] < 16 ? t.b[i.b[k]] : 0;
    return r;
  }
  static void transpose(const V* r, V* d) {
    for (int j = 0; j < 16; j++)
      for (int k = 0; k < 16; k++) d[j].b[k] = r[k].b[j];
  }
  static void lane_registers(V c0, V c1, V c2, V c3, uint32_t* regs) {
    for (int k = 0; k < 16; k++)
      regs[k] = c0.b[k] | static_cast<uint32_t>(c1.b[k]) << 8 | static_cast<uint32_t>(c2.b[k]) << 16 |
                static_cast<uint32_t>(c3.b[k]) << 24;
  }
};

#if defined(__wasm_simd128__)
struct WasmOps {
  using V = v128_t;
  static V load(const uint8_t* p) { return wasm_v128_load(p); }
  static V splat(uint8_t x) { return wasm_i8x16_splat(static_cast<int8_t>(x)); }
  static V lane0(uint32_t x) { return wasm_i32x4_make(static_cast<int32_t>(x), 0, 0, 0); }
  static V bxor(V a, V b) { return wasm_v128_xor(a, b); }
  static V band(V a, V b) { return wasm_v128_and(a, b); }
  // 16-bit shift, the caller masks: cheaper than i8x16.shr_u, which V8 masks itself.
  static V shr4(V a) { return wasm_u16x8_shr(a, 4); }
  static V swizzle(V t, V i) { return wasm_i8x16_swizzle(t, i); }
  // 16x16 bytes: four rounds of interleaves (V8 compiles each to one punpck*).
  static void transpose(const V* r, V* d) {
    V a[16], b[16];
    for (int k = 0; k < 8; k++) {
      a[2 * k] = wasm_i8x16_shuffle(r[2 * k], r[2 * k + 1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      a[2 * k + 1] =
          wasm_i8x16_shuffle(r[2 * k], r[2 * k + 1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    }
    for (int k = 0; k < 4; k++)
      for (int h = 0; h < 2; h++) {
        const V x = a[4 * k + h], y = a[4 * k + 2 + h];
        b[4 * k + 2 * h] = wasm_i16x8_shuffle(x, y, 0, 8, 1, 9, 2, 10, 3, 11);
        b[4 * k + 2 * h + 1] = wasm_i16x8_shuffle(x, y, 4, 12, 5, 13, 6, 14, 7, 15);
      }
    for (int k = 0; k < 2; k++)
      for (int h = 0; h < 4; h++) {
        const V x = b[8 * k + h], y = b[8 * k + 4 + h];
        a[8 * k + 2 * h] = wasm_i32x4_shuffle(x, y, 0, 4, 1, 5);
        a[8 * k + 2 * h + 1] = wasm_i32x4_shuffle(x, y, 2, 6, 3, 7);
      }
    for (int h = 0; h < 8; h++) {
      d[2 * h] = wasm_i64x2_shuffle(a[h], a[8 + h], 0, 2);
      d[2 * h + 1] = wasm_i64x2_shuffle(a[h], a[8 + h], 1, 3);
    }
  }
  static void lane_registers(V c0, V c1, V c2, V c3, uint32_t* regs) {
    const V l01 = wasm_i8x16_shuffle(c0, c1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const V h01 = wasm_i8x16_shuffle(c0, c1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const V l23 = wasm_i8x16_shuffle(c2, c3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const V h23 = wasm_i8x16_shuffle(c2, c3, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    wasm_v128_store(regs + 0, wasm_i16x8_shuffle(l01, l23, 0, 8, 1, 9, 2, 10, 3, 11));
    wasm_v128_store(regs + 4, wasm_i16x8_shuffle(l01, l23, 4, 12, 5, 13, 6, 14, 7, 15));
    wasm_v128_store(regs + 8, wasm_i16x8_shuffle(h01, h23, 0, 8, 1, 9, 2, 10, 3, 11));
    wasm_v128_store(regs + 12, wasm_i16x8_shuffle(h01, h23, 4, 12, 5, 13, 6, 14, 7, 15));
  }
};
#endif

#if defined(ADAPTREE_CRC_SSE42)
__attribute__((target("sse4.2"))) uint32_t sse42_update(uint32_t reg, const uint8_t* p, uint32_t len) {
  constexpr uint32_t kWays = 3;
  uint64_t c = reg;
  // 3 independent streams hide the instruction's 3-cycle latency
  for (; len >= kWays * kStream; p += kWays * kStream, len -= kWays * kStream) {
    uint64_t a = c, b = 0, d = 0;
    for (uint32_t i = 0; i < kStream; i += 8) {
      uint64_t x, y, z;
      memcpy(&x, p + i, 8);
      memcpy(&y, p + kStream + i, 8);
      memcpy(&z, p + 2 * kStream + i, 8);
      a = _mm_crc32_u64(a, x);
      b = _mm_crc32_u64(b, y);
      d = _mm_crc32_u64(d, z);
    }
    c = shift_stream(shift_stream(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(d);
  }
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    c = _mm_crc32_u64(c, x);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
bool cpu_has_sse42() {
#if defined(__SSE4_2__)
  return true;
#else
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
#endif
}
#endif

}  // namespace

uint32_t crc32c_bytewise(uint32_t reg, const uint8_t* p, uint32_t len) {
  while (len--) reg = (reg >> 8) ^ kSlice8.t[0][(reg ^ *p++) & 0xff];
  return reg;
}
uint32_t crc32c_slice8(uint32_t reg, const uint8_t* p, uint32_t len) { return slice8(reg, p, len); }
uint32_t crc32c_lanes_model(uint32_t reg, const uint8_t* p, uint32_t len) {
  return len >= kPadMin ? lanes_update<ModelOps>(reg, p, len) : slice8(reg, p, len);
}
Crc32cKernel crc32c_hardware() {
#if defined(ADAPTREE_CRC_SSE42)
  if (cpu_has_sse42()) return sse42_update;
#endif
  return nullptr;
}
uint32_t crc32c_shift(uint32_t reg, uint64_t zeros) { return gf_mul(reg, x_pow_8n(zeros)); }

uint32_t crc32c_skip_zeros(uint32_t reg, uint32_t zeros) {
  for (; zeros >= kStream; zeros -= kStream) reg = shift_stream(reg);
  // Slicing-by-8's step with 8 data bytes of zero: only the register's 4 bytes look up.
  const auto& t = kSlice8.t;
  for (; zeros >= 8; zeros -= 8) reg = t[7][reg & 0xff] ^ t[6][(reg >> 8) & 0xff] ^ t[5][(reg >> 16) & 0xff] ^ t[4][reg >> 24];
  for (; zeros > 0; zeros--) reg = (reg >> 8) ^ t[0][reg & 0xff];
  return reg;
}

const char* crc32c_kernel_name() {
#if defined(__wasm_simd128__)
  return "wasm-simd128-16-streams";
#elif defined(ADAPTREE_CRC_SSE42)
  return cpu_has_sse42() ? "sse4.2-3-streams" : "slicing-by-8";
#else
  return "slicing-by-8";
#endif
}

}  // namespace detail

uint32_t checksum_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // The register is linear in its start: crc(a b) = crc(a) * x^(8 |b|) ^ crc(b) (the initial
  // and final inversions cancel). A page's length is the common case: its power is a constant.
  static constexpr uint32_t kPagePower = detail::x_pow_8n(4096);
  return detail::gf_mul(crc_a, len_b == 4096 ? kPagePower : detail::x_pow_8n(len_b)) ^ crc_b;
}

uint32_t checksum_extend(uint32_t crc, const uint8_t* p, uint32_t len) {
  uint32_t reg = ~crc;
#if defined(__wasm_simd128__)
  reg = len >= detail::kPadMin ? detail::lanes_update<detail::WasmOps>(reg, p, len) : detail::slice8(reg, p, len);
#elif defined(ADAPTREE_CRC_SSE42)
  reg = detail::cpu_has_sse42() ? detail::sse42_update(reg, p, len) : detail::slice8(reg, p, len);
#else
  reg = detail::slice8(reg, p, len);
#endif
  return ~reg;
}

}  // namespace adaptree
