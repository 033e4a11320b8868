// The one-block stash of core/util/checked.h.
#include "core/util/checked.h"

namespace adaptree {

namespace {
void* g_stash = nullptr;
size_t g_stash_size = 0;
}  // namespace

void stash_block(void* p, size_t n) {
  __atomic_store_n(&g_stash_size, n, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_stash, p, __ATOMIC_SEQ_CST);
}

void* take_stashed(size_t n) {
  if (__atomic_load_n(&g_stash, __ATOMIC_RELAXED) == nullptr) return nullptr;  // the usual case: one load
  if (n > __atomic_load_n(&g_stash_size, __ATOMIC_SEQ_CST)) return nullptr;
  return __atomic_exchange_n(&g_stash, nullptr, __ATOMIC_SEQ_CST);
}

namespace {
void* volatile g_probe_sink = nullptr;
}  // namespace

bool can_allocate(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  g_probe_sink = p;  // a volatile store: the allocation cannot be elided
  if (!p) return false;
  free(p);
  g_probe_sink = nullptr;
  return true;
}

void* unstash_block() { return __atomic_exchange_n(&g_stash, nullptr, __ATOMIC_SEQ_CST); }

}  // namespace adaptree
