// A frame of the buffer pool: one 4 KiB page image in memory and what the pool
// knows about it. Each frame carries one 64-bit state word as in vmcache: the
// top 8 bits are the lock state (0 unlocked, 1..252 shared holders, 253
// exclusive, 254 marked, 255 evicted), the low 56 bits a version that every
// exclusive unlock and every reuse of the frame for another page bumps, so an
// optimistic reader that read a stale version restarts. A store's pool bumps
// versions on reuse and writes. In memory mode (BTreeMap) the word of each
// page is its node latch (PageLatch below, BufferPool::latch_word): shared
// and exclusive modes for the leaves of a tree shared between threads
// (docs/THREADS.md, phase 2a); optimistic reads (phase 2) use the same word.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#if !defined(__wasm__)
#include <thread>
#endif

#include "core/config.h"

namespace adaptree {

namespace frame_state {
constexpr uint64_t kUnlocked = 0, kExclusive = 253, kMarked = 254, kEvicted = 255;
inline uint64_t lock_state(uint64_t w) { return w >> 56; }
inline uint64_t version(uint64_t w) { return w & ((uint64_t{1} << 56) - 1); }
inline uint64_t make(uint64_t lock, uint64_t version) { return (lock << 56) | (version & ((uint64_t{1} << 56) - 1)); }
}  // namespace frame_state

// Set when a thread died while it may have held latches of a tree on this memory
// (at_tree_abandon; docs/THREADS.md): a PageLatch that has spun long stops waiting
// for a holder that will never release it. In wasm it traps (the JavaScript runtime
// has marked the memory unusable: every instance on it then throws
// INSTANCE_POISONED) rather than touch a node the dead thread may have left
// half-changed; natively (tests) it goes on as if it had the latch. In wasm it is
// a variable in the (shared) linear memory: one per memory, like the poison word.
inline std::atomic<uint32_t> g_latches_abandoned{0};

// How often a PageLatch waiter went to sleep (wasm workers; at_debug_latch 8, tests).
inline std::atomic<uint32_t> g_leaf_latch_sleeps{0};

// The node latch on a state word (docs/THREADS.md, phase 2a). Shared holders
// count in the lock state (1..252), an exclusive holder sets 253; releasing
// exclusive bumps the version, so a holder that remembered a version (a
// cursor between calls) sees that the node changed. Held for a few hundred
// instructions at most (one leaf insert or lookup), so waiting spins, and
// natively yields after a while. In wasm there is nothing to yield to: a waiter
// that may block (a worker, not a browser's main thread: `may_block`, from the
// calling context's wait mode) sleeps on the word in steps of kSleepNs once it
// has spun as long as a tree-latch waiter does (memory.atomic.wait64 with a
// timeout: the holder need not notify, so unlocking costs nothing more; a holder
// that keeps a leaf that long has been descheduled, and a sleeping waiter leaves
// it the core).
class PageLatch {
 public:
  explicit PageLatch(std::atomic<uint64_t>* w, bool may_block = false) : w_(w), block_(may_block) {}

  // Returns the version under the latch (stable until unlock_shared).
  uint64_t lock_shared() {
    uint64_t v = w_->load(std::memory_order_relaxed);
    for (unsigned spins = 0;;) {
      uint64_t s = frame_state::lock_state(v);
      if (s < kMaxShared) {
        if (w_->compare_exchange_weak(v, v + kOne, std::memory_order_acquire, std::memory_order_relaxed))
          return frame_state::version(v);
        continue;
      }
      v = pause(&spins, v);
      if (abandoned(spins)) {
        // (Natively: counted as a holder, so that the unlock balances.)
        w_->fetch_add(kOne, std::memory_order_acquire);
        return frame_state::version(v);
      }
    }
  }
  void unlock_shared() { w_->fetch_sub(kOne, std::memory_order_release); }

  // Returns the version the holder found (the unlock bumps it). *waited: the
  // latch was taken when it came (Contention Split counts these).
  uint64_t lock_exclusive(bool* waited = nullptr) {
    uint64_t v = w_->load(std::memory_order_relaxed);
    if (waited) *waited = frame_state::lock_state(v) != frame_state::kUnlocked;
    for (unsigned spins = 0;;) {
      if (frame_state::lock_state(v) == frame_state::kUnlocked) {
        if (w_->compare_exchange_weak(v, frame_state::make(frame_state::kExclusive, frame_state::version(v)),
                                      std::memory_order_acquire, std::memory_order_relaxed))
          return frame_state::version(v);
        continue;
      }
      v = pause(&spins, v);
      if (abandoned(spins)) {
        w_->exchange(frame_state::make(frame_state::kExclusive, frame_state::version(v)), std::memory_order_acq_rel);
        return frame_state::version(v);
      }
    }
  }
  // Exclusive if nobody holds the latch now; never waits (a caller that already
  // holds another node's latch: phase 2c's shared redistribution).
  bool try_lock_exclusive() {
    uint64_t v = w_->load(std::memory_order_relaxed);
    return frame_state::lock_state(v) == frame_state::kUnlocked &&
           w_->compare_exchange_strong(v, frame_state::make(frame_state::kExclusive, frame_state::version(v)),
                                       std::memory_order_acquire, std::memory_order_relaxed);
  }
  // The node changed: unlocked with the next version.
  void unlock_exclusive() {
    uint64_t v = w_->load(std::memory_order_relaxed);
    w_->store(frame_state::make(frame_state::kUnlocked, frame_state::version(v) + 1), std::memory_order_release);
  }
  // Nothing changed: unlocked with the same version (holders of it stay valid).
  void unlock_exclusive_unchanged() {
    uint64_t v = w_->load(std::memory_order_relaxed);
    w_->store(frame_state::make(frame_state::kUnlocked, frame_state::version(v)), std::memory_order_release);
  }
  // The version now (meaningful to a caller that holds the latch, or that holds
  // the tree latch exclusive: nobody else changes the node then).
  uint64_t version() const { return frame_state::version(w_->load(std::memory_order_acquire)); }
  uint64_t state() const { return w_->load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kOne = uint64_t{1} << 56;
  static constexpr uint64_t kMaxShared = 252;

  // True (natively) when the memory's latches were abandoned and this waiter has spun
  // long; in wasm it traps then (see g_latches_abandoned). Checked every 1024 spins.
  static bool abandoned(unsigned spins) {
    if ((spins & 1023) != 0 || g_latches_abandoned.load(std::memory_order_relaxed) == 0) return false;
#if defined(__wasm__)
    __builtin_trap();
#else
    return true;
#endif
  }

  // One round of waiting while the word is `seen`; returns the word as it is now.
  uint64_t pause(unsigned* spins, uint64_t seen) {
    if (++*spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
#if !defined(__wasm__)
      std::this_thread::yield();
#elif defined(__wasm_atomics__)
      if (block_ && *spins >= kSpinsBeforeSleep) {
        g_leaf_latch_sleeps.fetch_add(1, std::memory_order_relaxed);
        __builtin_wasm_memory_atomic_wait64(reinterpret_cast<int64_t*>(w_), static_cast<int64_t>(seen), kSleepNs);
      }
#endif
    }
    (void)seen;
    return w_->load(std::memory_order_relaxed);
  }

  static constexpr unsigned kSpinsBeforeSleep = 1u << 14;  // as TreeLatch's wasm spin
  static constexpr int64_t kSleepNs = 100'000;

  std::atomic<uint64_t>* w_;
  bool block_;
};

// Does [at, at + n) lie inside the memory? In wasm, a load outside it traps (and kills
// the instance): readers without a latch check a pointer they load through first.
// Natively always true (those readers race only with what the tests keep alive).
inline bool in_memory(const void* at, size_t n) {
#if defined(__wasm__)
  return uint64_t{reinterpret_cast<uintptr_t>(at)} + n <= uint64_t{__builtin_wasm_memory_size(0)} << 16;
#else
  (void)at;
  (void)n;
  return true;
#endif
}

using FrameId = uint32_t;
constexpr FrameId kNoFrame = ~FrameId{0};

struct FrameMeta {
  std::atomic<uint64_t> state{frame_state::make(frame_state::kEvicted, 0)};
  PageId pid = kInvalidPageId;  // the page it holds (kInvalidPageId: free frame)
  uint32_t epoch = 0;           // the operation that last fixed it: not evictable during that operation
  bool dirty = false;           // modified since it was last written to storage
  bool referenced = false;      // clock's second chance
  bool writing = false;         // its image is being written by an async commit: not evictable
  // Clean, and changed through BufferPool::page() since its image was read or written (the
  // adaptive operation counter, BufferPool::note_lossy): it no longer matches the stored
  // image, so the pager may not take it as the base of a delta without checking.
  bool lossy = false;

  // Bumps the version (the frame now holds something else, or was written).
  void bump() {
    uint64_t w = state.load(std::memory_order_relaxed);
    state.store(frame_state::make(frame_state::lock_state(w), frame_state::version(w) + 1), std::memory_order_release);
  }
};

}  // namespace adaptree
