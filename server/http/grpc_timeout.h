// The deadline an HTTP caller asks for in a grpc-timeout header, as
// gRPC-Web clients and Envoy's gRPC-JSON transcoder send it.
#ifndef PTOSERVE_SERVER_HTTP_GRPC_TIMEOUT_H_
#define PTOSERVE_SERVER_HTTP_GRPC_TIMEOUT_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace ptoserve {

// `value` (1 to 8 digits and a unit, H, M, S, m for milliseconds, u or n)
// as a duration, or INVALID_ARGUMENT quoting it.
absl::StatusOr<absl::Duration> GrpcTimeout(absl::string_view value);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_GRPC_TIMEOUT_H_
