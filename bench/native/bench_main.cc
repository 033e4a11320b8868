// adaptree-bench-native: the paper's workloads on the native core.
//
//   adaptree-bench-native --keys FILE --dataset NAME --config NAME[,NAME...]
//       [--lookups N] [--scans N] [--seed S] [--suite NAME] [--ops N] [--rounds R]
//
// FILE holds the keys in insertion order as repeated [u32 little-endian length][bytes].
// Values are 8 bytes: the record index, little-endian. Per config: insert the first 90%
// (untimed), insert the last 10% ("insert"), N zipf lookups ("lookup_zipf"), N uniform
// lookups ("lookup_uniform"), N scans of 1..50 records from zipf start keys ("scan"), and
// full iterations ("iterate"). All configs' trees are built first and each timed workload
// runs in R rounds (default 10) that take turns over the configs (see run_paper). With
// --ops N it runs YCSB A, B, C, F, D, E instead (as bench/lib/workloads.mjs). One JSON object per line on stdout; progress on stderr.
//
// Operation streams are those of bench/lib/workloads.mjs, so native and JS runs use the same
// keys:
// - PRNG: SplitMix64 (Steele, Lea, Flood 2014): state += 0x9E3779B97F4A7C15;
//   z = state; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9; z = (z ^ z>>27) * 0x94D049BB133111EB;
//   out = z ^ z>>31. A double in [0,1) is (out >> 11) / 2^53; below(n) = floor(double * n).
//   Seeds: seed*1000 + 1 (lookup_zipf), + 2 (lookup_uniform), + 3 (scan), + 10 + 'A'.. (YCSB).
// - Zipf: YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record synthetic
//   databases"), theta 0.99 over ranks 0..n-1: zetan = sum_{i=1..n} i^-theta, eta =
//   (1 - (2/n)^(1-theta)) / (1 - zeta(2)/zetan); u = next double, uz = u * zetan;
//   rank = 0 if uz < 1, 1 if uz < 1 + 0.5^theta, else floor(n * (eta*u - eta + 1)^(1/(1-theta))).
// - Rank r maps to key index (r * (2654435761 mod n)) mod n (a fixed scramble permutation).
// - Scan lengths: 1 + below(50), drawn after each start rank from the same generator.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <algorithm>
#include <string>
#include <vector>

#include "core/tree/btree.h"
#include "core/tree/node_stats.h"
#include "core/tree/scan.h"

using namespace adaptree;

namespace {

struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    s += 0x9E3779B97F4A7C15ull;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double next_double() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(std::floor(next_double() * n)); }
};

struct Zipfian {
  uint64_t n;
  double theta, zetan, zeta2, alpha, eta, half;
  SplitMix64* rng;
  static double zeta(uint64_t n, double theta) {
    double sum = 0;
    for (uint64_t i = 1; i <= n; i++) sum += 1 / std::pow(static_cast<double>(i), theta);
    return sum;
  }
  Zipfian(uint64_t n_, double theta_, SplitMix64* r) : n(n_), theta(theta_), rng(r) {
    zetan = zeta(n, theta);
    zeta2 = zeta(2, theta);
    alpha = 1 / (1 - theta);
    eta = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zetan);
    half = 1 + std::pow(0.5, theta);
  }
  uint64_t next() {
    double u = rng->next_double();
    double uz = u * zetan;
    if (uz < 1) return 0;
    if (uz < half) return n > 1 ? 1 : 0;
    uint64_t r = static_cast<uint64_t>(std::floor(static_cast<double>(n) * std::pow(eta * u - eta + 1, alpha)));
    return r >= n ? n - 1 : r;
  }
};

uint32_t scramble(uint64_t rank, uint32_t n) { return static_cast<uint32_t>((rank * (2654435761ull % n)) % n); }

constexpr double kTheta = 0.99;
constexpr unsigned kScanMax = 50;
constexpr unsigned kYcsbScanMax = 100;

struct Keys {
  std::vector<uint8_t> buf;
  std::vector<std::pair<uint32_t, uint32_t>> at;  // offset, length: one cache line per probe
  size_t n() const { return at.size(); }
  Slice operator[](size_t i) const { return {buf.data() + at[i].first, at[i].second}; }
};

bool read_keys(const char* path, Keys* k) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  k->buf.resize(size);
  if (size && fread(k->buf.data(), 1, size, f) != static_cast<size_t>(size)) {
    fclose(f);
    return false;
  }
  fclose(f);
  for (size_t o = 0; o + 4 <= k->buf.size();) {
    uint32_t l;
    memcpy(&l, k->buf.data() + o, 4);
    if (o + 4 + l > k->buf.size()) return false;
    k->at.emplace_back(static_cast<uint32_t>(o + 4), l);
    o += 4 + l;
  }
  return true;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  std::string keys, dataset = "unknown", suite = "native";
  std::vector<std::string> configs;
  uint64_t lookups = 5000000, scans = 5000000, seed = 42, ycsb_ops = 0, rounds = 10;
};

bool parse_config(std::string name, LayoutConfig* out) {
  for (char& c : name)
    if (c == '-') c = '_';
  for (uint8_t i = 0; i < kLayoutConfigCount; i++)
    if (name == layout_config_name(static_cast<LayoutConfig>(i))) {
      *out = static_cast<LayoutConfig>(i);
      return true;
    }
  return false;
}

std::string config_label(LayoutConfig c) {
  std::string s = layout_config_name(c);
  for (char& ch : s)
    if (ch == '_') ch = '-';
  return s;
}

void emit(const Args& a, const BTree& t, const std::string& config, const char* workload, uint64_t keys,
          uint64_t ops, double seconds, const char* extra = "") {
  TreeStats s = collect_stats(t);
  double bpr = keys ? static_cast<double>(t.store().live_pages()) * kPageSize / static_cast<double>(keys) : 0;
  // (nanoseconds printed: at 6 decimals a short run said "seconds": 0 beside its ops_per_sec, a
  // probe, session 33)
  if (seconds <= 0) seconds = 1e-9;
  printf("{\"suite\":\"%s\",\"dataset\":\"%s\",\"workload\":\"%s\",\"impl\":\"adaptree-native\",\"config\":\"%s\","
         "\"keys\":%llu,\"ops\":%llu,\"seconds\":%.9f,\"ops_per_sec\":%.1f,\"bytes_per_record\":%.2f,"
         "\"layouts\":{\"inner\":%llu,\"basic_leaf\":%llu,\"fingerprint_leaf\":%llu,\"semi_dense_leaf\":%llu,"
         "\"fully_dense_leaf\":%llu,\"overflow\":%llu},\"height\":%llu%s}\n",
         a.suite.c_str(), a.dataset.c_str(), workload, config.c_str(), (unsigned long long)keys,
         (unsigned long long)ops, seconds, static_cast<double>(ops) / seconds, bpr, (unsigned long long)s.inner,
         (unsigned long long)s.basic_leaf, (unsigned long long)s.fingerprint_leaf,
         (unsigned long long)s.semi_dense_leaf, (unsigned long long)s.fully_dense_leaf,
         (unsigned long long)s.overflow, (unsigned long long)s.height, extra);
  fflush(stdout);
  fprintf(stderr, "%s %s %s/%s %s: %.3f Mops/s (%llu ops, %.2f s), %.1f B/record\n", a.suite.c_str(),
          a.dataset.c_str(), "adaptree-native", config.c_str(), workload, static_cast<double>(ops) / seconds / 1e6,
          (unsigned long long)ops, seconds, bpr);
}

void value_for(uint64_t i, uint8_t out[8]) { memcpy(out, &i, 8); }

// Looks key i up and checks that its value is i.
inline bool lookup(BTree& t, const Keys& k, uint32_t i) {
  ValueRef v;
  if (t.get(k[i], &v) != Status::kOk) return false;
  uint64_t got;
  memcpy(&got, v.ptr, 8);
  return got == i;
}

// The paper's workloads on every requested configuration at once. The machine
// is shared and noisy, so configurations are compared side by side: all trees
// are built first, then each workload's operation stream is cut into
// a.rounds chunks and every round times each tree on the same chunk, in an
// order that rotates from round to round. A burst of noise then lands on all
// configurations alike instead of on whichever one happened to be running.
struct Subject {
  LayoutConfig cfg;
  std::string label;
  std::unique_ptr<BTree> tree;
  double seconds = 0;
};

// Times body(subject, lo, hi) over [0, total) in a.rounds interleaved chunks;
// leaves each subject's summed time in its .seconds. False if a body failed.
template <class Body>
bool interleave(const Args& a, std::vector<Subject>& s, uint64_t total, Body body) {
  uint64_t rounds = std::max<uint64_t>(1, std::min<uint64_t>(a.rounds, total));
  for (Subject& x : s) x.seconds = 0;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t lo = total * r / rounds, hi = total * (r + 1) / rounds;
    for (size_t k = 0; k < s.size(); k++) {
      Subject& x = s[(k + r) % s.size()];
      double t0 = now();
      if (!body(x, lo, hi)) return false;
      x.seconds += now() - t0;
    }
  }
  return true;
}

int run_paper(const Args& a, const Keys& keys, const std::vector<LayoutConfig>& cfgs) {
  uint32_t n = static_cast<uint32_t>(keys.n()), n90 = static_cast<uint32_t>(n * 0.9);
  std::vector<Subject> subjects;
  uint8_t val[8];
  for (LayoutConfig cfg : cfgs) {
    Subject x{cfg, config_label(cfg), std::make_unique<BTree>(cfg)};
    if (x.tree->init() != Status::kOk) return 1;
    x.tree->set_fill(FillOptions{false, false});  // as the wasm map (at_tree_new) and the paper
    double t0 = now();
    for (uint32_t i = 0; i < n90; i++) {
      value_for(i, val);
      if (x.tree->set(keys[i], {val, 8}) != Status::kOk) {
        fprintf(stderr, "%s: set failed at %u\n", x.label.c_str(), i);
        return 1;
      }
    }
    fprintf(stderr, "%s %s: loaded %u keys (untimed, %.1f s)\n", a.dataset.c_str(), x.label.c_str(), n90, now() - t0);
    subjects.push_back(std::move(x));
  }
  char extra[96];
  snprintf(extra, sizeof extra, ",\"rounds\":%llu", (unsigned long long)a.rounds);
  auto emit_all = [&](const char* workload, uint64_t ops, const char* more = "") {
    for (Subject& x : subjects) {
      std::string e = std::string(extra) + more;
      emit(a, *x.tree, x.label, workload, n, ops, x.seconds, e.c_str());
    }
  };

  bool ok = interleave(a, subjects, n - n90, [&](Subject& x, uint64_t lo, uint64_t hi) {
    uint8_t v[8];
    for (uint64_t i = n90 + lo; i < n90 + hi; i++) {
      value_for(i, v);
      if (x.tree->set(keys[i], {v, 8}) != Status::kOk) return false;
    }
    return true;
  });
  if (!ok) return 1;
  for (Subject& x : subjects)
    if (x.tree->count() != n)
      fprintf(stderr, "%s: count %llu != %u (duplicate keys in the file?)\n", x.label.c_str(),
              (unsigned long long)x.tree->count(), n);
  emit_all("insert", n - n90);

  // ADAPTREE_BENCH_PROBES=contiguous copies the probe keys into operation
  // order before timing (as harnesses that keep keys in a vector<string> in
  // rank order effectively do); the default reads them from the key file in
  // random order like the JavaScript runners.
  const char* probes = getenv("ADAPTREE_BENCH_PROBES");
  bool contiguous = probes && strcmp(probes, "contiguous") == 0;
  // Probe keys in operation order: from the key file, or copied contiguously.
  std::vector<uint8_t> pbuf;
  std::vector<uint32_t> pat;
  auto probe = [&](const std::vector<uint32_t>& idx, uint64_t j) -> Slice {
    if (!contiguous) return keys[idx[j]];
    return {pbuf.data() + pat[j], keys.at[idx[j]].second};
  };
  auto copy_probes = [&](const std::vector<uint32_t>& idx) {
    pbuf.clear();
    pat.clear();
    if (!contiguous) return;
    for (uint32_t i : idx) {
      Slice k = keys[i];
      pat.push_back(static_cast<uint32_t>(pbuf.size()));
      pbuf.insert(pbuf.end(), k.data, k.data + k.len);
    }
  };

  auto run_lookups = [&](const char* name, const std::vector<uint32_t>& idx) {
    copy_probes(idx);
    bool found = interleave(a, subjects, idx.size(), [&](Subject& x, uint64_t lo, uint64_t hi) {
      uint64_t miss = 0;
      for (uint64_t j = lo; j < hi; j++) {
        ValueRef v;
        uint64_t got = ~0ull;
        if (x.tree->get(probe(idx, j), &v) == Status::kOk) memcpy(&got, v.ptr, 8);
        miss += got != idx[j];
      }
      if (miss) fprintf(stderr, "%s/%s: %llu lookups of present keys failed\n", x.label.c_str(), name,
                        (unsigned long long)miss);
      return miss == 0;
    });
    if (found) emit_all(name, idx.size());
    return found;
  };
  std::vector<uint32_t> idx(a.lookups);
  {
    SplitMix64 rng(a.seed * 1000 + 1);
    Zipfian z(n, kTheta, &rng);
    for (auto& x : idx) x = scramble(z.next(), n);
    if (!run_lookups("lookup_zipf", idx)) return 1;
  }
  {
    SplitMix64 rng(a.seed * 1000 + 2);
    for (auto& x : idx) x = rng.below(n);
    if (!run_lookups("lookup_uniform", idx)) return 1;
  }
  // scans
  {
    SplitMix64 rng(a.seed * 1000 + 3);
    Zipfian z(n, kTheta, &rng);
    std::vector<uint32_t> start(a.scans);
    std::vector<uint8_t> len(a.scans);
    for (uint64_t i = 0; i < a.scans; i++) {
      start[i] = scramble(z.next(), n);
      len[i] = static_cast<uint8_t>(1 + rng.below(kScanMax));
    }
    copy_probes(start);
    uint64_t records = 0, sum = 0;
    ok = interleave(a, subjects, a.scans, [&](Subject& x, uint64_t lo, uint64_t hi) {
      Cursor c(x.tree.get());
      for (uint64_t i = lo; i < hi; i++) {
        c.seek(probe(start, i), 0);
        unsigned j = 0, want = len[i];
        c.for_each([&](const KeyBuffer&, const ValueRef& v) {
          sum += v.ptr[0];
          records++;
          return ++j < want;
        });
      }
      return true;
    });
    if (!ok || records < a.scans * subjects.size()) return 1;
    char more[64];
    snprintf(more, sizeof more, ",\"records\":%llu", (unsigned long long)(records / subjects.size()));
    emit_all("scan", a.scans, more);
    if (sum == 1) fprintf(stderr, " ");
  }
  // full iteration, a.rounds / 2 times (at least once) per tree
  {
    uint64_t passes = std::max<uint64_t>(1, a.rounds / 2), sum = 0;
    ok = interleave(a, subjects, passes, [&](Subject& x, uint64_t lo, uint64_t hi) {
      for (uint64_t pass = lo; pass < hi; pass++) {
        Cursor c(x.tree.get());
        c.seek({}, kSeekEdge);
        ValueRef v;
        uint64_t records = 0;
        while (c.next(nullptr, &v) == Status::kOk) {
          sum += v.ptr[0];
          records++;
        }
        if (records != n) {
          fprintf(stderr, "%s iterate: %llu records, expected %u\n", x.label.c_str(), (unsigned long long)records, n);
          return false;
        }
      }
      return true;
    });
    if (!ok) return 1;
    emit_all("iterate", passes * n);
    if (sum == 1) fprintf(stderr, " ");
  }
  for (Subject& x : subjects) {
    std::string err = x.tree->check();
    if (!err.empty()) {
      fprintf(stderr, "%s: invariant check failed: %s\n", x.label.c_str(), err.c_str());
      return 1;
    }
  }
  return 0;
}

// YCSB core workloads (bench/lib/workloads.mjs): A, B, C, F, D, E in that order.
int run_ycsb(const Args& a, const Keys& keys, LayoutConfig cfg) {
  uint32_t n = static_cast<uint32_t>(keys.n()), loaded = static_cast<uint32_t>(n * 0.9);
  std::string label = config_label(cfg);
  BTree t(cfg);
  if (t.init() != Status::kOk) return 1;
  t.set_fill(FillOptions{false, false});  // as the wasm map (at_tree_new) and the paper
  uint8_t val[8];
  for (uint32_t i = 0; i < loaded; i++) {
    value_for(i, val);
    t.set(keys[i], {val, 8});
  }
  enum { kRead, kUpdate, kInsert, kScan, kRmw };
  struct W {
    char name;
    double p[5];
    bool latest;
  };
  const W ws[] = {{'A', {0.5, 0.5, 0, 0, 0}, false}, {'B', {0.95, 0.05, 0, 0, 0}, false},
                  {'C', {1, 0, 0, 0, 0}, false},     {'F', {0.5, 0, 0, 0, 0.5}, false},
                  {'D', {0.95, 0, 0.05, 0, 0}, true}, {'E', {0, 0, 0.05, 0.95, 0}, false}};
  uint32_t next = loaded;
  for (const W& w : ws) {
    bool has_insert = w.p[kInsert] > 0;
    uint64_t count = a.ycsb_ops;
    if (has_insert) count = std::min<uint64_t>(count, static_cast<uint64_t>((n - next) / 0.06));
    SplitMix64 rng(a.seed * 1000 + 10 + w.name);
    Zipfian z(loaded, kTheta, &rng);
    std::vector<uint8_t> op(count), len(count);
    std::vector<uint32_t> key(count);
    uint32_t inserted = 0;
    for (uint64_t i = 0; i < count; i++) {
      double u = rng.next_double(), acc = 0;
      int kind = -1;
      for (int k = 0; k < 5; k++) {
        if (w.p[k] <= 0) continue;
        acc += w.p[k];
        if (u < acc) {
          kind = k;
          break;
        }
      }
      if (kind < 0)
        for (int k = 4; k >= 0; k--)
          if (w.p[k] > 0) {
            kind = k;
            break;
          }
      op[i] = static_cast<uint8_t>(kind);
      if (kind == kInsert) {
        key[i] = next + inserted++;
      } else if (w.latest) {
        uint64_t newest = next + inserted - 1, r = z.next();
        key[i] = static_cast<uint32_t>(r <= newest ? newest - r : 0);
      } else {
        key[i] = scramble(z.next(), loaded);
      }
      if (kind == kScan) len[i] = static_cast<uint8_t>(1 + rng.below(kYcsbScanMax));
    }
    uint64_t miss = 0;
    double s0 = now();
    Cursor c(&t);
    for (uint64_t i = 0; i < count; i++) {
      Slice k = keys[key[i]];
      ValueRef v;
      switch (op[i]) {
        case kRead: miss += t.get(k, &v) != Status::kOk; break;
        case kUpdate: value_for(i, val); t.set(k, {val, 8}); break;
        case kInsert: value_for(key[i], val); t.set(k, {val, 8}); break;
        case kRmw:
          if (t.get(k, &v) != Status::kOk) miss++;
          value_for(i, val);
          t.set(k, {val, 8});
          break;
        case kScan: {
          c.seek(k, 0);
          unsigned j = 0, want = len[i];
          c.for_each([&](const KeyBuffer&, const ValueRef&) { return ++j < want; });
          break;
        }
      }
    }
    double sec = now() - s0;
    next += inserted;
    if (miss) fprintf(stderr, "YCSB %c: %llu reads missed\n", w.name, (unsigned long long)miss);
    char wl[16];
    snprintf(wl, sizeof wl, "ycsb_%c", w.name - 'A' + 'a');
    emit(a, t, label, wl, t.count(), count, sec);
  }
  return 0;
}

void usage() {
  fprintf(stderr,
          "usage: adaptree-bench-native --keys FILE --dataset NAME --config NAME[,NAME...] [--lookups N] "
          "[--scans N] [--seed S] [--suite NAME] [--ops N] [--rounds R]\n"
          "configs: baseline prefix heads hints fingerprint semi-dense fully-dense adaptive\n");
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string k = argv[i];
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    std::string v = argv[++i];
    if (k == "--keys") a.keys = v;
    else if (k == "--dataset") a.dataset = v;
    else if (k == "--suite") a.suite = v;
    else if (k == "--lookups") a.lookups = strtoull(v.c_str(), nullptr, 10);
    else if (k == "--scans") a.scans = strtoull(v.c_str(), nullptr, 10);
    else if (k == "--seed") a.seed = strtoull(v.c_str(), nullptr, 10);
    else if (k == "--rounds") a.rounds = std::max<uint64_t>(1, strtoull(v.c_str(), nullptr, 10));
    else if (k == "--ops") a.ycsb_ops = strtoull(v.c_str(), nullptr, 10);
    else if (k == "--config") {
      size_t p = 0;
      while (p <= v.size()) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        if (q > p) a.configs.push_back(v.substr(p, q - p));
        p = q + 1;
      }
    } else {
      usage();
      return 2;
    }
  }
  if (a.keys.empty() || a.configs.empty()) {
    usage();
    return 2;
  }
  Keys keys;
  if (!read_keys(a.keys.c_str(), &keys) || keys.n() < 2) {
    fprintf(stderr, "cannot read key file %s\n", a.keys.c_str());
    return 1;
  }
  std::vector<LayoutConfig> cfgs;
  for (const std::string& name : a.configs) {
    LayoutConfig cfg;
    if (!parse_config(name, &cfg)) {
      fprintf(stderr, "unknown config %s\n", name.c_str());
      usage();
      return 2;
    }
    cfgs.push_back(cfg);
  }
  int rc = 0;
  if (!a.ycsb_ops) {
    rc = run_paper(a, keys, cfgs);
    if (rc) fprintf(stderr, "paper workloads on %s failed\n", a.dataset.c_str());
  }
  for (size_t i = 0; a.ycsb_ops && i < cfgs.size(); i++) {
    int r = run_ycsb(a, keys, cfgs[i]);
    if (r) {
      fprintf(stderr, "%s on %s failed\n", a.configs[i].c_str(), a.dataset.c_str());
      rc = r;
    }
  }
  return rc;
}
