// Storage on two POSIX files (native builds): `path` and `path-log`, held
// under an exclusive flock so that a second process gets kLocked.
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
};

}  // namespace adaptree
