// The vocabulary of the engine: element types, layouts, targets, opcodes
// (core/opcode.h).
#ifndef PTOSERVE_CORE_TYPES_H_
#define PTOSERVE_CORE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/opcode.h"

namespace ptoserve {

// Element type of a tile.
enum class DType : uint8_t {
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kFloat16,
  kBFloat16,
  kFloat32,
};

// Bytes per element.
size_t ElementBytes(DType dtype);
// "int8", "uint16", "float32", ...
absl::string_view DTypeName(DType dtype);
bool IsInteger(DType dtype);
// Smallest and largest value of an integer type.
// REQUIRES: IsInteger(dtype).
int64_t MinValue(DType dtype);
int64_t MaxValue(DType dtype);

enum class Layout : uint8_t { kRowMajor, kColMajor };
absl::string_view LayoutName(Layout layout);

// The on-chip storage a tile lives in (the seeds' TileType).
enum class Location : uint8_t {
  kVec,
  kMat,
  kLeft,
  kRight,
  kAcc,
  kBias,
  kScaling
};
absl::string_view LocationName(Location location);

// The hardware whose rules and algorithm an instruction runs under.
enum class Target : uint8_t { kHost, kA2A3, kA5 };
// Every target, in Target order.
inline constexpr Target kEveryTarget[] = {Target::kHost, Target::kA2A3,
                                          Target::kA5};
// "host", "a2a3", "a5".
absl::string_view TargetName(Target target);
// The target TargetName names `name`, or nullopt.
std::optional<Target> TargetFromName(absl::string_view name);
// "host, a2a3, a5".
std::string TargetNames();

// Who places tiles in the on-chip buffer.
enum class Mode : uint8_t { kAuto, kManual };

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TYPES_H_
