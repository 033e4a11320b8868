// Shared by the fuzz targets: reading keys, values and operations from the
// fuzzer's input, and checking scans against a std::map model.
//
// Key spec:   one byte L; L < 0xF0: L % 24 literal bytes follow (empty key included);
//             L >= 0xF0: a long key: 1 byte seed, giving 1000 + seed % 25 bytes of a
//             fixed pattern with the seed in the last byte (1 KiB worst case keys).
// Value spec: one byte V; V < 0xD8: V % 40 bytes of pattern; 0xD8..0xDF: a medium value of
//             1100 + (V - 0xD8) * 116 bytes (inline with a short key, up to 1912 bytes of key
//             and value, since session 37; overflow with a long one); else a large value of
//             (V - 0xE0) * 997 bytes (overflow pages).
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/tree/btree.h"
#include "core/tree/scan.h"

namespace adaptree::fuzz {


struct Input {
  const uint8_t* p;
  size_t n;
  bool empty() const { return n == 0; }
  uint8_t byte() {
    if (!n) return 0;
    n--;
    return *p++;
  }
};

inline std::string read_key(Input& in) {
  uint8_t l = in.byte();
  if (l >= 0xF0) {
    uint8_t seed = in.byte();
    std::string k(1000 + seed % 25, static_cast<char>('k' + (l & 3)));
    k.back() = static_cast<char>(seed);
    return k;
  }
  std::string k;
  for (unsigned i = 0, len = l % 24; i < len && !in.empty(); i++) k.push_back(static_cast<char>(in.byte()));
  return k;
}

inline std::string read_value(Input& in) {
  uint8_t v = in.byte();
  size_t len = v < 0xD8 ? v % 40 : v < 0xE0 ? 1100 + static_cast<size_t>(v - 0xD8) * 116 : static_cast<size_t>(v - 0xE0) * 997;
  std::string s(len, '\0');
  for (size_t i = 0; i < len; i++) s[i] = static_cast<char>(v * 31 + i * 7);
  return s;
}

inline Slice sl(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())}; }

inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

inline std::string value_of(BTree& t, const ValueRef& v) {
  std::vector<uint8_t> buf;
  Slice out;
  require(t.read_value(v, &buf, &out) == Status::kOk);
  return std::string(reinterpret_cast<const char*>(out.data), out.len);
}

inline void scan(BTree& t, std::map<std::string, std::string>& m, const std::string& k, uint8_t flags, unsigned n) {
  Cursor c(&t);
  bool reverse = flags & 1, exclusive = flags & 2;
  c.seek(sl(k), (reverse ? kSeekReverse : 0) | (exclusive ? kSeekExclusive : 0));
  auto it = !reverse ? (exclusive ? m.upper_bound(k) : m.lower_bound(k)) : (exclusive ? m.lower_bound(k) : m.upper_bound(k));
  if (flags & 4) {  // Cursor::for_each, stopping after n records
    unsigned seen = 0;
    bool ok = true;
    Status s = c.for_each([&](const KeyBuffer& key, const ValueRef& v) {
      if (reverse ? it == m.begin() : it == m.end()) {
        ok = false;
        return false;
      }
      if (reverse) --it;
      ok = ok && std::string(reinterpret_cast<const char*>(key.data), key.len) == it->first && value_of(t, v) == it->second;
      if (!reverse) ++it;
      return ok && ++seen < n;
    });
    require(ok);
    // NOT_FOUND exactly when the model's range ended before n records.
    require(s == (seen < n ? Status::kNotFound : Status::kOk));
    if (seen < n) require(reverse ? it == m.begin() : it == m.end());
    return;
  }
  for (unsigned i = 0; i < n; i++) {
    KeyBuffer key;
    ValueRef v;
    Status s = c.next(&key, &v);
    if (reverse) {
      if (it == m.begin()) {
        require(s == Status::kNotFound);
        return;
      }
      --it;
    } else if (it == m.end()) {
      require(s == Status::kNotFound);
      return;
    }
    require(s == Status::kOk);
    require(std::string(reinterpret_cast<const char*>(key.data), key.len) == it->first);
    require(value_of(t, v) == it->second);
    if (!reverse) ++it;
  }
}


// Ops 0..5 shared by the targets: 0-1 set, 2 remove, 3 get, 4-5 a scan.
inline void point_op(BTree& t, std::map<std::string, std::string>& m, uint8_t op, const std::string& k, Input& in) {
  switch (op) {
    case 0:
    case 1: {
      std::string v = read_value(in);
      if (k.size() > t.max_key_size()) {  // (`baseline` takes keys up to 1011 bytes)
        require(t.set(sl(k), sl(v)) == Status::kKeyTooLarge);
        break;
      }
      require(t.set(sl(k), sl(v)) == Status::kOk);
      m[k] = v;
      break;
    }
    case 2:
      require(t.remove(sl(k)) == (m.erase(k) ? Status::kOk : Status::kNotFound));
      break;
    case 3: {
      ValueRef v;
      Status s = t.get(sl(k), &v);
      auto it = m.find(k);
      require(s == (it == m.end() ? Status::kNotFound : Status::kOk));
      if (it != m.end()) require(value_of(t, v) == it->second);
      break;
    }
    case 4:
    case 5:
      scan(t, m, k, in.byte(), 1 + in.byte() % 64);
      break;
  }
}

// The whole tree equals the model and passes the invariant checker.
inline void require_equal(BTree& t, const std::map<std::string, std::string>& m) {
  require(t.check().empty());
  require(t.count() == m.size());
  Cursor all(&t);
  all.seek({}, kSeekEdge);
  for (auto& [key, val] : m) {
    KeyBuffer k;
    ValueRef v;
    require(all.next(&k, &v) == Status::kOk);
    require(std::string(reinterpret_cast<const char*>(k.data), k.len) == key);
    require(value_of(t, v) == val);
  }
  KeyBuffer k;
  ValueRef v;
  require(all.next(&k, &v) == Status::kNotFound);
}

}  // namespace adaptree::fuzz
