// The tree latch: one reader-writer latch per tree, in the tree's own memory
// (so in the mt build every worker on the shared WebAssembly.Memory sees the
// same word). Phase 1 of workers sharing one index (docs/THREADS.md): every
// call of the C ABI on a tree holds it for the length of the call, "shared"
// for reads (any number at once) and "exclusive" for writes (alone). Phase 2
// replaces it by optimistic lock coupling on the frames' state words
// (core/buffer/frame.h) without changing the calls that take it.
//
// The word: bit 31 exclusive, bit 30 "a writer waits" (new shared holders
// stand back, so a stream of readers cannot starve a writer), bits 0..28 the
// number of shared holders. Once the tree is shared between threads the latch
// is distributed: shared holders count in per-context slots instead (below,
// kSlots), and a writer sets bit 31 first and then waits for the slots. A shared holder that finds it must change a page
// (the adaptive layout's conversion, the lazy sort of a fingerprint leaf)
// changes nothing and answers Status::kRestart; the caller releases the
// latch, takes it exclusive and runs the call again ("restart", as an
// optimistic reader will in phase 2).
//
// Waiting: a bounded spin, then, where the caller may block, a futex wait on
// the word (wasm: memory.atomic.wait32/notify; natively std::atomic::wait, or
// yielding where the standard library has no wait). The browser's main
// thread must never block (Atomics.wait throws there, and in wasm the wait
// instruction traps): its contexts say Wait::kSpin and only spin.
//
// Optimistic readers (phase 2b: BTree::get_optimistic) take no latch at all: a
// sequence number, odd while an exclusive holder is in, tells them whether one
// came in while they read (a seqlock: read_begin, read_validate). Everything
// that changes inner nodes, moves records between leaves or changes a store's
// pool holds the latch exclusive, so an unchanged even number means none of
// that happened meanwhile; writers under the shared latch change only their
// leaf, under its node latch, whose version the reader validates too.
//
// Abandoned (bit 29): a thread died while it may have held the latch (a worker
// terminated mid-call; docs/THREADS.md). abandon() sets the bit and wakes every
// sleeper; from then on every lock call, waiting or new, returns false at once
// and the caller answers without touching the tree. The bit is never cleared.
#pragma once
#include <atomic>
#include <cstdint>

#if !defined(__wasm__)
#include <thread>
#endif

namespace adaptree {

class TreeLatch {
 public:
  // How a caller waits once spinning did not get the latch.
  enum class Wait : uint8_t { kSpin, kBlock };

  static constexpr uint32_t kExclusive = 1u << 31;
  static constexpr uint32_t kWriterWaits = 1u << 30;
  static constexpr uint32_t kAbandoned = 1u << 29;
  static constexpr uint32_t kSharedMask = kAbandoned - 1;

  // Distributed (a tree shared between threads, set under the latch exclusive): shared
  // holders count in one of kSlots counters, each on its own cache line, picked by the
  // calling context (at_ctx), instead of in the word. Two threads taking the latch shared
  // then write different lines: with the count in the word, every call of every thread
  // moved the word's line between cores (natively the largest cost that 2 threads add to
  // inserts into one map). An exclusive holder sets its bit in the word first and then
  // waits for every slot to drain; a shared holder counts itself in first and then looks
  // at the word (both sequentially consistent: one of them sees the other), and stands
  // back if a writer is in or waits.
  static constexpr unsigned kSlots = 8;
  void set_distributed(bool on) { distributed_.store(on, std::memory_order_relaxed); }
  bool distributed() const { return distributed_.load(std::memory_order_relaxed); }

  // False (not held) once the latch is abandoned. slot: the caller's (distributed only).
  bool lock_shared(Wait w, unsigned slot = 0) {
    uint32_t v = word_.load(std::memory_order_relaxed);
    for (unsigned spins = 0;;) {
      if (v & kAbandoned) return false;
      if (!(v & (kExclusive | kWriterWaits))) {
        if (distributed()) {
          if (enter_slot(slot, &v)) return true;
          continue;
        }
        if (word_.compare_exchange_weak(v, v + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) return true;
        continue;
      }
      v = pause(v, &spins, w);
    }
  }
  // lock_shared without waiting: false if an exclusive holder is in or a writer waits
  // (or the latch is abandoned).
  bool try_lock_shared(unsigned slot = 0) {
    uint32_t v = word_.load(std::memory_order_relaxed);
    if (distributed()) return !(v & (kExclusive | kWriterWaits | kAbandoned)) && enter_slot(slot, &v);
    while (!(v & (kExclusive | kWriterWaits | kAbandoned)))
      if (word_.compare_exchange_weak(v, v + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) return true;
    return false;
  }
  void unlock_shared(unsigned slot = 0) {
    if (distributed()) {
      // The last one out of its slot while a writer waits for the slots: wake it.
      if (slots_[slot % kSlots].n.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          (word_.load(std::memory_order_seq_cst) & kExclusive))
        wake();
      return;
    }
    uint32_t v = word_.fetch_sub(1, std::memory_order_seq_cst) - 1;
    if ((v & kSharedMask) == 0) wake();  // the last reader out: a waiting writer may go
  }

  // False (not held) once the latch is abandoned.
  bool lock_exclusive(Wait w) {
    uint32_t v = word_.load(std::memory_order_relaxed);
    for (unsigned spins = 0;;) {
      if (v & kAbandoned) return false;
      if (distributed() && !(v & kExclusive)) {
        // The bit first (new shared holders stand back), then the slots drain.
        if (!word_.compare_exchange_weak(v, (v & ~kSharedMask) | kExclusive, std::memory_order_seq_cst,
                                         std::memory_order_relaxed))
          continue;
        if (!drain_slots(w)) return false;
        seq_.fetch_add(1, std::memory_order_seq_cst);  // odd: optimistic readers stand back
        return true;
      }
      if (!distributed() && (v & ~kWriterWaits) == 0) {  // free (a writer-waits mark may be ours or another's)
        if (word_.compare_exchange_weak(v, kExclusive, std::memory_order_seq_cst, std::memory_order_relaxed)) {
          seq_.fetch_add(1, std::memory_order_seq_cst);  // odd: optimistic readers stand back
          return true;
        }
        continue;
      }
      if (distributed()) {  // another exclusive holder is in
        v = pause(v, &spins, w);
        continue;
      }
      if (!(v & kWriterWaits)) {
        // Readers hold it: ask new readers to stand back, then wait for these to leave.
        if (!word_.compare_exchange_weak(v, v | kWriterWaits, std::memory_order_relaxed, std::memory_order_relaxed))
          continue;
        v |= kWriterWaits;
      }
      v = pause(v, &spins, w);
    }
  }
  void unlock_exclusive() {
    // Clears a writer-waits mark too: that writer sets it again if it must wait on.
    // Keeps an abandoned mark.
    seq_.fetch_add(1, std::memory_order_seq_cst);  // even again, and not the number readers began with
    word_.fetch_and(kAbandoned, std::memory_order_seq_cst);
    wake();
  }

  // Marks the latch abandoned and wakes every waiter (see the file comment).
  void abandon() {
    word_.fetch_or(kAbandoned, std::memory_order_seq_cst);
    seq_.fetch_or(kSeqAbandoned, std::memory_order_seq_cst);  // optimistic readers take the latch
#if defined(__wasm__) && defined(__wasm_atomics__)
    __builtin_wasm_memory_atomic_notify(reinterpret_cast<int32_t*>(&word_), ~0u);
#elif !defined(__wasm__) && defined(__cpp_lib_atomic_wait)
    word_.notify_all();
#endif
  }
  bool abandoned() const { return word_.load(std::memory_order_seq_cst) & kAbandoned; }

  // An optimistic read begins: false while an exclusive holder is in (or the latch
  // is abandoned: take the latch, which says so), else *seq for read_validate.
  bool read_begin(uint64_t* seq) const {
    uint64_t s = seq_.load(std::memory_order_acquire);
    if (s & (1 | kSeqAbandoned)) return false;
    *seq = s;
    return true;
  }
  // True if no exclusive holder came in since read_begin gave seq: what the reader
  // read in between (plain loads, ordered before this by the fence) is consistent.
  bool read_validate(uint64_t seq) const {
    std::atomic_thread_fence(std::memory_order_acquire);
    return read_check(seq);
  }
  // read_validate without the fence (wasm's is a full barrier, tens of cycles): the
  // compiler keeps the reads before it, and x86 keeps loads in order, so there it
  // validates as read_validate does; where the hardware may reorder loads it is a
  // cheap early check, and a read_validate (or a fence) must end the read.
  bool read_check(uint64_t seq) const {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return seq_.load(std::memory_order_acquire) == seq;
  }

  // For tests and assertions: the raw word (distributed: with the slots' counts added).
  uint32_t state() const {
    uint32_t v = word_.load(std::memory_order_relaxed);
    if (distributed())
      for (const Slot& s : slots_) v += s.n.load(std::memory_order_relaxed);
    return v;
  }

 private:
#if defined(__wasm__)
  // wasm has no pause instruction: a spin there is one load, far shorter than a native
  // pause, and 256 of them ended in a futex sleep (memory.atomic.wait32) for every split
  // another worker made; waking from it costs tens of microseconds, the split a few.
  static constexpr unsigned kSpinLimit = 1u << 14;
#else
  static constexpr unsigned kSpinLimit = 256;
#endif

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // One round of waiting while the word is v; returns the word as it is now.
  uint32_t pause(uint32_t v, unsigned* spins, Wait w) {
    if (*spins < kSpinLimit) {
      ++*spins;
      relax();
      return word_.load(std::memory_order_relaxed);
    }
    if (w == Wait::kBlock) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      block(v);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    } else {
      yield();
    }
    return word_.load(std::memory_order_relaxed);
  }

  // Sleeps while the word is still v (returns at once if it is not).
  void block(uint32_t v) {
#if defined(__wasm__) && defined(__wasm_atomics__)
    __builtin_wasm_memory_atomic_wait32(reinterpret_cast<int32_t*>(&word_), static_cast<int32_t>(v), -1);
#elif !defined(__wasm__) && defined(__cpp_lib_atomic_wait)
    word_.wait(v, std::memory_order_seq_cst);
#else
    (void)v;
    yield();
#endif
  }

  // Wakes the sleepers after the word changed. sleepers_ is read after the
  // change (both sequentially consistent): a sleeper that registered too late
  // to be seen here finds the word changed and does not sleep.
  void wake() {
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
#if defined(__wasm__) && defined(__wasm_atomics__)
    __builtin_wasm_memory_atomic_notify(reinterpret_cast<int32_t*>(&word_), ~0u);
#elif !defined(__wasm__) && defined(__cpp_lib_atomic_wait)
    word_.notify_all();
#endif
  }

  static void yield() {
#if !defined(__wasm__)
    std::this_thread::yield();
#else
    relax();  // nothing to yield to inside a wasm call: spin on
#endif
  }

  // Distributed: counts the caller in its slot, then checks the word (*v: as found);
  // false (counted out again) if a writer came.
  bool enter_slot(unsigned slot, uint32_t* v) {
    std::atomic<uint32_t>& n = slots_[slot % kSlots].n;
    n.fetch_add(1, std::memory_order_seq_cst);
    *v = word_.load(std::memory_order_seq_cst);
    if (!(*v & (kExclusive | kWriterWaits | kAbandoned))) return true;
    if (n.fetch_sub(1, std::memory_order_seq_cst) == 1) wake();  // a writer may wait for this slot
    return false;
  }
  // Distributed, the exclusive bit set: waits until no slot counts a shared holder.
  // A shared holder's exit does not change the word, so a sleeper here sleeps in short
  // steps (a wake between its look at the slots and its sleep is not lost for long).
  bool drain_slots(Wait w) {
    for (unsigned spins = 0;;) {
      bool busy = false;
      for (const Slot& s : slots_) busy |= s.n.load(std::memory_order_seq_cst) != 0;
      if (!busy) return true;
      uint32_t v = word_.load(std::memory_order_relaxed);
      if (v & kAbandoned) return false;
      if (spins < kSpinLimit) {
        ++spins;
        relax();
      } else if (w == Wait::kBlock) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        block_briefly(v);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      } else {
        yield();
      }
    }
  }
  // Sleeps while the word is still v, 50 microseconds at most.
  void block_briefly(uint32_t v) {
#if defined(__wasm__) && defined(__wasm_atomics__)
    __builtin_wasm_memory_atomic_wait32(reinterpret_cast<int32_t*>(&word_), static_cast<int32_t>(v), 50000);
#else
    (void)v;
    yield();
#endif
  }

  std::atomic<uint32_t> word_{0};
  std::atomic<uint32_t> sleepers_{0};
  // Set only under the latch exclusive; read by waiting shared holders meanwhile (relaxed:
  // the word's sequentially consistent operations order it).
  std::atomic<bool> distributed_{false};
  struct alignas(64) Slot {
    std::atomic<uint32_t> n{0};
  };
  Slot slots_[kSlots];
  // (A line of its own: optimistic readers only load it, shared holders write word_.
  // 64 bits: the count never reaches kSeqAbandoned.)
  static constexpr uint64_t kSeqAbandoned = uint64_t{1} << 63;
  alignas(64) std::atomic<uint64_t> seq_{0};
};

// Holds the latch for one scope, in either mode; upgrade() trades shared for
// exclusive (not atomically: the caller restarts what it did under shared).
class TreeLatchGuard {
 public:
  // slot: the calling context's (TreeLatch::lock_shared).
  TreeLatchGuard(TreeLatch& l, bool exclusive, TreeLatch::Wait w, unsigned slot = 0)
      : l_(l), w_(w), exclusive_(exclusive), slot_(slot) {
    held_ = exclusive ? l.lock_exclusive(w) : l.lock_shared(w, slot);
  }
  ~TreeLatchGuard() {
    if (!held_) return;
    if (exclusive_) l_.unlock_exclusive();
    else l_.unlock_shared(slot_);
  }
  // False when the latch was abandoned (nothing is held: do not touch the tree).
  bool held() const { return held_; }
  TreeLatchGuard(const TreeLatchGuard&) = delete;
  TreeLatchGuard& operator=(const TreeLatchGuard&) = delete;
  bool exclusive() const { return exclusive_; }
  void upgrade() {
    if (exclusive_ || !held_) return;
    l_.unlock_shared(slot_);
    held_ = l_.lock_exclusive(w_);
    exclusive_ = true;
  }

 private:
  TreeLatch& l_;
  TreeLatch::Wait w_;
  bool exclusive_;
  unsigned slot_;
  bool held_ = false;
};

}  // namespace adaptree
