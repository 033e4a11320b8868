// libFuzzer target: a store on an asynchronous host (core/buffer/async_pager.h), as the
// IndexedDB and key-value Durable Object backends run it: every operation is retried with the
// page it asked for (NEED_PAGE) until it completes, from a std::map of committed page images,
// against two std::map models (working and committed state). Commits store the images all or
// nothing; "crash" drops the store and reopens it cold, which must then equal the last commit.
// Runs of in-order inserts and deletes grow and shrink the tree by whole regions (splits and
// merges up the inner levels); with a large pool only the writes' own prefetch decides what is
// resident (session 22: a delete that merged inner nodes faulted in the middle of its change
// and hung, a case the tiny pool of the other tests did not reach).
//
// With bit 5 of the config byte, a reader (IndexedDB's readers beside the writer) follows every
// commit with the pages the commits since its own wrote (Store::follow_changed: it keeps the
// others) and must then equal the committed model.
//
// Input: [config byte: layout, reader (bit 5), pool size (bit 6: 64 frames, else 16 MiB), format (bit 7)]
// then ops: [op][args] (key and value specs as tests/fuzz/fuzz_ops.h).
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/store.h"
#include "tests/fuzz/fuzz_ops.h"

using namespace adaptree;
using namespace adaptree::fuzz;

namespace {

using Pages = std::map<PageId, std::vector<uint8_t>>;
using Model = std::map<std::string, std::string>;

// Runs f, supplying each page it asks for, until it answers something else. A page the host
// does not have, or an operation that asks for ever, is a bug.
template <class F>
Status with_faults(Store& st, const Pages& host, F&& f) {
  for (int i = 0; i < 100000; i++) {
    Status s = f();
    if (s != Status::kNeedPage) return s;
    auto it = host.find(st.tree().store().missing_page());
    require(it != host.end());
    require(st.supply(it->first, it->second.data()) == Status::kOk);
  }
  require(false);
  return Status::kRestart;
}

std::unique_ptr<Store> open(const Pages& host, const StoreOptions& o) {
  std::unique_ptr<Store> st;
  auto it = host.find(0);
  require(Store::open_async(it == host.end() ? nullptr : it->second.data(), o, &st) == Status::kOk);
  return st;
}

// (written: the ids of the pages the commit wrote are appended)
void commit(Store& st, Pages& host, std::vector<PageId>* written = nullptr) {
  std::vector<uint8_t> out;
  uint32_t n = 0;
  require(st.commit_begin(&out, &n) == Status::kOk);
  require(out.size() == size_t{n} * (4 + kPageSize));
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* p = out.data() + size_t{i} * (4 + kPageSize);
    host[load32(p)].assign(p + 4, p + 4 + kPageSize);
    if (written) written->push_back(load32(p));
  }
  require(st.commit_end(Status::kOk) == Status::kOk);
}

std::string get(Store& st, const Pages& host, const std::string& k, Status* s) {
  std::vector<uint8_t> buf;
  std::string v;
  *s = with_faults(st, host, [&] {
    ValueRef ref;
    Status g = st.tree().get(sl(k), &ref);
    if (g != Status::kOk) return g;
    Slice out;
    g = st.tree().read_value(ref, &buf, &out);
    if (g == Status::kOk) v.assign(reinterpret_cast<const char*>(out.data), out.len);
    return g;
  });
  return v;
}

// The store equals the model: every key by a cursor, every value by get.
void require_same(Store& st, const Pages& host, const Model& m) {
  require(st.tree().count() == m.size());
  Cursor c(&st.tree());
  Status s = with_faults(st, host, [&] { return c.seek({}, kSeekEdge); });
  auto it = m.begin();
  while (s == Status::kOk) {
    KeyBuffer k;
    ValueRef v;
    s = with_faults(st, host, [&] { return c.next(&k, &v); });
    if (s != Status::kOk) break;
    require(it != m.end() && std::string(reinterpret_cast<const char*>(k.data), k.len) == it->first);
    ++it;
  }
  require(s == Status::kNotFound && it == m.end());
  for (auto& [k, v] : m) {
    Status g;
    require(get(st, host, k, &g) == v && g == Status::kOk);
  }
}

std::string run_key(unsigned i) {
  char b[16];
  snprintf(b, sizeof b, "run%06u", i);
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint8_t first = in.byte();
  StoreOptions o;
  // (bit 5 is 32: a multiple of the layout count, so the layouts of older inputs stay theirs)
  static_assert(32 % kLayoutConfigCount == 0, "bit 5 must not change the layout");
  o.layout = static_cast<LayoutConfig>((first & 0x1F) % kLayoutConfigCount);
  const bool reader = (first & 0x20) != 0;
  std::unique_ptr<Store> rd;
  std::vector<PageId> since;  // the pages the commits after the reader's wrote
  o.pool_bytes = first & 0x40 ? 64 * kPageSize : 16u << 20;
  o.new_format = first & 0x80 ? PageSum::kCrc32c : PageSum::kHash;
  Pages host;
  std::unique_ptr<Store> st = open(host, o);
  Model m, committed;
  unsigned ops = 0;
  while (!in.empty() && ops++ < 400) {
    const uint8_t op = in.byte() % 11;
    switch (op) {
      case 0:
      case 1: {
        std::string k = read_key(in), v = read_value(in);
        if (k.size() > st->tree().max_key_size()) {  // (`baseline` takes keys up to 1011 bytes)
          require(st->tree().set(sl(k), sl(v)) == Status::kKeyTooLarge);
          break;
        }
        require(with_faults(*st, host, [&] { return st->tree().set(sl(k), sl(v)); }) == Status::kOk);
        m[k] = v;
        break;
      }
      case 2: {
        std::string k = read_key(in);
        require(with_faults(*st, host, [&] { return st->tree().remove(sl(k)); }) == (m.erase(k) ? Status::kOk : Status::kNotFound));
        break;
      }
      case 3: {
        std::string k = read_key(in);
        Status s;
        std::string v = get(*st, host, k, &s);
        auto it = m.find(k);
        require(s == (it == m.end() ? Status::kNotFound : Status::kOk));
        if (it != m.end()) require(v == it->second);
        break;
      }
      case 4:
      case 5: {  // a run of in-order inserts (4) or removes (5) over one region
        const unsigned base = in.byte() * 64u, n = 1 + in.byte() * 4u, vlen = in.byte();
        for (unsigned i = 0; i < n; i++) {
          std::string k = run_key(base + i);
          if (op == 4) {
            std::string v(8 + vlen * 2 % 600, static_cast<char>('a' + i % 26));
            require(with_faults(*st, host, [&] { return st->tree().set(sl(k), sl(v)); }) == Status::kOk);
            m[k] = v;
          } else {
            require(with_faults(*st, host, [&] { return st->tree().remove(sl(k)); }) == (m.erase(k) ? Status::kOk : Status::kNotFound));
          }
        }
        break;
      }
      case 6: {  // deleteRange [run base, run base + n)
        const unsigned base = in.byte() * 64u, n = 1 + in.byte() * 8u;
        std::string lo = run_key(base), hi = run_key(base + n);
        uint64_t total = 0;
        require(with_faults(*st, host, [&] {
                  uint64_t removed = 0;
                  Status s = st->tree().delete_range(sl(lo), false, false, sl(hi), false, true, &removed);
                  total += removed;
                  return s;
                }) == Status::kOk);
        auto a = m.lower_bound(lo), b = m.lower_bound(hi);
        require(total == static_cast<uint64_t>(std::distance(a, b)));
        m.erase(a, b);
        break;
      }
      case 7:
        commit(*st, host, &since);
        committed = m;
        if (reader) {
          if (!rd) {
            rd = open(host, o);
            require(rd->follow(host.at(0).data()) == Status::kOk);
          } else {
            require(rd->follow_changed(host.at(0).data(), since.data(), static_cast<uint32_t>(since.size())) == Status::kOk);
          }
          since.clear();
          require_same(*rd, host, committed);
        }
        break;
      case 8:  // a crash: uncommitted writes are gone; reopened cold
        st.reset();
        st = open(host, o);
        m = committed;
        break;
      case 9:
        require_same(*st, host, m);
        break;
      case 10: {  // compact: merges and page moves over what is resident (a reader follows them)
        uint64_t freed;
        require(with_faults(*st, host, [&] { return st->tree().compact(&freed); }) == Status::kOk);
        // (check() would need every page resident: the model says the same through faults)
        require_same(*st, host, m);
        break;
      }
    }
    require(st->tree().count() == m.size());
  }
  require_same(*st, host, m);
  commit(*st, host);
  st.reset();
  st = open(host, o);
  require_same(*st, host, m);
  return 0;
}
