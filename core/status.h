// Status codes returned by every core operation (docs/ARCHITECTURE.md, decision 4:
// no exceptions; an operation is a retryable attempt that returns a status).
// Values are part of the C ABI (bindings/adaptree.h) and of the TypeScript
// error mapping (ts/src/errors.ts): never renumber, only append.
#pragma once
#include <cstdint>

namespace adaptree {

enum class Status : int32_t {
  kOk = 0,
  kNotFound = 1,
  kRestart = 2,         // OLC validation failed: retry the operation
  kNeedPage = 3,        // page fault on an async backend: load the page, retry
  // Errors are negative.
  kKeyTooLarge = -1,    // key longer than kMaxKeySize
  kValueTooLarge = -2,  // value longer than kMaxValueSize
  kOutOfMemory = -3,    // page allocation failed (wasm memory cannot grow)
  kCorrupt = -4,        // checksum mismatch or structural invariant broken
  kInvalidArgument = -5,
  kClosed = -6,         // handle already freed / closed
  kIoError = -7,        // the storage failed a read, write or flush
  kQuotaExceeded = -8,  // the storage is full (ENOSPC, browser quota)
  kLocked = -9,         // another process or tab has the store open
  kReadOnly = -10,      // the store refuses writes (a failed commit; reopen it)
  kBusy = -11,          // a write while an async commit's images are being written: wait for it
};

inline bool is_error(Status s) { return static_cast<int32_t>(s) < 0; }

}  // namespace adaptree
