// The write-ahead log (the store's second file): page images and commit
// records appended in order, one flush per commit (docs/DECISIONS.md says why
// a log of page images). Little-endian.
//
// Header, bytes [0, 64):
//   0  8  magic "ADTRELOG"
//   8  4  format version (1)
//   12 4  page size
//   16 8  salt: random, new at every reset; frames of an older log generation
//         carry another salt and end the log
//   24 8  commit sequence number of the checkpoint this log continues
//   32 4  CRC-32C of [0, 32)
//   36 28 zero
//
// Page frame, kPageFrameSize bytes:
//   0  4  kind 1
//   4  4  page id
//   8  8  salt
//   16 8  sequence number of the commit this image belongs to
//   24 4  CRC-32C of [0, 24) and of the image
//   28 4  zero
//   32 .. the page image (kPageSize bytes, its trailer sealed)
//
// Commit frame, kCommitFrameSize bytes:
//   0  4  kind 2
//   4  4  page frames of this commit (all frames since the previous commit)
//   8  8  salt
//   16 8  commit sequence number
//   24 32 StoreMeta (superblock.h)
//   56 4  CRC-32C of [0, 56)
//   60 4  zero
//
// A commit is complete when its commit frame is intact and follows exactly
// its page frames. Recovery replays complete commits in order and cuts the
// log after the last one. Frames after the last complete commit are the
// unflushed tail of a crash (or pages spilled from the pool before a commit).
#pragma once
#include <cstdint>

#include "core/config.h"

namespace adaptree {

constexpr uint32_t kLogHeaderSize = 64;
constexpr uint32_t kPageFrameHeader = 32;
constexpr uint32_t kPageFrameSize = kPageFrameHeader + kPageSize;
constexpr uint32_t kCommitFrameSize = 64;
constexpr uint32_t kFramePage = 1, kFrameCommit = 2;
constexpr char kLogMagic[8] = {'A', 'D', 'T', 'R', 'E', 'L', 'O', 'G'};

}  // namespace adaptree
