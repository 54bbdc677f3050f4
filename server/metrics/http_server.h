// An HTTP server on civetweb (Debian's libcivetweb): started on an address
// with a bounded number of threads and timeouts, and stopped promptly. The
// metrics endpoint runs one.
#ifndef PTOSERVE_SERVER_METRICS_HTTP_SERVER_H_
#define PTOSERVE_SERVER_METRICS_HTTP_SERVER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct mg_context;
struct mg_connection;

namespace ptoserve {

class HttpServer {
 public:
  // A handler: answers the request on `connection` and returns its HTTP
  // status. `data` is what was given with it.
  using Handler = int (*)(mg_connection* connection, void* data);

  // Listens on `address` (IP:PORT; port 0 picks a free port) with
  // civetweb's `options` (name, value pairs: threads, timeouts) beside
  // the address. UNAVAILABLE names `flag` (e.g. "--metrics_address") and why
  // it cannot listen there.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& address,
      const std::vector<std::pair<std::string, std::string>>& options,
      const std::string& flag);

  // Stops serving; requests in progress finish first. Takes milliseconds.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves `uri` (civetweb's pattern: "/metrics$" is exactly /metrics) with
  // `handler`; register before the first request that needs it.
  void Handle(const std::string& uri, Handler handler, void* data);

  const std::string& host() const { return host_; }
  int port() const { return port_; }

 private:
  HttpServer(mg_context* context, std::string host, int port)
      : context_(context), host_(std::move(host)), port_(port) {}

  mg_context* const context_;
  const std::string host_;  // as given; 0.0.0.0 for every interface
  const int port_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_METRICS_HTTP_SERVER_H_
