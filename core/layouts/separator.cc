#include "core/layouts/separator.h"

namespace adaptree {

void separator_between(const RecordRef& a, const RecordRef& b, KeyBuffer* out) {
  uint32_t l = common_prefix_records(a, b);
  if (b.key_len() > l + 1) out->assign(b, l + 1);
  else out->assign(a, a.key_len());
}

unsigned choose_split_point(const RecordRef* r, unsigned n) {
  unsigned mid = n / 2;
  unsigned half_range = n / 32;  // n/16 keys centred on the median
  unsigned lo = mid - half_range, hi = mid + half_range;
  if (lo < 1) lo = 1;
  if (hi > n - 1) hi = n - 1;
  if (lo >= hi) return mid;
  // Candidates are split points j in [lo, hi]: the left side ends with r[j-1].
  uint32_t common = common_prefix_records(r[lo - 1], r[hi]);
  const RecordRef& low = r[lo - 1];
  bool low_short = low.key_len() <= common;
  for (unsigned j = lo; j <= hi; j++) {
    if (low_short || r[j].key_len() <= common || r[j].key_byte(common) != low.key_byte(common)) return j;
  }
  return hi;
}

}  // namespace adaptree
