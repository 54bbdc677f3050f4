// The vocabulary of the engine: element types, layouts, targets, opcodes
// (core/opcode.h), by value in core/enums.h, with their names here.
#ifndef PTOSERVE_CORE_TYPES_H_
#define PTOSERVE_CORE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/enums.h"
#include "core/opcode.h"

namespace ptoserve {

// Bytes per element.
size_t ElementBytes(DType dtype);
// "int8", "uint16", "float32", ...
absl::string_view DTypeName(DType dtype);
bool IsInteger(DType dtype);
// Smallest and largest value of an integer type.
// REQUIRES: IsInteger(dtype).
int64_t MinValue(DType dtype);
int64_t MaxValue(DType dtype);

absl::string_view LayoutName(Layout layout);

absl::string_view LocationName(Location location);

// "host", "a2a3", "a5".
absl::string_view TargetName(Target target);
// The target TargetName names `name` (in any case: "A2A3" too), or
// nullopt.
std::optional<Target> TargetFromName(absl::string_view name);
// "host, a2a3, a5".
std::string TargetNames();

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TYPES_H_
