// An integer command-line flag that takes only the values of one range,
// stated once where the flag is declared:
//
//   ABSL_FLAG(RangedInt<1, 1024>, max_message_mb, 64, "...");
//
// Parsing a value outside [Min, Max] fails with "is out of range [Min,
// Max]", which CheckFlagsOrExit (common/cli_help.h) reports as
// "--max_message_mb=2048 is out of range [1, 1024]", exit status 2.
#ifndef PTOSERVE_COMMON_RANGED_FLAG_H_
#define PTOSERVE_COMMON_RANGED_FLAG_H_

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

template <int64_t Min, int64_t Max>
struct RangedInt {
  static_assert(Min <= Max, "an empty range");
  // Implicit, so that a flag's default is written as a plain number.
  RangedInt(int64_t v = Min) : value(v) {}    // NOLINT(runtime/explicit)
  operator int64_t() const { return value; }  // NOLINT(runtime/explicit)

  int64_t value;
};

template <int64_t Min, int64_t Max>
bool AbslParseFlag(absl::string_view text, RangedInt<Min, Max>* flag,
                   std::string* error) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v)) {
    *error = "not an integer";
    return false;
  }
  if (v < Min || v > Max) {
    *error = absl::StrCat("is out of range [", Min, ", ", Max, "]");
    return false;
  }
  flag->value = v;
  return true;
}

template <int64_t Min, int64_t Max>
std::string AbslUnparseFlag(RangedInt<Min, Max> flag) {
  return absl::StrCat(flag.value);
}

}  // namespace ptoserve

#endif  // PTOSERVE_COMMON_RANGED_FLAG_H_
