#include "server/transport/grpc_server.h"

#include <grpc/compression.h>
#include <grpc/support/log.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/setting_names.h"
#include "server/log/log.h"
#include "server/transport/address.h"

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

// Why `address` cannot be listened on, as the system says it ("Address
// already in use"), found by binding a socket of our own the way gRPC
// would; empty if that bind succeeds (gRPC failed for another reason).
std::string WhyCannotBind(const std::string& address) {
  absl::StatusOr<AddrInfoList> found = ResolveListenAddress(address);
  if (!found.ok()) return std::string(found.status().message());
  std::string why;
  for (addrinfo* a = found->get(); a != nullptr && why.empty();
       a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0) why = std::strerror(errno);
    close(fd);
  }
  return why;
}

constexpr int kMaxStreamsPerConnection = 256;

// Hands gRPC, which owns its interceptor factories, one that it does not.
class BorrowedInterceptor final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit BorrowedInterceptor(
      grpc::experimental::ServerInterceptorFactoryInterface* factory)
      : factory_(factory) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return factory_->CreateServerInterceptor(info);
  }

 private:
  grpc::experimental::ServerInterceptorFactoryInterface* const factory_;
};

}  // namespace

absl::Status CheckCanListen(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return absl::OkStatus();
  const std::string why = WhyCannotBind(address);
  if (why.empty()) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("cannot listen on ", address, ": ", why));
}

namespace {

// What a connection and a call may hold and how long: handshake, idle and
// keepalive times, streams a connection, windows, message sizes, no
// compression, the transport's memory quota.
void SetTransportLimits(const GrpcOptions& options, const GrpcWiring& wiring,
                        grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      static_cast<int>(absl::ToInt64Milliseconds(options.handshake_timeout)));
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_IDLE_MS,
      static_cast<int>(absl::ToInt64Milliseconds(options.max_connection_idle)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60 * 1000);
  // Calls one connection may have open at once (gRPC's default is
  // unbounded); a client needing more opens another connection.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             kMaxStreamsPerConnection);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  // gRPC's bandwidth-delay probes grow every call's window towards the
  // bytes a round trip could carry, which on a fast link is megabytes: a
  // client keeping many jobs in flight then has them all buffered here,
  // read long after they arrived, from memory the cache no longer holds
  // (ExecuteBatches at 64 streams ran at half its 4-stream rate). A fixed
  // window keeps what waits unread small ("Receive windows" in
  // docs/PERFORMANCE.md).
  if (options.http2_window_bytes > 0) {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                               options.http2_window_bytes);
  }
  // At most 1 GiB (--max_message_mb): gRPC counts in an int.
  builder.SetMaxReceiveMessageSize(static_cast<int>(wiring.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(wiring.max_message_bytes));
  // No compressed messages, either way. gRPC inflates a compressed request
  // whole, before any size limit applies to what it inflated to (about
  // 1 MiB of gzip makes 1 GiB), on every method, health and reflection
  // included, and before a token is checked. With both algorithms off, a
  // call that declares one ("grpc-encoding: gzip") is refused with
  // UNIMPLEMENTED as its headers arrive, before its message is read, and
  // answers are never compressed (docs/SECURITY.md, "Compression").
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
  builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a
  // port that is in use and take a share of its connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // gRPC reads a call's whole message, its window opened to the size the
  // message declares, before a handler can count it against the budget:
  // without a quota, one connection's partial messages (each a byte short
  // of 60 MiB) grew the process by 960 MiB while the budget read 0
  // (docs/SECURITY.md, "Below the handler").
  if (wiring.memory_quota_bytes > 0) {
    grpc::ResourceQuota quota("ptoserve-transport");
    quota.Resize(static_cast<size_t>(wiring.memory_quota_bytes));
    builder.SetResourceQuota(quota);
  }
}

}  // namespace

absl::StatusOr<RunningServer> StartGrpcServer(
    const GrpcOptions& options, const GrpcWiring& wiring,
    const std::vector<grpc::Service*>& services) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  RunningServer running;
  if (!wiring.tls && !absl::StartsWith(options.address, "unix:")) {
    ListenerOptions listening;
    listening.handshake_timeout = options.handshake_timeout;
    listening.max_per_client = options.max_connections_per_client;
    listening.max_total = options.max_connections;
    absl::StatusOr<std::unique_ptr<Listener>> listener =
        Listener::Bind(options.address, listening);
    if (!listener.ok()) return listener.status();
    running.listener = std::move(*listener);
  } else {
    builder.AddListeningPort(options.address, wiring.credentials, &port);
  }
  SetTransportLimits(options, wiring, builder);
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (wiring.unserved != nullptr) {
    builder.RegisterCallbackGenericService(wiring.unserved);
  }
  if (wiring.interceptor != nullptr) {
    std::vector<
        std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(
        std::make_unique<BorrowedInterceptor>(wiring.interceptor));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  running.server = builder.BuildAndStart();
  if (running.listener != nullptr && running.server != nullptr) {
    port = running.listener->port();
    running.listener->Start(running.server.get());
  }
  if (running.server == nullptr || port == 0) {
    const std::string why = WhyCannotBind(options.address);
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.address, ": ",
        !why.empty() ? why
        : wiring.tls
            ? absl::StrCat(
                  "gRPC could not use the TLS certificate and key (is ",
                  SettingName(Setting::kTlsKey), " the key of ",
                  SettingName(Setting::kTlsCert), "?)")
            : "gRPC refused the address"));
  }
  running.address = WithPort(options.address, port);
  grpc::HealthCheckServiceInterface* health =
      running.server->GetHealthCheckService();
  health->SetServingStatus(true);
  return running;
}

void LogGrpcThroughServerLog() {
  gpr_set_log_function([](gpr_log_func_args* args) {
    const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR
                               ? LogLevel::kInfo
                               : LogLevel::kDebug;
    Log& log = Log::Get();
    if (!log.Enabled(level)) return;
    absl::string_view file = args->file != nullptr ? args->file : "";
    file = file.substr(file.rfind('/') + 1);
    log.Say(level, "grpc",
            absl::StrCat("ptoserve: grpc: ", args->message, " (", file, ":",
                         args->line, ")"));
  });
}

void BlockShutdownSignals() {
  sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

void ServeUntilSignalled(RunningServer* running, absl::Duration grace,
                         absl::Duration lame_duck, const std::string& name,
                         const std::function<void()>& stop_accepting,
                         const std::function<void()>& drain,
                         absl::Duration delay,
                         const std::function<void()>& not_serving) {
  grpc::Server* server = running->server.get();
  std::thread shutdown([running, server, grace, lame_duck, name,
                        &stop_accepting, &drain, delay, &not_serving] {
    sigset_t signals = ShutdownSignals();
    int signal = 0;
    sigwait(&signals, &signal);
    const char* signal_name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    Log& log = Log::Get();
    if (delay > absl::ZeroDuration()) {
      log.Say(LogLevel::kInfo, "stop",
              absl::StrCat(name, ": ", signal_name, ", NOT_SERVING for ",
                           absl::FormatDuration(delay),
                           " while still taking work"));
      not_serving();
      server->GetHealthCheckService()->SetServingStatus(false);
      absl::SleepFor(delay);
    }
    log.Say(
        LogLevel::kInfo, "stop",
        absl::StrCat(name, ": ", signal_name, ", draining in-flight calls"));
    const absl::Time start = absl::Now();
    stop_accepting();
    server->GetHealthCheckService()->SetServingStatus(false);
    drain();
    const absl::Duration drained = absl::Now() - start;
    absl::SleepFor(lame_duck);
    if (running->listener != nullptr) running->listener->Stop();
    // Returns once every call has finished and every connection has
    // taken its GOAWAY (gRPC's graceful GOAWAY waits for the client's
    // ping ack), or at the grace's end, when it cuts both off.
    const absl::Time closing = absl::Now();
    server->Shutdown(std::chrono::system_clock::now() +
                     absl::ToChronoMicroseconds(grace));
    log.Say(LogLevel::kInfo, "stop",
            absl::StrCat(name, ": accepted jobs answered in ",
                         absl::FormatDuration(drained),
                         ", calls and connections closed in ",
                         absl::FormatDuration(absl::Now() - closing), " (of ",
                         absl::FormatDuration(grace), " allowed)"));
  });
  server->Wait();
  shutdown.join();
}

}  // namespace ptoserve
