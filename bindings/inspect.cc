// Inspection ABI (bindings/adaptree.h, the block at its end): the core's own
// node dump for the demo page and diagnostics. Every page is read as a copy
// through BTree::copy_page (never a frame pointer, so this keeps working when
// pages live in a buffer pool) and decoded by the layout classes of
// core/layouts/, working on that copy.
//
// at_inspect_node JSON, every layout:
//   id, tag (byte 0), layout (name as in stats()), flags (byte 1) and its bits
//   heads, hints, lower_inf, upper_inf; count; prefix_len (header field);
//   counter (operation counter, 255 = disabled); lower, upper (fences as hex,
//   null when infinite); used (bytes the content needs), fill (used / node bytes)
// basic inner / leaf: heap_start, heap_used, upper_child (inner), prefix (hex),
//   hint_heads (16 u32, when flagged), slots [{off, suffix_len, value_len, overflow,
//   head (when flagged), key (full key, hex), child (inner)}]
// fingerprint leaf: heap_start, heap_used, sorted, fp_capacity, prefix,
//   fingerprints (hex, one byte per slot), slots [{off, suffix_len, value_len,
//   overflow, fp, key}] in slot order (unsorted tail included)
// semi-dense leaf: heap_start, heap_used, slot_count, key_len, ref,
//   nonnumeric (hex), slots [{index, off, value_len, overflow, key}] (present only)
// fully dense leaf: capacity, value_size, key_len, upper_reserve, ref,
//   values_off, nonnumeric, bitmap (hex of the u64 words), slots [{index, key}]
#include <cstring>
#include <string>
#include <vector>

#include "bindings/adaptree.h"
#include "bindings/internal.h"
#include "core/layouts/dense_keys.h"
#include "core/layouts/leaf.h"
#include "core/tree/node_stats.h"
#include "core/util/checked.h"
#include "core/util/format.h"

using namespace adaptree;

namespace {

constexpr int32_t st(Status s) { return static_cast<int32_t>(s); }

// Appends never allocate on their own under a budget: callers make room first (room()),
// for a whole node at a time, with a bound on what one node can add (util/checked.h).
struct Json {
  std::string s;
  bool first = true;
  bool room(size_t n) { return reserve_checked(s, s.size() + n); }
  void key(const char* k) {
    if (!first) s += ',';
    first = false;
    s += '"';
    s += k;
    s += "\":";
  }
  void u(const char* k, uint64_t v) { key(k); append_uint(s, v); }
  void b(const char* k, bool v) { key(k); s += v ? "true" : "false"; }
  void str(const char* k, const char* v) { key(k); s += '"'; s += v; s += '"'; }
  void fixed(const char* k, double v) { key(k); append_fixed(s, v, 4); }
  void hex(const char* k, const uint8_t* p, uint32_t n) {
    key(k);
    s += '"';
    hex_raw(p, n);
    s += '"';
  }
  void hex_raw(const uint8_t* p, uint32_t n) {
    static const char digits[] = "0123456789abcdef";
    for (uint32_t i = 0; i < n; i++) {
      s += digits[p[i] >> 4];
      s += digits[p[i] & 15];
    }
  }
  void null(const char* k) { key(k); s += "null"; }
  void open(const char* k, char c) { key(k); s += c; first = true; }
  void open(char c) { if (!first) s += ','; s += c; first = true; }
  void close(char c) { s += c; first = false; }
};

// Bytes the live content needs, as node_stats counts them.
unsigned used_bytes_of(uint8_t* p) {
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicInner:
    case PageTag::kBasicLeaf: return BasicNode{p}.used_bytes();
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{p}.used_bytes();
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{p}.used_bytes();
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{p}.used_bytes();
    default: return kNodeSize;
  }
}

bool is_node(const uint8_t* p) { return p[0] >= 1 && p[0] <= 5; }

// A heap range inside the node area (the page is a copy, so a bad offset only
// makes the dump say so; it must not read outside the buffer).
bool in_node(uint32_t off, uint32_t len) { return off <= kNodeSize && len <= kNodeSize - off; }

void fence(Json& j, const char* name, const Fences& f, bool upper) {
  bool inf = upper ? f.upper_inf : f.lower_inf;
  Slice s = upper ? f.upper : f.lower;
  if (inf) j.null(name);
  else j.hex(name, s.data, s.len);
}

bool fences_ok(const uint8_t* p) {
  return in_node(load16(p + hdr::kLowerOff), load16(p + hdr::kLowerLen)) &&
         in_node(load16(p + hdr::kUpperOff), load16(p + hdr::kUpperLen));
}

// The header fields every layout shares.
void common(Json& j, PageId id, uint8_t* p) {
  j.u("id", id);
  j.u("tag", p[0]);
  j.str("layout", page_tag_name(static_cast<PageTag>(p[0])));
  uint8_t fl = p[hdr::kFlags];
  j.u("flags", fl);
  j.b("heads", fl & kFlagHeads);
  j.b("hints", fl & kFlagHints);
  j.b("lower_inf", fl & kFlagLowerInf);
  j.b("upper_inf", fl & kFlagUpperInf);
  j.u("count", load16(p + hdr::kCount));
  j.u("prefix_len", load16(p + hdr::kPrefixLen));
  j.u("counter", p[hdr::kCounter]);
  if (fences_ok(p)) {
    Fences f = fences_of(p);
    fence(j, "lower", f, false);
    fence(j, "upper", f, true);
  } else {
    j.null("lower");
    j.null("upper");
  }
  unsigned used = used_bytes_of(p);
  j.u("used", used);
  j.fixed("fill", static_cast<double>(used) / kNodeSize);
}

void dump_basic(Json& j, uint8_t* p) {
  BasicNode n{p};
  bool inner = p[0] == static_cast<uint8_t>(PageTag::kBasicInner);
  j.u("heap_start", n.heap_start());
  j.u("heap_used", n.heap_used());
  if (inner) j.u("upper_child", n.upper_child());
  unsigned plen = n.prefix_len();
  uint32_t poff = load16(p + hdr::kLowerOff);
  if (in_node(poff, plen)) j.hex("prefix", p + poff, plen);
  else j.null("prefix");
  if (n.has_hints()) {
    j.open("hint_heads", '[');
    for (unsigned i = 0; i < BasicNode::kHintCount; i++) {
      if (i) j.s += ',';
      append_uint(j.s, load32(p + BasicNode::kHintsOffset + 4 * i));
    }
    j.close(']');
  }
  unsigned count = n.count();
  j.open("slots", '[');
  for (unsigned i = 0; i < count && n.slot_base() + (i + 1) * n.slot_size() <= kNodeSize; i++) {
    const uint8_t* s = n.slot(i);
    uint32_t off = load16(s), slen = load16(s + 2);
    uint16_t vf = load16(s + 4);
    j.open('{');
    j.u("off", off);
    j.u("suffix_len", slen);
    j.u("value_len", vf & kValueLenMask);
    j.b("overflow", vf & kOverflowFlag);
    if (n.has_heads()) j.u("head", n.head(i));
    if (in_node(off, slen) && in_node(poff, plen) && plen + slen <= kMaxKeySize) {
      j.key("key");
      j.s += '"';
      j.hex_raw(p + poff, plen);
      j.hex_raw(p + off, slen);
      j.s += '"';
    } else {
      j.null("key");
    }
    if (inner) {
      if (in_node(off + slen, 4)) j.u("child", load32(p + off + slen));
      else j.null("child");
    }
    j.close('}');
  }
  j.close(']');
}

void dump_fingerprint(Json& j, uint8_t* p) {
  FingerprintLeaf n{p};
  j.u("heap_start", n.heap_start());
  j.u("heap_used", n.heap_used());
  j.u("sorted", n.sorted());
  j.u("fp_capacity", n.fp_capacity());
  unsigned plen = n.prefix_len();
  uint32_t poff = load16(p + hdr::kLowerOff);
  if (in_node(poff, plen)) j.hex("prefix", p + poff, plen);
  else j.null("prefix");
  unsigned count = n.count();
  bool fits = FingerprintLeaf::kFingerprints + n.fp_capacity() + count * FingerprintLeaf::kSlotSize <= kNodeSize &&
              count <= n.fp_capacity();
  if (!fits) {
    j.null("fingerprints");
    j.null("slots");
    return;
  }
  j.hex("fingerprints", n.fingerprints(), count);
  j.open("slots", '[');
  for (unsigned i = 0; i < count; i++) {
    const uint8_t* s = n.slot(i);
    uint32_t off = load16(s), slen = load16(s + 2);
    uint16_t vf = load16(s + 4);
    j.open('{');
    j.u("off", off);
    j.u("suffix_len", slen);
    j.u("value_len", vf & kValueLenMask);
    j.b("overflow", vf & kOverflowFlag);
    j.u("fp", n.fingerprints()[i]);
    if (in_node(off, slen) && in_node(poff, plen) && plen + slen <= kMaxKeySize) {
      KeyBuffer k;
      n.key_at(static_cast<int>(i), &k);
      j.hex("key", k.data, k.len);
    } else {
      j.null("key");
    }
    j.close('}');
  }
  j.close(']');
}

void dump_semi_dense(Json& j, uint8_t* p) {
  SemiDenseLeaf n{p};
  j.u("heap_start", n.heap_start());
  j.u("heap_used", n.heap_used());
  j.u("slot_count", n.slot_count());
  j.u("key_len", n.key_len());
  j.u("ref", n.ref());
  uint32_t m = dense::nonnumeric_len(n.key_len());
  if (in_node(load16(p + hdr::kLowerOff), m)) j.hex("nonnumeric", n.nonnumeric(), m);
  else j.null("nonnumeric");
  if (n.slots_end() > kNodeSize || n.key_len() > kMaxKeySize || !in_node(load16(p + hdr::kLowerOff), m)) {
    j.null("slots");
    return;
  }
  j.open("slots", '[');
  for (int i = n.next_present(0), end = static_cast<int>(n.slot_count()); i < end; i = n.next_present(i + 1)) {
    uint32_t off = load16(n.slot(i));
    j.open('{');
    j.u("index", static_cast<uint32_t>(i));
    j.u("off", off);
    if (in_node(off, 2)) {
      uint16_t vf = load16(p + off);
      j.u("value_len", vf & kValueLenMask);
      j.b("overflow", vf & kOverflowFlag);
    }
    KeyBuffer k;
    n.key_at(i, &k);
    j.hex("key", k.data, k.len);
    j.close('}');
  }
  j.close(']');
}

void dump_fully_dense(Json& j, uint8_t* p) {
  FullyDenseLeaf n{p};
  j.u("capacity", n.capacity());
  j.u("value_size", n.value_size());
  j.u("key_len", n.key_len());
  j.u("upper_reserve", load16(p + FullyDenseLeaf::kUpperReserve));
  j.u("ref", n.ref());
  j.u("values_off", load16(p + FullyDenseLeaf::kValuesOff));
  uint32_t m = dense::nonnumeric_len(n.key_len());
  bool ok = in_node(load16(p + hdr::kLowerOff), m) && n.key_len() <= kMaxKeySize;
  if (ok) j.hex("nonnumeric", n.nonnumeric(), m);
  else j.null("nonnumeric");
  uint32_t words = (n.capacity() + 63) / 64;
  if (!ok || !in_node(FullyDenseLeaf::kBitmap, 8 * words)) {
    j.null("bitmap");
    j.null("slots");
    return;
  }
  j.hex("bitmap", p + FullyDenseLeaf::kBitmap, 8 * words);
  j.open("slots", '[');
  for (int i = n.next_present(0), end = static_cast<int>(n.capacity()); i < end; i = n.next_present(i + 1)) {
    j.open('{');
    j.u("index", static_cast<uint32_t>(i));
    KeyBuffer k;
    n.key_at(i, &k);
    j.hex("key", k.data, k.len);
    j.close('}');
  }
  j.close(']');
}

Status dump_node(const BTree& t, PageId id, std::string* out) {
  alignas(16) uint8_t page[kPageSize];  // on the stack: mt callers may run at once
  Status s = t.copy_page(id, page);
  if (s != Status::kOk) return s;
  if (!is_node(page)) return Status::kInvalidArgument;
  Json j;
  // One node's dump: its keys and fences as hex, a few fields per slot (dense leaves: per
  // position), well below 64 pages of text.
  if (!j.room(64 * size_t{kPageSize})) return Status::kOutOfMemory;
  j.s += '{';
  common(j, id, page);
  switch (static_cast<PageTag>(page[0])) {
    case PageTag::kBasicInner:
    case PageTag::kBasicLeaf: dump_basic(j, page); break;
    case PageTag::kFingerprintLeaf: dump_fingerprint(j, page); break;
    case PageTag::kSemiDenseLeaf: dump_semi_dense(j, page); break;
    case PageTag::kFullyDenseLeaf: dump_fully_dense(j, page); break;
    default: break;
  }
  j.s += '}';
  *out = std::move(j.s);
  return Status::kOk;
}

Status dump_tree(const BTree& t, std::string* out) {
  alignas(16) uint8_t page[kPageSize];  // on the stack: mt callers may run at once
  Json j;
  // Per node at most: the fields (~250 bytes), two fences as hex (4 KiB) and the children
  // (11 bytes each, at most one per 6 bytes of page).
  constexpr size_t kNodeJson = 256 + 4 * kMaxKeySize + 11 * (kPageSize / 6 + 1);
  if (!j.room(kNodeJson)) return Status::kOutOfMemory;
  j.s += '{';
  j.u("root", t.root());
  j.u("height", t.height());
  j.open("nodes", '[');
  // Breadth first: the root, then each level left to right.
  std::vector<PageId> level, next;
  if (!push_checked(level, t.root())) return Status::kOutOfMemory;
  for (unsigned depth = 0; !level.empty(); depth++) {
    if (depth >= t.height()) return Status::kCorrupt;
    next.clear();
    for (PageId id : level) {
      Status s = t.copy_page(id, page);
      if (s != Status::kOk) return s;
      if (!is_node(page)) return Status::kCorrupt;
      PageTag tag = static_cast<PageTag>(page[0]);
      if (!j.room(kNodeJson)) return Status::kOutOfMemory;
      j.open('{');
      j.u("id", id);
      j.str("layout", page_tag_name(tag));
      j.u("level", t.height() - 1 - depth);
      j.u("count", load16(page + hdr::kCount));
      unsigned used = used_bytes_of(page);
      j.u("used", used);
      j.fixed("fill", static_cast<double>(used) / kNodeSize);
      // As stats() counts it: the stored prefix, or for dense leaves the fences' common prefix.
      bool dense = tag == PageTag::kSemiDenseLeaf || tag == PageTag::kFullyDenseLeaf;
      bool fok = fences_ok(page);
      Fences f = fences_of(page);
      j.u("prefix", dense ? (fok ? fence_prefix_len(f) : 0) : load16(page + hdr::kPrefixLen));
      j.u("counter", page[hdr::kCounter]);
      if (fok) {
        fence(j, "lower", f, false);
        fence(j, "upper", f, true);
      }
      if (tag == PageTag::kBasicInner) {
        BasicNode n{page};
        unsigned c = n.count();
        if (n.slot_base() + c * n.slot_size() > kNodeSize) return Status::kCorrupt;
        j.open("children", '[');
        for (unsigned i = 0; i <= c; i++) {
          if (i < c && !in_node(load16(n.slot(i)) + load16(n.slot(i) + 2), 4)) return Status::kCorrupt;
          PageId child = n.child(i);
          if (i) j.s += ',';
          append_uint(j.s, child);
          if (!push_checked(next, child)) return Status::kOutOfMemory;
        }
        j.first = false;
        j.close(']');
      }
      j.close('}');
    }
    level.swap(next);
  }
  j.close(']');
  j.s += '}';
  *out = std::move(j.s);
  return Status::kOk;
}

int32_t deliver(Status s, const std::string& json, uint8_t* out, uint32_t cap) {
  if (s != Status::kOk) return st(s);
  if (json.size() > 0x7fffffff) return st(Status::kOutOfMemory);
  if (json.size() <= cap) memcpy(out, json.data(), json.size());
  return static_cast<int32_t>(json.size());
}

}  // namespace

extern "C" {

uint32_t at_inspect_root(at_tree* t) {
  LatchedTree held(t);
  const BTree* tree = held.tree();
  return tree ? tree->root() : 0;
}

uint32_t at_inspect_height(at_tree* t) {
  LatchedTree held(t);
  const BTree* tree = held.tree();
  return tree ? tree->height() : 0;
}

int32_t at_inspect_page(at_tree* t, uint32_t page_id, uint8_t* out) {
  LatchedTree held(t);
  const BTree* tree = held.tree();
  if (!tree) return st(Status::kClosed);
  return st(tree->copy_page(page_id, out));
}

int32_t at_inspect_node(at_tree* t, uint32_t page_id, uint8_t* out, uint32_t cap) {
  LatchedTree held(t);
  const BTree* tree = held.tree();
  if (!tree) return st(Status::kClosed);
  std::string json;
  Status s = dump_node(*tree, page_id, &json);
  return deliver(s, json, out, cap);
}

int32_t at_inspect_tree(at_tree* t, uint8_t* out, uint32_t cap) {
  LatchedTree held(t);
  const BTree* tree = held.tree();
  if (!tree) return st(Status::kClosed);
  std::string json;
  Status s = dump_tree(*tree, &json);
  return deliver(s, json, out, cap);
}

}  // extern "C"
