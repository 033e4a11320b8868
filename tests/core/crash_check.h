// A workload crashed at every storage operation: the store reopened after each crash holds
// exactly the last commit acknowledged before it, or the one in flight, and is sound.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/store.h"
#include "tests/core/fault_storage.h"
#include "tests/core/tree_helpers.h"

namespace adaptree {

// workload(storage, committed, attempted) runs on `storage` (stopping at its first failure),
// with *committed the model after each acknowledged commit (index 0: the empty store) and
// *attempted the commits started. It runs once without a crash (which gives every commit's
// state), then crashed at each storage operation of that run, both ways a crash can leave the
// writes not yet synced (some kept, or torn); each is reopened with a pool of pool_bytes.
template <class Workload>
void expect_a_commit_after_every_crash(Workload&& workload, uint64_t pool_bytes) {
  FaultStorage clean;
  std::vector<Model> all;
  size_t attempted = 0;
  workload(&clean, &all, &attempted);
  const uint64_t n = clean.ops();
  for (uint64_t k = 1; k <= n; k++) {
    FaultStorage fs(k);
    std::vector<Model> committed;
    workload(&fs, &committed, &attempted);
    for (uint32_t variant = 0; variant < 2; variant++) {
      MemoryStorage after;
      fs.crashed(&after, static_cast<uint32_t>(k * 2 + variant), variant == 1);
      StoreOptions o;
      o.pool_bytes = pool_bytes;
      std::unique_ptr<Store> st;
      ASSERT_EQ(Store::open(&after, o, &st), Status::kOk) << "crash at op " << k << " variant " << variant;
      Model got;
      ASSERT_EQ(dump(st->tree(), &got), Status::kOk) << "crash at op " << k << " variant " << variant;
      ASSERT_EQ(st->tree().check(), "") << "crash at op " << k << " variant " << variant;
      const size_t acked = committed.size() - 1;
      const bool ok = got == all[acked] || (acked + 1 < all.size() && attempted > acked && got == all[acked + 1]);
      ASSERT_TRUE(ok) << "crash at op " << k << " variant " << variant << ": " << got.size() << " keys, not commit " << acked;
    }
  }
}

}  // namespace adaptree
