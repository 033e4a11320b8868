// Helpers the store tests share: std::string keys as Slices, and a whole tree
// read into a std::map model.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tree/btree.h"
#include "core/tree/scan.h"
#include "tests/core/key_helpers.h"

namespace adaptree {

using Model = std::map<std::string, std::string>;

// Reads the whole tree; kOk and *out, or the first failure.
inline Status dump(BTree& t, Model* out) {
  out->clear();
  Cursor c(&t);
  Status s = c.seek({}, kSeekEdge);
  if (s == Status::kNotFound) return Status::kOk;
  if (s != Status::kOk) return s;
  std::vector<uint8_t> buf;
  for (;;) {
    KeyBuffer k;
    ValueRef v;
    s = c.next(&k, &v);
    if (s == Status::kNotFound) return Status::kOk;
    if (s != Status::kOk) return s;
    Slice val;
    s = t.read_value(v, &buf, &val);
    if (s != Status::kOk) return s;
    (*out)[std::string(reinterpret_cast<const char*>(k.data), k.len)] =
        std::string(reinterpret_cast<const char*>(val.data), val.len);
  }
}

}  // namespace adaptree
