// libFuzzer target (scripts/test.sh runs it 20 s each CI run, after its regressions): a valid
// store whose data file is changed byte by byte and every changed page re-sealed (its checksum
// holds again), then opened, checked, iterated, read and written. It asks whether a store
// file crafted to pass the checksums (or a page a bug wrote wrong and sealed) can make the
// core misbehave; every failure should be a status. Before the structural checks pages get as
// they are read (core/layouts/validate.h) a 2 minute run found 87 crashing inputs (reads and
// writes outside pages and key buffers in the fingerprint and basic layouts' searches, key
// copies, compaction, the invariant checker, a fence read from an overflow page taken for a
// leaf); the 35 of them with distinct coverage are tests/fuzz/regressions/fuzz_crafted_pages.
// The store holds variable-length keys (basic and fingerprint leaves), an overflow chain and
// runs of 4-byte integer keys (fully dense leaves); an input of 4k + 3 bytes changes the same
// store in the semi-dense configuration (semi-dense leaves) instead. Build and run:
//   cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DADAPTREE_FUZZ=ON -DADAPTREE_WASM=OFF \
//     -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14
//   cmake --build build/fuzz --target fuzz_crafted_pages
//   build/fuzz/fuzz_crafted_pages -timeout=10 -rss_limit_mb=4096 [-fork=1 -ignore_crashes=1] CORPUS_DIR
// Input: (page u8, offset u16 little-endian, byte u8) tuples applied to the data file.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer/page_trailer.h"
#include "core/buffer/storage.h"
#include "core/store.h"
#include "core/tree/node_stats.h"
#include "core/tree/scan.h"

using namespace adaptree;

// The adaptive configuration (basic, fingerprint and fully dense leaves), or the semi-dense
// one (semi-dense leaves only exist there).
static MemoryStorage* make_base(LayoutConfig layout) {
  {
    auto* m = new MemoryStorage;
    StoreOptions o;
    o.pool_bytes = 64 * kPageSize;
    o.layout = layout;
    std::unique_ptr<Store> st;
    if (Store::open(m, o, &st) != Status::kOk) abort();
    for (int i = 0; i < 600; i++) {
      std::string k = "key" + std::to_string(i * 7919 % 600);
      std::string v(i % 50 == 0 ? 9000 : 20 + i % 60, static_cast<char>('a' + i % 26));
      if (st->tree().set({reinterpret_cast<const uint8_t*>(k.data()), (uint32_t)k.size()}, {reinterpret_cast<const uint8_t*>(v.data()), (uint32_t)v.size()}) != Status::kOk) abort();
    }
    for (int i = 0; i < 600; i += 3) {
      std::string k = "key" + std::to_string(i);
      st->tree().remove({reinterpret_cast<const uint8_t*>(k.data()), (uint32_t)k.size()});
    }
    // Dense integer keys (fully and semi-dense leaves): 4-byte big-endian, 8-byte values.
    for (uint32_t i = 0; i < 1500; i++) {
      uint8_t k[4] = {0, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}, v[8] = {1, 2, 3, 4, 5, 6, 7, static_cast<uint8_t>(i)};
      if (st->tree().set({k, 4}, {v, 8}) != Status::kOk) abort();
    }
    // ... and every other one with values of 1..20 bytes (semi-dense leaves).
    for (uint32_t i = 0; i < 1600; i += 2) {
      uint8_t k[4] = {0, 1, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)}, v[20] = {9};
      if (st->tree().set({k, 4}, {v, 1 + i % 20}) != Status::kOk) abort();
    }
    if (getenv("CRAFTED_LAYOUTS")) {
      TreeStats ts = collect_stats(st->tree());
      fprintf(stderr, "basic %llu fingerprint %llu semi %llu fully %llu inner %llu overflow %llu\n", (unsigned long long)ts.basic_leaf,
              (unsigned long long)ts.fingerprint_leaf, (unsigned long long)ts.semi_dense_leaf, (unsigned long long)ts.fully_dense_leaf,
              (unsigned long long)ts.inner, (unsigned long long)ts.overflow);
    }
    if (st->commit() != Status::kOk || st->checkpoint() != Status::kOk) abort();
    return m;
  }
}

static MemoryStorage* base(bool semi_dense) {
  static MemoryStorage* adaptive = make_base(LayoutConfig::kAdaptive);
  static MemoryStorage* semi = make_base(LayoutConfig::kSemiDense);
  return semi_dense ? semi : adaptive;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An input of 4k + 3 bytes changes the semi-dense store (the 3 bytes are otherwise unused).
  MemoryStorage files = *base(size % 4 == 3);
  std::vector<uint8_t>& f = files.file(FileId::kData);
  const size_t pages = f.size() / kPageSize;
  if (pages < 2) return 0;
  std::vector<bool> touched(pages);
  // input: (page u8, offset u16, byte u8) tuples
  for (size_t i = 0; i + 4 <= size; i += 4) {
    size_t p = 1 + data[i] % (pages - 1);
    size_t off = (data[i + 1] | (data[i + 2] << 8)) % (kPageSize - 8);
    f[p * kPageSize + off] = data[i + 3];
    touched[p] = true;
  }
  StoreOptions o;
  o.pool_bytes = 64 * kPageSize;
  // the format of the store: page_hash (default)
  for (size_t p = 1; p < pages; p++)
    if (touched[p]) seal_page(f.data() + p * kPageSize, static_cast<PageId>(p), PageSum::kHash);
  std::unique_ptr<Store> st;
  if (Store::open(&files, o, &st) != Status::kOk) return 0;
  BTree& t = st->tree();
  (void)t.check();
  std::vector<uint8_t> buf;
  {
    Cursor c(&t);
    if (c.seek({}, kSeekEdge) == Status::kOk) {
      for (int n = 0; n < 2000; n++) {
        KeyBuffer k;
        ValueRef v;
        if (c.next(&k, &v) != Status::kOk) break;
        Slice out;
        if (t.read_value(v, &buf, &out) != Status::kOk) break;
      }
    }
  }
  for (int i = 0; i < 600; i += 7) {
    std::string k = "key" + std::to_string(i);
    Slice ks{reinterpret_cast<const uint8_t*>(k.data()), (uint32_t)k.size()};
    ValueRef v;
    if (t.get(ks, &v) == Status::kOk) { Slice out; t.read_value(v, &buf, &out); }
    std::string nv(i % 5 == 0 ? 6000 : 30, 'z');
    t.set(ks, {reinterpret_cast<const uint8_t*>(nv.data()), (uint32_t)nv.size()});
    if (i % 2) t.remove(ks);
  }
  st->commit();
  return 0;
}
