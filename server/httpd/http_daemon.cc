#include "server/httpd/http_daemon.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/mutex.h"
#include "server/httpd/host_check.h"
#include "server/httpd/socket_address.h"

namespace ptoserve {

namespace {

// Bytes of a body read (and dropped) after its request was answered early;
// more and the connection is closed unanswered.
constexpr uint64_t kMaxDropped = 1 << 20;
// How often the watch looks for connections too slow.
constexpr absl::Duration kWatchPeriod = absl::Milliseconds(250);

}  // namespace

// A connection's timing, as the watch sees it; guarded by the daemon's mu_.
struct HttpDaemon::Connection {
  uint64_t id = 0;
  int fd = -1;
  std::string client;        // who, found at accept; never changes
  sockaddr_storage local{};  // the address the client reached
  bool in_head = true;       // waiting for a request's head, since:
  absl::Time ready_since;
  bool in_body = false;  // taking a body, since its head:
  absl::Time body_since;
  uint64_t body_bytes = 0;
  bool cut = false;  // closed by the daemon: too slow, or over a cap
  // The request waiting for its answer, while the connection is suspended.
  std::shared_ptr<Exchange> waiting;
  // The handler's, on the connection's thread only.
  std::shared_ptr<void> handler_state;
};

struct HttpDaemon::Exchange final : HttpExchange {
  Exchange(HttpDaemon* daemon, MHD_Connection* c, Connection* connection,
           absl::string_view method, absl::string_view path)
      : daemon(daemon),
        c(c),
        connection(connection),
        method_(method),
        path_(path),
        start_(absl::Now()) {}

  absl::string_view method() const override { return method_; }
  absl::string_view path() const override { return path_; }
  absl::string_view header(const char* name) const override {
    const char* v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v == nullptr ? absl::string_view() : absl::string_view(v);
  }
  absl::string_view query(const char* name) const override {
    const char* v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
    return v == nullptr ? absl::string_view() : absl::string_view(v);
  }
  bool host_allowed() const override { return host_allowed_; }
  int socket() const override { return connection->fd; }
  const std::string& client() const override { return connection->client; }
  std::shared_ptr<void>& connection_state() override {
    return connection->handler_state;
  }
  absl::Time start() const override { return start_; }
  bool gone() const override { return gone_.load(std::memory_order_acquire); }
  int status() const override {
    return status_.load(std::memory_order_relaxed);
  }
  uint64_t bytes_received() const override { return received; }
  uint64_t bytes_sent() const override {
    return sent_bytes_.load(std::memory_order_relaxed);
  }

  void Respond(HttpResponse response) override {
    MutexLock lock(&mu);
    if (answer.has_value() || ended) return;
    answer = std::move(response);
    if (suspended) {
      suspended = false;
      {
        MutexLock watch(&daemon->mu_);
        daemon->WatchSuspended(connection, false);
      }
      MHD_resume_connection(c);
    }
  }

  // Hands the answer to libmicrohttpd. On the connection's thread.
  MHD_Result Queue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto* text = new std::string(std::move(answer->body));
    MHD_Response* r = MHD_create_response_from_buffer_with_free_callback_cls(
        text->size(), text->data(),
        [](void* owned) { delete static_cast<std::string*>(owned); }, text);
    MHD_add_response_header(r, "Content-Type", answer->content_type.c_str());
    for (const auto& [name, value] : answer->headers) {
      MHD_add_response_header(r, name.c_str(), value.c_str());
    }
    const MHD_Result queued = MHD_queue_response(c, answer->status, r);
    MHD_destroy_response(r);
    status_.store(answer->status, std::memory_order_relaxed);
    sent_bytes_.store(text->size(), std::memory_order_relaxed);
    sent = true;
    return queued;
  }

  HttpDaemon* const daemon;
  MHD_Connection* const c;
  Connection* const connection;
  const std::string method_;
  const std::string path_;
  const absl::Time start_;
  bool host_allowed_ = false;
  // The connection's thread's own.
  bool completed = false;  // OnComplete ran
  bool sent = false;       // the answer was handed to libmicrohttpd
  uint64_t dropped = 0;    // body bytes dropped after an early answer
  uint64_t received = 0;   // body bytes received

  absl::Mutex mu;
  std::optional<HttpResponse> answer ABSL_GUARDED_BY(mu);
  bool suspended ABSL_GUARDED_BY(mu) = false;
  bool ended ABSL_GUARDED_BY(mu) = false;
  std::atomic<bool> gone_{false};
  std::atomic<int> status_{0};
  std::atomic<uint64_t> sent_bytes_{0};
};

struct HttpDaemonCallbacks {
  using Exchange = HttpDaemon::Exchange;
  using Connection = HttpDaemon::Connection;

  static Connection* ConnectionOf(MHD_Connection* c) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return static_cast<Connection*>(info->socket_context);
  }

  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url,
                              const char* method, const char* /*version*/,
                              const char* upload, size_t* upload_size,
                              void** state) {
    auto* d = static_cast<HttpDaemon*>(cls);
    if (*state == nullptr) return Head(d, c, url, method, state);
    const std::shared_ptr<Exchange>& ex =
        *static_cast<std::shared_ptr<Exchange>*>(*state);
    if (ex->sent) return MHD_YES;
    if (*upload_size > 0) {
      const size_t n = std::exchange(*upload_size, 0);
      ex->received += n;
      {
        MutexLock lock(&d->mu_);
        ex->connection->body_bytes += n;
      }
      bool answered;
      {
        MutexLock lock(&ex->mu);
        answered = ex->answer.has_value();
      }
      if (answered) {
        ex->dropped += n;
        return ex->dropped <= kMaxDropped ? MHD_YES : MHD_NO;
      }
      d->handler_->OnBody(ex, absl::string_view(upload, n));
      return MHD_YES;
    }
    {
      MutexLock lock(&d->mu_);
      ex->connection->in_body = false;
    }
    if (!ex->completed) {
      ex->completed = true;
      bool answered;
      {
        MutexLock lock(&ex->mu);
        answered = ex->answer.has_value();
      }
      if (!answered) d->handler_->OnComplete(ex);
    }
    MutexLock lock(&ex->mu);
    if (ex->answer.has_value()) return ex->Queue();
    // Answered later, from another thread; watched meanwhile.
    ex->suspended = true;
    MHD_suspend_connection(c);
    MutexLock watch(&d->mu_);
    ex->connection->waiting = ex;
    d->WatchSuspended(ex->connection, true);
    return MHD_YES;
  }

  static MHD_Result Head(HttpDaemon* d, MHD_Connection* c, const char* url,
                         const char* method, void** state) {
    Connection* connection = ConnectionOf(c);
    auto ex = std::make_shared<Exchange>(d, c, connection, method, url);
    ex->host_allowed_ = HostAllowed(ex->header("Host"), connection->local,
                                    d->options_.allowed_hosts);
    {
      MutexLock lock(&d->mu_);
      connection->in_head = false;
      connection->in_body = true;
      connection->body_since = absl::Now();
      connection->body_bytes = 0;
    }
    *state = new std::shared_ptr<Exchange>(ex);
    d->handler_->OnHead(ex);
    MutexLock lock(&ex->mu);
    // Answered on its head: the body is never read.
    if (ex->answer.has_value()) return ex->Queue();
    return MHD_YES;
  }

  static void OnCompleted(void* cls, MHD_Connection* /*c*/, void** state,
                          MHD_RequestTerminationCode /*how*/) {
    auto* d = static_cast<HttpDaemon*>(cls);
    auto* slot = static_cast<std::shared_ptr<Exchange>*>(*state);
    if (slot == nullptr) return;
    *state = nullptr;
    const std::shared_ptr<Exchange> ex = std::move(*slot);
    delete slot;
    {
      MutexLock lock(&ex->mu);
      ex->ended = true;
    }
    {
      MutexLock lock(&d->mu_);
      Connection* connection = ex->connection;
      connection->in_head = true;
      connection->in_body = false;
      connection->ready_since = absl::Now();
      connection->waiting = nullptr;
    }
    d->handler_->OnEnd(ex);
  }

  static void OnConnection(void* cls, MHD_Connection* c, void** socket_context,
                           MHD_ConnectionNotificationCode what) {
    auto* d = static_cast<HttpDaemon*>(cls);
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* connection = new Connection;
      connection->fd =
          MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)
              ->connect_fd;
      socklen_t length = sizeof(connection->local);
      getsockname(connection->fd,
                  reinterpret_cast<sockaddr*>(&connection->local), &length);
      connection->client = d->options_.client_of
                               ? d->options_.client_of(connection->fd)
                               : FarAddress(connection->fd);
      connection->ready_since = absl::Now();
      *socket_context = connection;
      d->stats_->connections.fetch_add(1, std::memory_order_relaxed);
      MutexLock lock(&d->mu_);
      connection->id = ++d->next_id_;
      d->connections_.push_back(connection);
      d->Admit(connection);
      return;
    }
    auto* connection = static_cast<Connection*>(*socket_context);
    if (connection == nullptr) return;
    d->caps_.Close(connection->id);
    d->stats_->connections.fetch_sub(1, std::memory_order_relaxed);
    // Before libmicrohttpd closes the descriptor: the watch never touches
    // a descriptor that may be another connection's by then.
    MutexLock lock(&d->mu_);
    d->WatchSuspended(connection, false);
    d->connections_.erase(
        std::find(d->connections_.begin(), d->connections_.end(), connection));
    delete connection;
    *socket_context = nullptr;
  }
};

HttpDaemon::HttpDaemon(const HttpDaemonOptions& options, HttpHandler* handler)
    : options_(options),
      handler_(handler),
      caps_(options.max_connections, options.max_connections_per_client) {}

void HttpDaemon::Admit(Connection* connection) {
  const ConnectionCaps::Admission admission =
      caps_.Open(connection->id, connection->client);
  if (!admission.admitted) {
    Close(connection);
    stats_->over_client.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!admission.evict.has_value()) return;
  for (Connection* other : connections_) {
    if (other->id != *admission.evict) continue;
    // Its request, if one waits for its answer, is told its client has
    // gone: its job is dropped.
    if (other->waiting != nullptr) {
      other->waiting->gone_.store(true, std::memory_order_release);
      WatchSuspended(other, false);
    }
    Close(other);
    stats_->evicted.fetch_add(1, std::memory_order_relaxed);
  }
}

void HttpDaemon::Close(Connection* connection) {
  // libmicrohttpd sees the connection end, and closes it.
  shutdown(connection->fd, SHUT_RDWR);
  connection->cut = true;
}

HttpDaemon::~HttpDaemon() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
  if (watcher_ != nullptr) {
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    const char byte = 0;
    (void)!write(wake_[1], &byte, 1);
    watcher_->join();
  }
  for (int fd : {epoll_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<HttpDaemon>> HttpDaemon::Start(
    const HttpDaemonOptions& options, HttpHandler* handler) {
  absl::StatusOr<sockaddr_storage> address =
      Resolve(options.address, options.flag);
  if (!address.ok()) return address.status();
  std::unique_ptr<HttpDaemon> d(new HttpDaemon(options, handler));
  d->epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (d->epoll_ < 0 || pipe2(d->wake_, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot serve ", options.flag, ": ", strerror(errno)));
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = 0;  // no connection's id
  epoll_ctl(d->epoll_, EPOLL_CTL_ADD, d->wake_[0], &wake);
  const bool tls = !options.tls_cert_pem.empty();
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
  if (address->ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  if (tls) flags |= MHD_USE_TLS;
  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_SOCK_ADDR, 0, &*address},
      {MHD_OPTION_THREAD_POOL_SIZE, options.threads, nullptr},
      // The caps are the daemon's own (Admit), by client; libmicrohttpd's
      // bound only keeps room for the connections they close to finish
      // closing.
      {MHD_OPTION_CONNECTION_LIMIT, options.max_connections + 256, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT,
       static_cast<intptr_t>(
           std::max<int64_t>(1, absl::ToInt64Seconds(options.idle_timeout))),
       nullptr},
      {MHD_OPTION_NOTIFY_COMPLETED,
       reinterpret_cast<intptr_t>(&HttpDaemonCallbacks::OnCompleted), d.get()},
      {MHD_OPTION_NOTIFY_CONNECTION,
       reinterpret_cast<intptr_t>(&HttpDaemonCallbacks::OnConnection), d.get()},
  };
  if (tls) {
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0,
                     const_cast<char*>(d->options_.tls_key_pem.c_str())});
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0,
                     const_cast<char*>(d->options_.tls_cert_pem.c_str())});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});
  d->daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr,
                                &HttpDaemonCallbacks::OnRequest, d.get(),
                                MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (d->daemon_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot serve ", options.flag,
                                               "=", options.address, ": ",
                                               WhyNotListening(*address)));
  }
  d->port_ = MHD_get_daemon_info(d->daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  d->watcher_ = std::make_unique<std::thread>([d = d.get()] { d->Watch(); });
  return d;
}

std::string HttpDaemon::url() const {
  const size_t colon = options_.address.rfind(':');
  return absl::StrCat(options_.tls_cert_pem.empty() ? "http" : "https", "://",
                      options_.address.substr(0, colon), ":", port_);
}

void HttpDaemon::WatchSuspended(Connection* connection, bool on) {
  if (!on) {
    if (connection->waiting != nullptr) {
      epoll_ctl(epoll_, EPOLL_CTL_DEL, connection->fd, nullptr);
      connection->waiting = nullptr;
    }
    return;
  }
  // The client's end closing (EPOLLRDHUP), or the connection failing: not
  // its sending more (a pipelined request waits in the socket).
  epoll_event event{};
  event.events = EPOLLRDHUP;
  event.data.u64 = connection->id;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, connection->fd, &event);
}

void HttpDaemon::Watch() {
  epoll_event events[64];
  for (;;) {
    const int n =
        epoll_wait(epoll_, events, 64, absl::ToInt64Milliseconds(kWatchPeriod));
    MutexLock lock(&mu_);
    if (stopping_) return;
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      for (Connection* connection : connections_) {
        if (connection->id != id || connection->waiting == nullptr) continue;
        connection->waiting->gone_.store(true, std::memory_order_release);
        // Once: the closed end stays readable.
        epoll_ctl(epoll_, EPOLL_CTL_DEL, connection->fd, nullptr);
        connection->waiting = nullptr;
      }
    }
    const absl::Time now = absl::Now();
    for (Connection* connection : connections_) {
      if (connection->cut) continue;
      const bool slow_head =
          connection->in_head &&
          now - connection->ready_since > options_.head_timeout;
      const bool slow_body =
          connection->in_body &&
          now - connection->body_since >
              options_.head_timeout +
                  absl::Seconds(static_cast<double>(connection->body_bytes) /
                                std::max<uint64_t>(1, options_.min_body_rate));
      if (slow_head || slow_body) {
        Close(connection);
        stats_->too_slow.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

}  // namespace ptoserve
