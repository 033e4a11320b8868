// Internal to the bindings, not part of the C ABI (so not exported): lets a
// binding file other than adaptree.cc reach the core tree behind a handle,
// whose definition stays private to adaptree.cc.
#pragma once
#include "bindings/adaptree.h"
#include "core/tree/btree.h"

// The tree behind t, or nullptr for a null handle.
const adaptree::BTree* bindings_tree_of(const at_tree* t);
