#include "core/tree/node_stats.h"
#include "core/util/checked.h"


#include "core/layouts/dense_keys.h"
#include "core/util/format.h"
#include "core/layouts/leaf.h"
#include "core/tree/overflow.h"

namespace adaptree {

namespace {

unsigned used_bytes_of(const uint8_t* p) {
  uint8_t* q = const_cast<uint8_t*>(p);
  switch (static_cast<PageTag>(p[0])) {
    case PageTag::kBasicInner:
    case PageTag::kBasicLeaf: return BasicNode{q}.used_bytes();
    case PageTag::kFingerprintLeaf: return FingerprintLeaf{q}.used_bytes();
    case PageTag::kSemiDenseLeaf: return SemiDenseLeaf{q}.used_bytes();
    case PageTag::kFullyDenseLeaf: return FullyDenseLeaf{q}.used_bytes();
    default: return kNodeSize;
  }
}

NodeInfo info_of(const BTree& t, const uint8_t* p, PageId id, unsigned depth) {
  NodeInfo info;
  info.id = id;
  info.tag = static_cast<PageTag>(p[0]);
  info.level = t.height() - 1 - depth;
  info.count = load16(p + hdr::kCount);
  info.used_bytes = used_bytes_of(p);
  info.fill = static_cast<double>(info.used_bytes) / kNodeSize;
  info.fences = fences_of(p);
  bool dense = info.tag == PageTag::kSemiDenseLeaf || info.tag == PageTag::kFullyDenseLeaf;
  info.prefix_len = dense ? fence_prefix_len(info.fences) : load16(p + hdr::kPrefixLen);
  info.counter = p[hdr::kCounter];
  info.overflow_pages = 0;
  if (info.tag != PageTag::kBasicInner) {
    for (int pos = leaf::next_present(p, 0), end = static_cast<int>(leaf::positions(p)); pos < end;
         pos = leaf::next_present(p, pos + 1)) {
      ValueRef v = leaf::value_at(p, pos);
      if (v.is_overflow()) info.overflow_pages += overflow_pages(v.length());
    }
  }
  return info;
}

void walk(const BTree& t, PageId id, unsigned depth, NodeVisitor visit, void* ctx) {
  // A copy per level: the walk may visit more pages than the pool holds.
  alignas(16) uint8_t img[kPageSize];
  t.store().end_protection();
  memcpy(img, t.store().page(id), kPageSize);
  const uint8_t* p = img;
  NodeInfo info = info_of(t, p, id, depth);
  visit(info, ctx);
  if (info.tag == PageTag::kBasicInner) {
    BasicNode n{const_cast<uint8_t*>(p)};
    for (unsigned i = 0, c = n.count(); i <= c; i++) walk(t, n.child(i), depth + 1, visit, ctx);
  }
}

}  // namespace

void visit_nodes(const BTree& tree, NodeVisitor visit, void* ctx) { walk(tree, tree.root(), 0, visit, ctx); }

TreeStats collect_stats(const BTree& tree) {
  TreeStats s;
  if (collect_stats(tree, &s) == Status::kOutOfMemory) s = TreeStats{};
  return s;
}

Status collect_stats(const BTree& tree, TreeStats* out) {
  StatsWalk walk;
  return collect_stats(tree, out, &walk);
}

namespace {

void count_node(const NodeInfo& n, TreeStats* out) {
  TreeStats& s = *out;
  switch (n.tag) {
    case PageTag::kBasicInner: s.inner++; break;
    case PageTag::kBasicLeaf: s.basic_leaf++; break;
    case PageTag::kFingerprintLeaf: s.fingerprint_leaf++; break;
    case PageTag::kSemiDenseLeaf: s.semi_dense_leaf++; break;
    case PageTag::kFullyDenseLeaf: s.fully_dense_leaf++; break;
    default: break;
  }
  s.overflow += n.overflow_pages;
  s.used_bytes += n.used_bytes;
  s.prefix_bytes += n.prefix_len;
  if (n.level < s.levels.size()) {
    LevelStats& l = s.levels[n.level];
    l.nodes++;
    l.entries += n.count;
    l.used_bytes += n.used_bytes;
    l.prefix_bytes += n.prefix_len;
  }
}

}  // namespace

Status collect_stats(const BTree& tree, TreeStats* out, StatsWalk* walk) {
  BufferPool& pool = tree.store();
  const bool resume = walk->pending && walk->version == tree.version() && walk->generation == pool.reuse_generation() &&
                      walk->root == tree.root() && walk->path.size() < tree.height();
  TreeStats& s = *out;
  if (resume) {
    s = walk->counted;
  } else {
    s = TreeStats{};
    if (!resize_checked(s.levels, tree.height())) return Status::kOutOfMemory;
  }
  walk->pending = false;
  s.count = tree.count();
  s.height = tree.height();
  s.pages = pool.live_pages();
  s.bytes = s.pages * kPageSize;
  // Iterative pre-order: pos[d] is the child taken at depth d; a copy of each page on the
  // path (the walk may read more pages than the pool holds).
  std::vector<unsigned> pos;
  std::vector<uint8_t> imgs;
  if (!reserve_checked(pos, tree.height()) || !resize_checked(imgs, size_t{tree.height()} * kPageSize))
    return Status::kOutOfMemory;
  auto load = [&](PageId id, unsigned depth) -> Status {
    pool.end_protection();
    const uint8_t* p = pool.page(id);
    if (pool.failure() != Status::kOk) return pool.failure();
    memcpy(imgs.data() + size_t{depth} * kPageSize, p, kPageSize);
    return Status::kOk;
  };
  auto img = [&](unsigned depth) { return imgs.data() + size_t{depth} * kPageSize; };
  auto stop = [&](Status why) {
    // Counted so far: every node before the one at pos (in pre-order).
    if (!pool.asynchronous() || why != Status::kNeedPage) return why;
    walk->pending = true;
    walk->version = tree.version();
    walk->generation = pool.reuse_generation();
    walk->root = tree.root();
    walk->path = pos;  // (capacity reserved: no allocation fails here)
    walk->counted = s;
    return why;
  };
  PageId id = tree.root();
  unsigned depth = 0;
  if (resume) {
    // Down the path to the node the last walk could not read; the nodes on the way were counted.
    for (unsigned to : walk->path) {
      Status st = load(id, depth);
      if (st != Status::kOk) {
        // The same place next time (these nodes are counted; the path and counts stand).
        walk->pending = pool.asynchronous() && st == Status::kNeedPage;
        return st;
      }
      const uint8_t* p = img(depth);
      if (p[0] != static_cast<uint8_t>(PageTag::kBasicInner) || to > BasicNode{const_cast<uint8_t*>(p)}.count())
        return Status::kCorrupt;  // (the tree is unchanged: its pages cannot have moved)
      pos.push_back(to);
      id = BasicNode{const_cast<uint8_t*>(p)}.child(to);
      depth++;
    }
  }
  for (;;) {
    if (depth >= tree.height()) return Status::kCorrupt;  // deeper than the tree (pages that loop)
    Status st = load(id, depth);
    if (st != Status::kOk) {
      // stop() saves pos: the positions down to this node, which is counted next time
      return stop(st);
    }
    const uint8_t* p = img(depth);
    count_node(info_of(tree, p, id, depth), &s);
    if (p[0] == static_cast<uint8_t>(PageTag::kBasicInner)) {
      pos.push_back(0);
      id = BasicNode{const_cast<uint8_t*>(p)}.child(0);
      depth++;
      continue;
    }
    // The next sibling of this node or of its nearest ancestor that has one.
    for (;;) {
      if (depth == 0) {
        uint64_t nodes = s.inner + s.basic_leaf + s.fingerprint_leaf + s.semi_dense_leaf + s.fully_dense_leaf;
        s.fill = nodes ? static_cast<double>(s.used_bytes) / (static_cast<double>(nodes) * kNodeSize) : 0;
        return Status::kOk;
      }
      depth--;
      const unsigned next = pos.back() + 1;
      pos.pop_back();
      BasicNode parent{img(depth)};
      if (next <= parent.count()) {
        pos.push_back(next);
        id = parent.child(next);
        depth++;
        break;
      }
    }
  }
}

const char* layout_config_name(LayoutConfig c) {
  switch (c) {
    case LayoutConfig::kBaseline: return "baseline";
    case LayoutConfig::kPrefix: return "prefix";
    case LayoutConfig::kHeads: return "heads";
    case LayoutConfig::kHints: return "hints";
    case LayoutConfig::kFingerprint: return "fingerprint";
    case LayoutConfig::kSemiDense: return "semi_dense";
    case LayoutConfig::kFullyDense: return "fully_dense";
    case LayoutConfig::kAdaptive: return "adaptive";
  }
  return "unknown";
}

const char* page_tag_name(PageTag t) {
  switch (t) {
    case PageTag::kBasicInner: return "inner";
    case PageTag::kBasicLeaf: return "basic_leaf";
    case PageTag::kFingerprintLeaf: return "fingerprint_leaf";
    case PageTag::kSemiDenseLeaf: return "semi_dense_leaf";
    case PageTag::kFullyDenseLeaf: return "fully_dense_leaf";
    case PageTag::kOverflow: return "overflow";
    case PageTag::kFree: return "free";
  }
  return "unknown";
}

std::string stats_json(const BTree& tree, const TreeStats& s) {
  std::string o;
  stats_json(tree, s, &o);
  return o;
}

Status stats_json(const BTree& tree, const TreeStats& s, std::string* out) {
  std::string& o = *out;
  o.clear();
  // Everything below fits in this (about 450 bytes plus at most 130 per level): the
  // appends allocate nothing more.
  if (!reserve_checked(o, 640 + 160 * s.levels.size())) return Status::kOutOfMemory;
  auto num = [&o](const char* name, uint64_t v) {
    o += ",\"";
    o += name;
    o += "\":";
    append_uint(o, v);
  };
  o += "{\"config\":\"";
  o += layout_config_name(tree.layout());
  o += "\"";
  num("count", s.count);
  num("height", s.height);
  num("pages", s.pages);
  num("bytes", s.bytes);
  o += ",\"fill\":";
  append_fixed(o, s.fill, 4);
  num("page_size", kPageSize);
  o += ",\"bytes_per_record\":";
  append_fixed(o, s.count ? static_cast<double>(s.bytes) / static_cast<double>(s.count) : 0.0, 2);
  num("prefix_bytes", s.prefix_bytes);
  o += ",\"layouts\":{\"inner\":";
  append_uint(o, s.inner);
  num("basic_leaf", s.basic_leaf);
  num("fingerprint_leaf", s.fingerprint_leaf);
  num("semi_dense_leaf", s.semi_dense_leaf);
  num("fully_dense_leaf", s.fully_dense_leaf);
  num("overflow", s.overflow);
  o += "},\"levels\":[";
  for (size_t i = 0; i < s.levels.size(); i++) {
    const LevelStats& l = s.levels[i];
    o += i ? ",{\"level\":" : "{\"level\":";
    append_uint(o, i);
    num("nodes", l.nodes);
    num("entries", l.entries);
    o += ",\"fill\":";
    append_fixed(o, l.nodes ? static_cast<double>(l.used_bytes) / (static_cast<double>(l.nodes) * kNodeSize) : 0.0, 4);
    o += ",\"avg_prefix\":";
    append_fixed(o, l.nodes ? static_cast<double>(l.prefix_bytes) / static_cast<double>(l.nodes) : 0.0, 2);
    o += "}";
  }
  o += "]}";
  return Status::kOk;
}

}  // namespace adaptree
