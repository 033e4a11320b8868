// Native definitions of the host file imports (bindings/adaptree.h): tests
// that drive the C ABI natively register a Storage per `io` number.
#ifndef ADAPTREE_WASM
#include <map>

#include "bindings/adaptree.h"
#include "core/buffer/storage.h"

namespace adaptree {
namespace {
std::map<uint32_t, Storage*>& hosts() {
  static std::map<uint32_t, Storage*> m;
  return m;
}
Storage* host(uint32_t io) {
  auto it = hosts().find(io);
  return it == hosts().end() ? nullptr : it->second;
}
}  // namespace
void register_native_host(uint32_t io, Storage* s) {
  if (s) hosts()[io] = s;
  else hosts().erase(io);
}
}  // namespace adaptree

using adaptree::FileId;
using adaptree::Status;

extern "C" {
int32_t at_host_read(uint32_t io, uint32_t file, double offset, uint8_t* dst, uint32_t len) {
  adaptree::Storage* s = adaptree::host(io);
  if (!s) return static_cast<int32_t>(Status::kIoError);
  uint32_t got = 0;
  Status st = s->read(static_cast<FileId>(file), static_cast<uint64_t>(offset), dst, len, &got);
  return st == Status::kOk ? static_cast<int32_t>(got) : static_cast<int32_t>(st);
}
int32_t at_host_write(uint32_t io, uint32_t file, double offset, const uint8_t* src, uint32_t len) {
  adaptree::Storage* s = adaptree::host(io);
  return static_cast<int32_t>(s ? s->write(static_cast<FileId>(file), static_cast<uint64_t>(offset), src, len) : Status::kIoError);
}
int32_t at_host_sync(uint32_t io, uint32_t file) {
  adaptree::Storage* s = adaptree::host(io);
  return static_cast<int32_t>(s ? s->sync(static_cast<FileId>(file)) : Status::kIoError);
}
double at_host_size(uint32_t io, uint32_t file) {
  adaptree::Storage* s = adaptree::host(io);
  uint64_t n = 0;
  Status st = s ? s->size(static_cast<FileId>(file), &n) : Status::kIoError;
  return st == Status::kOk ? static_cast<double>(n) : static_cast<double>(static_cast<int32_t>(st));
}
int32_t at_host_truncate(uint32_t io, uint32_t file, double size) {
  adaptree::Storage* s = adaptree::host(io);
  return static_cast<int32_t>(s ? s->truncate(static_cast<FileId>(file), static_cast<uint64_t>(size)) : Status::kIoError);
}
}

// The memory budget is a wasm feature (bindings/wasm_runtime.cc); natively the
// limit is only recorded.
namespace {
double g_native_limit = 0;
}
extern "C" int32_t at_set_memory_limit(double bytes) {
  if (!(bytes >= 0)) return -5;
  g_native_limit = bytes;
  return 0;
}
extern "C" double at_memory_limit(void) { return g_native_limit ? g_native_limit : 9007199254740992.0; }
extern "C" double at_memory_available(void) { return 9007199254740992.0; }
extern "C" void at_debug_trap(void) { __builtin_trap(); }
extern "C" uint32_t* at_poison_word(void) {
  static uint32_t word = 0;
  return &word;
}
#endif
