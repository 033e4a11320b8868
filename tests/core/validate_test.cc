// page_well_formed (core/layouts/validate.h): every layout as the core builds it passes;
// each field a layout uses to address memory, set past what the page holds, fails. Then a
// store whose pages were changed and re-sealed (checksums hold): CORRUPT, never an access
// outside a page (tests/fuzz/fuzz_crafted_pages.cc fuzzes the same).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer/page_trailer.h"
#include "core/buffer/storage.h"
#include "core/layouts/basic_node.h"
#include "core/layouts/fingerprint_leaf.h"
#include "core/layouts/fully_dense_leaf.h"
#include "core/layouts/leaf.h"
#include "core/layouts/semi_dense_leaf.h"
#include "core/layouts/validate.h"
#include "core/store.h"
#include "core/tree/overflow.h"
#include "core/tree/scan.h"
#include "tests/core/key_helpers.h"
#include "tests/core/tree_helpers.h"

using namespace adaptree;

namespace {

// A copy of good with change applied must fail; good itself passes.
void expect_rejected(const Page& good, const char* what, const std::function<void(uint8_t*)>& change) {
  ASSERT_TRUE(page_well_formed(good.b)) << what;
  Page bad = good;
  change(bad.b);
  EXPECT_FALSE(page_well_formed(bad.b)) << what;
}

// Records "pfx-00000".. with values of 20 bytes, as RecordRefs into keys/vals.
void records(unsigned n, std::vector<std::string>* keys, std::vector<std::string>* vals, std::vector<RecordRef>* r) {
  keys->clear(), vals->clear(), r->clear();
  for (unsigned i = 0; i < n; i++) {
    char k[16];
    snprintf(k, sizeof k, "pfx-%05u", i * 3);
    keys->push_back(k);
    vals->push_back(std::string(20, static_cast<char>('a' + i % 26)));
  }
  for (unsigned i = 0; i < n; i++) r->push_back(rec((*keys)[i], (*vals)[i]));
}

}  // namespace

TEST(PageWellFormed, BasicLeafAndInner) {
  std::vector<std::string> keys, vals;
  std::vector<RecordRef> r;
  records(60, &keys, &vals, &r);
  std::string lo = "pfx-", hi = "pfx-~";
  Page leaf;
  ASSERT_TRUE(BasicNode::build(leaf.b, PageTag::kBasicLeaf, kFlagHeads | kFlagHints, fences(&lo, &hi), true, r.data(),
                               r.size(), 0, kCounterDisabled));
  BasicNode n{leaf.b};
  ASSERT_EQ(n.prefix_len(), 4u);
  const unsigned base = n.slot_base(), ss = n.slot_size();
  expect_rejected(leaf, "slot offset past the node", [&](uint8_t* p) { store16(p + base + 5 * ss, kNodeSize - 3); });
  expect_rejected(leaf, "slot inside the slot array", [&](uint8_t* p) { store16(p + base + 5 * ss, base); });
  expect_rejected(leaf, "key longer than a KeyBuffer", [&](uint8_t* p) { store16(p + base + 5 * ss + 2, kMaxKeySize - 2); });
  expect_rejected(leaf, "overflow reference not 8 bytes", [&](uint8_t* p) { store16(p + base + 5 * ss + 4, kOverflowFlag | 5); });
  expect_rejected(leaf, "count past the heap", [&](uint8_t* p) { store16(p + hdr::kCount, 400); });
  expect_rejected(leaf, "heap_start below the slots", [&](uint8_t* p) { store16(p + hdr::kHeapStart, base); });
  expect_rejected(leaf, "heap_used below the live bytes", [&](uint8_t* p) { store16(p + hdr::kHeapUsed, 100); });
  expect_rejected(leaf, "prefix longer than the lower fence", [&](uint8_t* p) { store16(p + hdr::kPrefixLen, 9); });
  expect_rejected(leaf, "fence past the node", [&](uint8_t* p) { store16(p + hdr::kUpperOff, kNodeSize - 1); });
  expect_rejected(leaf, "infinite fence with a length", [&](uint8_t* p) { p[hdr::kFlags] |= kFlagLowerInf; });
  expect_rejected(leaf, "unknown tag", [&](uint8_t* p) { p[0] = 9; });

  // An inner node: every value is a 4-byte child id.
  std::vector<RecordRef> ir;
  std::string child(4, '\1');
  for (unsigned i = 0; i < 30; i++) ir.push_back(rec(keys[i], child));
  Page inner;
  ASSERT_TRUE(BasicNode::build(inner.b, PageTag::kBasicInner, kFlagHeads, Fences{}, false, ir.data(), ir.size(), 7,
                               kCounterDisabled));
  BasicNode in{inner.b};
  expect_rejected(inner, "inner value not a page id", [&](uint8_t* p) { store16(p + in.slot_base() + 2 * in.slot_size() + 4, 8); });
  expect_rejected(inner, "inner record as an overflow reference",
                  [&](uint8_t* p) { store16(p + in.slot_base() + 2 * in.slot_size() + 4, kOverflowFlag | 4); });
}

TEST(PageWellFormed, FingerprintLeaf) {
  std::vector<std::string> keys, vals;
  std::vector<RecordRef> r;
  records(50, &keys, &vals, &r);
  std::string lo = "pfx-", hi = "pfx-~";
  Page pg;
  ASSERT_TRUE(FingerprintLeaf::build(pg.b, fences(&lo, &hi), true, r.data(), r.size(), 0));
  FingerprintLeaf f{pg.b};
  // Inserts keep it well formed (the unsorted range), so does the sort.
  OldValue old;
  for (unsigned i = 0; i < 20; i++) {
    std::string k = "pfx-" + std::to_string(i * 3 + 1), v(9, 'v');
    ASSERT_NE(f.upsert(sl(k), reinterpret_cast<const uint8_t*>(v.data()), 9, &old), PutResult::kNoSpace);
  }
  EXPECT_TRUE(page_well_formed(pg.b));
  const unsigned cap = f.fp_capacity();
  const unsigned slots = FingerprintLeaf::kFingerprints + cap;
  expect_rejected(pg, "capacity not a multiple of 32", [&](uint8_t* p) { store16(p + FingerprintLeaf::kFpCapacity, cap + 3); });
  expect_rejected(pg, "count above the capacity", [&](uint8_t* p) { store16(p + hdr::kCount, cap + 1); });
  expect_rejected(pg, "sorted above count", [&](uint8_t* p) { store16(p + FingerprintLeaf::kSorted, f.count() + 1); });
  expect_rejected(pg, "slot past the node", [&](uint8_t* p) { store16(p + slots + 6 * 3, kNodeSize); });
  expect_rejected(pg, "key longer than a KeyBuffer", [&](uint8_t* p) { store16(p + slots + 6 * 3 + 2, 1100); });
  f.sort();
  EXPECT_TRUE(page_well_formed(pg.b));
}

TEST(PageWellFormed, DenseLeaves) {
  std::string lo = be32(1000), hi = be32(1400);
  std::vector<std::string> keys, vals;
  for (uint32_t i = 1001; i <= 1400; i += 3) keys.push_back(be32(i)), vals.push_back(std::string(i % 9, 'q'));
  std::vector<RecordRef> r;
  for (size_t i = 0; i < keys.size(); i++) r.push_back(rec(keys[i], vals[i]));
  Page sd;
  ASSERT_TRUE(SemiDenseLeaf::build(sd.b, fences(&lo, &hi), r.data(), r.size()));
  SemiDenseLeaf s{sd.b};
  unsigned first = 0;
  while (load16(s.slot(first)) == 0) first++;
  expect_rejected(sd, "count not the entries present", [&](uint8_t* p) { store16(p + hdr::kCount, s.count() + 1); });
  expect_rejected(sd, "slot past the node", [&](uint8_t* p) { store16(p + SemiDenseLeaf::kSlots + 2 * first, kNodeSize - 1); });
  expect_rejected(sd, "value past the node", [&](uint8_t* p) { store16(p + load16(p + SemiDenseLeaf::kSlots + 2 * first), 3000); });
  expect_rejected(sd, "slots past the node", [&](uint8_t* p) { store16(p + SemiDenseLeaf::kSlotCount, 3000); });
  expect_rejected(sd, "key length past a KeyBuffer", [&](uint8_t* p) { store16(p + SemiDenseLeaf::kKeyLen, 2000); });
  expect_rejected(sd, "non-numeric part longer than the lower fence", [&](uint8_t* p) { store16(p + SemiDenseLeaf::kKeyLen, 12); });

  std::string flo = be32(99), v8 = "ABCDEFGH";
  std::vector<std::string> fkeys;
  for (uint32_t i = 100; i < 400; i += 2) fkeys.push_back(be32(i));
  std::vector<RecordRef> fr;
  for (auto& k : fkeys) fr.push_back(rec(k, v8));
  Page fd;
  ASSERT_TRUE(FullyDenseLeaf::build(fd.b, fences(&flo, nullptr), fr.data(), fr.size(), 4, 8));
  FullyDenseLeaf d{fd.b};
  const unsigned cap = d.capacity();
  expect_rejected(fd, "count not the bits set", [&](uint8_t* p) { store16(p + hdr::kCount, d.count() - 1); });
  expect_rejected(fd, "a bit past the capacity", [&](uint8_t* p) {
    uint8_t* w = p + FullyDenseLeaf::kBitmap + 8 * (cap / 64);
    store64(w, load64(w) | (uint64_t{1} << 63));
  });
  expect_rejected(fd, "values past the fences", [&](uint8_t* p) { store16(p + FullyDenseLeaf::kValueSize, 9); });
  expect_rejected(fd, "values over the bitmap", [&](uint8_t* p) { store16(p + FullyDenseLeaf::kValuesOff, FullyDenseLeaf::kBitmap); });
  expect_rejected(fd, "capacity past the page", [&](uint8_t* p) { store16(p + FullyDenseLeaf::kCapacity, 4000); });
  expect_rejected(fd, "upper fence outside its reserve", [&](uint8_t* p) {
    store16(p + hdr::kUpperOff, kNodeSize - 40);
    store16(p + hdr::kUpperLen, 4);
    p[hdr::kFlags] &= ~kFlagUpperInf;
  });

  // An overflow page: its data length within the page.
  Page ov;
  memset(ov.b, 0, sizeof ov.b);
  ov.b[0] = static_cast<uint8_t>(PageTag::kOverflow);
  store32(ov.b + 8, kOverflowCapacity);
  expect_rejected(ov, "overflow data past the page", [&](uint8_t* p) { store32(p + 8, kOverflowCapacity + 1); });
}

namespace {

// A store on memory files: 400 keys "key<i>" with values of 20..80 bytes and one of 9000
// (an overflow chain), committed and checkpointed (every page in the data file).
std::unique_ptr<MemoryStorage> crafted_base(Model* m) {
  auto ms = std::make_unique<MemoryStorage>();
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  EXPECT_EQ(Store::open(ms.get(), o, &st), Status::kOk);
  for (int i = 0; i < 400; i++) {
    std::string k = "key" + std::to_string(i), v(i == 7 ? 9000 : 20 + i % 60, static_cast<char>('a' + i % 26));
    EXPECT_EQ(st->tree().set(sl(k), sl(v)), Status::kOk);
    (*m)[k] = v;
  }
  EXPECT_EQ(st->commit(), Status::kOk);
  EXPECT_EQ(st->checkpoint(), Status::kOk);
  return ms;
}

// Opens files, then reads every key, scans, writes, commits: any status but no crash; returns
// whether any of it said CORRUPT.
bool exercise(MemoryStorage* files) {
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  Status s = Store::open(files, o, &st);
  if (s != Status::kOk) return s == Status::kCorrupt;
  bool corrupt = false;
  BTree& t = st->tree();
  std::vector<uint8_t> buf;
  for (int i = 0; i < 400; i++) {
    std::string k = "key" + std::to_string(i);
    ValueRef v;
    Status g = t.get(sl(k), &v);
    Slice out;
    if (g == Status::kOk) g = t.read_value(v, &buf, &out);
    corrupt |= g == Status::kCorrupt;
  }
  Model got;
  corrupt |= dump(t, &got) == Status::kCorrupt;
  for (int i = 0; i < 400; i += 5) corrupt |= t.set(sl("key" + std::to_string(i)), sl(std::string(40, 'z'))) == Status::kCorrupt;
  corrupt |= st->commit() == Status::kCorrupt;
  return corrupt;
}

// The first page of the data file with tag `tag` (0 if none).
size_t find_page(MemoryStorage& ms, PageTag tag) {
  std::vector<uint8_t>& f = ms.file(FileId::kData);
  for (size_t p = 1; p < f.size() / kPageSize; p++)
    if (f[p * kPageSize] == static_cast<uint8_t>(tag)) return p;
  return 0;
}

}  // namespace

// Pages changed and re-sealed (their checksums hold): each is CORRUPT when read, and no
// operation reads or writes outside a page (ASan builds would say so).
TEST(CraftedPages, AreCorruptNotOutOfBounds) {
  Model m;
  auto base = crafted_base(&m);
  const size_t root_leafish = find_page(*base, PageTag::kBasicInner);
  ASSERT_NE(root_leafish, 0u);
  struct Case {
    const char* what;
    PageTag tag;
    std::function<void(uint8_t*)> change;
  };
  const std::vector<Case> cases = {
      {"a leaf slot's key length past a KeyBuffer", PageTag::kFingerprintLeaf,
       [](uint8_t* p) { store16(p + FingerprintLeaf::kFingerprints + load16(p + FingerprintLeaf::kFpCapacity) + 2, 2000); }},
      {"an inner node's count past its slots", PageTag::kBasicInner, [](uint8_t* p) { store16(p + hdr::kCount, 2000); }},
      {"an inner node's heap_used below its live bytes", PageTag::kBasicInner, [](uint8_t* p) { store16(p + hdr::kHeapUsed, 10); }},
      {"an overflow page's length past the page", PageTag::kOverflow, [](uint8_t* p) { store32(p + 8, 70000); }},
  };
  for (const Case& c : cases) {
    MemoryStorage files = *base;
    size_t pg = find_page(files, c.tag);
    if (pg == 0 && c.tag == PageTag::kFingerprintLeaf) pg = find_page(files, PageTag::kBasicLeaf);
    ASSERT_NE(pg, 0u) << c.what;
    uint8_t* p = files.file(FileId::kData).data() + pg * kPageSize;
    if (c.tag == PageTag::kFingerprintLeaf && p[0] == static_cast<uint8_t>(PageTag::kBasicLeaf)) {
      BasicNode n{p};
      store16(n.slot(0) + 2, 2000);
    } else {
      c.change(p);
    }
    seal_page(p, static_cast<PageId>(pg), PageSum::kHash);
    EXPECT_TRUE(exercise(&files)) << c.what;
  }
}

// A parent whose child id names an overflow page: the descent ends on a page that is no leaf.
// Its header would have been read as fences (a fence length of tens of KB past a KeyBuffer:
// found by fuzz_crafted_pages). Now CORRUPT.
TEST(CraftedPages, AChildThatIsAnOverflowPageIsCorrupt) {
  Model m;
  auto base = crafted_base(&m);
  MemoryStorage files = *base;
  const size_t inner = find_page(files, PageTag::kBasicInner), ov = find_page(files, PageTag::kOverflow);
  ASSERT_NE(inner, 0u);
  ASSERT_NE(ov, 0u);
  uint8_t* p = files.file(FileId::kData).data() + inner * kPageSize;
  BasicNode n{p};
  for (unsigned i = 0; i < n.count(); i++) n.set_child(i, static_cast<PageId>(ov));
  n.set_upper_child(static_cast<PageId>(ov));
  seal_page(p, static_cast<PageId>(inner), PageSum::kHash);
  EXPECT_TRUE(exercise(&files));
  // The invariant check says so too, instead of reading the overflow page as a node.
  StoreOptions o;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&files, o, &st), Status::kOk);
  EXPECT_NE(st->tree().check(), "");
}

// A parent whose separators send a key to a leaf whose prefix it does not have (shorter than
// it): the leaf searches must not take the key's length minus the prefix (it underflowed
// into a read of ~4 GB); writes of such a key are CORRUPT.
TEST(CraftedPages, AKeyShorterThanTheLeafPrefixIsRefused) {
  auto ms = std::make_unique<MemoryStorage>();
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(ms.get(), o, &st), Status::kOk);
  // Long shared prefixes: leaves between two separators with a long common prefix have it.
  const std::string pfx(40, 'p');
  for (int i = 0; i < 3000; i++) ASSERT_EQ(st->tree().set(sl(pfx + std::to_string(100000 + i)), sl(std::string(30, 'v'))), Status::kOk);
  ASSERT_EQ(st->commit(), Status::kOk);
  ASSERT_EQ(st->checkpoint(), Status::kOk);
  st.reset();
  // The root (an inner node): every child but the first made the first leaf with a prefix.
  std::vector<uint8_t>& f = ms->file(FileId::kData);
  size_t leaf = 0;
  for (size_t p = 1; p < f.size() / kPageSize && !leaf; p++) {
    const uint8_t* pg = f.data() + p * kPageSize;
    if (is_leaf_tag(pg[0]) && load16(pg + hdr::kPrefixLen) > 10) leaf = p;
  }
  ASSERT_NE(leaf, 0u) << "no leaf with a long prefix";
  for (size_t p = 1; p < f.size() / kPageSize; p++) {
    uint8_t* pg = f.data() + p * kPageSize;
    if (pg[0] != static_cast<uint8_t>(PageTag::kBasicInner)) continue;
    BasicNode n{pg};
    for (unsigned i = 0; i < n.count(); i++) n.set_child(i, static_cast<PageId>(leaf));
    n.set_upper_child(static_cast<PageId>(leaf));
    seal_page(pg, static_cast<PageId>(p), PageSum::kHash);
  }
  ASSERT_EQ(Store::open(ms.get(), o, &st), Status::kOk);
  BTree& t = st->tree();
  ValueRef v;
  EXPECT_EQ(t.get(sl("a"), &v), Status::kNotFound);  // searched as a key before every record
  Cursor c(&t);
  EXPECT_NE(c.seek(sl("a"), 0), Status::kKeyTooLarge);  // (any answer; no read past the key)
  EXPECT_EQ(t.set(sl("a"), sl("x")), Status::kCorrupt);
  EXPECT_EQ(st->commit(), Status::kCorrupt);
}

// An overflow reference whose length no value of this store can have (past kMaxValueSize, or
// more than its pages hold): CORRUPT before anything is allocated. A crafted reference said
// ~2 GB and the read allocated and zeroed that before it found the chain short (found by
// fuzz_crafted_pages in CI: the process passed its 2 GB limit).
TEST(CraftedPages, AnOverflowLengthPastWhatTheStoreHoldsIsCorrupt) {
  Model m;
  auto base = crafted_base(&m);
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(base.get(), o, &st), Status::kOk);
  BTree& t = st->tree();
  ValueRef v;
  ASSERT_EQ(t.get(sl("key7"), &v), Status::kOk);
  ASSERT_TRUE(v.is_overflow());
  ASSERT_TRUE(t.value_length_ok(v));
  std::vector<uint8_t> buf;
  Slice out;
  ASSERT_EQ(t.read_value(v, &buf, &out), Status::kOk);
  EXPECT_EQ(out.len, 9000u);
  // The reference in the (resident) leaf now claims 1.9 GB: more than the store's pages hold.
  store32(const_cast<uint8_t*>(v.ptr) + 4, 1970632085u);
  EXPECT_FALSE(t.value_length_ok(v));
  std::vector<uint8_t> big;
  EXPECT_EQ(t.read_value(v, &big, &out), Status::kCorrupt);
  EXPECT_LT(big.capacity(), size_t{1} << 20);
}

// A leaf whose upper fence is its lower one (a crafted store): a scan moves to the leaf after
// the upper fence, which is the same leaf again. That looped for ever (fuzz_crafted_pages,
// a 10 s timeout); now the scan is CORRUPT.
TEST(CraftedPages, FencesThatSendAScanBackAreCorrupt) {
  Model m;
  auto base = crafted_base(&m);
  MemoryStorage files = *base;
  std::vector<uint8_t>& f = files.file(FileId::kData);
  size_t leaf = 0;
  for (size_t p = 1; p < f.size() / kPageSize && !leaf; p++) {
    const uint8_t* pg = f.data() + p * kPageSize;
    if (is_leaf_tag(pg[0]) && !(pg[hdr::kFlags] & (kFlagLowerInf | kFlagUpperInf))) leaf = p;
  }
  ASSERT_NE(leaf, 0u) << "no leaf with both fences finite";
  uint8_t* pg = f.data() + leaf * kPageSize;
  store16(pg + hdr::kUpperOff, load16(pg + hdr::kLowerOff));
  store16(pg + hdr::kUpperLen, load16(pg + hdr::kLowerLen));
  seal_page(pg, static_cast<PageId>(leaf), PageSum::kHash);
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  std::unique_ptr<Store> st;
  ASSERT_EQ(Store::open(&files, o, &st), Status::kOk);
  Model got;
  EXPECT_EQ(dump(st->tree(), &got), Status::kCorrupt);
}

// Records moved out of crafted pages into a new leaf (a regroup of neighbours, a split) may
// lie outside the new leaf's fences: a key shorter than the fences' common prefix made the
// builders copy "key length - prefix" bytes, ~4 GB (fuzz_crafted_pages). They refuse now.
TEST(CraftedPages, BuildersRefuseAKeyShorterThanThePrefix) {
  std::string lo = "pfx-a", hi = "pfx-z", k1 = "pfx-b", k2 = "p", v = "value";
  std::vector<RecordRef> r = {rec(k2, v), rec(k1, v)};
  Page pg;
  EXPECT_FALSE(FingerprintLeaf::build(pg.b, fences(&lo, &hi), true, r.data(), r.size(), 0));
  EXPECT_FALSE(BasicNode::build(pg.b, PageTag::kBasicLeaf, kFlagHeads, fences(&lo, &hi), true, r.data(), r.size(), 0,
                                kCounterDisabled));
  r.erase(r.begin());
  EXPECT_TRUE(FingerprintLeaf::build(pg.b, fences(&lo, &hi), true, r.data(), r.size(), 0));
  EXPECT_TRUE(BasicNode::build(pg.b, PageTag::kBasicLeaf, kFlagHeads, fences(&lo, &hi), true, r.data(), r.size(), 0,
                               kCounterDisabled));
}
