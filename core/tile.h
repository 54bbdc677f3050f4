// Tiles: a shape, a valid region and 64-byte aligned element storage.
#ifndef PTOSERVE_CORE_TILE_H_
#define PTOSERVE_CORE_TILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "core/types.h"

namespace ptoserve {

// Everything about a tile except its elements.
struct TileDesc {
  DType dtype = DType::kInt32;
  uint32_t rows = 0;        // physical rows
  uint32_t cols = 0;        // physical columns
  uint32_t valid_rows = 0;  // valid region; <= rows
  uint32_t valid_cols = 0;  // valid region; <= cols
  Layout layout = Layout::kRowMajor;
  Location location = Location::kVec;
  std::optional<uint64_t> address;  // manual mode: unified-buffer offset

  size_t elements() const { return size_t{rows} * cols; }
  size_t bytes() const { return elements() * ElementBytes(dtype); }
  size_t row_bytes() const { return size_t{cols} * ElementBytes(dtype); }
  size_t valid_row_bytes() const { return size_t{valid_cols} * ElementBytes(dtype); }
  // "16x16 int32 (valid 16x15)"
  std::string ToString() const;
};

// Returns `desc` with a zero valid extent replaced by the physical one;
// INVALID_ARGUMENT naming `name` if the shape is impossible, or
// RESOURCE_EXHAUSTED if the tile is larger than `max_bytes`.
absl::StatusOr<TileDesc> ResolveTileDesc(const TileDesc& desc,
                                         absl::string_view name,
                                         size_t max_bytes);

// A tile with its elements, row-major, in zero-initialised storage aligned
// to 64 bytes. Movable, not copyable.
class Tile {
 public:
  // REQUIRES: desc came from ResolveTileDesc.
  explicit Tile(const TileDesc& desc);

  const TileDesc& desc() const { return desc_; }
  uint8_t* data() { return storage_.get(); }
  const uint8_t* data() const { return storage_.get(); }
  size_t size_bytes() const { return desc_.bytes(); }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  TileDesc desc_;
  std::unique_ptr<uint8_t[], Free> storage_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TILE_H_
