// Keys and records for the core's tests, written once: big-endian integer keys, a
// std::string as a Slice, and a record of a key and a value (RecordRef, as a layout's
// build takes it).
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

}  // namespace adaptree
