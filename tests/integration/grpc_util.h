// gRPC helpers shared by the fault and load tests.
#ifndef PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_
#define PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/time/time.h"

namespace ptoserve {

// A channel to `address` with a connection of its own (gRPC otherwise
// shares one among channels with equal arguments), no retries and 64 MiB
// messages.
std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address);

// Now plus `d`, as gRPC deadlines are given.
std::chrono::system_clock::time_point In(absl::Duration d);

// "DEADLINE_EXCEEDED".
std::string CodeName(grpc::StatusCode code);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_INTEGRATION_GRPC_UTIL_H_
