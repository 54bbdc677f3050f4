// plain_echo_server: the plainest gRPC C++ server for ptoserve.v1.TileCompute,
// the raw ceiling beside echo_server (which has ptoserve's gRPC setup).
//
// The callback API with nothing registered but the service: no health,
// reflection, metrics, interceptors, resource quota or channel arguments
// beyond a message limit large enough for the jobs ptobench sends. Execute
// answers each job with a dst tile that is a copy of its first instruction's
// src0, as echo_server does; ExecuteStream does the same per job, one job in
// flight per stream.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/echo_service.h"
#include "bench/plain_server.h"
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50053", "Address to listen on.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::EchoService service;
  return ptoserve::ServePlain("plain_echo_server", &service,
                              absl::GetFlag(FLAGS_address));
}
