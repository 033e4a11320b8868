// Keys and records for the core's tests, written once: big-endian integer keys, a
// std::string as a Slice, a record of a key and a value (RecordRef, as a layout's
// build takes it), fences from strings (null: infinite) and a page-sized aligned buffer.
#pragma once
#include <string>

#include "core/layouts/node_common.h"

namespace adaptree {

inline std::string be32(uint32_t v) {
  std::string s(4, '\0');
  store_be32(reinterpret_cast<uint8_t*>(&s[0]), v);
  return s;
}

inline Slice sl(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())};
}

inline RecordRef rec(const std::string& k, const std::string& v) {
  return RecordRef{reinterpret_cast<const uint8_t*>(k.data()), nullptr, reinterpret_cast<const uint8_t*>(v.data()),
                   static_cast<uint16_t>(k.size()), 0, static_cast<uint16_t>(v.size())};
}

inline Fences fences(const std::string* lo, const std::string* hi) {
  Fences f;
  if (lo) f.lower = sl(*lo), f.lower_inf = false;
  if (hi) f.upper = sl(*hi), f.upper_inf = false;
  return f;
}

struct Page {
  alignas(16) uint8_t b[kPageSize];
};

}  // namespace adaptree
