// The files a persistent store lives in, as the pager sees them: two files
// (data, log) with positional reads and writes, a flush, size and truncate.
// Node and Deno files and OPFS sync access handles offer exactly this; the
// wasm build reaches them through the host imports (bindings/host_storage.cc),
// the native build through POSIX (posix_storage.cc), tests through
// MemoryStorage and a fault-injecting wrapper (tests/core/fault_storage.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/status.h"

namespace adaptree {

enum class FileId : uint32_t { kData = 0, kLog = 1 };

class Storage {
 public:
  virtual ~Storage() = default;
  // Reads up to len bytes at off; *got < len only at the end of the file.
  virtual Status read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) = 0;
  // kQuotaExceeded when the device or quota is full, kIoError otherwise.
  virtual Status write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) = 0;
  // Everything written to f so far is durable when this returns kOk.
  virtual Status sync(FileId f) = 0;
  virtual Status size(FileId f, uint64_t* out) = 0;
  virtual Status truncate(FileId f, uint64_t len) = 0;

  // Reads exactly len bytes (kCorrupt if the file is shorter).
  Status read_exact(FileId f, uint64_t off, uint8_t* dst, uint32_t len) {
    uint32_t got = 0;
    Status s = read(f, off, dst, len, &got);
    if (s != Status::kOk) return s;
    return got == len ? Status::kOk : Status::kCorrupt;
  }
};

// Two growable byte arrays: a store that lives as long as this object.
class MemoryStorage : public Storage {
 public:
  Status read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) override {
    const std::vector<uint8_t>& b = file(f);
    uint64_t n = off >= b.size() ? 0 : (b.size() - off < len ? b.size() - off : len);
    if (n) memcpy(dst, b.data() + off, n);
    *got = static_cast<uint32_t>(n);
    return Status::kOk;
  }
  Status write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) override {
    std::vector<uint8_t>& b = file(f);
    if (b.size() < off + len) b.resize(off + len);
    if (len) memcpy(b.data() + off, src, len);
    return Status::kOk;
  }
  Status sync(FileId) override { return Status::kOk; }
  Status size(FileId f, uint64_t* out) override {
    *out = file(f).size();
    return Status::kOk;
  }
  Status truncate(FileId f, uint64_t len) override {
    file(f).resize(len);
    return Status::kOk;
  }
  std::vector<uint8_t>& file(FileId f) { return f == FileId::kData ? data_ : log_; }

 private:
  std::vector<uint8_t> data_, log_;
};

}  // namespace adaptree
