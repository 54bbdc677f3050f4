#include "core/types.h"

#include <limits>

#include "absl/strings/match.h"

namespace ptoserve {

size_t ElementBytes(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32:
      return 4;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kUInt16:
      return "uint16";
    case DType::kInt32:
      return "int32";
    case DType::kUInt32:
      return "uint32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat32:
      return "float32";
  }
  return "?";
}

bool IsInteger(DType dtype) {
  return dtype != DType::kFloat16 && dtype != DType::kBFloat16 &&
         dtype != DType::kFloat32;
}

int64_t MinValue(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return std::numeric_limits<int8_t>::min();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::min();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::min();
    default:
      return 0;
  }
}

int64_t MaxValue(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return std::numeric_limits<int8_t>::max();
    case DType::kUInt8:
      return std::numeric_limits<uint8_t>::max();
    case DType::kInt16:
      return std::numeric_limits<int16_t>::max();
    case DType::kUInt16:
      return std::numeric_limits<uint16_t>::max();
    case DType::kInt32:
      return std::numeric_limits<int32_t>::max();
    case DType::kUInt32:
      return std::numeric_limits<uint32_t>::max();
    default:
      return 0;
  }
}

absl::string_view LayoutName(Layout layout) {
  return layout == Layout::kRowMajor ? "row_major" : "col_major";
}

absl::string_view LocationName(Location location) {
  switch (location) {
    case Location::kVec:
      return "vec";
    case Location::kMat:
      return "mat";
    case Location::kLeft:
      return "left";
    case Location::kRight:
      return "right";
    case Location::kAcc:
      return "acc";
    case Location::kBias:
      return "bias";
    case Location::kScaling:
      return "scaling";
  }
  return "?";
}

absl::string_view TargetName(Target target) {
  switch (target) {
    case Target::kHost:
      return "host";
    case Target::kA2A3:
      return "a2a3";
    case Target::kA5:
      return "a5";
  }
  return "?";
}

std::optional<Target> TargetFromName(absl::string_view name) {
  for (Target target : kEveryTarget) {
    // "A2A3" as ptoctl's --target and the Python client take it.
    if (absl::EqualsIgnoreCase(TargetName(target), name)) return target;
  }
  return std::nullopt;
}

std::string TargetNames() {
  std::string names;
  for (Target target : kEveryTarget) {
    if (!names.empty()) names += ", ";
    names.append(TargetName(target).data(), TargetName(target).size());
  }
  return names;
}

}  // namespace ptoserve
