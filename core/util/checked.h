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
// kOutOfMemory and change nothing. If it succeeds, hand it to the container's own
// request: it is parked in a one-block stash that operator new
// (bindings/wasm_runtime.cc) takes before calling malloc. Freeing a probe and hoping
// the allocator hands the same block out again guarantees nothing (and the optimiser
// removes a malloc whose result is only freed: such a probe always "succeeds").
// Natively operator new is the standard one, the stash is freed unused, and the
// probe is only a probe (native tests do not run out of memory).
// In the mt build another thread allocating at the same instant could take the
// stash; it then allocates normally and the fallback is the trap, which the
// TypeScript runtime turns into a typed error (DECISIONS.md, "Out of memory").
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/status.h"

namespace adaptree {

// True when `bytes` (plus the allocator's header) can be allocated right now. A probe
// only (nothing keeps the block): for heuristics, never to guarantee a later allocation.
// Out of line (checked.cc), where the block is published to a volatile: a malloc whose
// result is only freed is removed by the optimiser, and the probe would always succeed.
bool can_allocate(size_t bytes);

// The stash (core/util/checked.cc): one block that the next operator new of at most
// its size takes instead of calling malloc.
void stash_block(void* p, size_t n);
// Takes the stash if it holds a block of at least n bytes (operator new), else nullptr.
void* take_stashed(size_t n);
// Empties the stash; returns its block if nobody took it.
void* unstash_block();

// Runs fn (which makes exactly one allocation of at most `bytes`) with that block
// allocated beforehand; false, fn not run, when the block cannot be had.
template <class F>
bool with_block(size_t bytes, F&& fn) {
  void* p = malloc(bytes ? bytes : 1);
  if (!p) return false;
  stash_block(p, bytes);
  fn();
  if (void* left = unstash_block()) free(left);
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
  // +32: std::string rounds its request up to 16 bytes and adds one for the terminator.
  if (!with_block(cap * sizeof(T) + 32, [&] { c.reserve(cap); })) {
    // The doubled capacity does not fit: try exactly what is needed.
    cap = n;
    if (!with_block(cap * sizeof(T) + 32, [&] { c.reserve(cap); })) return false;
  }
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
