#include "core/tile.h"

#include <cassert>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/error_site.h"

namespace ptoserve {

namespace {

// A 128-bit count in decimal.
std::string FormatBytes(unsigned __int128 n) {
  std::string digits;
  do {
    digits.insert(digits.begin(),
                  static_cast<char>('0' + static_cast<int>(n % 10)));
    n /= 10;
  } while (n != 0);
  return digits;
}

}  // namespace

std::string TileDesc::ToString() const {
  std::string s = absl::StrFormat("%ux%u %s", rows, cols, DTypeName(dtype));
  if (valid_rows != rows || valid_cols != cols) {
    absl::StrAppendFormat(&s, " (valid %ux%u)", valid_rows, valid_cols);
  }
  return s;
}

absl::StatusOr<TileDesc> ResolveTileDesc(const TileDesc& desc,
                                         absl::string_view name,
                                         size_t max_bytes) {
  if (desc.rows == 0 || desc.cols == 0) {
    return AtTile(
        absl::InvalidArgumentError(absl::StrFormat(
            "tile \"%s\": shape %ux%u is empty; rows and cols must be > 0",
            name, desc.rows, desc.cols)),
        name);
  }
  TileDesc out = desc;
  if (out.valid_rows == 0) out.valid_rows = out.rows;
  if (out.valid_cols == 0) out.valid_cols = out.cols;
  if (out.valid_rows > out.rows || out.valid_cols > out.cols) {
    return AtTile(
        absl::InvalidArgumentError(absl::StrFormat(
            "tile \"%s\": valid region %ux%u exceeds its shape %ux%u", name,
            out.valid_rows, out.valid_cols, out.rows, out.cols)),
        name);
  }
  // rows * cols * element bytes can pass 2^64 (2^31 x 2^31 int32 tiles
  // wrap to 0): compared in 128 bits, before anything uses bytes().
  const unsigned __int128 bytes = static_cast<unsigned __int128>(out.rows) *
                                  out.cols * ElementBytes(out.dtype);
  if (bytes > max_bytes) {
    return AtTile(
        absl::ResourceExhaustedError(absl::StrFormat(
            "tile \"%s\": %s is %s bytes, over the limit of %u bytes per tile",
            name, out.ToString(), FormatBytes(bytes), max_bytes)),
        name);
  }
  return out;
}

Tile::Tile(const TileDesc& desc) : desc_(desc), bytes_(desc.bytes(), '\0') {}

Tile::Tile(const TileDesc& desc, const uint8_t* borrowed, bool writable)
    : desc_(desc), borrowed_(borrowed), writable_(writable) {}

Tile Tile::Borrow(const TileDesc& desc, const uint8_t* data) {
  return Tile(desc, data, /*writable=*/false);
}

Tile Tile::View(const TileDesc& desc, uint8_t* data) {
  return Tile(desc, data, /*writable=*/true);
}

uint8_t* Tile::data() {
  if (borrowed_ != nullptr) {
    assert(writable_);
    return const_cast<uint8_t*>(borrowed_);
  }
  return reinterpret_cast<uint8_t*>(bytes_.data());
}

std::string Tile::TakeBytes() && {
  if (borrowed_ != nullptr) {
    return std::string(reinterpret_cast<const char*>(borrowed_), desc_.bytes());
  }
  return std::move(bytes_);
}

TileDesc AllocatedLike(const TileDesc& like) {
  TileDesc d;
  d.dtype = like.dtype;
  d.rows = like.rows;
  d.cols = like.cols;
  d.valid_rows = like.valid_rows;
  d.valid_cols = like.valid_cols;
  return d;
}

}  // namespace ptoserve
