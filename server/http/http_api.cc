#include "server/http/http_api.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_quote.h"
#include "server/http/http_callbacks.h"

namespace ptoserve {

namespace {

absl::StatusOr<std::string> ReadPem(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", flag, "=", path));
  }
  return text.str();
}

// `address` ("IP:PORT", "[IPv6]:PORT") as a socket address; numeric only.
absl::StatusOr<sockaddr_storage> Resolve(const std::string& address,
                                         socklen_t* length) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_address=", address, " is not IP:PORT, e.g. 127.0.0.1:8000"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_address=", address,
                     " is not IP:PORT with a numeric IP, e.g. 127.0.0.1:8000"));
  }
  sockaddr_storage out{};
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  *length = found->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

}  // namespace

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

HttpApi::HttpApi(const HttpApiOptions& options, const HttpApiParts& parts)
    : options_(options), parts_(parts) {}

HttpApi::~HttpApi() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

absl::StatusOr<std::unique_ptr<HttpApi>> HttpApi::Start(
    const HttpApiOptions& options, const HttpApiParts& parts) {
  std::unique_ptr<HttpApi> api(new HttpApi(options, parts));
  socklen_t length = 0;
  absl::StatusOr<sockaddr_storage> address = Resolve(options.address, &length);
  if (!address.ok()) return address.status();
  const bool tls = !options.tls.cert.empty();
  if (tls) {
    absl::StatusOr<std::string> key = ReadPem("--tls_key", options.tls.key);
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> cert = ReadPem("--tls_cert", options.tls.cert);
    if (!cert.ok()) return cert.status();
    api->key_pem_ = *std::move(key);
    api->cert_pem_ = *std::move(cert);
  }
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  if (address->ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  if (tls) flags |= MHD_USE_TLS;
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_SOCK_ADDR, 0, &*address},
      {MHD_OPTION_THREAD_POOL_SIZE, options.threads, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, options.max_connections, nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, options.max_connections_per_address,
       nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT,
       static_cast<intptr_t>(
           std::max<int64_t>(1, absl::ToInt64Seconds(options.idle_timeout))),
       nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED,
       reinterpret_cast<intptr_t>(&Callbacks::OnCompleted), api.get()},
      {MHD_OPTION_NOTIFY_CONNECTION,
       reinterpret_cast<intptr_t>(&Callbacks::OnConnection), api.get()},
  };
  if (tls) {
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, api->key_pem_.data()});
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, api->cert_pem_.data()});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
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
  parts.registry->AddGauge("ptoserve_http_connections",
                           "HTTP/JSON API connections open.", {},
                           [connections = api->connections_] {
                             return static_cast<double>(connections->load());
                           });
  api->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Callbacks::OnRequest, api.get(),
      MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (api->daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve --http_address=", options.address,
                     " (in use, or not an address of this host)"));
  }
  api->port_ =
      MHD_get_daemon_info(api->daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  return api;
}

std::string HttpApi::url() const {
  const size_t colon = options_.address.rfind(':');
  return absl::StrCat(options_.tls.cert.empty() ? "http" : "https", "://",
                      options_.address.substr(0, colon), ":", port_);
}

}  // namespace ptoserve
