// Page id -> log offset, for the file pager's index of the images in its log
// (committed and pending). Open addressing with linear probing over a power-of-two
// array, at most half full, entries never removed one by one (only clear()).
// Unlike std::unordered_map (one allocation per entry, which without exceptions
// cannot fail cleanly), it grows only through reserve(), which is checked
// (util/checked.h): the pager reserves before a commit becomes durable, so that
// recording what it wrote cannot fail afterwards.
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer/frame.h"
#include "core/util/checked.h"

namespace adaptree {

class OffsetMap {
 public:
  // Room for n entries in all; false (map unchanged) when there is no memory.
  bool reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    if (cap <= slots_.size()) return true;
    std::vector<Slot> old;
    old.swap(slots_);
    if (!with_block(cap * sizeof(Slot) + 32, [&] { slots_.assign(cap, Slot{}); })) {
      slots_.swap(old);
      return false;
    }
    mask_ = cap - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.pid != kInvalidPageId) put_reserved(s.pid, s.off);
    return true;
  }
  // Inserts or replaces; false only when the map had to grow and could not.
  bool put(PageId pid, uint64_t off) {
    if (2 * (size_ + 1) > slots_.size() && !reserve(size_ + 1)) return false;
    put_reserved(pid, off);
    return true;
  }
  const uint64_t* find(PageId pid) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash(pid);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.pid == pid) return &s.off;
      if (s.pid == kInvalidPageId) return nullptr;
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.pid != kInvalidPageId) f(s.pid, s.off);
  }
  void clear() {
    for (Slot& s : slots_) s = Slot{};
    size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

 private:
  struct Slot {
    PageId pid = kInvalidPageId;
    uint64_t off = 0;
  };
  size_t hash(PageId pid) const { return static_cast<size_t>((uint64_t{pid} * 0x9E3779B97F4A7C15ull) >> 32) & mask_; }
  void put_reserved(PageId pid, uint64_t off) {
    size_t i = hash(pid);
    while (slots_[i].pid != kInvalidPageId && slots_[i].pid != pid) i = (i + 1) & mask_;
    if (slots_[i].pid == kInvalidPageId) size_++;
    slots_[i] = {pid, off};
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace adaptree
