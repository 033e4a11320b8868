// The few system services the wasm modules need beyond emscripten's prebuilt
// libc: heap growth, abort and large memcpy. Emscripten's own sbrk calls into its JS glue
// (emscripten_resize_heap), which we do not ship; this one grows the memory
// with the memory.grow instruction, so the module's only import stays the
// memory (mt) or nothing at all (st).
//
// Thread safety: in the mt build every worker instance shares this memory and
// therefore `g_break`; the compare-exchange keeps concurrent growth correct.
#if defined(__wasm__)
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <new>

#include "core/util/checked.h"

extern "C" unsigned char __heap_base;

namespace {
uintptr_t g_break = 0;  // 0 until the first call: the heap starts at __heap_base
constexpr uintptr_t kWasmPage = 65536;
// The module's own ceiling (CMakeLists.txt, --max-memory; DECISIONS.md "Memory ceiling 2 GiB").
constexpr uint64_t kCeiling = uint64_t{1} << 31;
// The memory budget (at_set_memory_limit): sbrk grows the memory no further than this
// many bytes. 0 = the ceiling. Shared by every instance on an mt memory.
uintptr_t g_limit = 0;
}  // namespace

extern "C" size_t emmalloc_free_dynamic_memory(void);

extern "C" void* sbrk(intptr_t increment) {
  uintptr_t old = __atomic_load_n(&g_break, __ATOMIC_SEQ_CST);
  for (;;) {
    uintptr_t cur = old ? old : reinterpret_cast<uintptr_t>(&__heap_base);
    uintptr_t next = cur + static_cast<uintptr_t>(increment);
    if (increment > 0 && next < cur) {  // wrapped past 4 GiB
      errno = ENOMEM;
      return reinterpret_cast<void*>(-1);
    }
    uintptr_t have = __builtin_wasm_memory_size(0) * kWasmPage;
    if (next > have) {
      uintptr_t limit = __atomic_load_n(&g_limit, __ATOMIC_SEQ_CST);
      if (limit != 0 && next > limit) {  // over budget: malloc returns null, the caller a status
        errno = ENOMEM;
        return reinterpret_cast<void*>(-1);
      }
      size_t pages = (next - have + kWasmPage - 1) / kWasmPage;
      // Grow by a quarter of the memory at least (up to 256 MiB, within the budget): in V8
      // each growth of a WebAssembly.Memory can cost a full garbage collection of the JS heap
      // (~120 ms with a large one), and growing by what emmalloc asked (256 KiB) made a load
      // of 2M entries beside a large JS heap take 69 s instead of 1.3 s (session 22). Pages
      // grown ahead are untouched: address space, not memory in use.
      size_t ahead = have / 4 / kWasmPage;
      if (ahead > (size_t{256} << 20) / kWasmPage) ahead = (size_t{256} << 20) / kWasmPage;
      if (limit != 0 && have + ahead * kWasmPage > limit) ahead = (limit - have) / kWasmPage;
      if (ahead > pages && __builtin_wasm_memory_grow(0, ahead) != static_cast<size_t>(-1)) {
        // grown ahead
      } else if (__builtin_wasm_memory_grow(0, pages) == static_cast<size_t>(-1)) {
        errno = ENOMEM;
        return reinterpret_cast<void*>(-1);
      }
    }
    if (__atomic_compare_exchange_n(&g_break, &old, next, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
      return reinterpret_cast<void*>(cur);
    }
  }
}

// The memory budget (bindings/adaptree.h). Limits are rounded down to whole wasm pages.
extern "C" int32_t at_set_memory_limit(double bytes) {
  if (!(bytes >= 0)) return -5;  // INVALID_ARGUMENT
  // Whole wasm pages; a budget under one page is one page (it rounded to 0, the ceiling: a
  // budget of 1 byte meant none at all).
  uint64_t b = bytes >= static_cast<double>(kCeiling) ? 0 : static_cast<uint64_t>(bytes) / kWasmPage * kWasmPage;
  if (b == 0 && bytes > 0 && bytes < static_cast<double>(kCeiling)) b = kWasmPage;
  __atomic_store_n(&g_limit, static_cast<uintptr_t>(b), __ATOMIC_SEQ_CST);
  return 0;
}

extern "C" double at_memory_limit(void) {
  uintptr_t limit = __atomic_load_n(&g_limit, __ATOMIC_SEQ_CST);
  return static_cast<double>(limit ? limit : kCeiling);
}

extern "C" double at_memory_available(void) {
  uintptr_t limit = __atomic_load_n(&g_limit, __ATOMIC_SEQ_CST);
  uint64_t cap = limit ? limit : kCeiling;
  uintptr_t brk = __atomic_load_n(&g_break, __ATOMIC_SEQ_CST);
  if (!brk) brk = reinterpret_cast<uintptr_t>(&__heap_base);
  uint64_t unclaimed = cap > brk ? cap - brk : 0;
  return static_cast<double>(unclaimed + emmalloc_free_dynamic_memory());
}

// Set by the TypeScript runtime when a call into this memory trapped: a word in linear
// memory, so that instances on the same shared memory in other workers see it (ts/src/wasm.ts).
namespace {
alignas(4) uint32_t g_poison = 0;
}  // namespace
extern "C" uint32_t* at_poison_word(void) { return &g_poison; }

// Test-only: executes `unreachable`, the trap a bug (an abort, an out-of-bounds
// access) would cause, so that the TypeScript runtime's handling of it can be tested.
extern "C" void at_debug_trap(void) { __builtin_trap(); }

// C++ allocation. Without exceptions, libc++'s operator new returns null when
// malloc fails and the container that asked writes through it: silent corruption.
// Trap instead: the JavaScript side then marks the instance unusable (ts/src/wasm.ts).
// Every allocation reachable from the C ABI is checked before it is made
// (core/util/checked.h), so this fires only on a path that was missed.
extern "C" void* malloc(size_t);
extern "C" void free(void*);
void* operator new(size_t n) {
  if (void* s = adaptree::take_stashed(n)) return s;  // a block reserved by core/util/checked.h
  void* p = malloc(n ? n : 1);
  if (!p) __builtin_trap();
  return p;
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return malloc(n ? n : 1); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return malloc(n ? n : 1); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }

// libc++ calls abort() where it would throw (length_error, bad_alloc) in a
// -fno-exceptions build; emscripten's abort lives in its JS glue. Trap instead.
extern "C" void abort(void) { __builtin_trap(); }

// Emscripten's libc memcpy hands large copies to this JS import; with
// -mbulk-memory the builtin is a single memory.copy instruction.
extern "C" void* emscripten_memcpy_big(void* dst, const void* src, size_t n) {
  return __builtin_memcpy(dst, src, n);
}

extern "C" int brk(void* addr) {
  __atomic_store_n(&g_break, reinterpret_cast<uintptr_t>(addr), __ATOMIC_SEQ_CST);
  return 0;
}
#endif
