// The page table: which frame holds a page. Open addressing with linear probing
// over a power-of-two array of (page id, frame) pairs, at most half full: its
// memory grows with the pool, never with the store (a 100 GB store with a
// 32 MiB pool needs 8192 frames and a 16k-entry table, 128 KiB).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer/frame.h"
#include "core/util/checked.h"

namespace adaptree {

class PageTable {
 public:
  PageTable() = default;
  PageTable(const PageTable&) = delete;
  PageTable& operator=(const PageTable&) = delete;
  ~PageTable() { delete view_.load(std::memory_order_relaxed); }

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
    publish(std::move(old));
    return true;
  }

  // For readers without a latch (BTree::get_optimistic on a shared store): the frame
  // holding pid as the table shows it now, or kNoFrame. Probes the last published
  // (array, mask) pair, bounded: a writer may be moving entries in place meanwhile, so
  // the answer may be kNoFrame or a stale frame, which the reader's validation throws
  // away; it never reads outside the array.
  FrameId find_unlatched(PageId pid) const {
    const View* v = view_.load(std::memory_order_acquire);
    if (!v || !in_memory(v, sizeof(View)) || !in_memory(v->slots, (size_t{v->mask} + 1) * sizeof(Slot))) return kNoFrame;
    const uint32_t mask = v->mask;
    for (uint32_t i = hash_with(pid, mask), n = 0; n <= mask; i = (i + 1) & mask, n++) {
      const Slot s = v->slots[i];
      if (s.pid == pid) return s.frame;
      if (s.pid == kInvalidPageId) return kNoFrame;
    }
    return kNoFrame;
  }
  // From now on reserve() keeps the arrays it replaces (until clear()): readers without a
  // latch may be probing them.
  void keep_replaced() { keep_replaced_ = true; }

  FrameId find(PageId pid) const {
    for (uint32_t i = hash(pid);; i = (i + 1) & mask_) {
      const Slot s = load(i);
      if (s.pid == pid) return s.frame;
      if (s.pid == kInvalidPageId) return kNoFrame;
    }
  }

  // insert() would not grow the table (BufferPool::allocate_shared).
  bool has_room() const { return 2 * (size_ + 1) <= slots_.size(); }
  // A new entry fills an empty slot with one 8-byte store: a find of another page that
  // runs beside it (BufferPool::allocate_shared) sees the slot empty or filled, and its
  // own entry lies before the first empty slot either way.
  void insert(PageId pid, FrameId f) {
    if (2 * (size_ + 1) > slots_.size()) reserve(size_ + 1);
    uint32_t i = hash(pid);
    while (slots_[i].pid != kInvalidPageId && slots_[i].pid != pid) i = (i + 1) & mask_;
    if (slots_[i].pid == kInvalidPageId) size_++;
    __atomic_store_n(reinterpret_cast<uint64_t*>(&slots_[i]), pack(pid, f), __ATOMIC_RELEASE);
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
    retired_.clear();
    old_views_.clear();
  }
  uint32_t size() const { return size_; }
  uint64_t bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  struct alignas(8) Slot {
    PageId pid = kInvalidPageId;
    FrameId frame = kNoFrame;
  };
  // What find_unlatched probes: an array and its mask, published together.
  struct View {
    const Slot* slots;
    uint32_t mask;
  };
  static uint32_t hash_with(PageId pid, uint32_t mask) {
    return static_cast<uint32_t>((uint64_t{pid} * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  }
  uint32_t hash(PageId pid) const { return hash_with(pid, mask_); }
  // A slot read whole (insert() may fill it beside a find under the shared latch).
  Slot load(uint32_t i) const {
    uint64_t word = __atomic_load_n(reinterpret_cast<const uint64_t*>(&slots_[i]), __ATOMIC_RELAXED);
    return Slot{static_cast<PageId>(word), static_cast<FrameId>(word >> 32)};
  }
  // A slot as one word, as it lies in memory (little-endian: the page id first).
  static uint64_t pack(PageId pid, FrameId f) { return uint64_t{pid} | uint64_t{f} << 32; }
  // After reserve() replaced the array by slots_: a new View; the old array and View are
  // kept if readers without a latch may use them, else freed.
  void publish(std::vector<Slot> old) {
    auto view = std::make_unique<View>(View{slots_.data(), mask_});
    std::unique_ptr<View> before(view_.exchange(view.release(), std::memory_order_acq_rel));
    // (Where even the list cannot grow, the old array goes: out of memory, a reader
    // racing this reserve is the lesser risk.)
    if (keep_replaced_ && reserve_checked(retired_, retired_.size() + 1) &&
        reserve_checked(old_views_, old_views_.size() + 1)) {
      retired_.push_back(std::move(old));
      if (before) old_views_.push_back(std::move(before));
    }
  }
  std::vector<Slot> slots_;
  uint32_t mask_ = 0;
  uint32_t size_ = 0;
  std::atomic<View*> view_{nullptr};
  bool keep_replaced_ = false;
  std::vector<std::vector<Slot>> retired_;
  std::vector<std::unique_ptr<View>> old_views_;
};

}  // namespace adaptree
