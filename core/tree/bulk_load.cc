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
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/tree/overflow.h"
#include "core/layouts/separator.h"

namespace adaptree {

namespace {

RecordRef key_record(const std::string& s, const uint8_t* val, uint16_t val_len) {
  return RecordRef{reinterpret_cast<const uint8_t*>(s.data()), nullptr, val, static_cast<uint16_t>(s.size()), 0, val_len};
}

uint32_t lcp(const std::string& a, const KeyBuffer& b) {
  return common_prefix(reinterpret_cast<const uint8_t*>(a.data()), static_cast<uint32_t>(a.size()), b.data, b.len);
}

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
  return end_write(bulk_load_attempt(keys, values, n));
}

Status BTree::bulk_load_attempt(const Slice* keys, const Slice* values, size_t n) {
  if (count_ != 0) return Status::kInvalidArgument;
  for (size_t i = 0; i < n; i++) {
    if (keys[i].len > kMaxKeySize) return Status::kKeyTooLarge;
    if (values[i].len > kMaxValueSize) return Status::kValueTooLarge;
    if (i && compare(keys[i - 1], keys[i]) >= 0) return Status::kInvalidArgument;
  }
  if (n == 0) return Status::kOk;

  static const uint8_t kNone[1] = {0};
  std::vector<PageId> pages;  // everything allocated, released again on failure
  std::vector<PageId> chains;
  std::vector<uint8_t> refs(8 * n);
  std::vector<RecordRef> recs(n);
  auto fail = [&](Status s) {
    for (PageId c : chains) overflow_free(store_, c);
    for (PageId p : pages) store_.release(p);
    return s;
  };
  for (size_t i = 0; i < n; i++) {
    const uint8_t* k = keys[i].data ? keys[i].data : kNone;
    if (value_is_inline(keys[i].len, values[i].len)) {
      recs[i] = RecordRef{k, nullptr, values[i].data ? values[i].data : kNone, static_cast<uint16_t>(keys[i].len), 0,
                          static_cast<uint16_t>(values[i].len)};
    } else {
      PageId c;
      Status s = overflow_write(store_, values[i].data, values[i].len, &c);
      if (s != Status::kOk) return fail(s);
      chains.push_back(c);
      store32(&refs[8 * i], c);
      store32(&refs[8 * i + 4], values[i].len);
      recs[i] = RecordRef{k, nullptr, &refs[8 * i], static_cast<uint16_t>(keys[i].len), 0,
                          static_cast<uint16_t>(kOverflowRefSize | kOverflowFlag)};
    }
  }

  // Leaves: extend each leaf while the comparison-based layout still fits.
  bool fp_sizing = cfg_.fingerprint_leaves && !cfg_.adaptive;
  unsigned ss = fp_sizing ? FingerprintLeaf::kSlotSize + 1 : (cfg_.heads ? 10 : 6);
  unsigned base = fp_sizing ? FingerprintLeaf::kFingerprints + FingerprintLeaf::kFpGrain
                            : (cfg_.heads && cfg_.hints ? BasicNode::kSlotsHinted : BasicNode::kSlotsPlain);
  std::vector<PageId> children;
  std::vector<std::string> seps;
  std::string lower;
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
      uint64_t size = base + lower.size() + ulen + cnt * ss + sum - cnt * prefix;
      if (size > kNodeSize) break;
      best = b;
    }
    if (cfg_.fully_dense_leaves) {
      Fences df;
      df.lower = {reinterpret_cast<const uint8_t*>(lower.data()), static_cast<uint32_t>(lower.size())};
      df.lower_inf = lower_inf;
      size_t d = FullyDenseLeaf::dense_prefix(df, recs.data() + a, static_cast<unsigned>(n - a));
      if (a + d > best) best = a + d;
    }
    size_t b = best;
    Fences f;
    f.lower = {reinterpret_cast<const uint8_t*>(lower.data()), static_cast<uint32_t>(lower.size())};
    f.lower_inf = lower_inf;
    if (b < n) {
      separator_between(recs[b - 1], recs[b], &upper);
      f.upper = upper.slice();
      f.upper_inf = false;
    }
    PageId id;
    Status s = store_.allocate(&id);
    if (s != Status::kOk) return fail(s);
    pages.push_back(id);
    if (!build_leaf(page_mut(id), f, recs.data() + a, static_cast<unsigned>(b - a), kCounterDisabled))
      return fail(Status::kCorrupt);
    store_.end_protection();  // written once, never read back here: evictable
    children.push_back(id);
    if (b < n) {
      seps.emplace_back(reinterpret_cast<const char*>(upper.data), upper.len);
      lower = seps.back();
      lower_inf = false;
    }
    a = b;
  }

  PageId root;
  unsigned levels;
  Status s = build_inner_levels(std::move(children), std::move(seps), &pages, &root, &levels);
  if (s != Status::kOk) return fail(s);
  store_.release(root_);
  root_ = root;
  height_ = levels + 1;
  count_ = n;
  version_++;
  return Status::kOk;
}

// Inner levels: node i covers children [a, b] with keys seps[a, b) and upper
// child children[b]; seps[b] moves up. Every node but the root keeps at least
// one key: a node holding one key always fits (two fences and a key of at
// most 1 KiB each), and the last node of a level takes the last two children
// rather than one.
Status BTree::build_inner_levels(std::vector<PageId> children, std::vector<std::string> seps,
                                 std::vector<PageId>* pages, PageId* root, unsigned* levels) {
  unsigned height = 1;
  unsigned iss = (cfg_.heads ? 10 : 6) + 4;
  unsigned ibase = cfg_.heads && cfg_.hints ? BasicNode::kSlotsHinted : BasicNode::kSlotsPlain;
  std::vector<RecordRef> irecs;
  while (children.size() > 1) {
    if (height + 1 >= kMaxHeight) return Status::kOutOfMemory;
    std::vector<PageId> up_children;
    std::vector<std::string> up_seps;
    size_t m = children.size();
    std::string lo;
    bool lo_inf = true;
    auto fits = [&](size_t a, size_t b) {
      uint64_t sum = 0;
      for (size_t i = a; i < b; i++) sum += seps[i].size();
      uint32_t ulen = 0, prefix = 0;
      if (b < m - 1) {
        ulen = static_cast<uint32_t>(seps[b].size());
        if (cfg_.prefix_truncation && !lo_inf)
          prefix = common_prefix(reinterpret_cast<const uint8_t*>(lo.data()), static_cast<uint32_t>(lo.size()),
                                 reinterpret_cast<const uint8_t*>(seps[b].data()), ulen);
      }
      uint64_t cnt = b - a;
      return ibase + lo.size() + ulen + cnt * iss + sum - cnt * prefix <= kNodeSize;
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
      f.lower = {reinterpret_cast<const uint8_t*>(lo.data()), static_cast<uint32_t>(lo.size())};
      f.lower_inf = lo_inf;
      if (b < m - 1) {
        f.upper = {reinterpret_cast<const uint8_t*>(seps[b].data()), static_cast<uint32_t>(seps[b].size())};
        f.upper_inf = false;
      }
      irecs.clear();
      for (size_t i = a; i < b; i++)
        irecs.push_back(key_record(seps[i], reinterpret_cast<const uint8_t*>(&children[i]), 4));
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
        up_seps.push_back(seps[b]);
        lo = seps[b];
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
