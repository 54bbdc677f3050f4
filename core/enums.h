// The engine's vocabulary by value: element types, layouts, locations,
// targets and modes (core/types.h names them). Free of Abseil so that the
// built-in API can include it.
#ifndef PTOSERVE_CORE_ENUMS_H_
#define PTOSERVE_CORE_ENUMS_H_

#include <cstdint>

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

enum class Layout : uint8_t { kRowMajor, kColMajor };

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

// The hardware whose rules and algorithm an instruction runs under.
enum class Target : uint8_t { kHost, kA2A3, kA5 };
// Every target, in Target order.
inline constexpr Target kEveryTarget[] = {Target::kHost, Target::kA2A3,
                                          Target::kA5};

// Who places tiles in the on-chip buffer.
enum class Mode : uint8_t { kAuto, kManual };

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ENUMS_H_
