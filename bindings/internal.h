// Internal to the bindings, not part of the C ABI (so not exported): lets a
// binding file other than adaptree.cc reach the core tree behind a handle,
// whose definition stays private to adaptree.cc.
#pragma once
#include "bindings/adaptree.h"
#include "core/tree/btree.h"

// Holds t's tree latch exclusive for its scope (core/tree/tree_latch.h), so
// that a tree shared with workers is read while no other thread changes it.
// tree() is the core tree, or nullptr for a null or closed handle.
class LatchedTree {
 public:
  explicit LatchedTree(at_tree* t);
  ~LatchedTree();
  LatchedTree(const LatchedTree&) = delete;
  LatchedTree& operator=(const LatchedTree&) = delete;
  const adaptree::BTree* tree() const { return tree_; }

 private:
  at_tree* t_;
  const adaptree::BTree* tree_ = nullptr;
};
