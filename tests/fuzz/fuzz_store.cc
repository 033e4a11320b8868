// libFuzzer target: a persistent store with a tiny buffer pool (64 frames)
// over in-memory files, against two std::map models: the working state and
// the last committed state. Operations are the tree's (set, remove, get,
// scans) plus commit and "crash": the store is dropped without committing and
// reopened, and must then equal the last commit. The pool is small and the
// checkpoint threshold low, so evictions, spills of uncommitted pages to the
// log, checkpoints and recovery all run under the fuzzer.
//
// Input: [layout byte] then ops: [op][key spec][value spec] (tests/fuzz/fuzz_ops.h); op 8 is
// compact() (merges, then page relocation). The
// layout byte's top bit picks the store's format: 1, CRC-32C pages (format version 1).
#include <memory>

#include "core/buffer/storage.h"
#include "core/store.h"
#include "tests/fuzz/fuzz_ops.h"

using namespace adaptree;
using namespace adaptree::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  MemoryStorage files;
  StoreOptions o;
  const uint8_t first = in.byte();
  o.layout = static_cast<LayoutConfig>((first & 0x7F) % kLayoutConfigCount);
  o.new_format = first & 0x80 ? PageSum::kCrc32c : PageSum::kHash;
  o.pool_bytes = 64 * kPageSize;
  o.checkpoint_bytes = 256 << 10;
  std::unique_ptr<Store> st;
  require(Store::open(&files, o, &st) == Status::kOk);
  std::map<std::string, std::string> m, committed;
  unsigned ops = 0;
  while (!in.empty()) {
    uint8_t op = in.byte() % 9;
    if (op == 8) {
      // XMerge, then the live pages at the end moved into free ones (core/tree/relocate.cc)
      uint64_t freed;
      require(st->tree().compact(&freed) == Status::kOk);
      require(st->tree().check().empty());
      require_equal(st->tree(), m);
      continue;
    }
    if (op == 6) {
      require(st->commit() == Status::kOk);
      committed = m;
      continue;
    }
    if (op == 7) {
      st.reset();
      require(Store::open(&files, o, &st) == Status::kOk);
      m = committed;
      require_equal(st->tree(), m);
      continue;
    }
    std::string k = read_key(in);
    BTree& t = st->tree();
    switch (op) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
        point_op(t, m, op, k, in);
        break;
    }
    if (++ops % 64 == 0) require(t.check().empty());
    require(t.count() == m.size());
  }
  require_equal(st->tree(), m);
  require(st->commit() == Status::kOk);
  st.reset();
  require(Store::open(&files, o, &st) == Status::kOk);
  require_equal(st->tree(), m);
  return 0;
}
