// Storage on two POSIX files (native builds): `path` and `path-log`, held
// under an exclusive flock on the data file (what the Deno backend takes) and,
// taken second, the lock file `path-lock` that the Node backend takes
// (ts/src/storage/node.ts: created with O_EXCL, it holds the owner's pid; we
// and Deno write "<pid> flock"), so the native tool, Node and Deno never have
// one store open at once. A second open in this process is kLocked as well.
#pragma once
#include <string>

#include "core/buffer/storage.h"

namespace adaptree {

class PosixStorage : public Storage {
 public:
  // kLocked if another process holds the store; kIoError if it cannot be opened.
  static Status open(const std::string& path, PosixStorage** out);
  ~PosixStorage() override;
  Status read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) override;
  Status write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) override;
  Status sync(FileId f) override;
  Status size(FileId f, uint64_t* out) override;
  Status truncate(FileId f, uint64_t len) override;

 private:
  int fd_[2] = {-1, -1};
  std::string lock_path_;  // removed by the destructor when set (we own it)
};

// Takes the lock file at lock_path (the Node backend's protocol) with the data
// file's flock held: kOk, kLocked when a live process (this one included) holds
// it, kIoError. A file that says "flock" is stale (its writer held our flock).
Status take_lock_file(const std::string& lock_path);

}  // namespace adaptree
