// The page table: which frame holds a page. Open addressing with linear probing
// over a power-of-two array of (page id, frame) pairs, at most half full: its
// memory grows with the pool, never with the store (a 100 GB store with a
// 32 MiB pool needs 8192 frames and a 16k-entry table, 128 KiB).
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer/frame.h"
#include "core/util/checked.h"

namespace adaptree {

class PageTable {
 public:
  // False (table unchanged) when the memory for the larger table is not there.
  bool reserve(uint32_t frames) {
    uint32_t cap = 16;
    while (cap < 2 * frames) cap <<= 1;
    if (cap <= slots_.size()) return true;
    std::vector<Slot> old;
    old.swap(slots_);
    if (!with_block(size_t{cap} * sizeof(Slot) + 32, [&] { slots_.assign(cap, Slot{}); })) {
      slots_.swap(old);
      return false;
    }
    mask_ = cap - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.pid != kInvalidPageId) insert(s.pid, s.frame);
    return true;
  }

  FrameId find(PageId pid) const {
    for (uint32_t i = hash(pid);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.pid == pid) return s.frame;
      if (s.pid == kInvalidPageId) return kNoFrame;
    }
  }

  void insert(PageId pid, FrameId f) {
    if (2 * (size_ + 1) > slots_.size()) reserve(size_ + 1);
    uint32_t i = hash(pid);
    while (slots_[i].pid != kInvalidPageId && slots_[i].pid != pid) i = (i + 1) & mask_;
    if (slots_[i].pid == kInvalidPageId) size_++;
    slots_[i] = {pid, f};
  }

  // Backward-shift deletion keeps every probe sequence unbroken.
  void erase(PageId pid) {
    uint32_t i = hash(pid);
    while (slots_[i].pid != pid) {
      if (slots_[i].pid == kInvalidPageId) return;
      i = (i + 1) & mask_;
    }
    size_--;
    for (uint32_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].pid == kInvalidPageId) break;
      uint32_t home = hash(slots_[j].pid);
      // Move j back to i unless its home lies cyclically in (i, j].
      bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
  }

  void clear() {
    for (Slot& s : slots_) s = Slot{};
    size_ = 0;
  }
  uint32_t size() const { return size_; }
  uint64_t bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  struct Slot {
    PageId pid = kInvalidPageId;
    FrameId frame = kNoFrame;
  };
  uint32_t hash(PageId pid) const { return static_cast<uint32_t>((uint64_t{pid} * 0x9E3779B97F4A7C15ull) >> 32) & mask_; }
  std::vector<Slot> slots_;
  uint32_t mask_ = 0;
  uint32_t size_ = 0;
};

}  // namespace adaptree
