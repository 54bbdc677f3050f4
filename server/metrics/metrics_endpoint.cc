#include "server/metrics/metrics_endpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace ptoserve {

namespace {

// The exposition format's content type, as Prometheus's own clients send it.
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

HttpResponse Text(int status, std::string body,
                  const char* content_type = "text/plain; charset=utf-8") {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = content_type;
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const HttpDaemonOptions& connections, const MetricsRegistry* registry) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint(registry));
  absl::StatusOr<std::unique_ptr<HttpDaemon>> daemon =
      HttpDaemon::Start(connections, endpoint.get());
  if (!daemon.ok()) return daemon.status();
  endpoint->daemon_ = *std::move(daemon);
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() { daemon_.reset(); }

std::string MetricsEndpoint::url() const {
  return absl::StrCat(daemon_->url(), "/metrics");
}

void MetricsEndpoint::OnHead(const std::shared_ptr<HttpExchange>& exchange) {
  if (exchange->path() != "/metrics") {
    return exchange->Respond(
        Text(404, absl::StrCat("no such path; the metrics are at /metrics\n")));
  }
  const absl::string_view method = exchange->method();
  if (method != "GET" && method != "HEAD") {
    HttpResponse refused =
        Text(405, absl::StrCat(method, " is not allowed; use GET\n"));
    refused.headers.push_back({"Allow", "GET"});
    return exchange->Respond(std::move(refused));
  }
  exchange->Respond(Text(200, registry_->Render(), kContentType));
}

}  // namespace ptoserve
