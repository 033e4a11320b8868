// Page id -> where its newest version is in the log (LogRef: the frame's
// offset and size, and for a delta frame its place in the page's chain), for
// the file pager's index of its log (committed and pending). Open addressing with linear probing over a power-of-two
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

// A page's newest frame in the log (log_format.h). depth 0: a page image at
// off; depth d > 0: a delta frame, the d-th of a chain that starts at a page
// image in the log, or at the page in the data file when data_root is set.
// chain: the bytes of the chain's delta frames, this one included.
struct LogRef {
  uint64_t off = 0;
  uint32_t size = 0;
  uint16_t depth = 0;
  uint8_t data_root = 0;
  uint8_t pad = 0;
  uint32_t chain = 0;
};

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
      if (s.pid != kInvalidPageId) put_reserved(s.pid, s.ref);
    return true;
  }
  // Inserts or replaces; false only when the map had to grow and could not.
  bool put(PageId pid, const LogRef& ref) {
    if (2 * (size_ + 1) > slots_.size() && !reserve(size_ + 1)) return false;
    put_reserved(pid, ref);
    return true;
  }
  const LogRef* find(PageId pid) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash(pid);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.pid == pid) return &s.ref;
      if (s.pid == kInvalidPageId) return nullptr;
    }
  }
  // Replaces the entry of a page already in the map (never grows); false if absent.
  bool update(PageId pid, const LogRef& ref) {
    if (slots_.empty()) return false;
    for (size_t i = hash(pid);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.pid == pid) {
        s.ref = ref;
        return true;
      }
      if (s.pid == kInvalidPageId) return false;
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.pid != kInvalidPageId) f(s.pid, s.ref);
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
    LogRef ref;
  };
  size_t hash(PageId pid) const { return static_cast<size_t>((uint64_t{pid} * 0x9E3779B97F4A7C15ull) >> 32) & mask_; }
  void put_reserved(PageId pid, const LogRef& ref) {
    size_t i = hash(pid);
    while (slots_[i].pid != kInvalidPageId && slots_[i].pid != pid) i = (i + 1) & mask_;
    if (slots_[i].pid == kInvalidPageId) size_++;
    slots_[i] = {pid, ref};
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace adaptree
