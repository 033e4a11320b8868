// A Storage for crash tests: files in memory, each with a durable image (what
// a flush made permanent) and the writes made since. It counts operations and,
// at the k-th one (read, write, sync, truncate), "crashes": that operation and
// every later one fail with kIoError and nothing more is persisted. crashed()
// then gives the files a new process would find: the durable images plus a
// prefix of the unflushed writes (chosen by a seed), the last of which may be
// torn in half, as a disk may persist any prefix of reordered unflushed I/O.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "core/buffer/storage.h"

namespace adaptree {

class FaultStorage : public Storage {
 public:
  explicit FaultStorage(uint64_t crash_at = ~uint64_t{0}) : crash_at_(crash_at) {}

  uint64_t ops() const { return ops_; }
  bool has_crashed() const { return crashed_; }

  Status read(FileId f, uint64_t off, uint8_t* dst, uint32_t len, uint32_t* got) override {
    if (tick()) return Status::kIoError;
    return live_.read(f, off, dst, len, got);
  }
  Status write(FileId f, uint64_t off, const uint8_t* src, uint32_t len) override {
    if (tick()) return Status::kIoError;
    if (budget_ != ~uint64_t{0}) {
      uint64_t sz;
      live_.size(f, &sz);
      if (off + len > sz && off + len - sz > budget_) return Status::kQuotaExceeded;
      if (off + len > sz) budget_ -= off + len - sz;
    }
    pending_[idx(f)].push_back({off, std::vector<uint8_t>(src, src + len), false, 0});
    return live_.write(f, off, src, len);
  }
  Status sync(FileId f) override {
    if (tick()) return Status::kIoError;
    durable_.file(f) = live_.file(f);
    pending_[idx(f)].clear();
    return Status::kOk;
  }
  Status size(FileId f, uint64_t* out) override {
    if (tick()) return Status::kIoError;
    return live_.size(f, out);
  }
  Status truncate(FileId f, uint64_t len) override {
    if (tick()) return Status::kIoError;
    pending_[idx(f)].push_back({len, {}, true, 0});
    return live_.truncate(f, len);
  }

  // Fails writes that would grow the files by more than bytes (a full disk).
  void set_growth_budget(uint64_t bytes) { budget_ = bytes; }

  // The files after the crash (or, without one, the durable state plus seeded
  // survivors of unflushed writes: a power cut now).
  void crashed(MemoryStorage* out, uint32_t seed, bool tear) const {
    std::mt19937 rng(seed);
    for (int i = 0; i < 2; i++) {
      FileId f = static_cast<FileId>(i);
      std::vector<uint8_t> img = const_cast<MemoryStorage&>(durable_).file(f);
      const auto& p = pending_[i];
      size_t keep = p.empty() ? 0 : rng() % (p.size() + 1);
      for (size_t j = 0; j < keep; j++) {
        const Op& op = p[j];
        if (op.truncate) {
          img.resize(op.off);
          continue;
        }
        size_t n = op.bytes.size();
        if (tear && j + 1 == keep && n > 1) n = 1 + rng() % (n - 1);
        if (img.size() < op.off + n) img.resize(op.off + n);
        std::copy(op.bytes.begin(), op.bytes.begin() + static_cast<long>(n), img.begin() + static_cast<long>(op.off));
      }
      out->file(f) = img;
    }
  }
  MemoryStorage& live() { return live_; }

 private:
  struct Op {
    uint64_t off;
    std::vector<uint8_t> bytes;
    bool truncate;
    int pad;
  };
  static int idx(FileId f) { return static_cast<int>(f); }
  bool tick() {
    if (crashed_) return true;
    if (++ops_ >= crash_at_) crashed_ = true;
    return crashed_;
  }
  uint64_t crash_at_;
  uint64_t ops_ = 0;
  bool crashed_ = false;
  uint64_t budget_ = ~uint64_t{0};
  MemoryStorage live_, durable_;
  std::vector<Op> pending_[2];
};

}  // namespace adaptree
