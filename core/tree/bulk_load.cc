// Bulk load: builds a tree bottom-up from strictly ascending records, each
// node filled as far as its page allows (the size with the prefix its fences
// give), so sorted input yields dense leaves rather than the half-full
// leaves of median splits. Layouts are chosen per leaf by key-adaption
// (BTree::build_leaf), and fully dense leaves take as many records as they
// can hold when that is more.
#include <string>
#include <vector>

#include "core/layouts/basic_node.h"
#include "core/tree/btree.h"
#include "core/util/checked.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/leaf.h"
#include "core/tree/overflow.h"
#include "core/layouts/separator.h"

namespace adaptree {

// The separators of one level back to back in one buffer: one allocation per
// level rather than one per separator, and every growth checked (util/checked.h),
// so a bulk load that runs out of memory fails with kOutOfMemory.
struct SepList {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> ends;
  size_t size() const { return ends.size(); }
  uint32_t len(size_t i) const { return ends[i] - (i ? ends[i - 1] : 0); }
  const uint8_t* ptr(size_t i) const { return bytes.data() + (i ? ends[i - 1] : 0); }
  Slice at(size_t i) const { return {ptr(i), len(i)}; }
  bool push(Slice s) {
    if (!reserve_checked(bytes, bytes.size() + s.len) || !reserve_checked(ends, ends.size() + 1)) return false;
    bytes.insert(bytes.end(), s.data, s.data + s.len);
    ends.push_back(static_cast<uint32_t>(bytes.size()));
    return true;
  }
  void swap(SepList& o) {
    bytes.swap(o.bytes);
    ends.swap(o.ends);
  }
};

namespace {

uint32_t lcp(const KeyBuffer& a, const KeyBuffer& b) { return common_prefix(a.data, a.len, b.data, b.len); }

}  // namespace

Status BTree::bulk_load(const Slice* keys, const Slice* values, size_t n) {
  Status w = writable();
  if (w != Status::kOk) return w;
  store_.begin_op();
  if (store_.backed()) {
    // Fault in what a bulk load reads before it changes anything: the free
    // list and the (empty) root.
    Status s = store_.load_free_list();
    if (s != Status::kOk) return s;
    page(root_);
    if (store_.failure() != Status::kOk) return store_.failure();
  }
  // A failed load released every page it allocated and left the tree as it was (the root moves
  // only at the end): a spill that failed on a full disk is the load's failure, not the tree's
  // (as in write_chain), so the pool's failure is cleared when nothing stayed allocated.
  const uint64_t live = store_.live_pages();
  Status s = bulk_load_attempt(keys, values, n);
  if (s != Status::kOk && store_.live_pages() == live) store_.clear_failure();
  return end_write(s);
}

Status BTree::bulk_load_attempt(const Slice* keys, const Slice* values, size_t n) {
  if (count() != 0) return Status::kInvalidArgument;
  for (size_t i = 0; i < n; i++) {
    if (keys[i].len > max_key_size()) return Status::kKeyTooLarge;
    if (values[i].len > kMaxValueSize) return Status::kValueTooLarge;
    if (i && compare(keys[i - 1], keys[i]) >= 0) return Status::kInvalidArgument;
  }
  if (n == 0) return Status::kOk;

  static const uint8_t kNone[1] = {0};
  std::vector<PageId> pages;  // everything allocated, released again on failure
  std::vector<PageId> chains;
  std::vector<uint8_t> refs;
  std::vector<RecordRef> recs;
  // Records whose values go to overflow chains, and the leaf each lands in. The tree is built
  // first, with references to no chain yet, and the chains written after it, so that the
  // tree's pages come before the values' pages in the store: written the other way round,
  // the tree's pages lay after the values', and deleting the values (the last thing written)
  // gave no room back to the file (a probe, session 29: 10 values of 8 MB deleted, 80 MB kept
  // for one entry left).
  std::vector<uint32_t> big;
  std::vector<PageId> big_leaf;
  auto fail = [&](Status s) {
    for (PageId c : chains) free_chain(c);
    for (PageId p : pages) store_.release(p);
    return s;
  };
  // Everything that grows with n, before any page is written (util/checked.h).
  if (!resize_checked(refs, 8 * n) || !resize_checked(recs, n) || !reserve_checked(chains, n) ||
      !reserve_checked(pages, n / 4 + 16))
    return Status::kOutOfMemory;
  for (size_t i = 0; i < n; i++) {
    const uint8_t* k = keys[i].data ? keys[i].data : kNone;
    if (value_is_inline(keys[i].len, values[i].len)) {
      recs[i] = RecordRef{k, nullptr, values[i].data ? values[i].data : kNone, static_cast<uint16_t>(keys[i].len), 0,
                          static_cast<uint16_t>(values[i].len)};
    } else {
      if (!reserve_checked(big, big.size() + 1)) return Status::kOutOfMemory;
      big.push_back(static_cast<uint32_t>(i));
      store32(&refs[8 * i], kInvalidPageId);  // (the chain's first page: set once it is written)
      store32(&refs[8 * i + 4], values[i].len);
      recs[i] = RecordRef{k, nullptr, &refs[8 * i], static_cast<uint16_t>(keys[i].len), 0,
                          static_cast<uint16_t>(kOverflowRefSize | kOverflowFlag)};
    }
  }

  if (!resize_checked(big_leaf, big.size())) return Status::kOutOfMemory;
  size_t next_big = 0;

  // Leaves: extend each leaf while the comparison-based layout still fits.
  bool fp_sizing = cfg_.fingerprint_leaves && !cfg_.adaptive;
  unsigned ss = fp_sizing ? FingerprintLeaf::kSlotSize + 1 : (cfg_.heads ? 10 : 6);
  unsigned base = fp_sizing ? FingerprintLeaf::kFingerprints + FingerprintLeaf::kFpGrain
                            : (cfg_.heads && cfg_.hints ? BasicNode::kSlotsHinted : BasicNode::kSlotsPlain);
  std::vector<PageId> children;
  SepList seps;
  KeyBuffer lower;
  bool lower_inf = true;
  KeyBuffer upper;
  for (size_t a = 0; a < n;) {
    size_t best = a + 1;
    uint64_t sum = 0;
    for (size_t b = a + 1; b <= n; b++) {
      sum += recs[b - 1].key_len() + recs[b - 1].value_bytes();
      uint32_t ulen = 0, prefix = 0;
      if (b < n) {
        separator_between(recs[b - 1], recs[b], &upper);
        ulen = upper.len;
        if (cfg_.prefix_truncation && !lower_inf) prefix = lcp(lower, upper);
      }
      uint64_t cnt = b - a;
      uint64_t size = base + lower.len + ulen + cnt * ss + sum - cnt * prefix;
      if (size > kNodeSize) break;
      best = b;
    }
    if (cfg_.fully_dense_leaves) {
      Fences df;
      df.lower = lower.slice();
      df.lower_inf = lower_inf;
      size_t d = FullyDenseLeaf::dense_prefix(df, recs.data() + a, static_cast<unsigned>(n - a));
      if (a + d > best) best = a + d;
    }
    size_t b = best;
    Fences f;
    f.lower = lower.slice();
    f.lower_inf = lower_inf;
    if (b < n) {
      separator_between(recs[b - 1], recs[b], &upper);
      f.upper = upper.slice();
      f.upper_inf = false;
    }
    PageId id;
    if (!reserve_checked(pages, pages.size() + 1) || !reserve_checked(children, children.size() + 1))
      return fail(Status::kOutOfMemory);
    Status s = store_.allocate(&id);
    if (s != Status::kOk) return fail(s);
    pages.push_back(id);
    if (!build_leaf(page_mut(id), f, recs.data() + a, static_cast<unsigned>(b - a), kCounterDisabled))
      return fail(Status::kCorrupt);
    store_.end_protection();  // written once, read back only for its chains' ids: evictable
    children.push_back(id);
    for (; next_big < big.size() && big[next_big] < b; next_big++) big_leaf[next_big] = id;
    if (b < n) {
      if (!seps.push(upper.slice())) return fail(Status::kOutOfMemory);
      lower.assign(upper.slice());
      lower_inf = false;
    }
    a = b;
  }

  PageId root;
  unsigned levels;
  Status s = build_inner_levels(children, seps, &pages, &root, &levels);
  if (s != Status::kOk) return fail(s);
  // The values' chains, after every page of the tree, and their ids into the leaves.
  for (size_t j = 0; j < big.size(); j++) {
    const size_t i = big[j];
    PageId c;
    s = overflow_write(store_, values[i].data, values[i].len, &c);
    if (s != Status::kOk) return fail(s);
    chains.push_back(c);  // capacity n reserved above
    uint8_t* leaf = page_mut(big_leaf[j]);
    if (store_.failure() != Status::kOk) return fail(store_.failure());
    ValueRef v;
    if (!leaf::lookup(leaf, {keys[i].data ? keys[i].data : kNone, keys[i].len}, &v) || !v.is_overflow() ||
        load32(v.ptr) != kInvalidPageId)
      return fail(Status::kCorrupt);
    store32(const_cast<uint8_t*>(v.ptr), c);
    store_.end_protection();
  }
  store_.release(root_);
  root_ = root;
  height_ = levels + 1;
  set_count(n);
  version_++;
  return Status::kOk;
}

// Inner levels: node i covers children [a, b] with keys seps[a, b) and upper
// child children[b]; seps[b] moves up. Every node but the root keeps at least
// one key: a node holding one key always fits (two fences and a key of at
// most 1 KiB each), and the last node of a level takes the last two children
// rather than one.
Status BTree::build_inner_levels(std::vector<PageId>& children, SepList& seps, std::vector<PageId>* pages,
                                 PageId* root, unsigned* levels) {
  unsigned height = 1;
  unsigned iss = (cfg_.heads ? 10 : 6) + 4;
  unsigned ibase = cfg_.heads && cfg_.hints ? BasicNode::kSlotsHinted : BasicNode::kSlotsPlain;
  std::vector<RecordRef> irecs;
  while (children.size() > 1) {
    if (height + 1 >= kMaxHeight) return Status::kOutOfMemory;
    std::vector<PageId> up_children;
    SepList up_seps;
    size_t m = children.size();
    KeyBuffer lo;
    bool lo_inf = true;
    auto fits = [&](size_t a, size_t b) {
      uint64_t sum = 0;
      for (size_t i = a; i < b; i++) sum += seps.len(i);
      uint32_t ulen = 0, prefix = 0;
      if (b < m - 1) {
        ulen = seps.len(b);
        if (cfg_.prefix_truncation && !lo_inf) prefix = common_prefix(lo.data, lo.len, seps.ptr(b), ulen);
      }
      uint64_t cnt = b - a;
      return ibase + lo.len + ulen + cnt * iss + sum - cnt * prefix <= kNodeSize;
    };
    for (size_t a = 0; a < m;) {
      size_t best = a;
      for (size_t b = a; b < m && fits(a, b); b++) best = b;
      if (best == m - 2) {
        // One child would be left for a node of its own: take it too, or leave two.
        if (fits(a, m - 1)) best = m - 1;
        else if (best > a + 1) best--;
      }
      size_t b = best;
      Fences f;
      f.lower = lo.slice();
      f.lower_inf = lo_inf;
      if (b < m - 1) {
        f.upper = seps.at(b);
        f.upper_inf = false;
      }
      irecs.clear();
      if (!reserve_checked(irecs, b - a) || !reserve_checked(*pages, pages->size() + 1) ||
          !reserve_checked(up_children, up_children.size() + 1))
        return Status::kOutOfMemory;
      for (size_t i = a; i < b; i++)
        irecs.push_back(RecordRef{seps.ptr(i), nullptr, reinterpret_cast<const uint8_t*>(&children[i]),
                                  static_cast<uint16_t>(seps.len(i)), 0, 4});
      PageId id;
      Status s = store_.allocate(&id);
      if (s != Status::kOk) return s;
      pages->push_back(id);
      if (!BasicNode::build(page_mut(id), PageTag::kBasicInner, inner_flags(), f, cfg_.prefix_truncation, irecs.data(),
                            static_cast<unsigned>(b - a), children[b], kCounterDisabled))
        return Status::kCorrupt;
      store_.end_protection();
      up_children.push_back(id);
      if (b < m - 1) {
        if (!up_seps.push(seps.at(b))) return Status::kOutOfMemory;
        lo.assign(seps.at(b));
        lo_inf = false;
      }
      a = b + 1;
    }
    children.swap(up_children);
    seps.swap(up_seps);
    height++;
  }
  *root = children[0];
  *levels = height - 1;
  return Status::kOk;
}

}  // namespace adaptree
