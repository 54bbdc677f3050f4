// echo_server: the gRPC ceiling that ptoserve is measured against.
//
// It serves ptoserve.v1.TileCompute with the same gRPC settings as ptoserve
// (server/transport/grpc_server.h: callback API, message limits, health,
// reflection) but computes nothing: Execute answers each job with a dst tile
// that is a copy of its first instruction's src0, so the reply has the size
// ptoserve's would. ExecuteStream does the same per job.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "bench/echo_service.h"
#include "ptoserve/v1/service.grpc.pb.h"
#include "server/transport/grpc_server.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50052", "Address to listen on.");
ABSL_FLAG(int, max_message_mb, 64, "Largest message, in MiB (as ptoserve).");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::BlockShutdownSignals();
  ptoserve::EchoService service;
  ptoserve::GrpcOptions options;
  options.address = absl::GetFlag(FLAGS_address);
  ptoserve::GrpcWiring wiring;
  wiring.max_message_bytes =
      static_cast<uint64_t>(absl::GetFlag(FLAGS_max_message_mb)) << 20;
  auto running = ptoserve::StartGrpcServer(options, wiring, {&service});
  if (!running.ok()) {
    std::cerr << "echo_server: " << running.status().message() << "\n";
    return 1;
  }
  std::cout << "echo_server listening on " << running->address << std::endl;
  ptoserve::ServeUntilSignalled(&*running, absl::Seconds(5),
                                absl::ZeroDuration(), "echo_server");
  return 0;
}
