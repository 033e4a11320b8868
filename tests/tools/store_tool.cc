// adaptree-store-tool: reads and writes a store on files with the native core,
// so tests can check that a store written by one build opens in the other
// (native <-> wasm through the Node backend; tests/ts/store.compat.test.ts).
//
//   adaptree-store-tool apply PATH [--no-close] [--layout N]
//       reads lines from stdin: "+ HEXKEY .HEXVALUE" (set; the dot keeps an
//       empty value a token) or "- HEXKEY"
//       (delete), or "commit"; commits at the end. --no-close exits
//       without the closing checkpoint, so the commits stay in the log only
//       (what a crash after the last commit leaves).
//   adaptree-store-tool hold PATH
//       opens the store, prints "open" and keeps it open until stdin ends
//       (lock interop tests: a Node process must get LOCKED meanwhile).
//   adaptree-store-tool dump PATH
//       prints "HEXKEY HEXVALUE" per record in key order, then checks the
//       tree's invariants (exit 1 with the message if they fail).
//
// Exit 0 on success; 2 with a message on any failed status.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer/posix_storage.h"
#include "core/store.h"

using namespace adaptree;

namespace {

[[noreturn]] void fail(const char* what, Status s) {
  std::fprintf(stderr, "adaptree-store-tool: %s: status %d\n", what, static_cast<int>(s));
  std::exit(2);
}

std::vector<uint8_t> unhex(const std::string& h) {
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<uint8_t>(std::stoul(h.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; i++) {
    s[2 * i] = d[p[i] >> 4];
    s[2 * i + 1] = d[p[i] & 15];
  }
  return s;
}

Slice sl(const std::vector<uint8_t>& v) { return {v.data(), static_cast<uint32_t>(v.size())}; }

int apply(Store& st, bool close) {
  std::string op, k, v;
  while (std::cin >> op) {
    if (op == "commit") {
      Status s = st.commit();
      if (s != Status::kOk) fail("commit", s);
    } else if (op == "+") {
      std::cin >> k >> v;
      Status s = st.tree().set(sl(unhex(k)), sl(unhex(v.substr(1))));
      if (s != Status::kOk) fail("set", s);
    } else if (op == "-") {
      std::cin >> k;
      Status s = st.tree().remove(sl(unhex(k)));
      if (s != Status::kOk && s != Status::kNotFound) fail("remove", s);
    } else {
      std::fprintf(stderr, "adaptree-store-tool: unknown operation '%s'\n", op.c_str());
      return 2;
    }
  }
  Status s = st.commit();
  if (s != Status::kOk) fail("commit", s);
  if (close) {
    s = st.checkpoint();
    if (s != Status::kOk) fail("checkpoint", s);
  }
  return 0;
}

int dump(Store& st) {
  BTree& t = st.tree();
  Cursor c(&t);
  Status s = c.seek({}, kSeekEdge);
  std::vector<uint8_t> buf;
  while (s == Status::kOk) {
    KeyBuffer k;
    ValueRef v;
    s = c.next(&k, &v);
    if (s != Status::kOk) break;
    Slice val;
    Status r = t.read_value(v, &buf, &val);
    if (r != Status::kOk) fail("read value", r);
    std::printf("%s %s\n", hex(k.data, k.len).c_str(), hex(val.data, val.len).c_str());
  }
  if (s != Status::kNotFound) fail("scan", s);
  std::string problem = t.check();
  if (!problem.empty()) {
    std::fprintf(stderr, "adaptree-store-tool: invariants: %s\n", problem.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: adaptree-store-tool apply|dump|hold PATH [--no-close] [--layout N]\n");
    return 2;
  }
  std::string cmd = argv[1];
  bool close = true;
  StoreOptions o;
  for (int i = 3; i < argc; i++) {
    if (!std::strcmp(argv[i], "--no-close")) close = false;
    else if (!std::strcmp(argv[i], "--layout") && i + 1 < argc) o.layout = static_cast<LayoutConfig>(std::atoi(argv[++i]));
  }
  o.create = cmd == "apply";
  PosixStorage* raw = nullptr;
  Status s = PosixStorage::open(argv[2], &raw);
  if (s != Status::kOk) fail("open files", s);
  std::unique_ptr<PosixStorage> storage(raw);
  std::unique_ptr<Store> st;
  s = Store::open(storage.get(), o, &st);
  if (s != Status::kOk) fail("open store", s);
  if (cmd == "hold") {
    std::printf("open\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    st.reset();
    return 0;
  }
  int rc = cmd == "apply" ? apply(*st, close) : cmd == "dump" ? dump(*st) : 2;
  st.reset();
  return rc;
}
