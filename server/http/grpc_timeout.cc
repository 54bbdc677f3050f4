#include "server/http/grpc_timeout.h"

#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "core/quote.h"

namespace ptoserve {

absl::StatusOr<absl::Duration> GrpcTimeout(absl::string_view value) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "grpc-timeout %s is not a timeout: 1 to 8 digits and a unit, H, M, "
        "S, m, u or n (e.g. 500m, 2S)",
        ShortQuote(value)));
  };
  int64_t n = 0;
  if (value.size() < 2 || value.size() > 9 ||
      !absl::SimpleAtoi(value.substr(0, value.size() - 1), &n) || n < 0) {
    return bad();
  }
  switch (value.back()) {
    case 'H':
      return absl::Hours(n);
    case 'M':
      return absl::Minutes(n);
    case 'S':
      return absl::Seconds(n);
    case 'm':
      return absl::Milliseconds(n);
    case 'u':
      return absl::Microseconds(n);
    case 'n':
      return absl::Nanoseconds(n);
  }
  return bad();
}

}  // namespace ptoserve
