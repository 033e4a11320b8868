// The C ABI (bindings/adaptree.h) over the core. The only code that knows
// JavaScript calls it: contexts carry the result block and a growable output
// buffer, cursors are core cursors that also notice when their tree is freed.
//
// Threads (docs/THREADS.md): every call on a tree holds the tree's latch
// (core/tree/tree_latch.h) for its length: shared for reads of an in-memory
// tree and, once the tree is shared between threads, for its point writes
// (set, remove, setMany entry by entry; phase 2a: they latch the leaf they
// change); exclusive for other writes and for everything on a store (whose
// reads change its buffer pool) except, once a store is shared, its point reads
// and writes of resident pages (BTree::shared_leaf). A shared call that must
// change more than a leaf answers kRestart and runs again exclusive (run_read,
// run_write below).
#include "bindings/adaptree.h"
#include "bindings/internal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/store.h"
#include "core/tree/btree.h"
#include "core/util/format.h"
#include "core/util/checked.h"
#include "core/util/hash.h"
#include "core/tree/node_stats.h"
#include "core/tree/overflow.h"
#include "core/tree/scan.h"
#include "core/tree/tree_latch.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

using adaptree::BTree;
using adaptree::Cursor;
using adaptree::KeyBuffer;
using adaptree::LayoutConfig;
using adaptree::Slice;
using adaptree::ReadMode;
using adaptree::Status;
using adaptree::TreeLatch;
using adaptree::TreeLatchGuard;
using adaptree::ValueRef;
using adaptree::XorShift32;

struct at_tree {
  explicit at_tree(std::unique_ptr<BTree> t) : own(std::move(t)), tree(*own) {}
  at_tree(std::unique_ptr<adaptree::Storage> s, std::unique_ptr<adaptree::Store> st)
      : storage(std::move(s)), store(std::move(st)), tree(store->tree()) {}
  std::unique_ptr<BTree> own;                   // an in-memory map
  std::unique_ptr<adaptree::Storage> storage;   // a persistent store: its files
  std::unique_ptr<adaptree::Store> store;       // ... and the store on them
  BTree& tree;
  std::vector<at_cursor*> cursors;  // detached when the tree is freed
  adaptree::StatsWalk stats_walk;   // at_stats that a page fault stopped (an async store)
  at_ctx* ctx = nullptr;            // the context of the last call that had one (NEED_PAGE of cursor seeks)
  TreeLatch latch;                  // held by every call on the tree
  // Set once by at_tree_share (under the latch): other threads may call. Values are
  // then copied out under the leaf's latch, point writes run under the shared tree
  // latch, and at_tree_free leaves this struct behind. Atomic: a call reads it
  // before it takes the latch, to choose the mode.
  std::atomic<bool> shared{false};
  // A shared tree after at_tree_free: the tree is gone, this struct stays so
  // that a late call from another thread finds it closed (kClosed) instead of
  // reading freed memory.
  // (Atomic: an optimistic read checks it without the latch.)
  std::atomic<bool> closed{false};
};

struct at_cursor {
  explicit at_cursor(at_tree* t) : owner(t), cur(&t->tree) {
    rng.s ^= static_cast<uint32_t>(reinterpret_cast<uintptr_t>(this));
    mode.rng = &rng;
    cur.set_mode(&mode);
  }
  at_tree* owner;
  Cursor cur;
  // A cursor is used by one thread at a time: its read mode and random source are its own.
  ReadMode mode;
  XorShift32 rng;
  // The far end of the range, for the length of one at_cursor_seek_batch_to call.
  struct Stop {
    const uint8_t* key = nullptr;
    uint32_t len = 0;
    bool set = false, inclusive = false, reverse = false;
    // Whether k lies past the end, in the iteration's direction.
    bool past(const KeyBuffer& k) const {
      if (!set) return false;
      const int c = adaptree::compare(Slice{k.data, k.len}, Slice{key, len});
      return reverse ? (c < 0 || (c == 0 && !inclusive)) : (c > 0 || (c == 0 && !inclusive));
    }
  } stop;
};

struct at_ctx {
  uint32_t result[5] = {0, 0, 0, 0, 0};
  // Full pointers (natively wider than the u32 result block).
  const uint8_t* key_ptr = nullptr;
  const uint8_t* value_ptr = nullptr;
  std::vector<uint8_t> buf;       // output of batches, stats, overflow values
  std::vector<uint8_t> overflow;  // overflow values inside a batch
  KeyBuffer key;
  // A `number` key encoded from a double (at_get_num and co.): 17 bytes at most.
  uint8_t num_key[24];
  // How calls with this context wait for a tree latch (at_ctx_set_wait).
  TreeLatch::Wait wait = TreeLatch::Wait::kSpin;
  // The adaptive counter's draws of shared reads (the tree's own source is
  // for exclusive holders).
  XorShift32 rng;
  // Optimistic reads of a shared store: the frames they went through, on this tree, for
  // its clock's reference bits and hit count (set by settle_touched under the latch).
  adaptree::TouchedFrames touched;
  at_tree* touched_tree = nullptr;
  // Its slot in a distributed tree latch (TreeLatch::kSlots; contexts take them in turn).
  unsigned slot = 0;
  // A shared write that makes room in its leaf (ReadMode::recs, ::scratch, ::rebalancer:
  // made on first use, bound to the tree for each use).
  std::vector<adaptree::RecordRef> recs;
  alignas(16) uint8_t scratch[3 * adaptree::kPageSize];
  std::unique_ptr<adaptree::Rebalancer> rebalancer;
};

namespace {

constexpr int32_t st(Status s) { return static_cast<int32_t>(s); }

TreeLatch::Wait wait_of(const at_ctx* c) { return c ? c->wait : TreeLatch::Wait::kSpin; }
unsigned slot_of(const at_ctx* c) { return c ? c->slot : 0; }

// A call's hold on a tree's latch. Reads of an in-memory tree share it; a
// store's reads fix and evict frames, so everything on a store is exclusive
// but, once it is shared between threads, its point reads (PointRead: get,
// has, getMany) and writes: they touch resident pages only and restart
// exclusive for anything else (BTree::shared_leaf).
// Point writes (PointWrite) share it once the tree is shared between threads
// (before, one thread alone: exclusive costs nothing and latches no leaf).
// ok() is false (say kClosed) when the tree was closed by another thread.
struct PointWrite {};
struct PointRead {};
class Held {
 public:
  // slot: the calling context's slot of a distributed tree latch (TreeLatch::lock_shared).
  Held(at_tree* t, bool write, TreeLatch::Wait w, XorShift32* rng, unsigned slot = 0)
      : t_(t), g_(t->latch, write || t->store != nullptr, w, slot) {
    init(rng, w);
  }
  Held(at_tree* t, PointRead, at_ctx* c)
      : t_(t), g_(t->latch, t->store != nullptr && !t->shared.load(std::memory_order_relaxed), wait_of(c), slot_of(c)) {
    init(&c->rng, wait_of(c));
  }
  // c: the calling context (none: exclusive), whose scratch a write that makes room
  // under the shared latch uses (BTree::make_room_shared).
  Held(at_tree* t, PointWrite, at_ctx* c)
      : t_(t), g_(t->latch, !c || !t->shared.load(std::memory_order_relaxed), wait_of(c), slot_of(c)) {
    init(c ? &c->rng : nullptr, wait_of(c));
    if (c) {
      mode_.recs = &c->recs;
      mode_.scratch = c->scratch;
      if (t->store && !c->rebalancer) c->rebalancer.reset(new (std::nothrow) adaptree::Rebalancer(nullptr));
      mode_.rebalancer = c->rebalancer.get();
    }
  }
  ~Held() { mode_.release(); }
  // Not held (the latch was abandoned: at_tree_abandon) counts as closed.
  bool ok() const { return g_.held() && !t_->closed; }
  ReadMode* mode() { return &mode_; }
  bool exclusive() const { return g_.exclusive(); }
  // A shared call answered kRestart: hold exclusive from now on, run it again.
  bool upgrade() {
    mode_.release();
    g_.upgrade();
    mode_.shared = false;
    return ok();
  }

 private:
  void init(XorShift32* rng, TreeLatch::Wait w) {
    mode_.shared = !g_.exclusive();
    mode_.block = w == TreeLatch::Wait::kBlock;
    // Another thread may write beside this call (only under the latch: a shared
    // tree stays shared, and shared is set under the latch exclusive).
    mode_.leaves = mode_.shared && t_->shared.load(std::memory_order_relaxed);
    mode_.rng = rng;
  }
  at_tree* t_;
  TreeLatchGuard g_;
  ReadMode mode_;
};

// The store-wide calls (commit, checkpoint, stats, ...): exclusive, like every call on
// a store, so that a thread sharing the store never runs one beside another's write.
// ok() is false when the store was closed by another thread.
class StoreHeld {
 public:
  explicit StoreHeld(at_tree* t, TreeLatch::Wait w = TreeLatch::Wait::kSpin) : t_(t), g_(t->latch, true, w) {}
  bool ok() const { return g_.held() && !t_->closed; }

 private:
  at_tree* t_;
  TreeLatchGuard g_;
};

// Runs read(mode) under h, again exclusive while it answers kRestart; kClosed
// when the tree was closed meanwhile.
template <class Read>
Status run_read(Held& h, Read&& read) {
  for (;;) {
    Status s = read(h.mode());
    if (s != Status::kRestart) return s;
    if (!h.upgrade()) return Status::kClosed;
  }
}

// A point write on key: as run_read, then the work a shared write left for the
// exclusive latch (a merge, a Contention Split). The latch stays
// exclusive for the rest of the call (a batch goes on so).
template <class Write>
Status run_write(Held& h, BTree& t, Slice key, Write&& write) {
  Status s = run_read(h, write);
  if (h.mode()->pending()) {
    if (!h.exclusive() && !h.upgrade()) return Status::kClosed;
    Status f = t.finish_shared(key, h.mode());
    if (s == Status::kOk) s = f;
  }
  return s;
}

// On a store, the frames optimistic reads went through are noted in the context and set
// referenced (for the clock) a batch at a time under the shared latch: settle_touched.
// It does not wait for the latch (the reads did not): while a writer has it or waits for
// it, the notes stay, and once they fill up new ones are dropped (a page a reader
// touched may then lose its second chance in the clock; it is read in again if needed).
void settle_touched(at_ctx* c) {
  at_tree* t = c->touched_tree;
  if (t && c->touched.n) {
    if (!t->latch.try_lock_shared(c->slot)) return;
    if (!t->closed) t->tree.settle(c->touched, reinterpret_cast<uintptr_t>(&c->rng));
    t->latch.unlock_shared(c->slot);
  }
  c->touched.clear();
}

// Phase 2b (docs/THREADS.md): a point read of a map or store shared between threads
// runs optimistically first (BTree::get_optimistic: no latch word written, the value
// copied to out, which has room for kNodeSize bytes or is null, before it validates).
// kRestart: run it latched, as before; *drew: with the counter step the optimistic run
// drew. A closed tree is answered latched (kClosed): the sequence number read before
// `closed` covers the close.
Status read_optimistic(at_tree* t, at_ctx* c, Slice key, uint8_t* out, uint32_t* len, bool* drew) {
  *drew = false;
  if (c->touched_tree != t) {
    settle_touched(c);
    c->touched.clear();  // (another tree's, not settled: dropped)
    c->touched_tree = t;
  }
  Status s = Status::kRestart;
  for (int attempt = 0; attempt < 3; attempt++) {
    uint64_t seq;
    if (!t->latch.read_begin(&seq) || t->closed.load(std::memory_order_relaxed)) break;
    s = t->tree.get_optimistic(key, t->latch, seq, c->rng, out, len, drew, &c->touched);
    if (s != Status::kRestart || *drew) break;
  }
  if (c->touched.due()) settle_touched(c);
  return s;
}

void set_result(at_ctx* c, const uint8_t* key, uint32_t key_len, const uint8_t* value, uint32_t value_len,
                uint32_t aux) {
  c->key_ptr = key;
  c->value_ptr = value;
  c->result[0] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(key));
  c->result[1] = key_len;
  c->result[2] = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(value));
  c->result[3] = value_len;
  c->result[4] = aux;
}

// The status of a tree call; NEED_PAGE (a store on an async host) puts the
// missing page's id in result.aux of c (or of the tree's last context).
int32_t ret(at_tree* t, at_ctx* c, Status s) {
  // (Only for a store not shared between threads, whose calls are all exclusive: a
  // shared one is on files, never answers NEED_PAGE, and its reads run side by side.)
  if (c && t->store && !t->shared.load(std::memory_order_relaxed)) t->ctx = c;
  if (s == Status::kNeedPage) {
    at_ctx* x = c ? c : t->ctx;
    if (x) x->result[4] = t->tree.store().missing_page();
  }
  return st(s);
}

// Appends to a context buffer without per-record resize/zero-fill: the
// buffer grows geometrically and `used` says how much of it is output.
// room() is nullptr when the buffer cannot grow (out of memory; the output so
// far stays as it was, and the caller reports kOutOfMemory).
struct Writer {
  std::vector<uint8_t>& b;
  size_t used = 0;
  uint8_t* room(size_t n) {
    if (used + n > b.size()) [[unlikely]] {
      if (!grow(n)) return nullptr;
    }
    uint8_t* p = b.data() + used;
    used += n;
    return p;
  }
  bool grow(size_t n) {
    // By half, not doubling (each doubled buffer is larger than all the freed ones before it
    // together). It helps little: a 300 MiB getMany result grew wasm memory by 1052 MiB
    // doubling, 975 MiB so (a probe, session 30; README, "Memory", says so).
    size_t want = std::max<size_t>(b.size() + b.size() / 2, used + n + 4096);
    // The larger step may not fit where the exact need does.
    if (!adaptree::resize_checked(b, want) && !adaptree::resize_checked(b, used + n)) return false;
    return true;
  }
  bool u32(uint32_t v) {
    uint8_t* p = room(4);
    if (!p) return false;
    memcpy(p, &v, 4);
    return true;
  }
};

// Appends [u32 length][bytes] of a value, reading overflow chains straight in.
Status append_value(const BTree& t, Writer& w, const ValueRef& v) {
  if (!v.is_overflow()) {
    uint32_t len = v.field & adaptree::kValueLenMask;
    uint8_t* p = w.room(4 + len);
    if (!p) return Status::kOutOfMemory;
    memcpy(p, &len, 4);
    adaptree::copy_small(p + 4, v.ptr, len);
    return Status::kOk;
  }
  if (!t.value_length_ok(v)) return Status::kCorrupt;  // (before room() allocates it)
  uint32_t len = static_cast<uint32_t>(v.length());
  uint8_t* p = w.room(4 + size_t{len});
  if (!p) return Status::kOutOfMemory;
  memcpy(p, &len, 4);
  return t.read_overflow(v, p + 4);
}

// The output buffer keeps what it grew to, except past this: a one-off huge value or
// batch gives its memory back at the start of the next call that uses the buffer (its
// bytes must stay valid until then). As the TypeScript data area does (map.ts SHRINK_ABOVE).
constexpr size_t kKeepOutput = size_t{4} << 20;
inline void trim_output(at_ctx* c) {
  if (c->buf.capacity() > kKeepOutput) [[unlikely]] std::vector<uint8_t>().swap(c->buf);
}

// The context's buffer takes any inline value (an optimistic read copies one there).
inline bool room_for_node(at_ctx* c) {
  trim_output(c);
  return c->buf.size() >= adaptree::kNodeSize || adaptree::resize_checked(c->buf, adaptree::kNodeSize);
}

// Copies a JSON or message string into the context's buffer as the result value.
Status set_text_result(at_ctx* c, const std::string& text) {
  trim_output(c);
  if (!adaptree::resize_checked(c->buf, text.size())) return Status::kOutOfMemory;
  if (!text.empty()) memcpy(c->buf.data(), text.data(), text.size());  // an empty buffer's data() may be null
  set_result(c, nullptr, 0, c->buf.data(), static_cast<uint32_t>(text.size()), 0);
  return Status::kOk;
}

}  // namespace

extern "C" {

uint32_t at_abi_version(void) { return AT_ABI_VERSION; }
uint32_t at_page_size(void) { return adaptree::kPageSize; }
uint32_t at_max_key_size(void) { return adaptree::kMaxKeySize; }
uint32_t at_max_key_size_untruncated(void) { return adaptree::kMaxKeySizeUntruncated; }

void* at_alloc(uint32_t size) {
  size_t n = (static_cast<size_t>(size) + 15) & ~static_cast<size_t>(15);
  if (n == 0) n = 16;
  return aligned_alloc(16, n);
}
void at_free(void* p) { free(p); }

at_ctx* at_ctx_new(void) {
  at_ctx* c = new (std::nothrow) at_ctx();
  static std::atomic<uint32_t> next_slot{0};  // (wasm: in the memory every worker shares)
  if (c) {
    c->slot = next_slot.fetch_add(1, std::memory_order_relaxed) % TreeLatch::kSlots;
    c->rng.s ^= static_cast<uint32_t>(reinterpret_cast<uintptr_t>(c) * 2654435761u);
    if (c->rng.s == 0) c->rng.s = 1;
  }
  return c;
}
int32_t at_ctx_set_wait(at_ctx* ctx, uint32_t may_block) {
  if (!ctx) return st(Status::kInvalidArgument);
  ctx->wait = may_block ? TreeLatch::Wait::kBlock : TreeLatch::Wait::kSpin;
  return st(Status::kOk);
}
void at_ctx_free(at_ctx* ctx) { delete ctx; }
uint32_t* at_ctx_result(at_ctx* ctx) { return ctx->result; }

// Not in the header: full-width result pointers for native callers (tests,
// benchmark), where the u32 result block cannot hold a pointer.
const uint8_t* at_ctx_key_ptr(at_ctx* ctx) { return ctx->key_ptr; }
const uint8_t* at_ctx_value_ptr(at_ctx* ctx) { return ctx->value_ptr; }

}  // extern "C" (reopened below)

// A shared tree's tombstone outlives its free() on purpose: LeakSanitizer is told so.
#if defined(__SANITIZE_ADDRESS__)
#define ADAPTREE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ADAPTREE_LSAN 1
#endif
#endif
#if ADAPTREE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

extern "C" {

at_tree* at_tree_new(uint32_t layout_config) {
  if (layout_config >= adaptree::kLayoutConfigCount) return nullptr;
  // The tree (its scratch pages) is a separate allocation that may fail on its own.
  std::unique_ptr<BTree> own(new (std::nothrow) BTree(static_cast<LayoutConfig>(layout_config)));
  if (!own) return nullptr;
  at_tree* t = new (std::nothrow) at_tree(std::move(own));
  if (!t) return nullptr;
  if (t->tree.init() != Status::kOk) {
    delete t;
    return nullptr;
  }
  // An in-memory map splits 1-to-2 as the paper does unless asked (at_tree_set_fill):
  // redistribution costs random-order inserts 0.5-0.8x for 0.8x the bytes (README, "Node
  // fill"); stores keep it on, where the bytes are I/O.
  t->tree.set_fill(adaptree::FillOptions{false, false});
  return t;
}

int32_t at_tree_share(at_tree* t) {
  if (!t) return st(Status::kClosed);
  // A store on an asynchronous host fetches pages through the JavaScript of the
  // thread that opened it (NEED_PAGE): not shareable. A store on files is: every call
  // on it holds the tree latch exclusive, and each thread's host functions reach the
  // same files (docs/THREADS.md, "Stores").
  if (t->store && t->store->is_async()) return st(Status::kInvalidArgument);
  TreeLatchGuard g(t->latch, true, TreeLatch::Wait::kSpin);
  if (!g.held() || t->closed) return st(Status::kClosed);
  t->tree.store().keep_replaced_arrays();  // (optimistic reads: BTree::get_optimistic)
  t->shared.store(true, std::memory_order_relaxed);
  t->latch.set_distributed(true);  // (under the latch exclusive)
  return st(Status::kOk);
}

void at_tree_free(at_tree* t) {
  if (!t) return;
  if (t->shared) {
    // Other threads may still call with this handle: wait for the calls in
    // flight, drop the tree, keep the (small) struct as a closed tombstone.
    TreeLatchGuard g(t->latch, true, TreeLatch::Wait::kSpin);
    if (t->closed) return;
    if (!g.held()) {
      // Abandoned: a dead thread may have left the tree half-modified; it is not
      // walked again, not even to free it (its memory stays allocated).
#if ADAPTREE_LSAN
      __lsan_ignore_object(t);
#endif
      return;
    }
    for (at_cursor* c : t->cursors) c->cur.detach();  // their owner stays: the tombstone
    std::vector<at_cursor*>().swap(t->cursors);
    t->own.reset();
    t->store.reset();  // (t->tree refers into it: closed, nobody reads it again)
    t->storage.reset();
    t->closed = true;
#if ADAPTREE_LSAN
    __lsan_ignore_object(t);  // the tombstone is kept on purpose (docs/THREADS.md)
#endif
    return;
  }
  for (at_cursor* c : t->cursors) {
    c->owner = nullptr;
    c->cur.detach();
  }
  delete t;
}

int32_t at_set(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len, const uint8_t* value, uint32_t value_len) {
  if (!t) return st(Status::kClosed);
  Held h(t, PointWrite{}, c);
  if (!h.ok()) return st(Status::kClosed);
  Slice k{key, key_len};
  if (h.exclusive()) return ret(t, c, t->tree.set(k, {value, value_len}));  // not shared: as phase 1
  return ret(t, c, run_write(h, t->tree, k, [&](ReadMode* m) { return t->tree.set(k, {value, value_len}, m); }));
}

int32_t at_get(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len) {
  if (!t) return st(Status::kClosed);
  bool drew = false;
  if (t->shared.load(std::memory_order_relaxed) && room_for_node(c)) {
    uint32_t len = 0;
    Status s = read_optimistic(t, c, {key, key_len}, c->buf.data(), &len, &drew);
    if (s == Status::kOk || s == Status::kNotFound) {
      if (s == Status::kOk) set_result(c, key, key_len, c->buf.data(), len, 0);
      else set_result(c, nullptr, 0, nullptr, 0, 0);
      return st(s);
    }
  }
  Held h(t, PointRead{}, c);
  if (!h.ok()) return st(Status::kClosed);
  h.mode()->drawn = drew;
  ValueRef v;
  Status s = run_read(h, [&](ReadMode* m) { return t->tree.get({key, key_len}, &v, m); });
  if (s != Status::kOk) {
    set_result(c, nullptr, 0, nullptr, 0, 0);
    return ret(t, c, s);
  }
  Slice out;
  if (v.is_overflow() || t->shared.load(std::memory_order_relaxed)) trim_output(c);
  // (Under a leaves mode get() left the leaf latched for this copy: Held releases it.)
  s = t->tree.read_value(v, &c->buf, &out);
  // Shared with other threads, the page may change once the latch is released:
  // the value leaves in the context's buffer (read_value put an overflow value there).
  if (s == Status::kOk && t->shared.load(std::memory_order_relaxed) && !v.is_overflow()) {
    if (!adaptree::resize_checked(c->buf, out.len)) return st(Status::kOutOfMemory);
    adaptree::copy_small(c->buf.data(), out.data, out.len);
    out.data = c->buf.data();
  }
  set_result(c, key, key_len, out.data, out.len, 0);
  return ret(t, c, s);
}

int32_t at_has(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len) {
  if (!t) return st(Status::kClosed);
  bool drew = false;
  if (t->shared.load(std::memory_order_relaxed)) {
    uint32_t len;
    Status s = read_optimistic(t, c, {key, key_len}, nullptr, &len, &drew);
    if (s == Status::kOk || s == Status::kNotFound) return st(s);
  }
  Held h(t, PointRead{}, c);
  if (!h.ok()) return st(Status::kClosed);
  h.mode()->drawn = drew;
  ValueRef v;
  return ret(t, c, run_read(h, [&](ReadMode* m) { return t->tree.get({key, key_len}, &v, m); }));
}

int32_t at_remove(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len) {
  if (!t) return st(Status::kClosed);
  Held h(t, PointWrite{}, c);
  if (!h.ok()) return st(Status::kClosed);
  Slice k{key, key_len};
  if (h.exclusive()) return ret(t, c, t->tree.remove(k));  // not shared: as phase 1
  return ret(t, c, run_write(h, t->tree, k, [&](ReadMode* m) { return t->tree.remove(k, m); }));
}

// `number` keys (ts/src/encoding/number.ts): a tag, then big-endian fields. Integers in the
// safe range: 0x12, floor(x) + 2^53 as u64 (two u32 halves, as the TypeScript writes them),
// and for a fraction its IEEE bits after (complemented when negative); beyond it the bits
// alone (0x11 / 0x13); the infinities one tag byte. -0 encodes as +0. x is not NaN.
static uint32_t encode_number(double x, uint8_t* o) {
  constexpr double kMaxSafe = 9007199254740991.0, kTwo32 = 4294967296.0;
  auto bits_be = [](double v, uint8_t* p) {
    uint64_t b;
    memcpy(&b, &v, 8);
    if (v < 0) b = ~b;
    adaptree::store_be32(p, static_cast<uint32_t>(b >> 32));
    adaptree::store_be32(p + 4, static_cast<uint32_t>(b));
  };
  if (x >= -kMaxSafe && x <= kMaxSafe) {
    double i = __builtin_floor(x);
    double hi = __builtin_floor(i / kTwo32);  // in [-2^21, 2^21)
    o[0] = 0x12;
    adaptree::store_be32(o + 1, static_cast<uint32_t>(static_cast<int32_t>(hi) + 2097152));
    adaptree::store_be32(o + 5, static_cast<uint32_t>(i - hi * kTwo32));
    if (x == i) return 9;
    bits_be(x, o + 9);
    return 17;
  }
  if (x == __builtin_inf() || x == -__builtin_inf()) {
    o[0] = x > 0 ? 0x14 : 0x10;
    return 1;
  }
  o[0] = x > 0 ? 0x13 : 0x11;
  bits_be(x, o + 1);
  return 9;
}

int32_t at_get_num(at_tree* t, at_ctx* c, double key) {
  if (!c || key != key) return st(Status::kInvalidArgument);
  return at_get(t, c, c->num_key, encode_number(key, c->num_key));
}
int32_t at_has_num(at_tree* t, at_ctx* c, double key) {
  if (!c || key != key) return st(Status::kInvalidArgument);
  return at_has(t, c, c->num_key, encode_number(key, c->num_key));
}
int32_t at_set_num(at_tree* t, at_ctx* c, double key, const uint8_t* value, uint32_t value_len) {
  if (!c || key != key) return st(Status::kInvalidArgument);
  return at_set(t, c, c->num_key, encode_number(key, c->num_key), value, value_len);
}
int32_t at_remove_num(at_tree* t, at_ctx* c, double key) {
  if (!c || key != key) return st(Status::kInvalidArgument);
  return at_remove(t, c, c->num_key, encode_number(key, c->num_key));
}

double at_count(at_tree* t) {
  if (!t) return 0.0;
  Held h(t, false, TreeLatch::Wait::kSpin, nullptr);
  return h.ok() ? static_cast<double>(t->tree.count()) : st(Status::kClosed);
}

int32_t at_clear(at_tree* t) {
  if (!t) return st(Status::kClosed);
  Held h(t, true, TreeLatch::Wait::kSpin, nullptr);
  if (!h.ok()) return st(Status::kClosed);
  return st(t->tree.clear());
}

int32_t at_set_many(at_tree* t, at_ctx* c, const uint8_t* batch, uint32_t count) {
  // None applied until said otherwise: a refusal at the latch (CLOSED) left a previous call's
  // value_len, which the caller read as the entries applied ("69 of 20").
  if (c) set_result(c, nullptr, 0, nullptr, 0, 0);
  if (!t) return st(Status::kClosed);
  // Entry by entry under the shared latch once the tree is shared (each entry
  // latches its leaf), so a long batch does not block readers and other writers.
  Held h(t, PointWrite{}, c);
  if (!h.ok()) return st(Status::kClosed);
  // A tree that takes shorter keys than the encoders let through (`baseline`: 1011 bytes)
  // refuses a batch with a longer one before it writes anything, as the encoders refuse a key
  // over kMaxKeySize: one by one, the entries before it went in, and adaptree/level's batch
  // (which relies on setMany changing nothing when it throws) was left half applied and then
  // committed (a probe, session 33).
  if (const uint32_t maxk = t->tree.max_key_size(); maxk < adaptree::kMaxKeySize) {
    const uint8_t* p = batch;
    for (uint32_t i = 0; i < count; i++) {
      uint32_t kl, vl;
      memcpy(&kl, p, 4);
      if (kl > maxk) return st(Status::kKeyTooLarge);
      memcpy(&vl, p + 4 + kl, 4);
      p += 8 + size_t{kl} + vl;
    }
  }
  // A strictly ascending batch into an empty tree is bulk loaded (dense nodes).
  // Without memory for the two index arrays it goes one by one (which needs none).
  // The bulk load builds the whole tree: exclusive.
  std::vector<Slice> keys, values;
  if (t->tree.count() == 0 && count > 1 && !h.exclusive() && !h.upgrade()) return st(Status::kClosed);
  if (t->tree.count() == 0 && count > 1 && adaptree::resize_checked(keys, count) &&
      adaptree::resize_checked(values, count)) {
    const uint8_t* p = batch;
    bool sorted = true;
    for (uint32_t i = 0; i < count && sorted; i++) {
      uint32_t kl, vl;
      memcpy(&kl, p, 4);
      memcpy(&vl, p + 4 + kl, 4);
      keys[i] = {p + 4, kl};
      values[i] = {p + 8 + kl, vl};
      if (i && adaptree::compare(keys[i - 1], keys[i]) >= 0) sorted = false;
      p += 8 + kl + vl;
    }
    if (sorted) {
      Status s = t->tree.bulk_load(keys.data(), values.data(), count);
      if (s == Status::kOk) {
        set_result(c, nullptr, 0, nullptr, 0, count);
        return st(s);
      }
      if (s == Status::kNeedPage || s == Status::kBusy || s == Status::kReadOnly) {
        set_result(c, nullptr, 0, nullptr, 0, 0);
        return ret(t, c, s);
      }
      // An oversized key or value, or no memory for the bulk load's bookkeeping:
      // apply one by one to report how far we got.
    }
  }
  keys = {};
  values = {};
  const uint8_t* p = batch;
  uint32_t applied = 0;
  Status s = Status::kOk;
  for (; applied < count; applied++) {
    uint32_t kl, vl;
    memcpy(&kl, p, 4);
    memcpy(&vl, p + 4 + kl, 4);
    Slice k{p + 4, kl};
    s = h.exclusive() ? t->tree.set(k, {p + 8 + kl, vl})
                      : run_write(h, t->tree, k, [&](ReadMode* m) { return t->tree.set(k, {p + 8 + kl, vl}, m); });
    if (s != Status::kOk) break;
    p += 8 + kl + vl;
  }
  set_result(c, nullptr, 0, nullptr, applied, applied);  // value_len survives NEED_PAGE's aux
  return ret(t, c, s);
}

// A getMany whose output passes this many bytes ends after that key: result.key_len says how
// many keys were answered (0: all), and the caller copies them out and calls again for the
// rest. The whole output in one buffer, grown by doubling, took ~3x the result in wasm memory,
// which never shrinks (100 values of 1 MiB: +242 MiB; 200: +1 GiB).
constexpr size_t kManyOutput = size_t{1} << 20;

int32_t at_get_many(at_tree* t, at_ctx* c, const uint8_t* keys, uint32_t count) {
  if (!t) return st(Status::kClosed);
  trim_output(c);
  Writer w{c->buf};
  const uint8_t* p = keys;
  uint32_t found = 0, i = 0;
  bool drew = false;
  // Shared: optimistic key by key, without the latch; from the first key that must run
  // latched on, the rest of the batch runs latched.
  if (t->shared.load(std::memory_order_relaxed)) {
    for (; i < count; i++) {
      uint32_t kl;
      memcpy(&kl, p, 4);
      if (kl > adaptree::kMaxKeySize) {  // (absent, as latched: kKeyTooLarge)
        if (!w.u32(0xFFFFFFFFu)) break;
        p += 4 + kl;
        continue;
      }
      const size_t before = w.used;
      uint8_t* room = w.room(4 + size_t{adaptree::kNodeSize});
      if (!room) break;  // (latched, which reports it)
      uint32_t len = 0;
      Status s = read_optimistic(t, c, {p + 4, kl}, room + 4, &len, &drew);
      w.used = before;
      if (s == Status::kOk) {
        memcpy(room, &len, 4);
        w.used = before + 4 + len;
        found++;
        if (w.used >= kManyOutput && i + 1 < count) {  // (the rest in the next call)
          set_result(c, nullptr, i + 1, c->buf.data(), static_cast<uint32_t>(w.used), found);
          return st(Status::kOk);
        }
      } else if (s == Status::kNotFound) {
        w.u32(0xFFFFFFFFu);  // (room: fits)
      } else {
        break;
      }
      p += 4 + kl;
    }
    if (i == count) {
      set_result(c, nullptr, 0, c->buf.data(), static_cast<uint32_t>(w.used), found);
      return st(Status::kOk);
    }
  }
  Held h(t, PointRead{}, c);
  if (!h.ok()) return st(Status::kClosed);
  h.mode()->drawn = drew;
  for (; i < count; i++) {
    uint32_t kl;
    memcpy(&kl, p, 4);
    ValueRef v;
    // A restart upgrades the latch for the rest of the batch: the values so far stay valid.
    Status s = run_read(h, [&](ReadMode* m) { return t->tree.get({p + 4, kl}, &v, m); });
    if (s == Status::kOk) {
      const size_t before = w.used;
      s = append_value(t->tree, w, v);  // under the leaf's latch (leaves mode)
      h.mode()->release();
      if (s == Status::kNeedPage) {
        // A page of this key's overflow value (async host): the keys before it are answered,
        // as below; its partial value is dropped. (Answering none made a batch of two values
        // larger than the pool start over from the first one for ever.)
        set_result(c, nullptr, i, c->buf.data(), static_cast<uint32_t>(before), 0);
        return ret(t, c, s);
      }
      if (s != Status::kOk) return ret(t, c, s);
      found++;
      if (w.used >= kManyOutput && i + 1 < count) {  // (the rest in the next call)
        set_result(c, nullptr, i + 1, c->buf.data(), static_cast<uint32_t>(w.used), found);
        return st(Status::kOk);
      }
    } else if (s == Status::kNotFound || s == Status::kKeyTooLarge) {
      if (!w.u32(0xFFFFFFFFu)) return st(Status::kOutOfMemory);
    } else {
      // NEED_PAGE: the output of the keys before this one, and their number in key_len, so
      // that the caller resumes here (a batch whose pages outgrow the pool never completes
      // in one call).
      if (s == Status::kNeedPage) set_result(c, nullptr, i, c->buf.data(), static_cast<uint32_t>(w.used), 0);
      return ret(t, c, s);
    }
    p += 4 + kl;
  }
  set_result(c, nullptr, 0, c->buf.data(), static_cast<uint32_t>(w.used), found);
  return st(Status::kOk);
}

double at_delete_range(at_tree* t, at_ctx* c, const uint8_t* lo, uint32_t lo_len, const uint8_t* hi, uint32_t hi_len,
                       uint32_t flags) {
  if (!t) return st(Status::kClosed);
  Held h(t, true, wait_of(c), nullptr);
  if (!h.ok()) return st(Status::kClosed);
  uint64_t removed = 0;
  Status s = t->tree.delete_range({lo, lo_len}, flags & AT_RANGE_LO_NONE, flags & AT_RANGE_LO_EXCLUSIVE,
                                  {hi, hi_len}, flags & AT_RANGE_HI_NONE, flags & AT_RANGE_HI_EXCLUSIVE, &removed);
  if (s == Status::kNeedPage) {
    if (c) set_result(c, nullptr, 0, nullptr, 0, 0);
    ret(t, c, s);
    return AT_RANGE_NEED_PAGE;
  }
  if (adaptree::is_error(s)) return st(s);
  return static_cast<double>(removed);
}

int32_t at_tree_set_fill(at_tree* t, uint32_t flags) {
  if (!t) return st(Status::kClosed);
  if (flags > 7) return st(Status::kInvalidArgument);
  Held h(t, true, TreeLatch::Wait::kSpin, nullptr);
  if (!h.ok()) return st(Status::kClosed);
  adaptree::FillOptions o;
  o.redistribute = flags & 1;
  o.xmerge_on_pressure = flags & 2;
  o.edges = !(flags & 4);
  t->tree.set_fill(o);
  return st(Status::kOk);
}

uint32_t at_tree_erase_epoch(at_tree* t) {
  if (!t) return 0;
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(t->tree.erase_epoch_word()));
}

int32_t at_tree_compact(at_tree* t, at_ctx* c) {
  if (!t) return st(Status::kClosed);
  Held h(t, true, wait_of(c), nullptr);
  if (!h.ok()) return st(Status::kClosed);
  uint64_t freed = 0;
  Status s = t->tree.compact(&freed);
  // (an async store's free list not read yet: NEED_PAGE names the page, as every call's does;
  // freed in result.aux hid it, and the caller took the call as done)
  if (s == Status::kNeedPage) return ret(t, c, s);
  if (c) set_result(c, nullptr, 0, nullptr, 0, static_cast<uint32_t>(freed));
  return st(s);
}

int32_t at_stats(at_tree* t, at_ctx* c) {
  if (!t) return st(Status::kClosed);
  Held h(t, true, wait_of(c), nullptr);  // rare: exclusive keeps the walk simple
  if (!h.ok()) return st(Status::kClosed);
  // The walk reads every page: on an async store one may need fetching first.
  if (t->store) t->tree.store().begin_op();
  adaptree::TreeStats stats;
  std::string json;
  // (A fault's retry goes on from where the walk stopped: its pages need not stay resident.)
  Status s = adaptree::collect_stats(t->tree, &stats, &t->stats_walk);
  if (t->store && t->tree.store().failure() != Status::kOk) return ret(t, c, t->tree.store().failure());
  if (s == Status::kOk) s = adaptree::stats_json(t->tree, stats, &json);
  if (s == Status::kOk) s = set_text_result(c, json);
  return st(s);
}

int32_t at_check(at_tree* t, at_ctx* c) {
  if (!t) return st(Status::kClosed);
  Held h(t, true, wait_of(c), nullptr);
  if (!h.ok()) return st(Status::kClosed);
  std::string err;
  Status s = t->tree.check(&err);
  if (t->store && t->tree.store().failure() == Status::kNeedPage) return ret(t, c, Status::kNeedPage);
  if (s == Status::kOutOfMemory) return st(s);
  // A page that could not be read for want of memory (a frame) or I/O is not a damaged tree
  // (it was CORRUPT: 'page could not be read (-3)', session 23's probe at its memory budget).
  if (t->store) {
    const Status f = t->tree.store().failure();
    if (f == Status::kOutOfMemory || f == Status::kIoError || f == Status::kQuotaExceeded) return st(f);
  }
  Status s2 = set_text_result(c, err);
  return st(s2 != Status::kOk ? s2 : s);
}

at_cursor* at_cursor_new(at_tree* t) {
  if (!t) return nullptr;
  Held h(t, true, TreeLatch::Wait::kSpin, nullptr);
  if (!h.ok()) return nullptr;
  if (!adaptree::reserve_checked(t->cursors, t->cursors.size() + 1)) return nullptr;
  at_cursor* c = new (std::nothrow) at_cursor(t);
  if (!c) return nullptr;
  t->cursors.push_back(c);
  return c;
}

void at_cursor_free(at_cursor* cur) {
  if (!cur) return;
  if (cur->owner) {
    Held h(cur->owner, true, TreeLatch::Wait::kSpin, nullptr);
    auto& v = cur->owner->cursors;  // empty once a shared tree is closed
    for (size_t i = 0; i < v.size(); i++)
      if (v[i] == cur) {
        v[i] = v.back();
        v.pop_back();
        break;
      }
  }
  delete cur;
}

// A cursor's calls hold its tree's latch in the cursor's own read mode.
class HeldCursor : public Held {
 public:
  HeldCursor(at_cursor* cur, TreeLatch::Wait w, unsigned slot = 0) : Held(cur->owner, false, w, &cur->rng, slot), cur_(cur) {
    cur->mode = *mode();
  }
  bool upgrade() {
    cur_->cur.release();
    bool ok = Held::upgrade();
    cur_->mode.shared = false;
    return ok;
  }
  ~HeldCursor() {
    cur_->cur.release();  // before the tree latch goes
    cur_->mode.shared = cur_->mode.leaves = false;
  }

 private:
  at_cursor* cur_;
};

int32_t at_cursor_seek(at_cursor* cur, const uint8_t* key, uint32_t key_len, uint32_t flags) {
  if (!cur || !cur->owner) return st(Status::kClosed);
  HeldCursor h(cur, TreeLatch::Wait::kSpin);
  if (!h.ok()) return st(Status::kClosed);
  Status s;
  while ((s = cur->cur.seek({key, key_len}, flags)) == Status::kRestart)
    if (!h.upgrade()) return st(Status::kClosed);
  return ret(cur->owner, nullptr, s);
}

int32_t at_cursor_next(at_cursor* cur, at_ctx* c, uint32_t want_value) {
  if (!cur || !cur->owner) return st(Status::kClosed);
  HeldCursor h(cur, wait_of(c), slot_of(c));
  if (!h.ok()) return st(Status::kClosed);
  ValueRef v;
  Status s;
  while ((s = cur->cur.next(&c->key, &v)) == Status::kRestart)
    if (!h.upgrade()) return st(Status::kClosed);
  if (s != Status::kOk) {
    set_result(c, nullptr, 0, nullptr, 0, 0);
    return ret(cur->owner, c, s);
  }
  Slice out{};
  if (want_value) {
    bool shared = cur->owner->shared.load(std::memory_order_relaxed);
    if (v.is_overflow() || shared) trim_output(c);
    s = cur->owner->tree.read_value(v, &c->buf, &out);
    if (s != Status::kOk) return ret(cur->owner, c, s);
    if (shared && !v.is_overflow()) {  // as in at_get: out of the page before the latch goes
      if (!adaptree::resize_checked(c->buf, out.len)) return st(Status::kOutOfMemory);
      adaptree::copy_small(c->buf.data(), out.data, out.len);
      out.data = c->buf.data();
    }
  }
  set_result(c, c->key.data, c->key.len, out.data, out.len, 0);
  return st(Status::kOk);
}

// Whether a byte of the key is >= 0x80 (not ASCII). In wasm 16 bytes at a time: the word-wise
// loop batch_to_columns ran over the copied keys cost 15 of the 58 ns per entry of the core's
// part of an iteration over urls. A KeyBuffer's array is always kMaxKeySize long, so a load of
// 16 bytes from its start stays inside it.
static inline bool any_high_bit(const KeyBuffer& k) {
  const uint8_t* p = k.data;
  const uint32_t n = k.len;
#if defined(__wasm_simd128__)
  static_assert(adaptree::kMaxKeySize >= 16);
  if (n < 16) {
    const v128_t lanes = wasm_i8x16_make(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const v128_t in = wasm_u8x16_lt(lanes, wasm_i8x16_splat(static_cast<int8_t>(n)));
    return wasm_i8x16_bitmask(wasm_v128_and(wasm_v128_load(p), in)) != 0;
  }
  v128_t acc = wasm_v128_load(p + n - 16);
  for (uint32_t i = 0; i + 16 < n; i += 16) acc = wasm_v128_or(acc, wasm_v128_load(p + i));
  return wasm_i8x16_bitmask(acc) != 0;
#else
  uint64_t high = 0;
  uint32_t j = 0;
  for (; j + 8 <= n; j += 8) high |= adaptree::load64(p + j);
  for (; j < n; j++) high |= p[j];
  return (high & 0x8080808080808080ull) != 0;
#endif
}

// Rewrites a batch [klen][key][vlen][value]... (the buffer's first `used` bytes, n records) in
// columns after it, at a 4-aligned offset: [u32 n][u32 key bytes][u32 flags][u32 0]
// [u32 klen x n][u32 vlen x n][keys][values]. A klen with bit 31 set marks a key holding a byte
// >= 0x80 (the records' klen words carry that mark already: any_high_bit as each record was
// written, from the key still in cache); flags bit 0: some key does. JavaScript then decodes
// all keys of a batch at once.
constexpr size_t kColumnsMax = size_t{512} << 10;
bool batch_to_columns(std::vector<uint8_t>& b, size_t used, uint32_t n, size_t* out, size_t* out_len) {
  const size_t at = (used + 3) & ~size_t{3};
  const size_t len = used + 16;  // the same bytes, plus the header
  if (b.size() < at + len && !adaptree::resize_checked(b, at + len)) return false;
  const uint8_t* in = b.data();
  uint8_t* o = b.data() + at;
  uint8_t* lens = o + 16;
  size_t key_bytes = 0;
  for (size_t p = 0, i = 0; i < n; i++) {
    uint32_t kl, vl;
    memcpy(&kl, in + p, 4);
    kl &= 0x7fffffffu;
    memcpy(&vl, in + p + 4 + kl, 4);
    key_bytes += kl;
    p += 8 + size_t{kl} + vl;
    memcpy(lens + 4 * (n + i), &vl, 4);
  }
  uint8_t* keys = lens + 8 * size_t{n};
  uint8_t* vals = keys + key_bytes;
  uint32_t flags = 0;
  for (size_t p = 0, i = 0; i < n; i++) {
    uint32_t word, vl;
    memcpy(&word, in + p, 4);  // (bit 31: the key is not ASCII, marked as the record was written)
    const uint32_t kl = word & 0x7fffffffu;
    const uint8_t* k = in + p + 4;
    memcpy(&vl, k + kl, 4);
    adaptree::copy_small(keys, k, kl);  // memcpy of a few bytes is a call in wasm
    adaptree::copy_small(vals, k + kl + 4, vl);
    flags |= word >> 31;
    memcpy(lens + 4 * i, &word, 4);
    keys += kl;
    vals += vl;
    p += 8 + size_t{kl} + vl;
  }
  const uint32_t head[4] = {n, static_cast<uint32_t>(key_bytes), flags, 0};
  memcpy(o, head, 16);
  *out = at;
  *out_len = len;
  return true;
}

// A `number` key's double (the inverse of encode_number); false for bytes that are not one.
static bool decode_number(const uint8_t* k, uint32_t len, double* out) {
  auto bits = [](const uint8_t* p, bool flip) {
    uint64_t b = (uint64_t{adaptree::load_be32(p)} << 32) | adaptree::load_be32(p + 4);
    if (flip) b = ~b;
    double d;
    memcpy(&d, &b, 8);
    return d;
  };
  if (len == 0) return false;
  switch (k[0]) {
    case 0x12: {
      if (len != 9 && len != 17) return false;
      double i = (static_cast<double>(adaptree::load_be32(k + 1)) - 2097152.0) * 4294967296.0 + adaptree::load_be32(k + 5);
      *out = len == 9 ? i : bits(k + 9, i < 0);
      return true;
    }
    case 0x10:
    case 0x14:
      if (len != 1) return false;
      *out = k[0] == 0x14 ? __builtin_inf() : -__builtin_inf();
      return true;
    case 0x11:
    case 0x13:
      if (len != 9) return false;
      *out = bits(k + 1, k[0] == 0x11);
      return true;
  }
  return false;
}

// The batch of AT_BATCH_NUMBERS: columns written as the records come, in the one context
// buffer (a second buffer fragmented a budgeted heap: see batch_to_columns). The value
// lengths and the keys' doubles go into a region sized for the batch's records, the values
// after it: [u32 n][u32 keys offset][u32 values offset][u32 0][u32 vlen x cap][f64 x cap]
// [values]. No second pass over the batch. A key that is not a number encoding comes as NaN.
constexpr uint32_t kNumbersMaxRecords = 4096;
static Status numbers_batch(Cursor& cur, HeldCursor& h, const BTree& t, Writer& w, uint32_t max_records, uint32_t max_bytes,
                     bool values, const at_cursor::Stop& stop, uint32_t* count, bool* more) {
  const uint32_t cap = std::min(max_records, kNumbersMaxRecords);
  const size_t keys = 16 + 4 * size_t{cap}, vals = keys + 8 * size_t{cap};
  if (!w.room(vals)) return Status::kOutOfMemory;
  uint32_t n = 0;
  Status err = Status::kOk;
  const bool bounded = stop.set;  // (a local: the writes below cannot change it)
  auto visit = [&](const KeyBuffer& k, const ValueRef& v) {
    if (bounded && stop.past(k)) return false;
    double x;
    if (!decode_number(k.data, k.len, &x)) x = __builtin_nan("");
    uint32_t len = 0;
    if (values) {
      if (!t.value_length_ok(v)) {
        err = Status::kCorrupt;
        return false;
      }
      len = static_cast<uint32_t>(v.length());
      const size_t mark = w.used;
      uint8_t* p = w.room(len);
      if (!p) {
        err = Status::kOutOfMemory;
        return false;
      }
      if (!v.is_overflow()) {
        adaptree::copy_small(p, v.ptr, len);
      } else if ((err = t.read_overflow(v, p)) != Status::kOk) {
        if (err == Status::kNeedPage) w.used = mark;  // (the batch may end before this record)
        return false;
      }
    }
    uint8_t* b = w.b.data();  // (room() may have moved it)
    memcpy(b + 16 + 4 * size_t{n}, &len, 4);
    memcpy(b + keys + 8 * size_t{n}, &x, 8);
    n++;
    return n < cap && 12 * size_t{n} + (w.used - vals) < max_bytes;
  };
  Status s;
  while ((s = cur.for_each(visit)) == Status::kRestart)
    if (!h.upgrade()) return Status::kClosed;
  *count = n;
  *more = n > 0 && (err == Status::kNeedPage || s == Status::kNeedPage);  // (AT_BATCH_MORE)
  if (*more) err = s = Status::kOk;
  if (err != Status::kOk) return err;
  if (s != Status::kOk && s != Status::kNotFound) return s;
  const uint32_t head[4] = {n, static_cast<uint32_t>(keys), static_cast<uint32_t>(vals), 0};
  memcpy(w.b.data(), head, 16);
  return Status::kOk;
}

int32_t at_cursor_next_batch(at_cursor* cur, at_ctx* c, uint32_t max_records, uint32_t max_bytes,
                             uint32_t want_value) {
  if (!cur || !cur->owner) return st(Status::kClosed);
  HeldCursor h(cur, wait_of(c), slot_of(c));
  if (!h.ok()) return st(Status::kClosed);
  trim_output(c);
  Writer w{c->buf};
  uint32_t n = 0;
  const BTree& t = cur->owner->tree;
  if (max_records == 0 || max_bytes == 0) {  // nothing may be read: as before for_each, NOT_FOUND
    set_result(c, nullptr, 0, c->buf.data(), 0, 0);
    return st(Status::kNotFound);
  }
  if ((want_value & (AT_BATCH_COLUMNS | AT_BATCH_NUMBERS)) == (AT_BATCH_COLUMNS | AT_BATCH_NUMBERS)) {
    bool more = false;
    Status s = numbers_batch(cur->cur, h, t, w, max_records, max_bytes, want_value & AT_BATCH_VALUES, cur->stop, &n, &more);
    if (s != Status::kOk) return s == Status::kClosed ? st(s) : ret(cur->owner, c, s);
    set_result(c, nullptr, more ? 2 | AT_BATCH_MORE : 2, c->buf.data(), static_cast<uint32_t>(w.used), n);
    return st(n ? Status::kOk : Status::kNotFound);
  }
  Status err = Status::kOk;
  // Records meant for columns mark a non-ASCII key in bit 31 of its length (batch_to_columns).
  const bool columns = want_value & AT_BATCH_COLUMNS;
  const at_cursor::Stop& stop = cur->stop;
  const bool bounded = stop.set;  // (a local: the writes below cannot change it)
  auto visit = [&](const KeyBuffer& k, const ValueRef& v) {
    if (bounded && stop.past(k)) return false;
    if (!(want_value & AT_BATCH_VALUES) || !v.is_overflow()) {
      // The whole record with one room() (an inline value, or none).
      const uint32_t vl = (want_value & AT_BATCH_VALUES) ? v.field & adaptree::kValueLenMask : 0;
      uint8_t* p = w.room(8 + size_t{k.len} + vl);
      if (!p) {
        err = Status::kOutOfMemory;
        return false;
      }
      const uint32_t kword = columns && any_high_bit(k) ? k.len | 0x80000000u : k.len;
      memcpy(p, &kword, 4);
      adaptree::copy_small(p + 4, k.data, k.len);
      memcpy(p + 4 + k.len, &vl, 4);
      adaptree::copy_small(p + 8 + k.len, v.ptr, vl);
      n++;
      return n < max_records && w.used < max_bytes;
    }
    const size_t mark = w.used;
    uint8_t* p = w.room(4 + k.len);
    if (!p) {
      err = Status::kOutOfMemory;
      return false;
    }
    const uint32_t kword = columns && any_high_bit(k) ? k.len | 0x80000000u : k.len;
    memcpy(p, &kword, 4);
    adaptree::copy_small(p + 4, k.data, k.len);
    if (want_value & AT_BATCH_VALUES) {
      err = append_value(t, w, v);
      if (err == Status::kNeedPage) w.used = mark;  // (the batch may end before this record)
      if (err != Status::kOk) return false;
    } else if (!w.u32(0)) {
      err = Status::kOutOfMemory;
      return false;
    }
    n++;
    return n < max_records && w.used < max_bytes;
  };
  // A restart leaves the cursor to re-position after the last record written:
  // the batch goes on from there, exclusive.
  Status s;
  while ((s = cur->cur.for_each(visit)) == Status::kRestart)
    if (!h.upgrade()) return st(Status::kClosed);
  // A page an asynchronous store must fetch, after records: they go out (AT_BATCH_MORE).
  const uint32_t more = n > 0 && (err == Status::kNeedPage || s == Status::kNeedPage) ? AT_BATCH_MORE : 0;
  if (more) err = s = Status::kOk;
  if (err != Status::kOk) return ret(cur->owner, c, err);
  if (s != Status::kOk && s != Status::kNotFound) return ret(cur->owner, c, s);
  // Columns need a second copy of the batch: not for a large one (big values), nor when memory
  // for it is short; then the batch stays as it is and result.key_len (1: columns) says so.
  size_t at = 0, len = 0;
  if (columns && n > 0 && w.used <= kColumnsMax && batch_to_columns(c->buf, w.used, n, &at, &len)) {
    set_result(c, nullptr, 1 | more, c->buf.data() + at, static_cast<uint32_t>(len), n);
    return st(Status::kOk);
  }
  if (columns) {
    // Records after all: their key lengths lose the marks.
    uint8_t* b = c->buf.data();
    for (size_t p = 0, i = 0; i < n; i++) {
      uint32_t word, vl;
      memcpy(&word, b + p, 4);
      const uint32_t kl = word & 0x7fffffffu;
      memcpy(b + p, &kl, 4);
      memcpy(&vl, b + p + 4 + kl, 4);
      p += 8 + size_t{kl} + vl;
    }
  }
  set_result(c, nullptr, more, c->buf.data(), static_cast<uint32_t>(w.used), n);
  return st(n ? Status::kOk : Status::kNotFound);
}

// A short scan's two calls in one: seek (flags as at_cursor_seek), then the first batch (as
// at_cursor_next_batch). A scan of a few records paid a second crossing and call setup for it.
int32_t at_cursor_seek_batch(at_cursor* cur, at_ctx* c, const uint8_t* key, uint32_t key_len, uint32_t seek_flags,
                             uint32_t max_records, uint32_t max_bytes, uint32_t want_value) {
  if (!cur || !cur->owner) return st(Status::kClosed);
  int32_t s = at_cursor_seek(cur, key, key_len, seek_flags);
  if (s != st(Status::kOk)) {
    if (s == st(Status::kNotFound)) set_result(c, nullptr, 0, nullptr, 0, 0);
    // NEED_PAGE: the page id goes to this context's result.aux, as for the batch.
    return s >= 0 && cur->owner ? ret(cur->owner, c, static_cast<Status>(s)) : s;
  }
  return at_cursor_next_batch(cur, c, max_records, max_bytes, want_value);
}

int32_t at_cursor_seek_batch_to(at_cursor* cur, at_ctx* c, const uint8_t* key, uint32_t key_len, uint32_t seek_flags,
                                uint32_t max_records, uint32_t max_bytes, uint32_t want_value, const uint8_t* stop,
                                uint32_t stop_len, uint32_t stop_flags) {
  if (!cur || !cur->owner) return st(Status::kClosed);
  if (stop_len > adaptree::kMaxKeySize) return st(Status::kKeyTooLarge);
  cur->stop = {stop, stop_len, true, (stop_flags & AT_STOP_INCLUSIVE) != 0, (seek_flags & AT_SEEK_REVERSE) != 0};
  const int32_t s = at_cursor_seek_batch(cur, c, key, key_len, seek_flags, max_records, max_bytes, want_value);
  // (cursors are borrowed call by call: the bound is this call's only)
  cur->stop = {};
  return s;
}

uint32_t at_checksum(const uint8_t* data, uint32_t len) { return adaptree::checksum(data, len); }
uint32_t at_page_hash(const uint8_t* data, uint32_t len) { return adaptree::page_hash(data, len); }

// Tests: 1 takes the tree latch exclusive, 0 releases it; 2 takes it shared, 3 releases that;
// 7 takes the first leaf's latch exclusive and keeps it.
// Contention Split (docs/THREADS.md): 4 turns it on, 5 off; 6 returns the number of
// contention splits so far. 9 returns the number of leaf splits made under the shared
// latch (phase 2c).
int32_t at_debug_latch(at_tree* t, uint32_t hold) {
  if (!t) return st(Status::kClosed);
  if (hold == 7) {
    // Takes the latch of the leaf for the empty key exclusive and keeps it (a shared
    // in-memory tree; a worker that then dies holds it: tests of at_tree_abandon).
    TreeLatchGuard g(t->latch, false, TreeLatch::Wait::kSpin);
    if (!g.held() || t->closed || t->store || !t->shared) return st(Status::kInvalidArgument);
    t->tree.debug_latch_first_leaf();
    return st(Status::kOk);
  }
  if (hold == 8) return static_cast<int32_t>(adaptree::g_leaf_latch_sleeps.load(std::memory_order_relaxed) & 0x7FFFFFFF);
  if ((hold >= 4 && hold <= 6) || hold == 9) {
    Held h(t, true, TreeLatch::Wait::kSpin, nullptr);
    if (!h.ok()) return st(Status::kClosed);
    if (hold == 6) return static_cast<int32_t>(t->tree.contention_splits());
    if (hold == 9) return static_cast<int32_t>(t->tree.shared_splits() & 0x7FFFFFFF);
    t->tree.set_contention_split(hold == 4);
    return st(Status::kOk);
  }
  bool took = true;
  switch (hold) {
    case 0: t->latch.unlock_exclusive(); break;
    case 2: took = t->latch.lock_shared(TreeLatch::Wait::kSpin); break;
    case 3: t->latch.unlock_shared(); break;
    default: took = t->latch.lock_exclusive(TreeLatch::Wait::kSpin); break;
  }
  return st(took ? Status::kOk : Status::kClosed);
}

int32_t at_tree_abandon(at_tree* t) {
  if (!t) return st(Status::kClosed);
  // Threads spinning on a leaf latch the dead thread held stop too (core/buffer/frame.h).
  adaptree::g_latches_abandoned.store(1, std::memory_order_relaxed);
  t->latch.abandon();
  return st(Status::kOk);
}

}  // extern "C"

// ---------------------------------------------------------------- persistent stores

namespace {

// The host's files, through the at_host_* imports (natively: bindings/native_host.cc).
class HostStorage : public adaptree::Storage {
 public:
  explicit HostStorage(uint32_t io) : io_(io) {}
  Status read(adaptree::FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) override {
    int32_t n = at_host_read(io_, static_cast<uint32_t>(f), static_cast<double>(off), dst, len);
    if (n < 0) return static_cast<Status>(n);
    *got = static_cast<uint32_t>(n);
    return Status::kOk;
  }
  Status write(adaptree::FileId f, uint64_t off, const uint8_t* src, uint32_t len) override {
    return status_of(at_host_write(io_, static_cast<uint32_t>(f), static_cast<double>(off), src, len));
  }
  Status sync(adaptree::FileId f) override { return status_of(at_host_sync(io_, static_cast<uint32_t>(f))); }
  Status size(adaptree::FileId f, uint64_t* out) override {
    double n = at_host_size(io_, static_cast<uint32_t>(f));
    if (n < 0) return status_of(static_cast<int32_t>(n));
    *out = static_cast<uint64_t>(n);
    return Status::kOk;
  }
  Status truncate(adaptree::FileId f, uint64_t len) override {
    return status_of(at_host_truncate(io_, static_cast<uint32_t>(f), static_cast<double>(len)));
  }

 private:
  // Anything but OK or a known storage error is an I/O error.
  static Status status_of(int32_t r) {
    if (r == 0) return Status::kOk;
    Status s = static_cast<Status>(r);
    return s == Status::kQuotaExceeded || s == Status::kLocked || s == Status::kCorrupt ? s : Status::kIoError;
  }
  uint32_t io_;
};

}  // namespace

extern "C" {

at_tree* at_store_open(uint32_t io, uint32_t layout_config, double pool_bytes, uint32_t flags, at_ctx* c) {
  auto fail = [&](Status s) -> at_tree* {
    if (c) set_result(c, nullptr, 0, nullptr, 0, static_cast<uint32_t>(st(s)));
    return nullptr;
  };
  if (layout_config >= adaptree::kLayoutConfigCount) return fail(Status::kInvalidArgument);
  std::unique_ptr<adaptree::Storage> storage(new (std::nothrow) HostStorage(io));
  if (!storage) return fail(Status::kOutOfMemory);
  adaptree::StoreOptions o;
  o.layout = static_cast<LayoutConfig>(layout_config);
  o.pool_bytes = pool_bytes < (1 << 20) ? (1 << 20) : static_cast<uint64_t>(pool_bytes);
  // The pool's frames are allocated as pages are first used, so a pool the memory
  // budget cannot hold would fail later, in the middle of some operation: refuse it here.
  if (static_cast<double>(o.pool_bytes) > at_memory_available()) return fail(Status::kOutOfMemory);
  o.create = flags & AT_OPEN_CREATE;
  o.read_only = flags & AT_OPEN_READ_ONLY;
  o.log_deltas = !(flags & AT_OPEN_NO_LOG_DELTAS);
  o.salvage = flags & AT_OPEN_SALVAGE;
  uint64_t damaged_at = 0;
  o.damaged_at = &damaged_at;
  std::unique_ptr<adaptree::Store> store;
  Status s = adaptree::Store::open(storage.get(), o, &store);
  if (s == Status::kCorrupt && damaged_at != 0) {
    if (c) set_result(c, nullptr, 1, nullptr, 0, static_cast<uint32_t>(st(s)));
    return nullptr;
  }
  if (s != Status::kOk) return fail(s);
  at_tree* t = new (std::nothrow) at_tree(std::move(storage), std::move(store));
  if (!t) return fail(Status::kOutOfMemory);
  if (c) set_result(c, nullptr, 0, nullptr, 0, 0);
  return t;
}

at_tree* at_store_open_async(const uint8_t* superblock, uint32_t layout_config, double pool_bytes, at_ctx* c) {
  auto fail = [&](Status s) -> at_tree* {
    if (c) set_result(c, nullptr, 0, nullptr, 0, static_cast<uint32_t>(st(s)));
    return nullptr;
  };
  if (layout_config >= adaptree::kLayoutConfigCount) return fail(Status::kInvalidArgument);
  adaptree::StoreOptions o;
  o.layout = static_cast<LayoutConfig>(layout_config);
  o.pool_bytes = pool_bytes < (1 << 20) ? (1 << 20) : static_cast<uint64_t>(pool_bytes);
  std::unique_ptr<adaptree::Store> store;
  Status s = adaptree::Store::open_async(superblock, o, &store);
  if (s != Status::kOk) return fail(s);
  at_tree* t = new (std::nothrow) at_tree(nullptr, std::move(store));
  if (!t) return fail(Status::kOutOfMemory);
  t->ctx = c;
  if (c) set_result(c, nullptr, 0, nullptr, 0, 0);
  return t;
}

int32_t at_store_supply(at_tree* t, uint32_t page_id, const uint8_t* image) {
  if (!t) return st(Status::kClosed);
  if (!t->store || !image) return st(Status::kInvalidArgument);
  return st(t->store->supply(page_id, image));
}

int32_t at_store_drop_kept(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  t->tree.drop_kept();
  return st(Status::kOk);
}

int32_t at_store_commit_begin(at_tree* t, at_ctx* c) {
  if (!t) return st(Status::kClosed);
  if (!t->store || !c) return st(Status::kInvalidArgument);
  uint32_t count = 0;
  Status s = t->store->commit_begin(&c->buf, &count);
  if (s != Status::kOk) {
    set_result(c, nullptr, 0, nullptr, 0, 0);
    return st(s);
  }
  set_result(c, nullptr, 0, c->buf.data(), static_cast<uint32_t>(c->buf.size()), count);
  return st(Status::kOk);
}

int32_t at_store_commit_end(at_tree* t, int32_t host_status) {
  if (!t) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->commit_end(static_cast<Status>(host_status)));
}

int32_t at_store_commit(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->commit());
}

int32_t at_store_close_writes(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  t->tree.refuse_writes(Status::kClosed);
  return st(Status::kOk);
}

int32_t at_store_pending(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return t->store->spilled() ? 2 : t->store->pending() ? 1 : 0;
}

int32_t at_store_checkpoint_failure(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->take_checkpoint_failure());
}

int32_t at_store_follow(at_tree* t, const uint8_t* superblock) {
  if (!t) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->follow(superblock));
}

int32_t at_store_follow_changed(at_tree* t, const uint8_t* superblock, const uint32_t* changed, uint32_t count) {
  if (!t) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->follow_changed(superblock, changed, count));
}

int32_t at_store_set_checkpoint_bytes(at_tree* t, double bytes) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  if (!(bytes >= 0) || bytes > 9007199254740992.0) return st(Status::kInvalidArgument);
  uint64_t b = bytes < 65536 ? 65536 : static_cast<uint64_t>(bytes);
  return st(t->store->set_checkpoint_bytes(b));
}

int32_t at_store_set_log_reuse(at_tree* t, uint32_t on) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->set_reuse_log(on != 0));
}

int32_t at_store_set_log_deltas(at_tree* t, uint32_t on) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->set_log_deltas(on != 0, on == 2));
}

int32_t at_store_encodings(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return t->store->encodings();
}

int32_t at_store_set_encodings(at_tree* t, uint32_t key, uint32_t value) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  if (key > 255 || value > 255) return st(Status::kInvalidArgument);
  t->store->set_encodings(static_cast<uint8_t>(key), static_cast<uint8_t>(value));
  return st(Status::kOk);
}

int32_t at_store_checkpoint(at_tree* t) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t);
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  return st(t->store->checkpoint());
}

int32_t at_store_stats(at_tree* t, at_ctx* c) {
  if (!t) return st(Status::kClosed);
  StoreHeld h(t, wait_of(c));
  if (!h.ok()) return st(Status::kClosed);
  if (!t->store) return st(Status::kInvalidArgument);
  const adaptree::BufferPool& pool = t->tree.store();
  adaptree::PagerStats ps = t->store->pager_stats();
  std::string j;
  if (!adaptree::reserve_checked(j, 1024)) return st(Status::kOutOfMemory);  // the JSON is about 600 bytes
  j.push_back('{');
  auto num = [&](const char* k, uint64_t v) {
    if (j.size() > 1) j += ",";
    j += "\"";
    j += k;
    j += "\":";
    adaptree::append_uint(j, v);
  };
  num("frames", pool.target_frames());
  num("frames_allocated", pool.frame_count());
  num("kept_read_bytes", t->tree.kept_read_bytes());
  num("resident", pool.resident_count());
  num("dirty", pool.dirty_count());
  num("hits", pool.stats().hits);
  num("misses", pool.stats().misses);
  // Writes that ran under the shared tree latch beside other threads (a shared store).
  num("shared_writes", t->tree.shared_store_writes());
  num("evictions", pool.stats().evictions);
  num("spills", pool.stats().spills);
  num("page_table_bytes", pool.page_table_bytes());
  num("pages", pool.page_count());
  num("free_pages", pool.free_pages());
  num("reads", ps.reads);
  num("writes", ps.writes);
  num("syncs", ps.syncs);
  num("commits", ps.commits);
  num("checkpoints", ps.checkpoints);
  num("checkpoint_failures", ps.checkpoint_failures);
  num("commit_sequence", t->store->sequence());
  num("data_bytes", ps.data_bytes);
  num("log_bytes", ps.log_bytes);
  num("image_frames", ps.image_frames);
  num("delta_frames", ps.delta_frames);
  num("commit_log_bytes", ps.commit_log_bytes);
  num("restated_pages", ps.restated_pages);
  num("trimmed_pages", ps.trimmed_pages);
  num("relocated_pages", t->tree.relocated_pages());
  num("data_truncations", ps.data_truncations);
  num("checkpoint_frames", ps.checkpoint_frames);
  // Node fill (core/tree/rebalance.h) since open: what redistribution and XMerge did.
  adaptree::FillStats fs = t->tree.fill_stats();
  num("redistributions", fs.redistributions);
  num("redistributions_shared", fs.shared_shifts);
  num("splits_2to3", fs.splits_2to3);
  num("splits_2to3_shared", fs.shared_splits_2to3);
  num("edge_splits", fs.edge_splits);
  num("edge_refills", fs.edge_refills);
  num("inner_refills", fs.inner_refills);
  num("xmerges", fs.xmerges);
  num("xmerge_attempts", fs.xmerge_attempts);
  j += "}";
  return st(set_text_result(c, j));
}

}  // extern "C"
// bindings/internal.h: the core tree behind a handle, for bindings/inspect.cc.
LatchedTree::LatchedTree(at_tree* t) : t_(t) {
  if (!t) return;
  if (!t->latch.lock_exclusive(TreeLatch::Wait::kSpin)) {  // abandoned: no tree
    t_ = nullptr;
    return;
  }
  if (!t->closed) tree_ = &t->tree;
}
LatchedTree::~LatchedTree() {
  if (t_) t_->latch.unlock_exclusive();
}
