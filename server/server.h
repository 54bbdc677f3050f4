// A whole ptoserve in one object: the engine, the scheduler, the service,
// reflection, metrics and the gRPC server, wired together and listening.
// main.cc turns flags into ServerOptions and calls Start; so can a test or
// another program that embeds the server. An embedded server's errors name
// the option field to set ("limits.memory_budget_bytes"); the program's
// name its flags (common/setting_names.h).
//
//   ServerOptions options;
//   options.grpc.address = "127.0.0.1:0";
//   absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
//   if (!server.ok()) ...;
//   std::cout << (*server)->address();
//   (*server)->Stop(absl::Seconds(5));
#ifndef PTOSERVE_SERVER_SERVER_H_
#define PTOSERVE_SERVER_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/engine.h"
#include "server/exec/limits.h"
#include "server/exec/scheduler.h"
#include "server/httpd/http_daemon.h"
#include "server/shm/shared_memory.h"
#include "server/transport/auth.h"
#include "server/transport/grpc_server.h"

namespace ptoserve {

// Everything a server is started with: each subsystem's options, whole.
struct ServerOptions {
  // Where and how gRPC takes connections (address, handshake, idle,
  // windows, connections per address).
  GrpcOptions grpc;
  // The HTTP/JSON API's connections (server/http/http_api.h): its
  // address (empty: none), threads, limits and timeouts, allowed hosts.
  HttpDaemonOptions http;
  // The same for GET /metrics (empty address: none). No flag but its
  // address's (--metrics_address): a scrape's connections keep these
  // defaults, apart from the API's.
  HttpDaemonOptions metrics;
  EngineOptions engine;
  SchedulerOptions scheduling;
  // What every door's calls are held to: message size, memory, shares,
  // streams, how long a job or an unread answer may take.
  ServiceLimits limits;
  // The shared-memory data path (server/shm/shared_memory.h); unset
  // `enabled`: on exactly when grpc.address is a loopback one.
  SharedMemoryOptions shared_memory;
  // TLS when tls.cert is set (server/transport/auth.h), for gRPC and HTTP.
  TlsFiles tls;
  // Bearer tokens, one a line; empty: none required.
  std::string auth_token_file;
  // Proxies whose X-Forwarded-For names their requests' clients
  // (server/identity/client_address.h): addresses or prefixes,
  // comma-separated; empty: none.
  std::string trusted_proxies;
  // With mutual TLS, the client certificate names let in; empty: any the CA
  // signed.
  std::vector<std::string> tls_client_names;
  bool reflection = true;
};

class Server {
 public:
  // Builds and starts everything `options` describes. INVALID_ARGUMENT (or
  // the file's error) for options that cannot work (TLS files, tokens,
  // client names without a CA); UNAVAILABLE if an address cannot be
  // listened on.
  static absl::StatusOr<std::unique_ptr<Server>> Start(
      const ServerOptions& options);

  // Stops at once if Stop has not run.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The address with the port actually bound.
  const std::string& address() const;
  // "http://HOST:PORT/metrics", or "" without a metrics address.
  std::string metrics_url() const;
  // "http://HOST:PORT" of the HTTP/JSON API, or "" without one.
  std::string http_url() const;
  uint64_t memory_budget_bytes() const;
  // Whether the shared-memory path is on (ServerOptions::shared_memory).
  bool shared_memory() const;

  // Until SIGINT or SIGTERM, then drains as ServeUntilSignalled
  // (server/transport/grpc_server.h) says: NOT_SERVING while still taking work
  // for `delay`, new work refused, accepted work answered, the lame duck, then
  // at most `grace` for calls in flight.
  // REQUIRES: BlockShutdownSignals() ran before any thread started.
  void ServeUntilSignalled(absl::Duration grace, absl::Duration lame_duck,
                           absl::Duration delay = absl::ZeroDuration());

  // Refuses new work, finishes what was accepted and stops, letting calls
  // in flight finish for up to `grace`.
  void Stop(absl::Duration grace);

 private:
  struct Parts;
  explicit Server(std::unique_ptr<Parts> parts);

  std::unique_ptr<Parts> parts_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SERVER_H_
