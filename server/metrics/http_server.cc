#include "server/metrics/http_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ptoserve {

namespace {

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

// Why `address` cannot be listened on, found by trying: "address already in
// use" rather than civetweb's "Failed to setup server ports".
std::string WhyNotListening(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return "it is not IP:PORT";
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(colon == 0 ? nullptr : address.substr(0, colon).c_str(),
                  address.substr(colon + 1).c_str(), &hints, &found) != 0) {
    return "it is not IP:PORT with a numeric IP, e.g. 127.0.0.1:9464";
  }
  std::string why = "it could not be listened on";
  const int fd = socket(found->ai_family, found->ai_socktype, 0);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      why = errno == EADDRINUSE ? "the address is already in use (another "
                                  "server, or an earlier one still running?)"
                                : absl::StrCat("bind: ", std::strerror(errno));
    }
    close(fd);
  }
  freeaddrinfo(found);
  return why;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& address,
    const std::vector<std::pair<std::string, std::string>>& options,
    const std::string& flag) {
  // Once per process; civetweb counts the calls, so a second is harmless.
  mg_init_library(0);
  std::vector<const char*> pointers = {"listening_ports", address.c_str()};
  for (const auto& [name, value] : options) {
    pointers.push_back(name.c_str());
    pointers.push_back(value.c_str());
  }
  pointers.push_back(nullptr);
  mg_callbacks callbacks{};
  mg_init_data init{&callbacks, nullptr, pointers.data()};
  char error[256] = "";
  unsigned code = 0;
  mg_error_data error_data{&code, error, sizeof error};
  mg_context* context = mg_start2(&init, &error_data);
  if (context == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve ", flag, "=", address, ": ",
                     WhyNotListening(address), " (civetweb: ", error, ")"));
  }
  mg_server_port port{};
  mg_get_server_ports(context, 1, &port);
  // A bare port listens on every interface.
  const size_t colon = address.rfind(':');
  std::string host =
      colon == std::string::npos ? "0.0.0.0" : address.substr(0, colon);
  return std::unique_ptr<HttpServer>(
      new HttpServer(context, std::move(host), port.port));
}

void HttpServer::Handle(const std::string& uri, Handler handler, void* data) {
  mg_set_request_handler(context_, uri.c_str(), handler, data);
}

HttpServer::~HttpServer() {
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
