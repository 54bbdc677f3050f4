#include "server/grpc_server.h"

#include <grpcpp/health_check_service_interface.h>
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace ptoserve {

namespace {

sigset_t ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

// "127.0.0.1:0" with port 43210 bound -> "127.0.0.1:43210".
std::string WithPort(const std::string& address, int port) {
  return absl::StrCat(address.substr(0, address.rfind(':')), ":", port);
}

}  // namespace

absl::StatusOr<RunningServer> StartGrpcServer(
    const GrpcSettings& settings, const std::vector<grpc::Service*>& services) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(settings.address, settings.credentials, &port);
  builder.SetMaxReceiveMessageSize(settings.max_message_bytes);
  builder.SetMaxSendMessageSize(settings.max_message_bytes);
  for (grpc::Service* service : services) builder.RegisterService(service);
  RunningServer running;
  running.server = builder.BuildAndStart();
  if (running.server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", settings.address));
  }
  running.address = WithPort(settings.address, port);
  grpc::HealthCheckServiceInterface* health =
      running.server->GetHealthCheckService();
  health->SetServingStatus(true);
  return running;
}

void BlockShutdownSignals() {
  sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void ServeUntilSignalled(grpc::Server* server, absl::Duration grace,
                         absl::Duration lame_duck, const std::string& name,
                         const std::function<void()>& drain) {
  std::thread shutdown([server, grace, lame_duck, name, &drain] {
    sigset_t signals = ShutdownSignals();
    int signal = 0;
    sigwait(&signals, &signal);
    std::cout << name << ": " << (signal == SIGINT ? "SIGINT" : "SIGTERM")
              << ", draining in-flight calls" << std::endl;
    server->GetHealthCheckService()->SetServingStatus(false);
    drain();
    absl::SleepFor(lame_duck);
    server->Shutdown(std::chrono::system_clock::now() +
                     absl::ToChronoMicroseconds(grace));
  });
  server->Wait();
  shutdown.join();
}

}  // namespace ptoserve
