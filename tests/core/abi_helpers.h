// Helpers of the tests that drive the core through the C ABI (differential_test.cc,
// threads_test.cc): knobs from the environment and the context's result as strings.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bindings/adaptree.h"

namespace adaptree::testing {

inline uint64_t env_or(const char* name, uint64_t def) {
  const char* v = getenv(name);
  return v && *v ? strtoull(v, nullptr, 10) : def;
}

inline const uint8_t* bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

inline std::string result_value(at_ctx* c) {
  return std::string(reinterpret_cast<const char*>(at_ctx_value_ptr(c)), at_ctx_result(c)[3]);
}
inline std::string result_key(at_ctx* c) {
  return std::string(reinterpret_cast<const char*>(at_ctx_key_ptr(c)), at_ctx_result(c)[1]);
}

}  // namespace adaptree::testing
