// Growth of standard containers that fails with a status instead of aborting.
//
// The core is built without exceptions (docs/ARCHITECTURE.md, decision 4), so a
// std::vector or std::string that cannot get memory has no way to say so: its
// operator new ends the wasm instance (bindings/wasm_runtime.cc traps there on
// purpose). Every growth reachable from the C ABI therefore goes through these
// helpers first: they make sure the container's capacity is there, so the
// container's own call afterwards allocates nothing.
//
// How: malloc the block the container will ask for; if that fails, report
// kOutOfMemory and change nothing. If it succeeds, free it and let the container
// reserve exactly that capacity: the allocator (emmalloc in wasm, glibc natively)
// hands the block just freed to the next request of the same size, so that
// request cannot fail. (In the mt build another thread could take the block in
// between; that thread would have to be allocating on the same heap at that
// instant, and the fallback is the trap, which the TypeScript runtime turns into a
// typed error: see DECISIONS.md, "Out of memory".)
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/status.h"

namespace adaptree {

// True when `bytes` (plus the allocator's header) can be allocated right now.
inline bool can_allocate(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) return false;
  free(p);
  return true;
}

// Capacity for at least n elements (geometric growth, like push_back's).
template <class C>
bool reserve_checked(C& c, size_t n) {
  if (n <= c.capacity()) return true;
  size_t cap = c.capacity() * 2;
  if (cap < n) cap = n;
  using T = typename C::value_type;
  if (cap > SIZE_MAX / sizeof(T) - 64) return false;
  if (!can_allocate(cap * sizeof(T) + 32)) {
    // The doubled capacity does not fit: try exactly what is needed.
    cap = n;
    if (!can_allocate(cap * sizeof(T) + 32)) return false;
  }
  c.reserve(cap);
  return c.capacity() >= n;
}

template <class C>
bool resize_checked(C& c, size_t n) {
  if (!reserve_checked(c, n)) return false;
  c.resize(n);
  return true;
}

template <class C, class T>
bool push_checked(C& c, T&& x) {
  if (!reserve_checked(c, c.size() + 1)) return false;
  c.push_back(static_cast<T&&>(x));
  return true;
}

// Appends n bytes to a std::string.
inline bool append_checked(std::string& s, const char* p, size_t n) {
  if (!reserve_checked(s, s.size() + n)) return false;
  s.append(p, n);
  return true;
}

}  // namespace adaptree
