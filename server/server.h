// A whole ptoserve in one object: the engine, the scheduler, the service,
// reflection, metrics and the gRPC server, wired together and listening.
// main.cc turns flags into ServerOptions and calls Start; so can a test or
// another program that embeds the server.
//
//   ServerOptions options;
//   options.address = "127.0.0.1:0";
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
#include "server/http/http_api.h"
#include "server/jobs/scheduler.h"
#include "server/transport/auth.h"

namespace ptoserve {

struct ServerOptions {
  // HOST:PORT; port 0 picks a free one (address() reports it).
  std::string address = "127.0.0.1:50051";
  // Where /metrics is served, HOST:PORT; empty: nowhere.
  std::string metrics_address;
  // The HTTP/JSON API (server/http/http_api.h): its address (empty: none),
  // threads and timeouts; its body limit is max_message_bytes and its TLS
  // is `tls`.
  HttpApiOptions http;
  EngineOptions engine;
  SchedulerOptions scheduling;
  int max_message_bytes = 64 << 20;
  uint64_t max_job_bytes = uint64_t{256} << 20;
  uint64_t memory_budget_bytes = uint64_t{768} << 20;
  // What one client may hold of it; 0: half, and at least max_job_bytes.
  uint64_t client_memory_bytes = 0;
  // How long an answer may wait for a client that does not read it before
  // its call is cancelled; zero: never.
  absl::Duration stall_timeout = absl::Seconds(30);
  uint32_t stream_window = 128;
  uint32_t max_jobs_per_batch = 256;
  // The shared-memory data path (server/shared_memory.h): on, off, or
  // (unset) on exactly when `address` is a loopback one.
  std::optional<bool> shared_memory;
  std::string shared_memory_prefix = "/ptoserve";
  uint32_t max_shared_regions = 64;
  // What one user may have of them; 0: a quarter (at least 1).
  uint32_t max_shared_regions_per_user = 0;
  // How long a region outlives its registering connection, unless it asked
  // to outlive it for good.
  absl::Duration shared_region_grace = absl::Seconds(10);
  // TLS when tls.cert is set (server/auth.h).
  TlsFiles tls;
  // Bearer tokens, one a line; empty: none required.
  std::string auth_token_file;
  // With mutual TLS, the client certificate names let in; empty: any the CA
  // signed.
  std::vector<std::string> tls_client_names;
  bool reflection = true;
  absl::Duration handshake_timeout = absl::Seconds(10);
  absl::Duration max_connection_idle = absl::Minutes(10);
  // GrpcSettings::http2_window_bytes.
  int http2_window_bytes = 1 << 20;
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
  // (server/grpc_server.h) says: NOT_SERVING while still taking work for
  // `delay`, new work refused, accepted work answered, the lame duck, then
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
