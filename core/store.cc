#include "core/store.h"

#include <new>

namespace adaptree {

Status Store::open(Storage* storage, const StoreOptions& o, std::unique_ptr<Store>* out) {
  std::unique_ptr<Store> st(new (std::nothrow) Store(storage, o));
  if (!st) return Status::kOutOfMemory;
  StoreMeta meta;
  std::vector<PageId> free_ids;
  Status s = st->pager_.open(o.create, static_cast<uint8_t>(o.layout), o.progress, &meta, &free_ids);
  if (s != Status::kOk) return s;
  if (meta.layout >= kLayoutConfigCount || meta.page_count == 0 ||
      (meta.root != kInvalidPageId && (meta.root >= meta.page_count || meta.height == 0 || meta.height >= BTree::kMaxHeight)))
    return Status::kCorrupt;
  st->tree_.reset(new (std::nothrow) BTree(static_cast<LayoutConfig>(meta.layout)));
  if (!st->tree_) return Status::kOutOfMemory;
  uint64_t frames = o.pool_bytes / kPageSize;
  if (frames < 64) frames = 64;  // the C ABI raises pools below 1 MiB to 1 MiB; tests go lower
  if (frames > (1u << 30)) frames = 1u << 30;
  st->tree_->store().attach(&st->pager_, static_cast<uint32_t>(frames), meta.page_count, std::move(free_ids));
  if (meta.root == kInvalidPageId) {
    st->tree_->store().begin_op();
    s = st->tree_->init();
    if (s == Status::kOk) s = st->commit();
    if (s != Status::kOk) return s;
  } else {
    st->tree_->adopt(meta.root, meta.height, meta.count);
  }
  *out = std::move(st);
  return Status::kOk;
}

Status Store::commit() {
  BTree& t = *tree_;
  if (t.broken() != Status::kOk) return t.broken();
  StoreMeta m;
  m.root = t.root();
  m.height = t.height();
  m.count = t.count();
  m.layout = static_cast<uint8_t>(t.layout());
  t.store().begin_op();
  Status s = pager_.commit(t.store(), m);
  // Out of memory is found before anything is written (FilePager::commit reserves first):
  // nothing happened, the writes stay pending and a later commit may succeed.
  if (s != Status::kOk && s != Status::kOutOfMemory) t.refuse_writes(s);
  return s;
}

}  // namespace adaptree
