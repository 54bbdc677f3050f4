// absl::Status and grpc::Status share their canonical codes: the one
// conversion every gRPC front door of the server answers with.
#ifndef PTOSERVE_SERVER_RPC_STATUS_H_
#define PTOSERVE_SERVER_RPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace ptoserve {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STATUS_H_
