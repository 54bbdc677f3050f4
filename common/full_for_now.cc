#include "common/full_for_now.h"

#include "absl/strings/cord.h"

namespace ptoserve {

namespace {

constexpr absl::string_view kMark = "type.ptoserve.dev/full-for-now";

}  // namespace

absl::Status FullForNowError(absl::string_view message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kMark, absl::Cord());
  return status;
}

bool IsFullForNow(const absl::Status& status) {
  return absl::IsResourceExhausted(status) &&
         status.GetPayload(kMark).has_value();
}

}  // namespace ptoserve
