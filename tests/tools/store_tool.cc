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
// Exit 0 on success; 2 with a message on any failed status or bad input (a bad command
// line, a line of apply's input that is not one of the above). dump and hold open the store
// read-only (a torn log tail stays as it is) and never create one.
#include <sys/stat.h>

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

const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kNotFound: return "not found";
    case Status::kKeyTooLarge: return "key too large";
    case Status::kValueTooLarge: return "value too large";
    case Status::kOutOfMemory: return "out of memory";
    case Status::kCorrupt: return "corrupt (or not a store)";
    case Status::kInvalidArgument: return "invalid argument";
    case Status::kIoError: return "I/O error";
    case Status::kQuotaExceeded: return "disk full";
    case Status::kLocked: return "the store is open elsewhere";
    case Status::kReadOnly: return "read-only";
    default: return "unexpected status";
  }
}

[[noreturn]] void fail(const char* what, Status s) {
  std::fprintf(stderr, "adaptree-store-tool: %s: %s (status %d)\n", what, status_name(s), static_cast<int>(s));
  std::exit(2);
}

[[noreturn]] void bad_input(const std::string& why) {
  std::fprintf(stderr, "adaptree-store-tool: %s\n", why.c_str());
  std::exit(2);
}

// Hex digits in pairs, or bad input (std::stoul threw out of the tool: exit 134).
std::vector<uint8_t> unhex(const std::string& h) {
  auto digit = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    bad_input("not hex: '" + h + "'");
  };
  if (h.size() % 2) bad_input("an odd number of hex digits: '" + h + "'");
  std::vector<uint8_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<uint8_t>(digit(h[2 * i]) * 16 + digit(h[2 * i + 1]));
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
      if (!(std::cin >> k >> v) || v.empty() || v[0] != '.') bad_input("'+' takes HEXKEY .HEXVALUE");
      Status s = st.tree().set(sl(unhex(k)), sl(unhex(v.substr(1))));
      if (s != Status::kOk) fail("set", s);
    } else if (op == "-") {
      if (!(std::cin >> k)) bad_input("'-' takes HEXKEY");
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
  if (cmd != "apply" && cmd != "dump" && cmd != "hold") bad_input("unknown command '" + cmd + "' (apply, dump, hold)");
  bool close = true;
  StoreOptions o;
  for (int i = 3; i < argc; i++) {
    if (!std::strcmp(argv[i], "--no-close")) {
      close = false;
    } else if (!std::strcmp(argv[i], "--layout") && i + 1 < argc) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || n < 0 || n >= static_cast<long>(kLayoutConfigCount)) bad_input(std::string("--layout takes 0 to ") + std::to_string(kLayoutConfigCount - 1));
      o.layout = static_cast<LayoutConfig>(n);
    } else {
      bad_input(std::string("unknown option '") + argv[i] + "'");
    }
  }
  o.create = cmd == "apply";
  // dump and hold read: never a store made where there was none, nor a torn log tail cut
  if (cmd != "apply") {
    struct stat sb;
    if (::stat(argv[2], &sb) != 0) bad_input(std::string("no store at ") + argv[2]);
    o.read_only = cmd == "dump";
  }
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
