// Page relocation: moves the live pages at a store's end down into free pages lower in it,
// so that the next commit ends the store below them (BufferPool::trim_free_tail) and the next
// checkpoint gives their room back to the disk or the origin's quota. Freed pages stay where
// they are otherwise: a leaf split written after a large value's pages held the file at that
// length after the value was deleted (STORE.md, "Free pages").
//
// Two walks over every page the tree reaches (inner nodes, leaves, overflow chains):
// - the first marks them in a bitmap (and changes nothing): R pages are reachable, so ids
//   1..R can hold them all. A page that is reachable twice, out of range, of the wrong kind,
//   or both reachable and on the free list fails with kCorrupt before anything moves.
// - the second moves each reachable page above R into the lowest id at or below R that
//   nothing uses, and points its parent (an inner node's child, a leaf's overflow reference,
//   the chain page before it, or the root) at the copy. Each move is whole before the next
//   begins, so a failure part way (a full disk refusing a spill, an I/O error) stops with a
//   sound tree and the moves so far.
// The free list is then every id nothing uses, from the bitmap: pages that neither the tree
// nor the free list held (a leak) become free too.
//
// A backed store only (a BTreeMap's pages are memory, which its own clear() gives back). An
// asynchronous store moves pages only when every page the tree reaches is resident (a page
// it would have to fetch ends the walk before anything moved).
#include <vector>

#include "core/layouts/basic_node.h"
#include "core/layouts/leaf.h"
#include "core/tree/btree.h"
#include "core/tree/overflow.h"
#include "core/util/checked.h"

namespace adaptree {

namespace {

struct Bitmap {
  std::vector<uint64_t> words;
  bool test(PageId id) const { return (words[id >> 6] >> (id & 63)) & 1; }
  void set(PageId id) { words[id >> 6] |= uint64_t{1} << (id & 63); }
  void clear(PageId id) { words[id >> 6] &= ~(uint64_t{1} << (id & 63)); }
};

struct Item {
  PageId id;
  unsigned level;  // 1: a leaf
};

}  // namespace

Status BTree::relocate(uint64_t* reclaimed) {
  *reclaimed = 0;
  if (!store_.backed() || store_.free_list_pending() || height_ == 0) return Status::kOk;
  const PageId end = store_.page_count();
  const bool async = store_.asynchronous();
  // Nothing to gain unless a free page lies below where the live ones would end.
  const uint64_t live = store_.live_pages();
  bool hole = false;
  for (PageId id : store_.free_ids())
    if (id <= live) {
      hole = true;
      break;
    }
  if (!hole) return Status::kOk;

  Bitmap used;
  if (!resize_checked(used.words, (size_t{end} + 63) / 64)) return Status::kOutOfMemory;
  std::vector<Item> stack;
  if (!reserve_checked(stack, 64)) return Status::kOutOfMemory;
  alignas(16) uint8_t scratch[kPageSize];
  uint64_t reachable = 0;
  // A page that must not be fetched (async) ends the walk: nothing has moved.
  bool absent = false;
  auto mark = [&](PageId id) {
    if (!store_.valid(id) || used.test(id)) return false;
    used.set(id);
    reachable++;
    return true;
  };
  // The stop of the first walk: a failure of the pool (an I/O error) is the call's, and is
  // not left for end_write (nothing changed).
  auto stop = [&](Status s) {
    Status f = store_.failure();
    store_.clear_failure();
    return f != Status::kOk ? f : s;
  };

  // -- the first walk: mark
  stack.push_back({root_, height_});
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    if (!mark(it.id)) return Status::kCorrupt;
    if (async && !store_.resident(it.id)) {
      absent = true;
      break;
    }
    store_.end_protection();
    const uint8_t* p = page(it.id);
    if (store_.failure() != Status::kOk) return stop(Status::kOk);
    if (it.level > 1) {
      if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner)) return Status::kCorrupt;
      BasicNode n{const_cast<uint8_t*>(p)};
      if (!reserve_checked(stack, stack.size() + n.count() + 1)) return Status::kOutOfMemory;
      for (unsigned i = 0; i <= n.count(); i++) stack.push_back({n.child(i), it.level - 1});
      continue;
    }
    if (!leaf::is_leaf(p)) return Status::kCorrupt;
    for (int pos = leaf::next_present(p, 0), n = static_cast<int>(leaf::positions(p)); pos < n;
         pos = leaf::next_present(p, pos + 1)) {
      ValueRef v = leaf::value_at(p, pos);
      if (!v.is_overflow()) continue;
      const uint64_t len = load32(v.ptr + 4), most = overflow_pages(len);
      uint64_t pages = 0;
      // (view() fixes no frame: the leaf's stays where p points)
      for (PageId c = load32(v.ptr); c != kInvalidPageId;) {
        if (++pages > most || !mark(c)) return Status::kCorrupt;
        if (async && !store_.resident(c)) {
          absent = true;
          break;
        }
        const uint8_t* cp;
        Status s = store_.view(c, scratch, &cp);
        if (s != Status::kOk) return stop(s);
        if (cp[0] != static_cast<uint8_t>(PageTag::kOverflow)) return Status::kCorrupt;
        c = load32(cp + 4);
      }
      if (absent) break;
    }
    if (absent) break;
  }
  if (absent) return Status::kOk;
  const std::vector<PageId>& free_ids = store_.free_ids();
  for (PageId id : free_ids)
    if (!store_.valid(id) || used.test(id)) return Status::kCorrupt;  // free and in use
  if (reachable + free_ids.size() > uint64_t{end} - 1) return Status::kCorrupt;  // (a free id twice)

  // -- the second walk: move every page above R into the lowest id at or below R not in use
  const PageId r = static_cast<PageId>(reachable);
  uint64_t above = 0;
  for (PageId id = r + 1; id < end; id++) above += used.test(id);
  // (moves keep the number of ids in use: the list's room is had before any move)
  std::vector<PageId> ids;
  if (!reserve_checked(ids, uint64_t{end} - 1 - reachable)) return Status::kOutOfMemory;
  PageId next_target = 1;
  Status result = Status::kOk;
  auto source = [&](PageId id) { return id > r && used.test(id); };
  // Copies `from` into the next free id (*to); the caller points the parent at it, then
  // forgets `from`.
  auto copy = [&](PageId from, PageId* to) {
    while (used.test(next_target)) next_target++;  // (a target exists while a source does)
    Status s = store_.copy_page_to(from, next_target);
    if (s != Status::kOk) return s;
    used.set(next_target);
    *to = next_target;
    return Status::kOk;
  };
  auto moved = [&](PageId from) {
    used.clear(from);
    store_.forget_page(from);
    relocated_pages_++;
    above--;
  };
  if (above > 0 && source(root_)) {
    PageId y;
    result = copy(root_, &y);
    if (result == Status::kOk) {
      moved(root_);
      root_ = y;
    }
  }
  if (result == Status::kOk && above > 0) stack.push_back({root_, height_});
  while (result == Status::kOk && above > 0 && !stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    store_.end_protection();
    uint8_t* p = page(it.id);
    if (store_.failure() != Status::kOk) {
      result = store_.failure();
      break;
    }
    if (it.level > 1) {
      const unsigned count = BasicNode{p}.count();
      for (unsigned i = 0; i <= count; i++) {
        PageId c = BasicNode{p}.child(i);
        if (source(c)) {
          PageId y;
          result = copy(c, &y);
          if (result != Status::kOk) break;
          p = page_mut(it.id);  // (fixed in this operation: resident, same frame)
          BasicNode{p}.set_child(i, y);
          moved(c);
          c = y;
        }
        stack.push_back({c, it.level - 1});
      }
      continue;
    }
    for (int pos = leaf::next_present(p, 0); result == Status::kOk && above > 0 && pos < static_cast<int>(leaf::positions(p));
         pos = leaf::next_present(p, pos + 1)) {
      ValueRef v = leaf::value_at(p, pos);
      if (!v.is_overflow()) continue;
      PageId c = load32(v.ptr);
      if (source(c)) {
        PageId y;
        result = copy(c, &y);
        if (result != Status::kOk) break;
        p = page_mut(it.id);
        store32(const_cast<uint8_t*>(leaf::value_at(p, pos).ptr), y);
        moved(c);
        c = y;
      }
      // Along the chain: a page whose next one moves is patched through the pool; the others
      // are only looked at (view: the pool is not filled with the value).
      while (above > 0) {
        // (the pages of a long chain need not stay fixed: the leaf is fixed again after it)
        store_.end_protection();
        const uint8_t* cp;
        Status s = store_.view(c, scratch, &cp);
        if (s != Status::kOk) {
          result = s;
          break;
        }
        const PageId next = load32(cp + 4);
        if (next == kInvalidPageId) break;
        if (source(next)) {
          PageId y;
          result = copy(next, &y);
          if (result != Status::kOk) break;
          uint8_t* q = page_mut(c);
          if (store_.failure() != Status::kOk) {
            // (the copy is not pointed to: its id is free again)
            used.clear(y);
            store_.forget_page(y);
            result = store_.failure();
            break;
          }
          store32(q + 4, y);
          moved(next);
          c = y;
        } else {
          c = next;
        }
      }
      // The chain's pages may have taken the leaf's frame: fix it again.
      if (result == Status::kOk) p = page(it.id);
      if (store_.failure() != Status::kOk) result = store_.failure();
    }
  }
  // Every id the tree does not use is free (leaked ones too), the lowest taken first.
  for (PageId id = end; id-- > 1;)
    if (!used.test(id)) ids.push_back(id);
  const uint64_t before = free_ids.size();
  *reclaimed = ids.size() > before ? ids.size() - before : 0;
  store_.set_free_ids(std::move(ids));
  version_++;
  if (result != Status::kOk) {
    Status f = result;
    store_.clear_failure();
    return f;
  }
  return Status::kOk;
}

}  // namespace adaptree
