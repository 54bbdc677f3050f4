// The plain servers' main: `service` alone on a gRPC server at `address`,
// with a message limit large enough for the jobs ptobench sends, until the
// process is killed. Returns 1 (saying why) if it cannot listen.
#ifndef PTOSERVE_BENCH_PLAIN_SERVER_H_
#define PTOSERVE_BENCH_PLAIN_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

namespace ptoserve {

inline int ServePlain(const char* name, grpc::Service* service,
                      const std::string& address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << name << ": cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << name << " listening on port " << port << std::endl;
  server->Wait();
  return 0;
}

}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_PLAIN_SERVER_H_
