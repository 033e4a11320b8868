#ifndef ADAPTREE_WASM
#include "core/buffer/posix_storage.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace adaptree {

namespace {
Status from_errno(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG ? Status::kQuotaExceeded : Status::kIoError; }
}  // namespace

Status PosixStorage::open(const std::string& path, PosixStorage** out) {
  PosixStorage* s = new PosixStorage();
  std::string names[2] = {path, path + "-log"};
  for (int i = 0; i < 2; i++) {
    s->fd_[i] = ::open(names[i].c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->fd_[i] < 0) {
      delete s;
      return Status::kIoError;
    }
  }
  if (flock(s->fd_[0], LOCK_EX | LOCK_NB) != 0) {
    Status st = errno == EWOULDBLOCK ? Status::kLocked : Status::kIoError;
    delete s;
    return st;
  }
  *out = s;
  return Status::kOk;
}

PosixStorage::~PosixStorage() {
  for (int fd : fd_)
    if (fd >= 0) ::close(fd);
}

Status PosixStorage::read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) {
  uint32_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd_[static_cast<int>(f)], dst + done, len - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::kIoError;
    if (n == 0) break;
    done += static_cast<uint32_t>(n);
  }
  *got = done;
  return Status::kOk;
}

Status PosixStorage::write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) {
  uint32_t done = 0;
  while (done < len) {
    ssize_t n = pwrite(fd_[static_cast<int>(f)], src + done, len - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return from_errno(errno);
    if (n == 0) return Status::kQuotaExceeded;
    done += static_cast<uint32_t>(n);
  }
  return Status::kOk;
}

Status PosixStorage::sync(FileId f) { return fdatasync(fd_[static_cast<int>(f)]) == 0 ? Status::kOk : from_errno(errno); }

Status PosixStorage::size(FileId f, uint64_t* out) {
  struct stat st;
  if (fstat(fd_[static_cast<int>(f)], &st) != 0) return Status::kIoError;
  *out = static_cast<uint64_t>(st.st_size);
  return Status::kOk;
}

Status PosixStorage::truncate(FileId f, uint64_t len) {
  return ftruncate(fd_[static_cast<int>(f)], static_cast<off_t>(len)) == 0 ? Status::kOk : from_errno(errno);
}

}  // namespace adaptree
#endif
