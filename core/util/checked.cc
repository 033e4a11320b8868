// The one-block stash of core/util/checked.h.
#include "core/util/checked.h"

namespace adaptree {

namespace {
void* g_stash = nullptr;
size_t g_stash_size = 0;
// One stash at a time: threads sharing a tree (the mt build, native threads) call with_block
// concurrently, and a second stash_block overwrote the first (its block leaked; LeakSanitizer
// saw it in the threads stress) or paired one thread's block with the other's size.
int g_stash_owner = 0;
}  // namespace

void stash_block(void* p, size_t n) {
  // Spins while another thread's stash is out (a malloc and one reserve long). No
  // allocation can happen in here, and the holder never waits for anything.
  int expected = 0;
  while (!__atomic_compare_exchange_n(&g_stash_owner, &expected, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) expected = 0;
  __atomic_store_n(&g_stash_size, n, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_stash, p, __ATOMIC_SEQ_CST);
}

void* take_stashed(size_t n) {
  void* p = __atomic_load_n(&g_stash, __ATOMIC_RELAXED);
  if (p == nullptr) return nullptr;  // the usual case: one load
  if (n > __atomic_load_n(&g_stash_size, __ATOMIC_SEQ_CST)) return nullptr;
  // Only the block whose size was just read (another thread's unstash may have run since).
  return __atomic_compare_exchange_n(&g_stash, &p, nullptr, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED) ? p : nullptr;
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

void* unstash_block() {
  void* p = __atomic_exchange_n(&g_stash, nullptr, __ATOMIC_SEQ_CST);
  __atomic_store_n(&g_stash_owner, 0, __ATOMIC_RELEASE);
  return p;
}

}  // namespace adaptree
