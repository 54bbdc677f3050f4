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
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50053", "Address to listen on.");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_address),
                           grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "plain_echo_server: cannot listen on "
              << absl::GetFlag(FLAGS_address) << "\n";
    return 1;
  }
  std::cout << "plain_echo_server listening on port " << port << std::endl;
  server->Wait();
  return 0;
}
