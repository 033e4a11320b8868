// Minimal number formatting into std::string. The core avoids snprintf: in
// the mt wasm build stdio drags in emscripten's pthread runtime (FILE locks),
// which needs JavaScript glue we do not ship.
#pragma once
#include <cstdint>
#include <string>

namespace adaptree {

inline void append_uint(std::string& s, uint64_t v) {
  char buf[24];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) s.push_back(buf[--n]);
}

inline void append_int(std::string& s, int64_t v) {
  if (v < 0) {
    s.push_back('-');
    append_uint(s, static_cast<uint64_t>(-(v + 1)) + 1);
  } else {
    append_uint(s, static_cast<uint64_t>(v));
  }
}

// Fixed-point with `decimals` digits (non-negative, finite values).
inline void append_fixed(std::string& s, double v, unsigned decimals) {
  if (!(v >= 0)) v = 0;
  uint64_t scale = 1;
  for (unsigned i = 0; i < decimals; i++) scale *= 10;
  uint64_t x = static_cast<uint64_t>(v * static_cast<double>(scale) + 0.5);
  append_uint(s, x / scale);
  if (!decimals) return;
  s.push_back('.');
  uint64_t frac = x % scale;
  for (uint64_t d = scale / 10; d; d /= 10) {
    s.push_back(static_cast<char>('0' + frac / d));
    frac %= d;
  }
}

}  // namespace adaptree
