// libFuzzer target: the input is a configuration byte (layout, node fill) followed by a sequence
// of operations, applied to the tree and to a std::map model; any difference,
// invariant violation or sanitizer report is a crash.
//
// Op encoding: [op][key spec...][value spec...] (tests/fuzz/fuzz_ops.h).
#include "tests/fuzz/fuzz_ops.h"

using namespace adaptree;
using namespace adaptree::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint8_t cfg = in.byte();
  BTree t(static_cast<LayoutConfig>(cfg % kLayoutConfigCount));
  require(t.init() == Status::kOk);
  // Node fill: (cfg / 8) % 4 = 0, 1 a store's (redistribution, edge refills and splits),
  // 2 a map's (edges only), 3 the paper's (none).
  const unsigned fill = (cfg / kLayoutConfigCount) % 4;
  if (fill >= 2) {
    FillOptions o;
    o.redistribute = false;
    o.edges = fill == 2;
    t.set_fill(o);
  }
  std::map<std::string, std::string> m;
  Cursor live(&t);
  bool live_started = false;
  std::string live_last;
  unsigned ops = 0;
  while (!in.empty()) {
    uint8_t op = in.byte() % 8;
    std::string k = read_key(in);
    switch (op) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
        point_op(t, m, op, k, in);
        break;
      case 6: {
        // The long-lived cursor continues after its last key whatever changed.
        if (!live_started) live.seek({}, kSeekEdge);
        KeyBuffer key;
        ValueRef v;
        Status s = live.next(&key, &v);
        auto it = live_started ? m.upper_bound(live_last) : m.begin();
        if (it == m.end()) {
          require(s == Status::kNotFound);
          live_started = false;
        } else {
          require(s == Status::kOk);
          live_last.assign(reinterpret_cast<const char*>(key.data), key.len);
          require(live_last == it->first);
          live_started = true;
        }
        break;
      }
      case 7: {
        std::string hi = read_key(in);
        if (hi < k) std::swap(hi, k);
        uint64_t removed;
        require(t.delete_range(sl(k), false, false, sl(hi), false, true, &removed) == Status::kOk);
        auto a = m.lower_bound(k), b = m.lower_bound(hi);
        uint64_t want = 0;
        for (auto it = a; it != b; ++it) want++;
        m.erase(a, b);
        require(removed == want);
        break;
      }
    }
    if (++ops % 64 == 0) require(t.check().empty());
    require(t.count() == m.size());
  }
  require_equal(t, m);
  return 0;
}
