#include "core/layouts/node_common.h"

namespace adaptree {

int compare_records(const RecordRef& a, const RecordRef& b) {
  uint32_t al = a.key_len(), bl = b.key_len(), n = al < bl ? al : bl;
  // Fast path: both keys carry the same prefix bytes.
  if (a.pre == b.pre && a.pre_len == b.pre_len)
    return compare_bytes(a.suf, a.suf_len, b.suf, b.suf_len);
  for (uint32_t i = 0; i < n; i++) {
    uint8_t x = a.key_byte(i), y = b.key_byte(i);
    if (x != y) return x < y ? -1 : 1;
  }
  return (al > bl) - (al < bl);
}

uint32_t common_prefix_records(const RecordRef& a, const RecordRef& b) {
  if (a.pre == b.pre && a.pre_len == b.pre_len)
    return a.pre_len + common_prefix(a.suf, a.suf_len, b.suf, b.suf_len);
  uint32_t al = a.key_len(), bl = b.key_len(), n = al < bl ? al : bl, i = 0;
  while (i < n && a.key_byte(i) == b.key_byte(i)) i++;
  return i;
}

int compare_record_key(const RecordRef& a, Slice k) {
  uint32_t n = a.pre_len < k.len ? a.pre_len : k.len;
  int c = n ? memcmp(a.pre, k.data, n) : 0;
  if (c) return c;
  if (k.len <= a.pre_len) return a.key_len() > k.len ? 1 : (a.key_len() < k.len ? -1 : 0);
  return compare_bytes(a.suf, a.suf_len, k.data + a.pre_len, k.len - a.pre_len);
}

}  // namespace adaptree
