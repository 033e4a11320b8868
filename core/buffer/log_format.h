// The write-ahead log (the store's second file): page images, page deltas and
// commit records appended in order, one flush per commit (docs/DECISIONS.md
// says why a log of page images, and why deltas). Little-endian.
//
// Header, bytes [0, 64):
//   0  8  magic "ADTRELOG"
//   8  4  format version: 1 (page and commit frames only) or 2 (also delta and
//         checkpoint frames). A log of version 1 recovers; the writer keeps
//         writing version 1 frames into it until the next checkpoint starts a
//         version 2 log. Another version, with a valid header: kCorrupt (never
//         read, never reset).
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
// Delta frame (version 2), a multiple of 32 bytes (zero padding after the payload):
//   0  4  kind 3
//   4  4  page id
//   8  8  salt
//   16 8  sequence number of the commit it belongs to
//   24 8  log offset of the frame it applies to (0: the page in the data file)
//   32 4  size of that frame (0: the data file's page)
//   36 4  base checksum: the trailer CRC (page_trailer.h) of the image it applies to
//   40 4  result checksum: the trailer CRC of the image it produces
//   44 4  payload bytes n
//   48 2  depth: 1 + the depth of the frame it applies to (an image: 0)
//   50 1  1 when the chain starts at the data file's page
//   51 1  zero
//   52 4  chain bytes: sizes of the chain's delta frames, this one included
//   56 4  CRC-32C of [0, 56) and of the payload
//   60 4  zero
//   64 .. payload: runs of (u16 offset, u16 length, length bytes) that replace
//         the base's bytes; the result is the page image, trailer included.
// A delta is read by walking its chain back to an image (or the data file's
// page) and applying the deltas in order; each step checks the base checksum
// before and the page trailer after, so a wrong base is kCorrupt, never a
// wrong page. Chains are at most kMaxDeltaChain deep and kPageSize bytes.
//
// Checkpoint frame (version 2), kCommitFrameSize bytes, laid out as a commit
// frame with kind 4 and the sequence number of the newest commit: the page
// frames before it restate that commit's pages as images (a checkpoint writes
// them before it overwrites the data file's pages that deltas start from, so
// that a torn data file write cannot lose a delta's base). It changes no
// state: recovery takes its images as the pages' newest frames.
//
// A commit is complete when its commit frame is intact and follows exactly
// its page (and delta) frames. Recovery replays complete commits in order and cuts the
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
constexpr uint32_t kDeltaFrameHeader = 64;
constexpr uint32_t kFramePage = 1, kFrameCommit = 2, kFrameDelta = 3, kFrameCheckpoint = 4;
// 1: page frames only, 2: also delta and checkpoint frames (format version 1 stores, CRC-32C
// pages); 3: as 2, in a store of format version 2 (page_hash pages; frame checksums below).
constexpr uint32_t kLogVersionImages = 1, kLogVersionDeltas = 2, kLogVersionHashed = 3;
constexpr uint32_t kMaxDeltaChain = 16;
constexpr uint32_t kFrameAlign = 32;  // every frame starts at a multiple of 32
// The writer logs a page's image instead of a delta frame larger than this (a policy: readers
// take delta frames up to the chain's kPageSize).
constexpr uint32_t kMaxDeltaFrame = kPageSize / 2;
constexpr char kLogMagic[8] = {'A', 'D', 'T', 'R', 'E', 'L', 'O', 'G'};

}  // namespace adaptree
