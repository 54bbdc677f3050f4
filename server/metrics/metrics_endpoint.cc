#include "server/metrics/metrics_endpoint.h"

#include <zlib.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/httpd/route_table.h"

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

// Whether an Accept-Encoding header takes gzip (a q of 0 refuses it).
bool AcceptsGzip(absl::string_view accept) {
  for (absl::string_view coding : absl::StrSplit(accept, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(coding, ';');
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(parts[0]), "gzip")) {
      continue;
    }
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view q = absl::StripAsciiWhitespace(parts[i]);
      double weight = 1;
      if (absl::ConsumePrefix(&q, "q=") && absl::SimpleAtod(q, &weight) &&
          weight <= 0) {
        return false;
      }
    }
    return true;
  }
  return false;
}

// `text` gzipped (RFC 1952), or "" if zlib fails.
std::string Gzip(const std::string& text) {
  z_stream z{};
  // 15 window bits, +16: a gzip header and trailer.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return "";
  }
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int done = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return done == Z_STREAM_END ? out : "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const HttpDaemonOptions& connections, const MetricsRegistry* registry,
    std::function<bool()> ready) {
  std::unique_ptr<MetricsEndpoint> endpoint(
      new MetricsEndpoint(registry, std::move(ready)));
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
  enum : int { kMetrics, kLive, kReady };
  static const RouteTable* const routes = new RouteTable({
      {kMetrics, "GET", "/metrics"},
      {kLive, "GET", "/v2/health/live"},
      {kReady, "GET", "/v2/health/ready"},
  });
  const RouteMatch match = routes->Find(exchange->method(), exchange->path());
  if (match.route == nullptr && match.allow.empty()) {
    return exchange->Respond(Text(
        404, absl::StrCat("no such path; this endpoint's: ", routes->Listing(),
                          "\n")));
  }
  if (match.route == nullptr) {
    HttpResponse refused =
        Text(405, absl::StrCat(exchange->method(), " is not allowed; use ",
                               match.allow, "\n"));
    refused.headers.push_back({"Allow", match.allow});
    return exchange->Respond(std::move(refused));
  }
  if (match.route->id == kLive) return exchange->Respond(Text(200, ""));
  if (match.route->id == kReady) {
    return exchange->Respond(Text(ready_() ? 200 : 503, ""));
  }
  HttpResponse answer = Text(200, registry_->Render(), kContentType);
  // Prometheus asks for gzip: the exposition is text that shrinks about
  // tenfold.
  answer.headers.push_back({"Vary", "Accept-Encoding"});
  if (AcceptsGzip(exchange->header("Accept-Encoding"))) {
    if (std::string zipped = Gzip(answer.body); !zipped.empty()) {
      answer.body = std::move(zipped);
      answer.headers.push_back({"Content-Encoding", "gzip"});
    }
  }
  exchange->Respond(std::move(answer));
}

}  // namespace ptoserve
