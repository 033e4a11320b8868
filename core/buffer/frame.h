// A frame of the buffer pool: one 4 KiB page image in memory and what the pool
// knows about it. Each frame carries one 64-bit state word as in vmcache: the
// top 8 bits are the lock state (0 unlocked, 1..252 shared holders, 253
// exclusive, 254 marked, 255 evicted), the low 56 bits a version that every
// exclusive unlock and every reuse of the frame for another page bumps, so an
// optimistic reader that read a stale version restarts. Single-threaded today:
// the pool bumps versions on reuse and writes; the OLC issue turns on the
// shared/exclusive modes on the same word.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/config.h"

namespace adaptree {

namespace frame_state {
constexpr uint64_t kUnlocked = 0, kExclusive = 253, kMarked = 254, kEvicted = 255;
inline uint64_t lock_state(uint64_t w) { return w >> 56; }
inline uint64_t version(uint64_t w) { return w & ((uint64_t{1} << 56) - 1); }
inline uint64_t make(uint64_t lock, uint64_t version) { return (lock << 56) | (version & ((uint64_t{1} << 56) - 1)); }
}  // namespace frame_state

using FrameId = uint32_t;
constexpr FrameId kNoFrame = ~FrameId{0};

struct FrameMeta {
  std::atomic<uint64_t> state{frame_state::make(frame_state::kEvicted, 0)};
  PageId pid = kInvalidPageId;  // the page it holds (kInvalidPageId: free frame)
  uint32_t epoch = 0;           // the operation that last fixed it: not evictable during that operation
  bool dirty = false;           // modified since it was last written to storage
  bool referenced = false;      // clock's second chance
  bool writing = false;         // its image is being written by an async commit: not evictable

  // Bumps the version (the frame now holds something else, or was written).
  void bump() {
    uint64_t w = state.load(std::memory_order_relaxed);
    state.store(frame_state::make(frame_state::lock_state(w), frame_state::version(w) + 1), std::memory_order_release);
  }
};

}  // namespace adaptree
