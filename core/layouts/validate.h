// Structural checks of a page read from storage, after its checksum held.
//
// A checksum catches damage, not a page crafted to pass it or one a bug wrote wrong and
// sealed (docs/FORMAT.md, "What the checksums do not cover"). The layouts trust their
// headers and slots: an offset past the page, a key suffix longer than a KeyBuffer, a count
// larger than the records a page holds made the core read and write outside the page
// (tests/fuzz/crafted). page_well_formed() checks, once per page as it enters the pool, every
// offset, length and count the layouts use to address memory, so that what it accepts keeps
// every access inside the page and every key inside kMaxKeySize. It does not check what
// only decides answers (key order, heads, hints, fingerprints): a page that passes may give
// wrong answers, never an access outside its bytes.
#pragma once
#include <cstdint>

namespace adaptree {

// True if the page image (kNodeSize bytes used) is well formed for its tag. Pages of an
// unknown tag are not; free pages (tag 0, nothing reads their bytes) and free-list chain
// pages (decode_free_list_page checks them) are.
bool page_well_formed(const uint8_t* p);

}  // namespace adaptree
