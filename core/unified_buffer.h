// The on-chip unified buffer (UB) as manual mode sees it: byte ranges that
// tiles occupy once bound to addresses (the seeds' pto.tassign).
#ifndef PTOSERVE_CORE_UNIFIED_BUFFER_H_
#define PTOSERVE_CORE_UNIFIED_BUFFER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/tile.h"

namespace ptoserve {

// Tile addresses must be multiples of this many bytes.
inline constexpr uint64_t kAddressAlignment = 32;

// A half-open byte range [begin, end) of the unified buffer.
struct ByteRange {
  uint64_t begin = 0;
  uint64_t end = 0;

  bool Overlaps(const ByteRange& other) const {
    return begin < other.end && other.begin < end;
  }
  // "[0x1000, 0x1400)"
  std::string ToString() const;
};

// The bytes a placed tile occupies. REQUIRES: desc.address has a value.
ByteRange PlacedRange(const TileDesc& desc);

// Checks that tile `name` has an address, that it is 32-byte aligned, and
// that the whole tile fits in a buffer of `buffer_bytes` on `target`.
absl::Status CheckPlacement(absl::string_view name, const TileDesc& desc,
                            Target target, uint64_t buffer_bytes);

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_UNIFIED_BUFFER_H_
