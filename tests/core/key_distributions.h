// Key distributions for the differential tests: each maps an index in
// [0, space) to a key, deterministically, and says how values look.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/layouts/basic_node.h"
#include "core/tree/node_stats.h"

namespace adaptree::testing {

inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() { return mix64(s++); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  bool chance(double p) { return (next() >> 11) * (1.0 / 9007199254740992.0) < p; }
};

enum class Dist { kDense, kSparse, kPartitioned, kDense64, kUrls, kWords, kBinary, kMaxKeys, kOverflow, kPrefixed };

inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kDense: return "dense";
    case Dist::kSparse: return "sparse";
    case Dist::kPartitioned: return "partitioned";
    case Dist::kDense64: return "dense64";
    case Dist::kUrls: return "urls";
    case Dist::kWords: return "words";
    case Dist::kBinary: return "binary";
    case Dist::kMaxKeys: return "maxkeys";
    case Dist::kOverflow: return "overflow";
    case Dist::kPrefixed: return "prefixed";
  }
  return "?";
}

inline void put_be(std::string& s, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; i--) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// BTree::max_key_size() of a tree in this configuration.
inline uint32_t max_key_size_of(LayoutConfig cfg) {
  return Config::of(cfg).prefix_truncation ? kMaxKeySize : kMaxKeySizeUntruncated;
}

struct KeySpace {
  Dist dist;
  uint32_t space;            // number of distinct keys
  uint32_t partitions = 16;  // partitioned: keys are partition (u32) ++ counter (u32)
  std::vector<uint32_t> next_in_partition;
  uint32_t run = 0;
  // prefixed: the ascending and descending streams' next keys.
  uint32_t up = 0, down = 0, up_tail = 0, down_tail = 0;
  static constexpr uint32_t kUpStream = 1u << 29, kDownStream = 1u << 30;

  // The longest key the tree under test takes (BTree::max_key_size(): 1011 bytes for
  // `baseline`): kMaxKeys keys are this long.
  uint32_t max_key = kMaxKeySize;

  explicit KeySpace(Dist d, uint32_t max_key_size = kMaxKeySize) : dist(d), max_key(max_key_size) {
    switch (d) {
      case Dist::kMaxKeys: space = 3000; break;
      case Dist::kOverflow: space = 1500; break;
      case Dist::kUrls: space = 40000; break;
      default: space = 60000; break;
    }
    next_in_partition.assign(partitions, 0);
  }

  std::string key(uint32_t i) const {
    std::string k;
    switch (dist) {
      case Dist::kDense: put_be(k, i, 4); break;
      case Dist::kSparse: put_be(k, static_cast<uint32_t>(mix64(i)), 4); break;
      case Dist::kPartitioned: put_be(k, (i % partitions) * 7919 + 3, 4); put_be(k, i / partitions, 4); break;
      case Dist::kDense64: put_be(k, 0x0123456700000000ull + i, 8); break;
      case Dist::kUrls: {
        static const char* hosts[] = {"https://www.example.com/", "https://docs.example.org/api/v2/", "http://a.b/",
                                      "https://github.com/user/repository/blob/main/src/", "https://x.io/"};
        uint64_t h = mix64(i);
        k = hosts[h % 5];
        k += "section" + std::to_string((h >> 8) % 40) + "/";
        k += "item-" + std::to_string(i) + ((h >> 20) % 3 == 0 ? ".html" : "");
        break;
      }
      case Dist::kWords: {
        uint64_t h = mix64(i);
        unsigned len = 1 + h % 9;
        for (unsigned j = 0; j < len; j++) k.push_back(static_cast<char>('a' + mix64(h + j) % 26));
        break;
      }
      case Dist::kBinary: {
        if (i == 0) break;  // the empty key
        uint64_t h = mix64(i);
        unsigned len = h % 13;
        for (unsigned j = 0; j < len; j++) {
          uint64_t b = mix64(h ^ (j + 1));
          unsigned kind = b % 4;
          k.push_back(kind == 0 ? '\0' : kind == 1 ? '\xff' : static_cast<char>(b >> 8));
        }
        break;
      }
      case Dist::kMaxKeys: {
        // Groups of 256 keys of the longest length (1 KiB) differing only in the last byte;
        // groups differ early (byte 5) so fences and separators are as long.
        uint32_t g = i / 256;
        k.assign(max_key, '\x42');
        k[5] = static_cast<char>(g);
        k[max_key - 1] = static_cast<char>(i % 256);
        if (i % 7 == 3) k.resize(max_key - 24 + i % 24);  // a few shorter ones
        break;
      }
      case Dist::kOverflow: k = "doc/" + std::to_string(i); break;
      case Dist::kPrefixed: {
        // A 40-byte prefix, then the stream: decimal digits, in key order as i is in its
        // stream. The ascending stream sorts after every other key (appends past the last
        // leaf), the descending one before (prepends before the first); the rest between.
        k = "tenant-0042/project-7/events/2026-11-28/";
        char b[16];
        if (i >= kDownStream) snprintf(b, sizeof b, "1%010u", 0x7fffffffu - (i - kDownStream));
        else if (i >= kUpStream) snprintf(b, sizeof b, "5%010u", i - kUpStream);
        else snprintf(b, sizeof b, "3%08u", i);
        k += b;
        break;
      }
    }
    return k;
  }

  // Index for the next operation (op: 0 set, 1 remove, 2 a read). prefixed: the streams
  // are queues: sets append (the ascending one, mostly) or prepend (the descending one),
  // removes take their oldest keys, reads and a tenth of the sets their recent ones.
  uint32_t pick(Rng& r, int op) {
    if (dist != Dist::kPrefixed || !r.chance(op == 0 ? 0.3 : op == 1 ? 0.7 : 0.5)) return pick(r);
    const bool asc = r.chance(0.75);
    uint32_t& head = asc ? up : down;
    uint32_t& tail = asc ? up_tail : down_tail;
    uint32_t at;
    if (op == 1) at = tail < head ? tail++ : head;
    else if (op == 0 && r.chance(0.9)) at = head++;
    else at = head > tail ? head - 1 - r.below(head - tail < 64 ? head - tail : 64) : head;
    return (asc ? kUpStream : kDownStream) + at;
  }
  // Index for the next operation: partitioned ascends within a partition half of the time.
  uint32_t pick(Rng& r) {
    if (dist == Dist::kPartitioned && r.chance(0.5)) {
      uint32_t p = r.below(partitions);
      uint32_t c = next_in_partition[p]++ % (space / partitions);
      return c * partitions + p;
    }
    if ((dist == Dist::kDense || dist == Dist::kDense64) && r.chance(0.3)) {
      // Ascending runs exercise split to self.
      run = (run + 1) % space;
      return run;
    }
    return r.below(space);
  }

  std::string value(Rng& r) const {
    std::string v;
    unsigned len;
    switch (dist) {
      case Dist::kDense:
      case Dist::kSparse:
      case Dist::kPartitioned:
      case Dist::kDense64:
        len = r.chance(0.97) ? 8 : r.below(40);  // mostly fixed size: dense leaves apply
        break;
      case Dist::kOverflow: {
        double u = (r.next() >> 11) * (1.0 / 9007199254740992.0);
        // Mostly values of one to two overflow pages; a few of up to 16 pages.
        len = u < 0.5 ? r.below(200) : u < 0.97 ? 200 + r.below(4000) : 4200 + r.below(60000);
        break;
      }
      case Dist::kMaxKeys: len = r.chance(0.8) ? r.below(16) : r.below(3000); break;
      default: len = r.below(r.chance(0.9) ? 24 : 600); break;
    }
    v.resize(len);
    uint64_t x = r.next();
    for (unsigned i = 0; i < len; i++) v[i] = static_cast<char>(mix64(x + i / 8) >> (8 * (i % 8)));
    return v;
  }
};

// A parameterised test case: one layout configuration on one key distribution.
struct ConfigCase {
  LayoutConfig cfg;
  Dist dist;
};

// Every configuration crossed with the given distributions.
inline std::vector<ConfigCase> config_cases(std::initializer_list<Dist> dists) {
  std::vector<ConfigCase> v;
  for (uint8_t c = 0; c < kLayoutConfigCount; c++)
    for (Dist d : dists) v.push_back({static_cast<LayoutConfig>(c), d});
  return v;
}

// The test name suffix, e.g. "semi_dense_urls".
inline std::string case_name(const ConfigCase& c) {
  return std::string(layout_config_name(c.cfg)) + "_" + dist_name(c.dist);
}

}  // namespace adaptree::testing
