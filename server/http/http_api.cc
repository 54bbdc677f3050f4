#include "server/http/http_api.h"

#include <civetweb.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "server/transport/address.h"

namespace ptoserve {

namespace {

constexpr char kJson[] = "application/json";

std::string JsonQuoted(absl::string_view text) {
  std::string out = "\"";
  for (const unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

const char* ReasonOf(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

namespace http_internal {

int Send(mg_connection* c, int status, absl::string_view content_type,
         absl::string_view body, absl::string_view extra_headers) {
  const std::string head = absl::StrFormat(
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %u\r\n"
      "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n%s\r\n",
      status, ReasonOf(status), content_type, body.size(), extra_headers);
  mg_write(c, head.data(), head.size());
  if (std::strcmp(mg_get_request_info(c)->request_method, "HEAD") != 0) {
    mg_write(c, body.data(), body.size());
  }
  return status;
}

int SendError(mg_connection* c, const absl::Status& status,
              absl::string_view extra_headers) {
  return Send(c, HttpStatusOf(status.code()), kJson, ErrorJson(status) + "\n",
              extra_headers);
}

}  // namespace http_internal

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:  // UNKNOWN, INTERNAL, DATA_LOSS
      return 500;
  }
}

std::string ErrorJson(const absl::Status& status) {
  return absl::StrCat(
      "{\"code\": \"",
      absl::StatusCodeToString(status.code()).empty()
          ? "UNKNOWN"
          : absl::AsciiStrToUpper(absl::StatusCodeToString(status.code())),
      "\", \"message\": ", JsonQuoted(status.message()), "}");
}

// One path: its handler, and its requests counted by HTTP status and timed.
struct HttpApi::Route {
  using Serve = int (HttpApi::*)(mg_connection*) const;
  HttpApi* api;
  Serve serve;
  CounterFamily* requests;
  HistogramFamily* seconds;
  std::string name;  // the label: "/v1/jobs:execute"
};

namespace {

int Dispatch(mg_connection* c, void* data) {
  auto* route = static_cast<HttpApi::Route*>(data);
  const absl::Time start = absl::Now();
  const int status = (route->api->*route->serve)(c);
  route->requests->With({route->name, absl::StrCat(status)}).Increment();
  route->seconds->With({route->name})
      .Observe(absl::ToDoubleSeconds(absl::Now() - start));
  return status;
}

}  // namespace

HttpApi::HttpApi(const HttpApiOptions& options, const HttpApiParts& parts)
    : options_(options), parts_(parts) {}

HttpApi::~HttpApi() { http_.reset(); }

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(
    const HttpApiOptions& options, const HttpApiParts& parts) {
  std::unique_ptr<HttpApi> api(new HttpApi(options, parts));
  const bool tls = !options.tls.cert.empty();
  std::vector<std::pair<std::string, std::string>> civetweb = {
      {"num_threads", absl::StrCat(options.threads)},
      {"request_timeout_ms",
       absl::StrCat(absl::ToInt64Milliseconds(options.request_timeout))},
      {"enable_keep_alive", "yes"},
      {"keep_alive_timeout_ms",
       absl::StrCat(absl::ToInt64Milliseconds(options.idle_timeout))},
      {"linger_timeout_ms", "0"},
  };
  // Debian's civetweb 1.15 cannot serve TLS with OpenSSL 3: it looks up
  // SSL_get_peer_certificate, which OpenSSL 3 no longer exports, and its
  // worker calls the null pointer after the first handshake (the process
  // dies). With TLS the API serves plaintext on loopback only, where a
  // proxy in front terminates TLS; never plaintext beside TLS on a network.
  if (tls && !IsLoopbackAddress(options.address)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_address=", options.address,
        " is not a loopback address: with --tls_cert the HTTP/JSON API "
        "serves loopback only (Debian's civetweb cannot serve TLS with "
        "OpenSSL 3); put a proxy that terminates TLS in front of a loopback "
        "--http_address (README, \"HTTP/JSON API\"), or leave "
        "--http_address empty"));
  }
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(options.address, civetweb, "--http_address");
  if (!http.ok()) return http.status();
  api->http_ = *std::move(http);
  CounterFamily* requests = parts.registry->AddCounter(
      "ptoserve_http_requests_total",
      "HTTP/JSON API requests answered, by route and HTTP status.",
      {"route", "status"});
  HistogramFamily* seconds = parts.registry->AddHistogram(
      "ptoserve_http_request_duration_seconds",
      "HTTP/JSON API requests, from their head to their last byte sent.",
      {"route"},
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
       0.25, 0.5, 1, 2.5, 5, 10});
  // civetweb matches the longest pattern; "$" ends a path exactly.
  const std::pair<const char*, Route::Serve> paths[] = {
      {"/v1/jobs:execute", &HttpApi::ServeExecute},
      {"/v1/capabilities", &HttpApi::ServeCapabilities},
      {"/v1/health", &HttpApi::ServeHealth},
      {"/v2/health/live", &HttpApi::ServeLive},
      {"/v2/health/ready", &HttpApi::ServeReady},
      {"/", &HttpApi::ServeOther},
  };
  for (size_t i = 0; i < std::size(paths); ++i) {
    api->routes_[i] = std::make_unique<Route>(
        Route{api.get(), paths[i].second, requests, seconds, paths[i].first});
    const std::string pattern =
        i + 1 == std::size(paths) ? "/" : absl::StrCat(paths[i].first, "$");
    api->http_->Handle(pattern, Dispatch, api->routes_[i].get());
  }
  return api;
}

std::string HttpApi::url() const {
  return absl::StrCat("http://", http_->host(), ":", http_->port());
}

}  // namespace ptoserve
