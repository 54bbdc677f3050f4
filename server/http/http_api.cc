#include "server/http/http_api.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/full_for_now.h"
#include "common/json_quote.h"
#include "common/setting_names.h"

namespace ptoserve {

namespace {

absl::StatusOr<std::string> ReadPem(Setting setting, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", SettingName(setting), "=", path));
  }
  return text.str();
}

}  // namespace

int HttpStatusOf(const absl::Status& status) {
  // Over a limit of its own: trying again cannot help (413); full for
  // now: it may, later (429).
  if (absl::IsResourceExhausted(status) && !IsFullForNow(status)) return 413;
  return HttpStatusOf(status.code());
}

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
  std::string code =
      absl::AsciiStrToUpper(absl::StatusCodeToString(status.code()));
  if (code.empty()) code = "UNKNOWN";
  return absl::StrCat("{\"code\": \"", code,
                      "\", \"message\": ", JsonQuote(status.message()), "}");
}

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(
    const HttpDaemonOptions& connections, const TlsFiles& tls,
    const HttpApiParts& parts) {
  std::unique_ptr<HttpApi> api(new HttpApi(parts));
  const ServiceLimits& limits = parts.intake->limits();
  api->body_limit_ =
      limits.max_json_bytes < limits.max_message_bytes
          ? absl::StrCat(SettingName(Setting::kMaxJsonBytes),
                         ": a larger job goes as protobuf, over gRPC")
          : std::string(SettingName(Setting::kMaxMessageBytes));
  HttpDaemonOptions options = connections;
  if (!tls.cert.empty()) {
    absl::StatusOr<std::string> key = ReadPem(Setting::kTlsKey, tls.key);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> cert = ReadPem(Setting::kTlsCert, tls.cert);
    if (!cert.ok()) return cert.status();
    options.tls_key_pem = *std::move(key);
    options.tls_cert_pem = *std::move(cert);
  }
  api->requests_ = parts.registry->AddCounter(
      "ptoserve_http_requests_total",
      "HTTP/JSON API requests, by route and the HTTP status answered "
      "(\"none\": the connection closed first).",
      {"route", "status"});
  api->seconds_ = parts.registry->AddHistogram(
      "ptoserve_http_request_duration_seconds",
      "HTTP/JSON API requests, from their head to their answer queued.",
      {"route"},
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
       0.25, 0.5, 1, 2.5, 5, 10});
  absl::StatusOr<std::unique_ptr<HttpDaemon>> daemon =
      HttpDaemon::Start(options, api.get());
  if (!daemon.ok()) return daemon.status();
  api->daemon_ = *std::move(daemon);
  std::shared_ptr<const HttpDaemon::Stats> stats = api->daemon_->stats();
  parts.registry->AddGauge(
      "ptoserve_http_connections", "HTTP/JSON API connections open.", {},
      [stats] { return static_cast<double>(stats->connections.load()); });
  parts.registry->AddCallbackCounter(
      "ptoserve_http_connections_too_slow_total",
      absl::StrCat("HTTP/JSON API connections closed because a request's "
                   "head did not arrive within ",
                   SettingName(Setting::kHttpHeadTimeout),
                   ", or its body came slower than ",
                   SettingName(Setting::kHttpMinBodyRate), "."),
      [stats] { return static_cast<double>(stats->too_slow.load()); });
  return api;
}

HttpApi::~HttpApi() { daemon_.reset(); }

}  // namespace ptoserve
