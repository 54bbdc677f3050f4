// Serves a MetricsRegistry to Prometheus: GET /metrics over HTTP, in the
// text exposition format, on the server's one HTTP server (HttpDaemon), so
// its connections have the API's limits and timeouts. And the probes, GET
// /v2/health/live and /v2/health/ready, so that a load balancer's or
// Kubernetes' checks need no slot a client of the API can fill. Every other
// path answers 404. No Host check: a scrape names its target as Prometheus
// was told to, and the exposition is no page a browser runs.
#ifndef PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_
#define PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/httpd/http_daemon.h"
#include "server/metrics/metrics.h"

namespace ptoserve {

class MetricsEndpoint final : public HttpHandler {
 public:
  // Serves `registry`, which must outlive the endpoint, on `connections`
  // (its address, IP:PORT, port 0 picks a free one; limits and timeouts).
  // UNAVAILABLE if it cannot listen there.
  // `ready` says whether the server takes work (readiness); from any
  // thread.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const HttpDaemonOptions& connections, const MetricsRegistry* registry,
      std::function<bool()> ready);
  ~MetricsEndpoint() override;

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // "http://IP:PORT/metrics", with the port actually bound.
  std::string url() const;

  void OnHead(const std::shared_ptr<HttpExchange>& exchange) override;
  void OnComplete(const std::shared_ptr<HttpExchange>& exchange) override {}

 private:
  MetricsEndpoint(const MetricsRegistry* registry, std::function<bool()> ready)
      : registry_(registry), ready_(std::move(ready)) {}

  const MetricsRegistry* const registry_;
  const std::function<bool()> ready_;
  std::unique_ptr<HttpDaemon> daemon_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_
