// Per-node statistics visitor (layout, level, count, fill, prefix length,
// fences) for the demo, the benchmark and at_stats.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tree/btree.h"

namespace adaptree {

struct NodeInfo {
  PageId id;
  PageTag tag;
  unsigned level;       // 0 = leaf
  unsigned count;       // records (leaves) or keys (inner nodes)
  unsigned used_bytes;  // bytes the live content needs
  double fill;          // used_bytes / page size
  unsigned prefix_len;  // stored prefix (basic, fingerprint) or fence common prefix (dense)
  Fences fences;        // point into the page
  uint8_t counter;      // operation counter (255 = disabled)
  uint64_t overflow_pages;  // pages of overflow chains referenced by this leaf
};

using NodeVisitor = void (*)(const NodeInfo& info, void* ctx);
void visit_nodes(const BTree& tree, NodeVisitor visit, void* ctx);

struct LevelStats {
  uint64_t nodes = 0, entries = 0, used_bytes = 0, prefix_bytes = 0;
};

struct TreeStats {
  uint64_t count = 0, pages = 0, bytes = 0, height = 0;
  uint64_t inner = 0, basic_leaf = 0, fingerprint_leaf = 0, semi_dense_leaf = 0, fully_dense_leaf = 0, overflow = 0;
  uint64_t used_bytes = 0, prefix_bytes = 0;
  double fill = 0;                   // used bytes of nodes / node pages
  std::vector<LevelStats> levels;    // index = level, 0 = leaves
};

TreeStats collect_stats(const BTree& tree);
// The same, kOutOfMemory when the per-level table cannot be allocated.
Status collect_stats(const BTree& tree, TreeStats* out);

// A stats walk over an asynchronous store that a page fault stopped: the child positions
// from the root to the node it could not read, and what it had counted before that node
// (every node before it in pre-order). The next walk with it goes on from there while the
// tree is unchanged, so the pages walked need not stay resident (a walk that started over
// after each fault held the whole store in the pool at the end).
struct StatsWalk {
  bool pending = false;
  uint64_t version = 0, generation = 0;
  PageId root = kInvalidPageId;
  std::vector<unsigned> path;
  TreeStats counted;
};
// collect_stats going on from *walk where it is pending; a failed page read (the pool's
// failure(), kNeedPage on an asynchronous store) stops it with *walk pending.
Status collect_stats(const BTree& tree, TreeStats* out, StatsWalk* walk);
const char* layout_config_name(LayoutConfig c);
const char* page_tag_name(PageTag t);
// {"config":"adaptive","count":N,"height":H,"pages":P,"bytes":B,"fill":F,"layouts":{...},...}
std::string stats_json(const BTree& tree, const TreeStats& s);
// The same into *out; kOutOfMemory (nothing written) when out cannot hold it.
Status stats_json(const BTree& tree, const TreeStats& s, std::string* out);

}  // namespace adaptree
