// The gRPC plumbing every ptoserve server binary shares (ptoserve itself
// and the echo baseline in bench/), so that both run with the same settings.
#ifndef PTOSERVE_SERVER_TRANSPORT_GRPC_SERVER_H_
#define PTOSERVE_SERVER_TRANSPORT_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/transport/listener.h"

namespace ptoserve {

// Where and how a gRPC server takes its connections: the operator's.
struct GrpcOptions {
  // HOST:PORT (or unix:PATH); port 0 picks a free one (--address).
  std::string address = "127.0.0.1:50051";
  // A connection that has not completed its HTTP/2 (or TLS) handshake by
  // then is closed (--handshake_timeout).
  absl::Duration handshake_timeout = absl::Seconds(10);
  // A connection with no call for this long is closed, GOAWAY first
  // (--max_connection_idle).
  absl::Duration max_connection_idle = absl::Minutes(10);
  // The HTTP/2 flow-control window each call is granted for request bytes
  // the server has not read yet, fixed (0: gRPC's own, which grows with its
  // bandwidth-delay probes). A message the server starts reading is let in
  // whole, whatever the window (--http2_window_kb).
  int http2_window_bytes = 1 << 20;
  // Connections open at once of one client (the user of a loopback
  // connection, else its address, an IPv6 /64 as one); more are closed at
  // accept (--max_connections_per_client). And in all: past it, the newest
  // connection of the client holding most is closed for a newcomer
  // (--max_connections). A plaintext TCP server's own listener keeps them;
  // gRPC's TLS listener has no such bounds.
  int max_connections_per_client = 128;
  int max_connections = 10000;
};

// What the program wires into a gRPC server beside its options.
struct GrpcWiring {
  uint64_t max_message_bytes = uint64_t{64} << 20;  // a request or response
  // What gRPC itself may hold, every connection together: the bytes it has
  // read and no handler has taken (a message arriving, a connection's
  // buffers), as its resource quota. Near it gRPC shrinks the windows it
  // grants, so that clients send no faster than the server reads; at it,
  // it resets calls and connections ("Buffers full") rather than grow
  // (0: unbounded).
  uint64_t memory_quota_bytes = 0;
  // Plaintext by default; see server/transport/auth.h for TLS. A plaintext
  // TCP server accepts its connections through a Listener (listener.h); a
  // TLS one through gRPC's own listener.
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::InsecureServerCredentials();
  bool tls = false;  // whether `credentials` are TLS
  // Sees every call (null: none); must outlive the server.
  grpc::experimental::ServerInterceptorFactoryInterface* interceptor = nullptr;
  // Answers the methods no service serves (null: gRPC's own bare
  // UNIMPLEMENTED); must outlive the server.
  grpc::CallbackGenericService* unserved = nullptr;
};

struct RunningServer {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // with the port actually bound
  // Plaintext TCP only; stops before the server does.
  std::unique_ptr<Listener> listener;
};

// OK if `address` (HOST:PORT) can be bound now, as StartGrpcServer would;
// otherwise UNAVAILABLE, "cannot listen on ADDRESS: why" (what it would
// fail with). A unix: address is not tried.
absl::Status CheckCanListen(const std::string& address);

// Starts a callback-API server for `services` with the standard health
// service (SERVING for the server). Idle peers are pinged every minute and
// dropped if they do not answer within 20 s.
// UNAVAILABLE, with the reason, if it cannot listen.
absl::StatusOr<RunningServer> StartGrpcServer(
    const GrpcOptions& options, const GrpcWiring& wiring,
    const std::vector<grpc::Service*>& services);

// Sends gRPC's own log lines (a failed TLS handshake, a connection reset)
// through the server's log: its format, its rate, and a level of its own
// (gRPC's errors at info: a client's doing, mostly; the rest at debug).
// Call once, before the server starts.
void LogGrpcThroughServerLog();

// Blocks SIGINT and SIGTERM in the calling thread and every thread it starts
// later. Call first thing in main.
void BlockShutdownSignals();

// Waits for SIGINT or SIGTERM, then:
//  0. with a `delay`, runs `not_serving` and reports NOT_SERVING, and keeps
//     taking work for `delay`: load balancers' health checks take the
//     server out of rotation before it refuses anything;
//  1. runs `stop_accepting`, which should make the server refuse new work
//     with UNAVAILABLE from then on and return at once;
//  2. reports NOT_SERVING: a caller who sees it is refused, never accepted;
//  3. runs `drain`, which should return once accepted work is answered (the
//     server still takes calls);
//  4. keeps taking calls for `lame_duck` more, so that callers who come
//     late are told UNAVAILABLE (retry elsewhere) rather than cut off;
//  5. stops accepting connections, and stops the server, letting calls in
//     flight finish for up to `grace`. gRPC's graceful GOAWAY also waits
//     that long for each connection's client to answer its ping: a client
//     with nothing polling its channel (a C++ client between calls) answers
//     at gRPC's backup poll, about every 5 s, and one that never reads holds
//     the server until the grace runs out.
// Returns once the server has stopped.
// REQUIRES: BlockShutdownSignals() ran before any thread started.
void ServeUntilSignalled(
    RunningServer* running, absl::Duration grace, absl::Duration lame_duck,
    const std::string& name,
    const std::function<void()>& stop_accepting = [] {},
    const std::function<void()>& drain = [] {},
    absl::Duration delay = absl::ZeroDuration(),
    const std::function<void()>& not_serving = [] {});

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TRANSPORT_GRPC_SERVER_H_
