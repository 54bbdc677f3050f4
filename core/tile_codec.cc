#include "core/tile_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"
#include "core/error_site.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

template <typename T>
void StoreAll(absl::Span<const double> values, uint8_t* out) {
  for (size_t i = 0; i < values.size(); ++i) {
    T v = static_cast<T>(values[i]);
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  }
}

template <typename T>
void LoadAll(const uint8_t* in, absl::Span<double> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, in + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

// Half-precision and bfloat16 have no native C++ type here; they travel as
// raw data only.
bool HasValueEncoding(DType dtype) {
  return dtype != DType::kFloat16 && dtype != DType::kBFloat16;
}

// The error for tile `name` when its elements cannot travel as numbers
// (`how`: "sent as values", "given as fill").
absl::Status CheckValueEncoding(const TileDesc& desc, absl::string_view name,
                                absl::string_view how) {
  if (HasValueEncoding(desc.dtype)) return absl::OkStatus();
  return AtTile(absl::InvalidArgumentError(
                    absl::StrFormat("tile \"%s\": %s elements cannot be %s; "
                                    "send data",
                                    name, DTypeName(desc.dtype), how)),
                name);
}

}  // namespace

absl::Status CheckDataSize(const TileDesc& desc, absl::string_view name,
                           size_t bytes) {
  if (bytes != desc.bytes()) {
    return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                      "tile \"%s\": data has %u bytes, expected %u (%ux%u "
                      "elements of %s, "
                      "%u bytes each)",
                      name, bytes, desc.bytes(), desc.rows, desc.cols,
                      DTypeName(desc.dtype), ElementBytes(desc.dtype))),
                  name);
  }
  return absl::OkStatus();
}

absl::Status CheckValueCount(const TileDesc& desc, absl::string_view name,
                             size_t count) {
  PTO_RETURN_IF_ERROR(CheckValueEncoding(desc, name, "sent as values"));
  if (count != desc.elements()) {
    return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                      "tile \"%s\": values has %u entries, expected %u (one "
                      "per element of "
                      "the %ux%u tile)",
                      name, count, desc.elements(), desc.rows, desc.cols)),
                  name);
  }
  return absl::OkStatus();
}

void FillFromData(absl::string_view data, Tile* tile) {
  std::memcpy(tile->data(), data.data(), data.size());
}

namespace {

// Empty if `v` can be stored as an element of `dtype`, else what is wrong
// with it ("is not an integer in the int16 range [-32768, 32767]").
std::string ValueProblem(DType dtype, double v) {
  if (IsInteger(dtype)) {
    const double lo = static_cast<double>(MinValue(dtype));
    const double hi = static_cast<double>(MaxValue(dtype));
    if (!(v >= lo && v <= hi) || v != std::trunc(v)) {
      return absl::StrFormat("is not an integer in the %s range [%d, %d]",
                             DTypeName(dtype), MinValue(dtype),
                             MaxValue(dtype));
    }
  }
  if (dtype == DType::kFloat32) {
    // Converting a finite double beyond float's range is undefined; on x86
    // it quietly gives an infinity.
    constexpr double kMax = std::numeric_limits<float>::max();
    if (std::isfinite(v) && std::fabs(v) > kMax) {
      return absl::StrFormat("is outside the float32 range [%.9g, %.9g]", -kMax,
                             kMax);
    }
  }
  return "";
}

void StoreAll(DType dtype, absl::Span<const double> values, uint8_t* out) {
  switch (dtype) {
    case DType::kInt8:
      StoreAll<int8_t>(values, out);
      break;
    case DType::kUInt8:
      StoreAll<uint8_t>(values, out);
      break;
    case DType::kInt16:
      StoreAll<int16_t>(values, out);
      break;
    case DType::kUInt16:
      StoreAll<uint16_t>(values, out);
      break;
    case DType::kInt32:
      StoreAll<int32_t>(values, out);
      break;
    case DType::kUInt32:
      StoreAll<uint32_t>(values, out);
      break;
    case DType::kFloat32:
      StoreAll<float>(values, out);
      break;
    case DType::kFloat16:
    case DType::kBFloat16:
      break;  // rejected by CheckValueCount and FillWithValue
  }
}

}  // namespace

absl::Status FillFromValues(absl::Span<const double> values,
                            absl::string_view name, Tile* tile) {
  const DType dtype = tile->desc().dtype;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::string problem = ValueProblem(dtype, values[i]);
        !problem.empty()) {
      const uint32_t cols = tile->desc().cols;
      return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                        "tile \"%s\": values[%u] (element %u,%u) = %.17g %s",
                        name, i, i / cols, i % cols, values[i], problem)),
                    name);
    }
  }
  StoreAll(dtype, values, tile->data());
  return absl::OkStatus();
}

absl::Status CheckFill(const TileDesc& desc, absl::string_view name,
                       double value) {
  PTO_RETURN_IF_ERROR(CheckValueEncoding(desc, name, "given as fill"));
  if (std::string problem = ValueProblem(desc.dtype, value); !problem.empty()) {
    return AtTile(absl::InvalidArgumentError(absl::StrFormat(
                      "tile \"%s\": fill = %.17g %s", name, value, problem)),
                  name);
  }
  return absl::OkStatus();
}

void FillWithValue(double value, Tile* tile) {
  const size_t element = ElementBytes(tile->desc().dtype);
  const size_t total = tile->size_bytes();
  if (total == 0) return;
  uint8_t* out = tile->data();
  StoreAll(tile->desc().dtype, absl::MakeConstSpan(&value, 1), out);
  // Doubles the filled prefix until the tile is full.
  for (size_t filled = element; filled < total;) {
    const size_t n = std::min(filled, total - filled);
    std::memcpy(out + filled, out, n);
    filled += n;
  }
}

void ToValues(const Tile& tile, absl::Span<double> out) {
  const uint8_t* in = tile.data();
  switch (tile.desc().dtype) {
    case DType::kInt8:
      LoadAll<int8_t>(in, out);
      break;
    case DType::kUInt8:
      LoadAll<uint8_t>(in, out);
      break;
    case DType::kInt16:
      LoadAll<int16_t>(in, out);
      break;
    case DType::kUInt16:
      LoadAll<uint16_t>(in, out);
      break;
    case DType::kInt32:
      LoadAll<int32_t>(in, out);
      break;
    case DType::kUInt32:
      LoadAll<uint32_t>(in, out);
      break;
    case DType::kFloat32:
      LoadAll<float>(in, out);
      break;
    case DType::kFloat16:
    case DType::kBFloat16:
      break;  // such tiles are always sent and returned as data
  }
}

}  // namespace ptoserve
