// A persistent store: a BTree on a buffer pool backed by a FilePager over
// Storage. The top of the core: it knows the tree and the pager, and what a
// commit must record of the tree (root, height, count, layout).
#pragma once
#include <memory>

#include "core/buffer/file_pager.h"
#include "core/tree/btree.h"

namespace adaptree {

struct StoreOptions {
  LayoutConfig layout = LayoutConfig::kAdaptive;  // for a new store
  uint64_t pool_bytes = 64ull << 20;              // at least 1 MiB
  bool create = true;
  uint64_t checkpoint_bytes = 64ull << 20;         // checkpoint when the log passes this
  FilePager::Progress progress;
};

class Store {
 public:
  // Opens and recovers the store in storage (which must outlive it).
  static Status open(Storage* storage, const StoreOptions& o, std::unique_ptr<Store>* out);

  BTree& tree() { return *tree_; }
  // Every write so far durable (one log flush). On failure the last commit
  // stays intact and the store refuses writes until reopened.
  Status commit();
  // Commits nothing: checkpoints what is committed (used at close).
  Status checkpoint() { return pager_.checkpoint(); }
  const FilePager& pager() const { return pager_; }

 private:
  Store(Storage* s, const StoreOptions& o) : pager_(s, o.checkpoint_bytes) {}
  FilePager pager_;
  std::unique_ptr<BTree> tree_;
};

}  // namespace adaptree
