// Moving tile elements between a Tile and the two wire encodings: raw
// little-endian bytes, and one number per element.
#ifndef PTOSERVE_CORE_TILE_CODEC_H_
#define PTOSERVE_CORE_TILE_CODEC_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/tile.h"

namespace ptoserve {

// How a tile's elements travel on the wire.
enum class Encoding : uint8_t {
  kNone,    // no elements sent: the tile starts zero-filled
  kData,    // raw little-endian bytes of the whole physical tile
  kValues,  // one number per element of the whole physical tile
  kFill,    // one number for every element
};

// Checks that `bytes` holds exactly the elements of `desc`.
absl::Status CheckDataSize(const TileDesc& desc, absl::string_view name,
                           size_t bytes);
// Checks that there is exactly one value per element of `desc`.
absl::Status CheckValueCount(const TileDesc& desc, absl::string_view name,
                             size_t count);

// Copies raw bytes into `tile`. REQUIRES: CheckDataSize passed.
void FillFromData(absl::string_view data, Tile* tile);

// Converts numbers into `tile`'s element type. INVALID_ARGUMENT names the
// first value that is not an integer in range (or, for float types, not
// representable). REQUIRES: CheckValueCount passed.
absl::Status FillFromValues(absl::Span<const double> values,
                            absl::string_view name, Tile* tile);

// Checks that `value` can be every element of a `desc` tile.
absl::Status CheckFill(const TileDesc& desc, absl::string_view name,
                       double value);

// Sets every element of `tile` to `value`. REQUIRES: CheckFill passed.
void FillWithValue(double value, Tile* tile);

// Writes every element of `tile` as a number into `out`.
// REQUIRES: out.size() == tile.desc().elements().
void ToValues(const Tile& tile, absl::Span<double> out);

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TILE_CODEC_H_
