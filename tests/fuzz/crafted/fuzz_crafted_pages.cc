// libFuzzer target, NOT run by CI (scripts/test.sh runs tests/fuzz/*.cc only): a valid store
// whose data file is changed byte by byte and every changed page re-sealed (its checksum
// holds again), then opened, checked, iterated, read and written. It asks whether a store
// file crafted to pass the checksums (or a page a bug wrote wrong and sealed) can make the
// core misbehave; every failure should be a status. Today it can: the layouts trust a
// page whose checksum holds (docs/FORMAT.md, "What the checksums do not cover"); a 2 minute
// run found 38 crashing inputs (stack and heap reads and writes out of bounds in
// FingerprintLeaf::find, memcpy/memcmp of slots, load16/32/64, a stack overflow). Build and run:
//   cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DADAPTREE_FUZZ=ON -DADAPTREE_WASM=OFF \
//     -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14
//   cmake --build build/fuzz --target fuzz_crafted_pages
//   build/fuzz/fuzz_crafted_pages -timeout=10 -rss_limit_mb=4096 [-fork=1 -ignore_crashes=1] CORPUS_DIR
// Input: (page u8, offset u16 little-endian, byte u8) tuples applied to the data file.
#include <memory>
#include <string>
#include <vector>

#include "core/buffer/page_trailer.h"
#include "core/buffer/storage.h"
#include "core/store.h"
#include "core/tree/scan.h"

using namespace adaptree;

static MemoryStorage* base() {
  static MemoryStorage* ms = [] {
    auto* m = new MemoryStorage;
    StoreOptions o;
    o.pool_bytes = 64 * kPageSize;
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
    if (st->commit() != Status::kOk || st->checkpoint() != Status::kOk) abort();
    return m;
  }();
  return ms;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  MemoryStorage files = *base();
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
