#include "server/metrics/metrics_endpoint.h"

#include <civetweb.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace ptoserve {

namespace {

// The exposition format's content type, as Prometheus's own clients send it.
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

int ServeMetrics(mg_connection* connection, void* registry) {
  const char* method = mg_get_request_info(connection)->request_method;
  const bool head = std::strcmp(method, "HEAD") == 0;
  if (!head && std::strcmp(method, "GET") != 0) {
    mg_send_http_error(connection, 405, "%s is not allowed; use GET\n", method);
    return 405;
  }
  const std::string text =
      static_cast<const MetricsRegistry*>(registry)->Render();
  mg_send_http_ok(connection, kContentType,
                  static_cast<long long>(text.size()));
  if (!head) mg_write(connection, text.data(), text.size());
  return 200;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, const MetricsRegistry* registry) {
  // civetweb serves a connection per thread, and a connection that sends
  // nothing holds its thread until the request timeout: enough threads, and
  // a short timeout, keep idle or slow clients from blocking a scrape (a
  // scrape itself takes well under a millisecond). No linger_timeout_ms of
  // 0: that closes with a reset, which drops what the kernel has not sent
  // yet of a large exposition (70 KB) to a slow reader.
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Start(
      address, {{"num_threads", "32"}, {"request_timeout_ms", "1000"}},
      "--metrics_address");
  if (!http.ok()) return http.status();
  // "$": exactly /metrics, not /metrics/anything.
  (*http)->Handle("/metrics$", ServeMetrics,
                  const_cast<MetricsRegistry*>(registry));
  return std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(*std::move(http)));
}

std::string MetricsEndpoint::url() const {
  return absl::StrCat("http://", http_->host(), ":", http_->port(), "/metrics");
}

}  // namespace ptoserve
