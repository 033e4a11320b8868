// Cursor::for_each: a forward scan that walks each leaf in one tight loop.
//
// Cursor::next() is general (it survives tree modifications, runs in both
// directions, re-dispatches on the leaf layout for every record). A scan that
// only reads can do better: after next() has positioned the cursor on a leaf
// and read its first record, the rest of that leaf is visited by a loop
// specialised for the leaf's layout, rewriting only the key bytes that change
// (the suffix after the node's prefix, or the numeric part of a dense key).
// This is how the paper's range lookups iterate (section 4.3, "Scans").
//
// visit(const KeyBuffer& key, const ValueRef& value) -> bool is called for each
// record in order; returning false stops the scan after that record. The
// visitor must not modify the tree. Afterwards the cursor is in the same state
// as after the same number of next() calls, so next() and for_each() mix.
// Returns kOk if the visitor stopped, kNotFound at the end of the range.
#pragma once
#include "core/layouts/leaf.h"

namespace adaptree {

template <class Visit>
Status Cursor::for_each(Visit&& visit) {
  if (t_->broken_ != Status::kOk) return t_->broken_;
  t_->store_.begin_op();
  for (;;) {
    // The leaf just walked is no longer needed: a long scan does not pin the tree.
    t_->store_.end_protection();
    ValueRef v;
    Status s = next_in_op(nullptr, &v);
    if (s != Status::kOk) return s;
    if (!visit(static_cast<const KeyBuffer&>(anchor_), static_cast<const ValueRef&>(v))) return Status::kOk;
    if (reverse_) continue;
    uint8_t* p = t_->page(leaf_);
    switch (leaf::tag(p)) {
      case PageTag::kBasicLeaf: {
        BasicNode n{p};
        int c = static_cast<int>(n.count());
        while (pos_ + 1 < c) {
          pos_++;
          leaf::replace_suffix(n, pos_, &anchor_);
          v.ptr = n.value(pos_);
          v.field = n.value_field(pos_);
          if (!visit(static_cast<const KeyBuffer&>(anchor_), static_cast<const ValueRef&>(v))) return Status::kOk;
        }
        break;
      }
      case PageTag::kFingerprintLeaf: {  // sorted when the cursor entered it
        FingerprintLeaf n{p};
        int c = static_cast<int>(n.count());
        while (pos_ + 1 < c) {
          pos_++;
          leaf::replace_suffix(n, pos_, &anchor_);
          v = n.value_at(pos_);
          if (!visit(static_cast<const KeyBuffer&>(anchor_), static_cast<const ValueRef&>(v))) return Status::kOk;
        }
        break;
      }
      case PageTag::kFullyDenseLeaf: {
        // Present slots come from the bitmap a 64-bit word at a time.
        FullyDenseLeaf d{p};
        unsigned klen = d.key_len(), cap = d.capacity(), vsize = d.value_size();
        uint32_t ref = d.ref();
        unsigned from = static_cast<unsigned>(pos_) + 1;
        for (unsigned w = from >> 6, words = (cap + 63) / 64; w < words; w++) {
          uint64_t bits = load64(p + FullyDenseLeaf::kBitmap + 8 * w);
          if (w == from >> 6) bits &= ~uint64_t{0} << (from & 63);
          for (; bits; bits &= bits - 1) {
            unsigned q = w * 64 + static_cast<unsigned>(__builtin_ctzll(bits));
            if (q >= cap) break;
            pos_ = static_cast<int>(q);
            if (klen >= 4) store_be32(anchor_.data + klen - 4, ref + q);
            else d.key_at(pos_, &anchor_);
            v = {d.value_ptr(q), static_cast<uint16_t>(vsize)};
            if (!visit(static_cast<const KeyBuffer&>(anchor_), static_cast<const ValueRef&>(v))) return Status::kOk;
          }
        }
        break;
      }
      default:  // semi-dense leaves: the general path
        break;
    }
  }
}

}  // namespace adaptree
