// Invariant checker: walks the whole tree and verifies fences, key order,
// prefixes, heads, hints, counts, fingerprints, dense offsets, overflow chains
// and that every live page is reachable. Returns the first violation found.
#include <string>
#include <vector>

#include "core/layouts/basic_node.h"
#include "core/tree/btree.h"
#include "core/layouts/dense_keys.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/util/checked.h"
#include "core/util/format.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/util/hash.h"
#include "core/layouts/leaf.h"
#include "core/tree/overflow.h"
#include "core/layouts/semi_dense_leaf.h"

namespace adaptree {

namespace {

struct Checker {
  const BTree& t;
  std::string err;
  uint64_t records = 0;
  uint64_t pages = 0;
  int leaf_depth = -1;

  bool fail(PageId id, const char* what, long long a = 0, long long b = 0) {
    if (err.empty()) {
      err = "page ";
      append_uint(err, id);
      err += ": ";
      err += what;
      err += " (";
      append_int(err, a);
      err += ", ";
      append_int(err, b);
      err += ")";
    }
    return false;
  }

  bool same(Slice a, Slice b) { return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0); }

  bool check_fences(PageId id, const uint8_t* p, const Fences& expect) {
    Fences f = fences_of(p);
    if (f.lower_inf != expect.lower_inf || f.upper_inf != expect.upper_inf) return fail(id, "fence infinity flags");
    if (!f.lower_inf && !same(f.lower, expect.lower)) return fail(id, "lower fence differs from parent separator");
    if (!f.upper_inf && !same(f.upper, expect.upper)) return fail(id, "upper fence differs from parent separator");
    if (f.lower.len > kMaxKeySize || f.upper.len > kMaxKeySize) return fail(id, "fence too long");
    return true;
  }

  bool check_value(PageId id, const ValueRef& v) {
    if (!v.is_overflow()) return true;
    if ((v.field & kValueLenMask) != kOverflowRefSize) return fail(id, "overflow reference size");
    PageId ov = load32(v.ptr);
    uint64_t len = load32(v.ptr + 4), seen = 0, chain = 0;
    while (ov != kInvalidPageId) {
      if (!t.store().valid(ov)) return fail(id, "overflow page id out of range", ov);
      // (the leaf is a copy, walk's img: nothing read before needs to stay fixed. Without this
      // every chain of a leaf stayed in the pool together: 20 values of 10 MiB grew a 1 MiB
      // pool to 201 MiB, 40 of 100 MB to OUT_OF_MEMORY; a probe, session 32)
      t.store().end_protection();
      const uint8_t* op = t.store().page(ov);
      if (t.store().failure() != Status::kOk) return fail(ov, "page could not be read", static_cast<int>(t.store().failure()));
      if (op[0] != static_cast<uint8_t>(PageTag::kOverflow)) return fail(ov, "overflow chain page has wrong tag", op[0]);
      // (a chain that loops would be walked for ever)
      if (++chain > overflow_pages(len)) return fail(id, "overflow chain longer than its value", static_cast<long long>(chain));
      seen += load32(op + 8);
      pages++;
      ov = load32(op + 4);
    }
    if (seen != len) return fail(id, "overflow chain length", static_cast<long long>(seen), static_cast<long long>(len));
    return true;
  }

  // Keys of a leaf in position order must be ascending and inside the fences.
  bool check_leaf_keys(PageId id, const uint8_t* p, const Fences& f) {
    KeyBuffer prev, cur;
    bool first = true;
    unsigned n = 0;
    for (int pos = leaf::next_present(p, 0), end = static_cast<int>(leaf::positions(p)); pos < end;
         pos = leaf::next_present(p, pos + 1)) {
      leaf::key_at(p, pos, &cur);
      if (!key_in_fences(f, cur.slice())) return fail(id, "key outside fences", pos);
      if (!first && compare(prev.slice(), cur.slice()) >= 0) return fail(id, "keys not ascending", pos);
      if (!check_value(id, leaf::value_at(p, pos))) return false;
      // Every key must be found by a point lookup too.
      ValueRef v;
      if (!leaf::lookup(const_cast<uint8_t*>(p), cur.slice(), &v)) return fail(id, "stored key not found by lookup", pos);
      prev.assign(cur.slice());
      first = false;
      n++;
    }
    if (n != leaf::count(p)) return fail(id, "count differs from records present", n, leaf::count(p));
    records += n;
    return true;
  }

  bool check_counter(PageId id, const uint8_t* p) {
    uint8_t c = p[hdr::kCounter];
    if (!t.config().adaptive && c != kCounterDisabled) return fail(id, "operation counter set without adaptive", c);
    if (c != kCounterDisabled && c > kCounterMax) return fail(id, "operation counter out of range", c);
    return true;
  }

  bool check_slotted_heap(PageId id, const uint8_t* p, unsigned slots_end, unsigned live_entries) {
    unsigned heap_start = load16(p + hdr::kHeapStart), heap_used = load16(p + hdr::kHeapUsed);
    if (slots_end > heap_start || heap_start > kNodeSize) return fail(id, "slots overlap heap", slots_end, heap_start);
    Fences f = fences_of(p);
    unsigned expect = live_entries + fences_bytes(f);
    if (heap_used != expect) return fail(id, "heap_used", heap_used, expect);
    return true;
  }

  bool check_basic(PageId id, const uint8_t* p, const Fences& f, bool leaf) {
    BasicNode n{const_cast<uint8_t*>(p)};
    uint8_t want = (t.config().heads ? kFlagHeads : 0) | (t.config().heads && t.config().hints ? kFlagHints : 0);
    if ((p[hdr::kFlags] & (kFlagHeads | kFlagHints)) != want) return fail(id, "head/hint flags differ from config");
    uint32_t plen = t.config().prefix_truncation ? fence_prefix_len(f) : 0;
    if (n.prefix_len() != plen) return fail(id, "prefix length", n.prefix_len(), plen);
    unsigned cnt = n.count(), live = 0;
    unsigned slots_end = n.slot_base() + cnt * n.slot_size();
    for (unsigned i = 0; i < cnt; i++) {
      const uint8_t* s = n.slot(i);
      unsigned off = load16(s), kl = load16(s + 2), vb = load16(s + 4) & kValueLenMask;
      if (off < slots_end || off + kl + vb > kNodeSize) return fail(id, "slot points outside heap", i, off);
      live += kl + vb;
      if (n.has_heads() && n.head(i) != head_of(p + off, kl)) return fail(id, "head mismatch", i);
      if (!leaf && (load16(s + 4) != 4)) return fail(id, "inner value is not a page id", i);
      if (plen + kl > kMaxKeySize) return fail(id, "key too long", i);
    }
    if (!check_slotted_heap(id, p, slots_end, live)) return false;
    if (n.has_hints()) {
      unsigned dist = cnt / (BasicNode::kHintCount + 1);
      for (unsigned i = 0; i < BasicNode::kHintCount; i++) {
        uint32_t want_hint = cnt > 2 * BasicNode::kHintCount ? n.head(dist * (i + 1)) : 0;
        if (load32(p + BasicNode::kHintsOffset + 4 * i) != want_hint) return fail(id, "hint mismatch", i);
      }
    }
    if (leaf) return check_counter(id, p) && check_leaf_keys(id, p, f);
    if (p[hdr::kCounter] != kCounterDisabled) return fail(id, "inner node with operation counter");
    // Inner: separators ascending and inside the fences; recurse into children.
    // Two key buffers taking turns (no allocation: the check runs also when memory is short).
    KeyBuffer keys[2];
    for (unsigned i = 0; i < cnt; i++) {
      Slice s = n.suffix(i);
      KeyBuffer& k = keys[i & 1];
      memcpy(k.data, n.prefix(), plen);
      memcpy(k.data + plen, s.data, s.len);
      k.len = plen + s.len;
      if (!key_in_fences(f, k.slice())) return fail(id, "separator outside fences", i);
      if (i && compare(keys[(i - 1) & 1].slice(), k.slice()) >= 0) return fail(id, "separators not ascending", i);
    }
    return true;
  }

  bool check_fingerprint(PageId id, const uint8_t* p, const Fences& f) {
    FingerprintLeaf n{const_cast<uint8_t*>(p)};
    uint32_t plen = t.config().prefix_truncation ? fence_prefix_len(f) : 0;
    if (n.prefix_len() != plen) return fail(id, "prefix length", n.prefix_len(), plen);
    unsigned cnt = n.count(), cap = n.fp_capacity(), live = 0;
    if (cap % FingerprintLeaf::kFpGrain || cap < cnt) return fail(id, "fingerprint capacity", cap, cnt);
    if (n.sorted() > cnt) return fail(id, "sorted > count");
    for (unsigned i = 0; i < cnt; i++) {
      Slice s = n.suffix(i);
      live += s.len + (load16(n.slot(i) + 4) & kValueLenMask);
      if (n.fingerprints()[i] != fingerprint(s.data, s.len)) return fail(id, "fingerprint mismatch", i);
      if (i > 0 && i < n.sorted() && compare_bytes(n.suffix(i - 1).data, n.suffix(i - 1).len, s.data, s.len) >= 0)
        return fail(id, "sorted range not sorted", i);
    }
    if (!check_slotted_heap(id, p, n.slots_end(), live) || !check_counter(id, p)) return false;
    // Check order on a sorted copy (scans sort lazily; the checker must not modify the tree).
    alignas(16) uint8_t copy[kPageSize];
    memcpy(copy, p, kPageSize);
    FingerprintLeaf{copy}.sort();
    for (unsigned i = 0; i < cnt; i++) {
      KeyBuffer k;
      FingerprintLeaf{copy}.key_at(i, &k);
      if (FingerprintLeaf{const_cast<uint8_t*>(p)}.find(k.slice()) < 0) return fail(id, "key not found by fingerprint search", i);
    }
    return check_leaf_keys(id, copy, f);
  }

  bool check_dense_common(PageId id, const Fences& f, unsigned klen, uint32_t ref) {
    uint32_t want;
    if (!dense::reference(f, klen, &want)) return fail(id, "dense leaf fences do not allow a reference key");
    if (want != ref) return fail(id, "dense reference", ref, want);
    return true;
  }

  bool check_semi_dense(PageId id, const uint8_t* p, const Fences& f) {
    SemiDenseLeaf n{const_cast<uint8_t*>(p)};
    if (!check_dense_common(id, f, n.key_len(), n.ref())) return false;
    uint64_t max;
    // One slot per key between the fences, or fewer (capacity) when those
    // would not fit a page.
    if (!dense::maximum(f, n.key_len(), &max) || max < n.ref()) return fail(id, "semi-dense fences");
    uint64_t range = max - n.ref() + 1;
    if (n.slot_count() == 0 || n.slot_count() > range || n.slot_count() > kNodeSize / 2)
      return fail(id, "semi-dense slot count", n.slot_count(), static_cast<long long>(range));
    unsigned live = 0;
    for (unsigned i = 0; i < n.slot_count(); i++) {
      unsigned off = load16(n.slot(i));
      if (!off) continue;
      if (off < n.slots_end() || off + 2 + (load16(p + off) & kValueLenMask) > kNodeSize) return fail(id, "semi-dense entry outside heap", i);
      live += 2 + (load16(p + off) & kValueLenMask);
    }
    if (n.free_space_after_compaction() < n.fence_reserve()) return fail(id, "semi-dense fence reserve used", n.fence_reserve());
    return check_slotted_heap(id, p, n.slots_end(), live) && check_leaf_keys(id, p, f);
  }

  bool check_fully_dense(PageId id, const uint8_t* p, const Fences& f) {
    FullyDenseLeaf n{const_cast<uint8_t*>(p)};
    if (!check_dense_common(id, f, n.key_len(), n.ref())) return false;
    unsigned cap = n.capacity();
    uint32_t reserve = load16(p + FullyDenseLeaf::kUpperReserve);
    if (reserve < n.key_len() || (!f.upper_inf && f.upper.len > reserve)) return fail(id, "upper fence reserve", reserve);
    if (cap == 0 || cap > FullyDenseLeaf::capacity_for(f.lower_inf ? 0 : f.lower.len, reserve, n.value_size()))
      return fail(id, "fully dense capacity", cap);
    uint64_t max;
    if (!dense::maximum(f, n.key_len(), &max)) return fail(id, "fully dense fences");
    unsigned values = load16(p + FullyDenseLeaf::kValuesOff);
    if (values < FullyDenseLeaf::kBitmap + 8 * ((cap + 63) / 64) ||
        values + cap * n.value_size() > load16(p + hdr::kLowerOff))
      return fail(id, "fully dense value array overlaps", values);
    // Bits past the capacity must be clear.
    for (unsigned i = cap; i < 64 * ((cap + 63) / 64); i++)
      if (n.present(i)) return fail(id, "bitmap bit past capacity", i);
    if (n.value_size() & kOverflowFlag) return fail(id, "fully dense overflow values");
    return check_leaf_keys(id, p, f);
  }

  bool walk(PageId id, const Fences& f, int depth) {
    if (depth >= static_cast<int>(BTree::kMaxHeight)) return fail(id, "tree too deep");
    if (!t.store().valid(id)) return fail(id, "page id out of range");
    // A copy per level: the walk may visit more pages than the pool holds.
    alignas(16) uint8_t img[kPageSize];
    t.store().end_protection();
    memcpy(img, t.store().page(id), kPageSize);
    if (t.store().failure() != Status::kOk) return fail(id, "page could not be read", static_cast<int>(t.store().failure()));
    const uint8_t* p = img;
    pages++;
    // (An overflow or free page as a child has no fences to compare.)
    if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner) && !is_leaf_tag(p[0])) return fail(id, "not a node page", p[0]);
    if (!check_fences(id, p, f)) return false;
    PageTag tag = static_cast<PageTag>(p[0]);
    if (tag == PageTag::kBasicInner) {
      if (!check_basic(id, p, f, false)) return false;
      BasicNode n{const_cast<uint8_t*>(p)};
      unsigned cnt = n.count();
      uint32_t plen = n.prefix_len();
      KeyBuffer lo, hi;
      bool lo_inf = f.lower_inf;
      if (!lo_inf) lo.assign(f.lower);
      for (unsigned i = 0; i <= cnt; i++) {
        Fences cf;
        cf.lower_inf = lo_inf;
        cf.lower = lo.slice();
        if (i < cnt) {
          Slice s = n.suffix(i);
          memcpy(hi.data, n.prefix(), plen);
          memcpy(hi.data + plen, s.data, s.len);
          hi.len = plen + s.len;
          cf.upper = hi.slice();
          cf.upper_inf = false;
        } else {
          cf.upper = f.upper;
          cf.upper_inf = f.upper_inf;
        }
        if (!walk(n.child(i), cf, depth + 1)) return false;
        lo.assign(hi.slice());
        lo_inf = false;
      }
      return true;
    }
    if (leaf_depth < 0) leaf_depth = depth;
    if (leaf_depth != depth) return fail(id, "leaves at different depths", depth, leaf_depth);
    switch (tag) {
      case PageTag::kBasicLeaf: return check_basic(id, p, f, true);
      case PageTag::kFingerprintLeaf: return check_fingerprint(id, p, f);
      case PageTag::kSemiDenseLeaf: return check_semi_dense(id, p, f);
      case PageTag::kFullyDenseLeaf: return check_fully_dense(id, p, f);
      default: return fail(id, "unknown page tag", p[0]);
    }
  }
};

}  // namespace

std::string BTree::check() const {
  std::string err;
  if (check(&err) == Status::kOutOfMemory) return "out of memory";
  return err;
}

Status BTree::check(std::string* err) const {
  err->clear();
  // The only allocation: room for a message (fail() writes at most one, well below this).
  if (!reserve_checked(*err, 512)) return Status::kOutOfMemory;
  store_.begin_op();
  Checker c{*this, std::move(*err)};
  c.walk(root_, Fences{}, 0);
  if (c.err.empty() && c.leaf_depth + 1 != static_cast<int>(height_))
    c.fail(root_, "height", c.leaf_depth + 1, height_);
  if (c.err.empty() && c.records != count())
    c.fail(root_, "record count", static_cast<long long>(c.records), static_cast<long long>(count()));
  if (c.err.empty() && c.pages != store_.live_pages())
    c.fail(root_, "reachable pages differ from live pages (leak)", static_cast<long long>(c.pages),
           static_cast<long long>(store_.live_pages()));
  *err = std::move(c.err);
  return err->empty() ? Status::kOk : Status::kCorrupt;
}

}  // namespace adaptree
