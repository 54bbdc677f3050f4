#include "server/metrics/metrics_endpoint.h"

#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ptoserve {

namespace {

// The exposition format's content type, as Prometheus's own clients send it.
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// civetweb serves a connection per thread, and a connection that sends
// nothing holds its thread until the request timeout: enough threads, and a
// short timeout, keep idle or slow clients from blocking a scrape (a
// scrape itself takes well under a millisecond).
constexpr char kThreads[] = "32";
constexpr char kRequestTimeoutMs[] = "1000";

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

// Opens a TCP connection to `host`:`port` and closes it at once.
void Knock(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found) !=
      0) {
    return;
  }
  const int fd = socket(found->ai_family, found->ai_socktype, 0);
  if (fd >= 0) {
    connect(fd, found->ai_addr, found->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(found);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, const MetricsRegistry* registry) {
  // Once per process; civetweb counts the calls, so a second is harmless.
  mg_init_library(0);
  const char* options[] = {"listening_ports",
                           address.c_str(),
                           "num_threads",
                           kThreads,
                           "request_timeout_ms",
                           kRequestTimeoutMs,
                           "linger_timeout_ms",
                           "0",
                           nullptr};
  mg_callbacks callbacks{};
  mg_init_data init{&callbacks, nullptr, options};
  char error[256] = "";
  unsigned code = 0;
  mg_error_data error_data{&code, error, sizeof error};
  mg_context* context = mg_start2(&init, &error_data);
  if (context == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", address, " (", error,
        "); --metrics_address takes IP:PORT, e.g. 127.0.0.1:9464"));
  }
  // "$": exactly /metrics, not /metrics/anything.
  mg_set_request_handler(context, "/metrics$", ServeMetrics,
                         const_cast<MetricsRegistry*>(registry));
  mg_server_port port{};
  mg_get_server_ports(context, 1, &port);
  // A bare port listens on every interface.
  const size_t colon = address.rfind(':');
  std::string host =
      colon == std::string::npos ? "0.0.0.0" : address.substr(0, colon);
  return std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(context, std::move(host), port.port));
}

std::string MetricsEndpoint::url() const {
  return absl::StrCat("http://", host_, ":", port_, "/metrics");
}

MetricsEndpoint::~MetricsEndpoint() {
  // mg_stop waits for civetweb's accept loop, which notices the request to
  // stop only when its poll returns: after up to 2 s (SOCKET_TIMEOUT_QUANTUM
  // in Debian's build), or at once when someone connects. Knocking keeps a
  // SIGTERM'd server's exit prompt.
  std::atomic<bool> stopped{false};
  std::thread stopper([this, &stopped] {
    mg_stop(context_);
    stopped = true;
  });
  const std::string knock_at = host_ == "0.0.0.0" ? "127.0.0.1" : host_;
  while (!stopped) {
    Knock(knock_at, port_);
    absl::SleepFor(absl::Milliseconds(5));
  }
  stopper.join();
}

}  // namespace ptoserve
