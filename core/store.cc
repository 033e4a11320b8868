#include "core/store.h"

#include <new>

namespace adaptree {

Status Store::adopt(const StoreMeta& meta, PageBackend* backend, uint64_t pool_bytes) {
  if (meta.layout >= kLayoutConfigCount || meta.page_count == 0 ||
      (meta.root != kInvalidPageId && (meta.root >= meta.page_count || meta.height == 0 || meta.height >= BTree::kMaxHeight)))
    return Status::kCorrupt;
  tree_.reset(new (std::nothrow) BTree(static_cast<LayoutConfig>(meta.layout)));
  if (!tree_) return Status::kOutOfMemory;
  key_encoding_ = meta.key_encoding;
  value_encoding_ = meta.value_encoding;
  uint64_t frames = pool_bytes / kPageSize;
  if (frames < 64) frames = 64;  // the C ABI raises pools below 1 MiB to 1 MiB; tests go lower
  if (frames > (1u << 30)) frames = 1u << 30;
  frames_ = frames;
  // The unchanged bytes of dirty pages (deltas' bases): up to a quarter of the pool.
  const uint32_t bases = static_cast<uint32_t>(frames / 4 > 256 ? frames / 4 : 256);
  if (file_) file_->set_base_limit(bases);
  if (async_) async_->set_base_limit(bases);
  tree_->store().attach(backend, static_cast<uint32_t>(frames), meta.page_count, {});
  return Status::kOk;
}

Status Store::open(Storage* storage, const StoreOptions& o, std::unique_ptr<Store>* out) {
  std::unique_ptr<Store> st(new (std::nothrow) Store());
  if (!st) return Status::kOutOfMemory;
  st->file_.reset(new (std::nothrow) FilePager(storage, o.checkpoint_bytes));
  if (!st->file_) return Status::kOutOfMemory;
  if (o.read_only) st->file_->set_read_only(nullptr);  // the tree's version word after adopt
  if (o.salvage) {
    if (!o.read_only) return Status::kInvalidArgument;  // (a salvage writes nothing)
    st->file_->set_salvage();
  }
  st->file_->set_log_deltas(o.log_deltas);
  st->file_->set_reuse_log(o.reuse_log);
  st->file_->set_new_format(o.new_format);
  StoreMeta meta;
  std::vector<PageId> free_ids;
  Status s = st->file_->open(o.create, static_cast<uint8_t>(o.layout), o.progress, &meta, &free_ids);
  if (o.damaged_at) *o.damaged_at = st->file_->damaged_at();
  if (s != Status::kOk) return s;
  s = st->adopt(meta, st->file_.get(), o.pool_bytes);
  if (s != Status::kOk) return s;
  st->tree_->store().free_ids() = std::move(free_ids);
  if (o.read_only) {
    if (meta.root == kInvalidPageId) return Status::kNotFound;  // never committed
    st->file_->set_read_only(st->tree_->version_word());
    st->tree_->refuse_writes(Status::kReadOnly);
    st->tree_->adopt(meta.root, meta.height, meta.count);
    *out = std::move(st);
    return Status::kOk;
  }
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

Status Store::open_async(const uint8_t* superblock, const StoreOptions& o, std::unique_ptr<Store>* out) {
  std::unique_ptr<Store> st(new (std::nothrow) Store());
  if (!st) return Status::kOutOfMemory;
  st->async_.reset(new (std::nothrow) AsyncPager());
  if (!st->async_) return Status::kOutOfMemory;
  StoreMeta meta;
  Status s = st->async_->open(superblock, static_cast<uint8_t>(o.layout), &meta, o.new_format);
  if (s != Status::kOk) return s;
  s = st->adopt(meta, st->async_.get(), o.pool_bytes);
  if (s != Status::kOk) return s;
  // An async store's commit costs by its bytes (an IndexedDB transaction ~2.8 ms + 5.5 ms/MB):
  // leaves keep their entries in place where they can (Room).
  st->tree_->set_room(Room::kMoveFew);
  if (meta.free_head != kInvalidPageId && meta.free_head >= meta.page_count) return Status::kCorrupt;
  if (meta.root == kInvalidPageId) {
    // Nothing committed: the tree starts in the pool (its first commit
    // stores it). A page 0 without a tree lists no free pages.
    if (meta.free_count != 0) return Status::kCorrupt;
    st->tree_->store().begin_op();
    s = st->tree_->init();
    if (s != Status::kOk) return s;
  } else {
    st->tree_->store().defer_free_list(meta.free_head, meta.free_count);
    st->tree_->adopt(meta.root, meta.height, meta.count);
  }
  *out = std::move(st);
  return Status::kOk;
}

StoreMeta Store::current_meta() const {
  const BTree& t = *tree_;
  StoreMeta m;
  m.root = t.root();
  m.height = t.height();
  m.count = t.count();
  m.layout = static_cast<uint8_t>(t.layout());
  m.key_encoding = key_encoding_;
  m.value_encoding = value_encoding_;
  return m;
}

Status Store::commit() {
  if (!file_) return Status::kInvalidArgument;
  BTree& t = *tree_;
  if (t.broken() != Status::kOk) return t.broken();
  // After a failed commit, as commit_begin: its writes are in the pool, and a later commit
  // would make them durable though that commit failed. Each thread of a shared store learns
  // of the failure only here (a worker's commit failed on a full disk; the owner's commit
  // then resolved with the worker's writes in it: a probe, session 32).
  if (t.writable() == Status::kReadOnly) return Status::kReadOnly;
  t.store().begin_op();
  Status s = file_->commit(t.store(), current_meta());
  // Out of memory is found before anything is written (FilePager::commit reserves first):
  // nothing happened, the writes stay pending and a later commit may succeed.
  if (s != Status::kOk && s != Status::kOutOfMemory) t.refuse_writes(s);
  return s;
}

Status Store::follow(const uint8_t* superblock) { return adopt_commit(superblock, nullptr, 0, false); }

Status Store::follow_changed(const uint8_t* superblock, const PageId* changed, uint32_t n) {
  if (!async_ || !async_->read_only() || (n > 0 && !changed)) return Status::kInvalidArgument;
  return adopt_commit(superblock, changed, n, true);
}

Status Store::adopt_commit(const uint8_t* superblock, const PageId* changed, uint32_t n, bool keep) {
  if (!async_ || !superblock) return Status::kInvalidArgument;
  if (async_->committing()) return Status::kBusy;
  StoreMeta meta;
  Status s = async_->open(superblock, static_cast<uint8_t>(tree_->layout()), &meta);
  if (s != Status::kOk) return s;
  if (meta.layout >= kLayoutConfigCount || meta.page_count == 0 || meta.root == kInvalidPageId ||
      meta.root >= meta.page_count || meta.height == 0 || meta.height >= BTree::kMaxHeight ||
      (meta.free_head != kInvalidPageId && meta.free_head >= meta.page_count))
    return Status::kCorrupt;
  async_->set_read_only(tree_->version_word());
  tree_->refuse_writes(Status::kReadOnly);
  key_encoding_ = meta.key_encoding;
  value_encoding_ = meta.value_encoding;
  if (keep)
    tree_->store().follow_commit(meta.page_count, changed, n);
  else
    tree_->store().attach(async_.get(), static_cast<uint32_t>(frames_), meta.page_count, {});
  tree_->store().defer_free_list(meta.free_head, meta.free_count);
  tree_->adopt(meta.root, meta.height, meta.count);
  return Status::kOk;
}

bool Store::pending() const {
  BufferPool& pool = tree_->store();
  if (pool.dirty_count() > 0 || pool.free_list_changed()) return true;
  return file_ && file_->frames_since_commit() > 0;
}

bool Store::spilled() const { return file_ && file_->frames_since_commit() > 0; }

Status Store::checkpoint() { return file_ ? file_->checkpoint(&tree_->store()) : Status::kOk; }

Status Store::supply(PageId id, const uint8_t* image) {
  if (!async_) return Status::kInvalidArgument;
  Status s = tree_->store().supply(id, image);
  if (s == Status::kOk) async_->count_supply();
  return s;
}

Status Store::commit_begin(std::vector<uint8_t>* out, uint32_t* count) {
  if (!async_) return Status::kInvalidArgument;
  BTree& t = *tree_;
  if (t.broken() != Status::kOk) return t.broken();
  // After a failed commit the pool holds writes the host does not have, on
  // top of a state it may or may not have: reopen instead.
  Status w = t.writable();
  if (w == Status::kReadOnly) return w;
  t.store().begin_op();
  Status s = async_->commit_begin(t.store(), current_meta(), out, count);
  if (s == Status::kOk) t.hold_writes(true);
  return s;
}

Status Store::commit_end(Status host) {
  if (!async_) return Status::kInvalidArgument;
  BTree& t = *tree_;
  if (!async_->committing()) return Status::kInvalidArgument;
  t.hold_writes(false);
  Status s = async_->commit_end(t.store(), host);
  if (s != Status::kOk) t.refuse_writes(s);
  return s;
}

}  // namespace adaptree
