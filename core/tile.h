// Tiles: a shape, a valid region and element storage (owned or borrowed).
#ifndef PTOSERVE_CORE_TILE_H_
#define PTOSERVE_CORE_TILE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

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
  // Offset in the unified buffer: bound by the client (manual mode) or
  // placed by the engine; unset for a tile outside any buffer.
  std::optional<uint64_t> address;

  size_t elements() const { return size_t{rows} * cols; }
  size_t bytes() const { return elements() * ElementBytes(dtype); }
  size_t row_bytes() const { return size_t{cols} * ElementBytes(dtype); }
  size_t valid_row_bytes() const {
    return size_t{valid_cols} * ElementBytes(dtype);
  }
  // "16x16 int32 (valid 16x15)"
  std::string ToString() const;
};

// The tile the server allocates for an operand the job did not declare:
// the element type, shape and valid region of `like`, row-major, in vec.
// Taking the physical shape keeps a target's row alignment.
TileDesc AllocatedLike(const TileDesc& like);

// Returns `desc` with a zero valid extent replaced by the physical one;
// INVALID_ARGUMENT naming `name` if the shape is impossible, or
// RESOURCE_EXHAUSTED if the tile is larger than `max_bytes`.
absl::StatusOr<TileDesc> ResolveTileDesc(const TileDesc& desc,
                                         absl::string_view name,
                                         size_t max_bytes);

// A tile with its elements, row-major. It either owns its bytes (a
// std::string, so that a result can move into a protobuf bytes field without
// a copy) or views bytes that outlive it: read-only (a request's input that
// no instruction writes) or writable (its place in a unified buffer). Kernels
// use unaligned loads, so no alignment is promised. Movable, not copyable.
class Tile {
 public:
  // An owned, zero-filled tile. REQUIRES: desc came from ResolveTileDesc.
  explicit Tile(const TileDesc& desc);
  // A read-only view of desc.bytes() bytes at `data`, which must outlive
  // the tile.
  static Tile Borrow(const TileDesc& desc, const uint8_t* data);
  // A writable view of desc.bytes() bytes at `data` (a tile in a job's
  // unified buffer, whose bytes other views may share), which must outlive
  // the tile.
  static Tile View(const TileDesc& desc, uint8_t* data);

  Tile(Tile&&) = default;
  Tile& operator=(Tile&&) = default;

  const TileDesc& desc() const { return desc_; }
  const uint8_t* data() const {
    return borrowed_ != nullptr
               ? borrowed_
               : reinterpret_cast<const uint8_t*>(bytes_.data());
  }
  // REQUIRES: owned() or made by View.
  uint8_t* data();
  size_t size_bytes() const { return desc_.bytes(); }
  bool owned() const { return borrowed_ == nullptr; }

  // The tile's bytes, moved out when owned, else copied; the tile is left
  // without elements.
  std::string TakeBytes() &&;

 private:
  Tile(const TileDesc& desc, const uint8_t* borrowed, bool writable);

  TileDesc desc_;
  std::string bytes_;                  // owned storage
  const uint8_t* borrowed_ = nullptr;  // the view, when borrowed
  bool writable_ = false;              // the view came from View
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TILE_H_
