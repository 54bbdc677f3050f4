// The on-chip unified buffer (UB): one byte array per job that every tile of
// the job lives in, at an address. In manual mode the client binds
// addresses (the seeds' pto.tassign) and tiles whose bytes overlap share
// them; tiles it leaves unbound, and every tile in auto mode, are placed
// here the way a compiler's allocator would: 32-byte aligned, reusing the
// space of tiles no longer live, refusing a program whose live tiles
// cannot fit.
#ifndef PTOSERVE_CORE_UNIFIED_BUFFER_H_
#define PTOSERVE_CORE_UNIFIED_BUFFER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
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

// Whether an instruction must compute its dst aside and copy it in: its
// dst (bytes `dst`, rows of `dst_row_bytes`) overlaps a source's bytes
// without being the same place (same first byte and row pitch), so that
// writing dst in place could change what is read of the source.
inline bool MustStageDst(const ByteRange& dst, size_t dst_row_bytes,
                         const ByteRange& src, size_t src_row_bytes) {
  const bool same_place =
      src.begin == dst.begin && src_row_bytes == dst_row_bytes;
  return src.Overlaps(dst) && !same_place;
}

// Checks that tile `name`'s address is 32-byte aligned and that the whole
// tile fits in a buffer of `buffer_bytes` on `target`.
// REQUIRES: desc.address has a value.
absl::Status CheckPlacement(absl::string_view name, const TileDesc& desc,
                            Target target, uint64_t buffer_bytes);

// One tile as placement sees it.
struct TileLife {
  absl::string_view name;
  TileDesc desc;  // desc.address: bound by the client, kept as given
  // The instructions between which the tile's bytes must be kept: from the
  // first that writes it (-1: loaded before the program runs) to the last
  // that reads it, or the end of the program for a tile returned.
  int64_t first = -1;
  int64_t last = -1;
};

// Where every tile of a job lives.
struct BufferPlan {
  std::vector<uint64_t> address;  // per tile, in the order given
  // Per tile: whether it may have been placed over bytes an earlier tile
  // used (it is below the highest byte placed before it), so that it must
  // be zeroed when it becomes live.
  std::vector<bool> reused;
  uint64_t high_water = 0;  // bytes of the buffer in use, from 0
};

// Places the tiles without an address around those with one: each at the
// lowest 32-byte aligned address where it overlaps no bound tile and no
// placed tile live at the same time, in the order they become live.
// INVALID_ARGUMENT when a tile cannot fit, naming the buffer, its size, the
// bytes the tiles live at that point need and those tiles.
absl::StatusOr<BufferPlan> PlaceTiles(absl::Span<const TileLife> tiles,
                                      Target target, uint64_t buffer_bytes);

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_UNIFIED_BUFFER_H_
