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

extern "C" unsigned char __heap_base;

namespace {
uintptr_t g_break = 0;  // 0 until the first call: the heap starts at __heap_base
constexpr uintptr_t kWasmPage = 65536;
}  // namespace

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
      size_t pages = (next - have + kWasmPage - 1) / kWasmPage;
      if (__builtin_wasm_memory_grow(0, pages) == static_cast<size_t>(-1)) {
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
