// The HTTP/JSON front door, beside gRPC: a job in proto3 JSON in, its
// result in proto3 JSON out, for clients without gRPC (curl, a browser).
// It maps HTTP onto the request pipeline every door shares
// (server/intake/intake.h): the body held against its client's share as it
// arrives, decoded off the connections' threads when it is not light, the
// deadline a caller asks for (grpc-timeout) and the caller gone when its
// connection closes; tokens, budget, shares and metrics are gRPC's.
//
//   GET  /                     the playground page
//   POST /v1/jobs:execute      a v1.Job -> its v1.JobResult
//   GET  /v1/capabilities      v1.Capabilities
//   GET  /v1/health            {"status": "SERVING"} or NOT_SERVING (503)
//   GET  /v2/health/live       200 while the process serves HTTP
//   GET  /v2/health/ready      200 while it takes jobs, else 503
//
// and the Open Inference Protocol's REST API (docs/INFERENCE.md), through
// the same pipeline with server/oip's protocol:
//
//   GET  /v2                                       server metadata
//   GET  /v2/models/{model}[/versions/{version}]   model metadata
//   GET  /v2/models/{model}[/versions/{version}]/ready
//   POST /v2/models/{model}[/versions/{version}]/infer
//   POST /v2/repository/index
//
// Errors are {"code": "INVALID_ARGUMENT", "message": "..."} (under /v2,
// the protocol's {"error": "..."}) with the HTTP status Google's API
// design guide gives each code (HttpStatusOf); a request whose Host names
// another server is answered 421.
//
// Connections are served by HttpDaemon (server/httpd/http_daemon.h): a few
// threads poll them all; limits and timeouts are its.
#ifndef PTOSERVE_SERVER_HTTP_HTTP_API_H_
#define PTOSERVE_SERVER_HTTP_HTTP_API_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/exec/memory_budget.h"
#include "server/httpd/http_daemon.h"
#include "server/intake/intake.h"
#include "server/metrics/metrics.h"
#include "server/oip/models.h"
#include "server/transport/auth.h"

namespace ptoserve {

// What the API serves with; each must outlive it.
struct HttpApiParts {
  const Intake* intake = nullptr;
  MemoryBudget* budget = nullptr;
  MetricsRegistry* registry = nullptr;
  const TokenAuthenticator* auth = nullptr;  // null: no tokens
  // Whether the server takes jobs (false once it is stopping).
  std::function<bool()> ready;
  // The Open Inference Protocol's models (the /v2 routes).
  const ModelCatalog* models = nullptr;
  // Where the metrics are served ("http://127.0.0.1:9464/metrics"; empty:
  // nowhere), for a /metrics asked here.
  std::string metrics_url;
};

class HttpApi final : public HttpHandler {
 public:
  // Serves on `connections` (its address, limits and timeouts), over HTTPS
  // with the gRPC side's certificate and key when tls.cert is set.
  // UNAVAILABLE if it cannot listen there; INVALID_ARGUMENT for an address
  // it cannot parse or TLS files it cannot read.
  static absl::StatusOr<std::unique_ptr<HttpApi>> Start(
      const HttpDaemonOptions& connections, const TlsFiles& tls,
      const HttpApiParts& parts);
  // Stops listening and closes every connection. REQUIRES: every job it
  // dispatched was answered (the server drains its scheduler first).
  ~HttpApi() override;

  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // "http://IP:PORT" (https with TLS), with the port actually bound.
  std::string url() const { return daemon_->url(); }

  void OnHead(const std::shared_ptr<HttpExchange>& exchange) override;
  void OnBody(const std::shared_ptr<HttpExchange>& exchange,
              absl::string_view piece) override;
  void OnComplete(const std::shared_ptr<HttpExchange>& exchange) override;
  void OnEnd(const std::shared_ptr<HttpExchange>& exchange) override;

  struct Call;  // one request's own (http_routes.cc)

 private:
  explicit HttpApi(const HttpApiParts& parts) : parts_(parts) {}

  // Why the request may not go on past its head, or OK.
  absl::Status Admit(HttpExchange* exchange, Call* call) const;
  // Hands a job's body to the pipeline; answers when it is done.
  void Execute(const std::shared_ptr<HttpExchange>& exchange,
               const std::shared_ptr<Call>& call) const;
  // Answers an Open Inference Protocol request that needs no body: the
  // server's or a model's metadata, a model's readiness, an extension not
  // served.
  void AnswerMetadata(HttpExchange* exchange, Call* call) const;

  const HttpApiParts parts_;
  // The setting a JSON body's refusal names as its limit, with what to do.
  std::string body_limit_;
  std::unique_ptr<HttpDaemon> daemon_;
  CounterFamily* requests_ = nullptr;
  HistogramFamily* seconds_ = nullptr;
};

// The HTTP status for a gRPC status code, as Google's API design guide
// maps them (INVALID_ARGUMENT 400, UNAUTHENTICATED 401, ..., CANCELLED 499).
int HttpStatusOf(absl::StatusCode code);
// As above, and RESOURCE_EXHAUSTED for a request over a limit of its own
// (a tile, a body, a job) 413, where full for now (the budget, the queue:
// common/full_for_now.h) stays 429.
int HttpStatusOf(const absl::Status& status);

// {"code": "NAME", "message": "..."}, the message escaped for JSON.
std::string ErrorJson(const absl::Status& status);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_HTTP_API_H_
