// The HTTP/JSON front door, beside gRPC: a job in proto3 JSON in, its
// result in proto3 JSON out, for clients without gRPC (curl, a browser).
// Jobs go to the same dispatcher as gRPC's, with the same tokens, memory
// budget, client shares, limits and metrics; shared memory stays gRPC's.
//
//   POST /v1/jobs:execute      a v1.Job -> its v1.JobResult
//   GET  /v1/capabilities      v1.Capabilities
//   GET  /v1/health            {"status": "SERVING"} or NOT_SERVING (503)
//   GET  /v2/health/live       200 while the process serves HTTP
//   GET  /v2/health/ready      200 while it takes jobs, else 503
//
// Errors are {"code": "INVALID_ARGUMENT", "message": "..."} with the HTTP
// status Google's API design guide gives each code (HttpStatusOf).
//
// It runs on libmicrohttpd (Debian's libmicrohttpd12): a few threads poll
// every connection (epoll), so an idle or slow connection holds a socket,
// not a thread; connections are bounded in all and per client address,
// idle ones are closed, and a job that goes to the scheduler suspends its
// connection until it is answered.
#ifndef PTOSERVE_SERVER_HTTP_HTTP_API_H_
#define PTOSERVE_SERVER_HTTP_HTTP_API_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/jobs/intake.h"
#include "server/jobs/memory_budget.h"
#include "server/metrics/metrics.h"
#include "server/transport/auth.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace ptoserve {

struct HttpApiOptions {
  std::string address;  // IP:PORT; port 0 picks a free one
  // Threads that poll the connections, parse bodies and run small jobs.
  int threads = 4;
  // Connections open at once, in all and from one client address; more
  // are refused at accept.
  int max_connections = 1024;
  int max_connections_per_address = 64;
  // A connection that sends or reads nothing for this long is closed (a
  // request's head or body that stalls, a kept-alive connection unused, an
  // answer its client does not read).
  absl::Duration idle_timeout = absl::Seconds(15);
  // The largest body (a job in JSON), as gRPC's --max_message_mb.
  uint64_t max_body_bytes = 64 << 20;
  // HTTPS with the gRPC side's certificate and key when cert is set.
  TlsFiles tls;
};

// What the API serves with; each must outlive it.
struct HttpApiParts {
  const Intake* intake = nullptr;
  MemoryBudget* budget = nullptr;
  MetricsRegistry* registry = nullptr;
  const TokenAuthenticator* auth = nullptr;  // null: no tokens
  // Whether the server takes jobs (false once it is stopping).
  std::function<bool()> ready;
};

class HttpApi {
 public:
  // UNAVAILABLE if it cannot listen on the address; INVALID_ARGUMENT for an
  // address it cannot parse or TLS files it cannot read.
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(
      const HttpApiOptions& options, const HttpApiParts& parts);
  // Stops listening and closes every connection. REQUIRES: every job it
  // dispatched was answered (the server drains its scheduler first).
  ~HttpApi();

  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // "http://IP:PORT" (https with TLS), with the port actually bound.
  std::string url() const;

  struct Request;  // one request's state (http_routes.cc)

 private:
  HttpApi(const HttpApiOptions& options, const HttpApiParts& parts);

  // libmicrohttpd's callbacks, and what they call (http_routes.cc).
  struct Callbacks;
  friend struct Callbacks;

  // The request's head has arrived: OK to read its body, or why it is
  // refused before that.
  absl::Status Head(MHD_Connection* c, Request* r) const;
  // The whole request has arrived (or its job has been answered): answers
  // it, or suspends the connection while its job runs. Returns MHD_YES or
  // MHD_NO.
  int Serve(MHD_Connection* c, Request* r) const;
  int ServeExecute(MHD_Connection* c, Request* r) const;

  const HttpApiOptions options_;
  const HttpApiParts parts_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  CounterFamily* requests_ = nullptr;
  HistogramFamily* seconds_ = nullptr;
  // Shared with the gauge, which a scrape may read after the API is gone.
  const std::shared_ptr<std::atomic<int64_t>> connections_ =
      std::make_shared<std::atomic<int64_t>>(0);
  // The PEM text of --tls_key and --tls_cert, which the daemon reads from
  // here while it runs.
  std::string key_pem_;
  std::string cert_pem_;
};

// The HTTP status for a gRPC status code, as Google's API design guide
// maps them (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, ..., CANCELLED 499).
int HttpStatusOf(absl::StatusCode code);

// {"code": "NAME", "message": "..."}, the message escaped for JSON.
std::string ErrorJson(const absl::Status& status);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_HTTP_API_H_
