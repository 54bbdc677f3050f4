// Serves a MetricsRegistry to Prometheus: GET /metrics over HTTP, in the
// text exposition format, on civetweb (Debian's libcivetweb). Every other
// path answers 404.
#ifndef PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_
#define PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/metrics/http_server.h"
#include "server/metrics/metrics.h"

namespace ptoserve {

class MetricsEndpoint {
 public:
  // Listens on `address` (IP:PORT; port 0 picks a free port) and serves
  // `registry`, which must outlive the endpoint. UNAVAILABLE if it cannot
  // listen there.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const std::string& address, const MetricsRegistry* registry);

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // "http://IP:PORT/metrics", with the port actually bound.
  std::string url() const;

 private:
  explicit MetricsEndpoint(std::unique_ptr<HttpServer> http)
      : http_(std::move(http)) {}

  const std::unique_ptr<HttpServer> http_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_METRICS_ENDPOINT_H_
