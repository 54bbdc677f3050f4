// ptoserve's one HTTP/1.1 server, on libmicrohttpd (Debian's
// libmicrohttpd12): the HTTP/JSON API and the Prometheus endpoint both run
// on it, so there is one set of connection limits and timeouts. A few
// threads poll every connection (epoll): an idle or slow connection holds a
// socket, never a thread. Each connection is bounded:
//   - in number: in all, and of one client (common/connection_caps.h: who
//     the client is, the server says: a local user, an address, an IPv6
//     /64); when all are taken, the newest connection of the client holding
//     most is closed for a newcomer, so that a probe always gets in;
//   - in time: an idle connection is closed; a request's head must arrive
//     whole within head_timeout of the connection being ready for it
//     (opened, or its last answer sent), and its body at min_body_rate on
//     average once past that same grace (as Apache's mod_reqtimeout): a
//     client that trickles is cut off, not waited for;
//   - while its request waits for an answer (the handler answers later, from
//     another thread), the connection is watched: a client that closes it
//     is noticed at once, and the request told it has gone.
// Each request's Host is checked against the names of the server (the
// address the connection reached, localhost, and allowed_hosts); a handler
// that serves browsers refuses those that name another (DNS rebinding).
#ifndef PTOSERVE_SERVER_HTTPD_HTTP_DAEMON_H_
#define PTOSERVE_SERVER_HTTPD_HTTP_DAEMON_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/connection_caps.h"

struct MHD_Connection;
struct MHD_Daemon;

namespace ptoserve {

struct HttpDaemonOptions {
  std::string address;  // IP:PORT, numeric; port 0 picks a free one
  // The flag that gave `address` ("--http_address"), named in errors. No
  // flag of its own: the server names the one that gave the address.
  std::string flag;
  // Threads that poll the connections (and run what handlers do there).
  int threads = 4;
  // Connections open at once, in all and of one client (client_of); past
  // the second a client's newcomer is refused at accept; past the first
  // the newest connection of the client holding most is closed for it.
  int max_connections = 1024;
  int max_connections_per_client = 64;
  // Who the client at the far end of a connection's socket is, asked once
  // a connection as it is accepted (on a polling thread); null: its
  // address (an IPv6 /64 as one). No flag: the server sets it, so that
  // every door means the same client.
  std::function<std::string(int fd)> client_of;
  // A connection that sends or reads nothing for this long is closed
  // (whole seconds).
  absl::Duration idle_timeout = absl::Seconds(15);
  // A request's head must arrive whole within this of the connection being
  // ready for it; its body, past the same grace, at min_body_rate bytes a
  // second on average. Otherwise the connection is closed.
  absl::Duration head_timeout = absl::Seconds(20);
  uint64_t min_body_rate = 16 << 10;
  // Host names a request may name besides localhost and the address its
  // connection reached (lower case; "*": any).
  std::vector<std::string> allowed_hosts;
  // HTTPS when `tls_cert_pem` is set (PEM text, with its key's). No flag:
  // the server reads them from ServerOptions::tls's files.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// What a handler answers.
struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

// One request. Its head (method, path, headers) is read on the thread that
// runs the handler's callbacks; Respond and gone may be called from any
// thread, for as long as the handler keeps it.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;

  virtual absl::string_view method() const = 0;
  virtual absl::string_view path() const = 0;
  // A header's value ("" when absent), or a query parameter's. In the
  // handler's callbacks only.
  virtual absl::string_view header(const char* name) const = 0;
  virtual absl::string_view query(const char* name) const = 0;
  // Whether its Host names this server (HttpDaemonOptions).
  virtual bool host_allowed() const = 0;
  // The client's socket, and who the client is (HttpDaemonOptions's
  // client_of), found as its connection was accepted.
  virtual int socket() const = 0;
  virtual const std::string& client() const = 0;
  // When its head had arrived.
  virtual absl::Time start() const = 0;

  // Answers it, once. In OnHead or OnBody, the rest of the body is read
  // and dropped (up to 1 MiB; past that the connection is closed
  // unanswered); from OnComplete on, or from another thread once
  // OnComplete has returned, the answer goes out.
  virtual void Respond(HttpResponse response) = 0;
  // Whether its client closed the connection while it waited for its
  // answer.
  virtual bool gone() const = 0;
  // The status answered; 0 when none was sent.
  virtual int status() const = 0;
  // The body's bytes received, and the answer's body's bytes handed to
  // the connection.
  virtual uint64_t bytes_received() const = 0;
  virtual uint64_t bytes_sent() const = 0;

  // What the handler keeps with its connection, across its requests (one
  // at a time). In the handler's callbacks only.
  virtual std::shared_ptr<void>& connection_state() = 0;

  // What the handler keeps with the request.
  std::shared_ptr<void> state;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  // The head has arrived. Respond to answer now (a GET, a refusal), or
  // return to take the body.
  virtual void OnHead(const std::shared_ptr<HttpExchange>& exchange) = 0;
  // A piece of the body, in order.
  virtual void OnBody(const std::shared_ptr<HttpExchange>& exchange,
                      absl::string_view piece) {}
  // The whole request is in. Respond now, or later from any thread: the
  // connection waits, watched, meanwhile.
  virtual void OnComplete(const std::shared_ptr<HttpExchange>& exchange) = 0;
  // The request is over: answered (status()), or its connection closed.
  virtual void OnEnd(const std::shared_ptr<HttpExchange>& exchange) {}
};

class HttpDaemon {
 public:
  // Serves `handler` (which must outlive the daemon) on options.address.
  // UNAVAILABLE naming the flag if it cannot listen there; INVALID_ARGUMENT
  // for an address it cannot parse.
  static absl::StatusOr<std::unique_ptr<HttpDaemon>> Start(
      const HttpDaemonOptions& options, HttpHandler* handler);
  // Stops listening and closes every connection. REQUIRES: every request
  // that waits has been answered.
  ~HttpDaemon();

  HttpDaemon(const HttpDaemon&) = delete;
  HttpDaemon& operator=(const HttpDaemon&) = delete;

  // "http://IP:PORT" (https with TLS), with the port actually bound.
  std::string url() const;
  int port() const { return port_; }

  // What it has served, readable after it is gone (a scrape may come late).
  struct Stats {
    std::atomic<int64_t> connections{0};  // open now
    std::atomic<uint64_t> too_slow{0};    // closed: head or body too slow
    // Closed at accept, their client having its cap; and closed for a
    // newcomer, their client holding the most.
    std::atomic<uint64_t> over_client{0};
    std::atomic<uint64_t> evicted{0};
  };
  std::shared_ptr<const Stats> stats() const { return stats_; }

  struct Connection;  // http_daemon.cc's
  struct Exchange;

 private:
  explicit HttpDaemon(const HttpDaemonOptions& options, HttpHandler* handler);
  friend struct HttpDaemonCallbacks;

  // Counts a connection just accepted against its client's cap and all's,
  // closing it, or another for it, when they are full.
  void Admit(Connection* connection) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes `connection` (libmicrohttpd finds it closed and ends it).
  void Close(Connection* connection) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The watch: cuts off connections too slow, notices clients gone.
  void Watch();
  void WatchSuspended(Connection* connection, bool on)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HttpDaemonOptions options_;
  HttpHandler* const handler_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  const std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();

  ConnectionCaps caps_;
  mutable absl::Mutex mu_;
  std::vector<Connection*> connections_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int epoll_ = -1;  // suspended connections, for their clients' going
  int wake_[2] = {-1, -1};
  std::unique_ptr<std::thread> watcher_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTPD_HTTP_DAEMON_H_
