// Separator choice for leaf splits (paper, section 2, "Separator Selection"),
// written once for every leaf layout: the records to split are given as a
// sorted RecordRef array whatever layout they came from.
#pragma once
#include "core/layouts/node_common.h"

namespace adaptree {

// Shortest key S with a <= S < b (a < b): the prefix of b one byte past their
// common prefix if that is shorter than b, else a itself.
void separator_between(const RecordRef& a, const RecordRef& b, KeyBuffer* out);

// Split point for n >= 2 sorted records: the left node takes [0, result),
// the right node [result, n). Considers a range of n/16 keys centred on the
// median and picks the first key differing from the range's lowest key in
// the first byte past the range's common prefix, which gives a short separator.
unsigned choose_split_point(const RecordRef* r, unsigned n);

}  // namespace adaptree
