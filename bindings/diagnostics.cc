// Diagnostic entry points of the C ABI (bindings/adaptree.h) that do not touch
// the tree: they let tests check properties of the build itself.
#include "bindings/adaptree.h"

extern "C" uint32_t at_atomic_add_u32(uint32_t* p, uint32_t v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
