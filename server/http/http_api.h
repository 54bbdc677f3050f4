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
#ifndef PTOSERVE_SERVER_HTTP_HTTP_API_H_
#define PTOSERVE_SERVER_HTTP_HTTP_API_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/jobs/dispatcher.h"
#include "server/jobs/memory_budget.h"
#include "server/metrics/http_server.h"
#include "server/metrics/metrics.h"
#include "server/transport/auth.h"

struct mg_connection;

namespace ptoserve {

struct HttpApiOptions {
  std::string address;  // IP:PORT; port 0 picks a free one
  // Connections served at once, each on a thread of its own; more wait in
  // the listen queue.
  int threads = 16;
  // A request's head and body must arrive within this (slow clients lose
  // their connection); an idle kept-alive connection is closed after
  // `idle_timeout`.
  absl::Duration request_timeout = absl::Seconds(10);
  absl::Duration idle_timeout = absl::Seconds(15);
  // The largest body (a job in JSON), as gRPC's --max_message_mb.
  uint64_t max_body_bytes = 64 << 20;
  // Whether the gRPC side has TLS: the API then serves loopback only
  // (HttpApi::Start says why).
  TlsFiles tls;
};

// What the API serves with; each must outlive it.
struct HttpApiParts {
  Dispatcher* dispatcher = nullptr;
  MemoryBudget* budget = nullptr;
  MetricsRegistry* registry = nullptr;
  const TokenAuthenticator* auth = nullptr;  // null: no tokens
  // Whether the server takes jobs (false once it is stopping).
  std::function<bool()> ready;
};

class HttpApi {
 public:
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(
      const HttpApiOptions& options, const HttpApiParts& parts);
  ~HttpApi();

  // "http://IP:PORT", with the port actually bound.
  std::string url() const;

  struct Route;  // one path's handler and metrics (http_api.cc)

 private:
  HttpApi(const HttpApiOptions& options, const HttpApiParts& parts);

  // Each answers one request and returns its HTTP status (http_routes.cc).
  int ServeExecute(mg_connection* c) const;
  int ServeCapabilities(mg_connection* c) const;
  int ServeHealth(mg_connection* c) const;
  int ServeLive(mg_connection* c) const;
  int ServeReady(mg_connection* c) const;
  int ServeOther(mg_connection* c) const;  // 404 for every other path

  // OK, or why the request may not be served: a token missing or wrong
  // (UNAUTHENTICATED), or a page of another site sending it (its Origin is
  // not this server: PERMISSION_DENIED). `*client` names whose share of the
  // memory budget it takes: its token's holder, else its connection.
  absl::Status Admit(mg_connection* c, std::string* client) const;
  // The body, at most options_.max_body_bytes, within the request timeout.
  absl::StatusOr<std::string> ReadBody(mg_connection* c) const;

  const HttpApiOptions options_;
  const HttpApiParts parts_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<Route> routes_[6];
};

// The HTTP status for a gRPC status code, as Google's API design guide
// maps them (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, ..., CANCELLED 499).
int HttpStatusOf(absl::StatusCode code);

// {"code": "NAME", "message": "..."}, the message escaped for JSON.
std::string ErrorJson(const absl::Status& status);

namespace http_internal {
// Sends `body` with `status` (and `extra_headers`, each ending "\r\n");
// returns the status.
int Send(mg_connection* c, int status, absl::string_view content_type,
         absl::string_view body, absl::string_view extra_headers = "");
// Sends ErrorJson(status) with HttpStatusOf(status.code()).
int SendError(mg_connection* c, const absl::Status& status,
              absl::string_view extra_headers = "");
}  // namespace http_internal

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_HTTP_API_H_
