#ifndef ADAPTREE_WASM
#include "core/buffer/posix_storage.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <ctime>
#include <unistd.h>

namespace adaptree {

namespace {
Status from_errno(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG ? Status::kQuotaExceeded : Status::kIoError; }

// An empty lock file older than this is stale.
constexpr time_t kEmptyLockStaleSeconds = 10;

bool pid_alive(long pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }
}  // namespace

Status take_lock_file(const std::string& lock_path) {
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = ::open(lock_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string pid = std::to_string(static_cast<long>(getpid())) + " flock";
      bool ok = ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size()) && fdatasync(fd) == 0;
      ::close(fd);
      if (ok) return Status::kOk;
      unlink(lock_path.c_str());
      return Status::kIoError;
    }
    if (errno != EEXIST) return Status::kIoError;
    char text[32] = {};
    int rfd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd < 0) {
      if (errno == ENOENT) continue;  // released meanwhile
      return Status::kIoError;
    }
    ssize_t n = ::read(rfd, text, sizeof text - 1);
    struct stat st;
    bool stat_ok = fstat(rfd, &st) == 0;
    ::close(rfd);
    if (n < 0 || !stat_ok) return Status::kIoError;
    // Empty: the owner is between creating and writing it, unless it has been
    // empty for longer than that takes (a process killed in that moment; the
    // Node and Deno backends have the same rule).
    if (n == 0 && time(nullptr) - st.st_mtime < kEmptyLockStaleSeconds) return Status::kLocked;
    char* end = nullptr;
    long pid = std::strtol(text, &end, 10);
    // "<pid> flock": written by a flock holder (Deno, this tool), and we hold the flock now.
    bool flock_holder = std::strstr(text, "flock") != nullptr;
    if (!flock_holder && pid > 0 && (pid == static_cast<long>(getpid()) || pid_alive(pid))) return Status::kLocked;
    // Stale: its writer held the flock we hold, or its process is gone.
    if (unlink(lock_path.c_str()) != 0 && errno != ENOENT) return Status::kIoError;
  }
  return Status::kLocked;  // another process took it over meanwhile
}

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
  // The flock first (it excludes Deno and other native openers), then Node's lock file:
  // a lock file that says "flock" found while we hold the flock is then surely stale.
  if (flock(s->fd_[0], LOCK_EX | LOCK_NB) != 0) {
    Status st = errno == EWOULDBLOCK ? Status::kLocked : Status::kIoError;
    delete s;
    return st;
  }
  std::string lock_path = path + "-lock";
  Status ls = take_lock_file(lock_path);
  if (ls != Status::kOk) {
    delete s;
    return ls;
  }
  s->lock_path_ = lock_path;
  *out = s;
  return Status::kOk;
}

PosixStorage::~PosixStorage() {
  for (int fd : fd_)
    if (fd >= 0) ::close(fd);
  if (!lock_path_.empty()) unlink(lock_path_.c_str());
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
