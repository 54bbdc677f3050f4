#include "server/transport/listener.h"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/connection_caps.h"
#include "server/identity/peer_credentials.h"
#include "server/transport/address.h"

namespace ptoserve {

namespace {

// What every HTTP/2 client sends first (RFC 9113, section 3.4).
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr int kPrefaceBytes = sizeof(kPreface) - 1;

absl::Status Unavailable(const std::string& address, const std::string& why) {
  return absl::UnavailableError(
      absl::StrCat("cannot listen on ", address, ": ", why));
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// A connection the listener took, until it is found closed: descriptor
// `fd` is then no longer this socket (`inode`), or no longer established.
struct Taken {
  int fd;
  ino_t inode;
  bool Open() const {
    struct stat st;
    tcp_info info{};
    socklen_t n = sizeof(info);
    return fstat(fd, &st) == 0 && st.st_ino == inode &&
           getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &n) == 0 &&
           info.tcpi_state == TCP_ESTABLISHED;
  }
};

// The connections taken, counted by client while caps bound them.
class TakenByClient {
 public:
  TakenByClient(const ListenerOptions& options, ListenerStats* stats)
      : caps_(options.max_total, options.max_per_client), stats_(stats) {}

  // Whether connection `fd` of `client` may be kept; when all are taken,
  // another one is shut down for it (gRPC, or the wait for its preface,
  // then finds it closed).
  bool Admit(int fd, const std::string& client) {
    const uint64_t id = ++next_id_;
    ConnectionCaps::Admission admission = caps_.Open(id, client);
    if (!admission.admitted && absl::Now() - tidied_ > kTidyPeriod) {
      // Some of those counted may have closed since: look, and ask again.
      Tidy();
      admission = caps_.Open(id, client);
    }
    if (!admission.admitted) {
      stats_->over_client.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (admission.evict.has_value()) {
      auto it = taken_.find(*admission.evict);
      if (it != taken_.end() && it->second.Open()) {
        shutdown(it->second.fd, SHUT_RDWR);
        stats_->evicted.fetch_add(1, std::memory_order_relaxed);
      }
      if (it != taken_.end()) taken_.erase(it);
    }
    struct stat st;
    taken_[id] = {fd, fstat(fd, &st) == 0 ? st.st_ino : 0};
    if (taken_.size() >= tidy_at_) {
      Tidy();
      tidy_at_ = std::max<size_t>(64, 2 * taken_.size());
    }
    return true;
  }

 private:
  // At most this often a refusal looks through every connection taken for
  // closed ones (a client refused again and again costs no more).
  static constexpr absl::Duration kTidyPeriod = absl::Milliseconds(100);

  void Tidy() {
    tidied_ = absl::Now();
    for (auto it = taken_.begin(); it != taken_.end();) {
      auto at = it++;
      if (!at->second.Open()) {
        caps_.Close(at->first);
        taken_.erase(at);
      }
    }
  }

  ConnectionCaps caps_;
  ListenerStats* const stats_;
  absl::flat_hash_map<uint64_t, Taken> taken_;
  uint64_t next_id_ = 0;
  size_t tidy_at_ = 64;
  absl::Time tidied_ = absl::InfinitePast();
};

// The soft limit on open files, or a large number if there is none.
int OpenFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 ||
      limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1 << 30)) {
    return 1 << 30;
  }
  return static_cast<int>(limit.rlim_cur);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Listener>> Listener::Bind(
    const std::string& address, const ListenerOptions& options) {
  absl::StatusOr<AddrInfoList> resolved = ResolveListenAddress(address);
  if (!resolved.ok()) {
    return Unavailable(address, std::string(resolved.status().message()));
  }
  addrinfo* found = resolved->get();
  bool has_v4 = false;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    has_v4 |= a->ai_family == AF_INET;
  }
  std::vector<int> fds;
  int bound_port = 0;
  std::string why;
  for (addrinfo* a = found; a != nullptr && why.empty(); a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    const int fd =
        socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      why = std::strerror(errno);
      break;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (a->ai_family == AF_INET6 && has_v4) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    }
    // Port 0 picks one port, shared by every address.
    if (bound_port != 0) {
      reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_port = htons(bound_port);
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      why = std::strerror(errno);
      close(fd);
      break;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    bound_port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    fds.push_back(fd);
  }
  if (!why.empty() || fds.empty()) {
    CloseAll(fds);
    return Unavailable(address, why.empty() ? "no IPv4 or IPv6 address" : why);
  }
  return std::unique_ptr<Listener>(
      new Listener(std::move(fds), bound_port, options));
}

Listener::Listener(std::vector<int> fds, int port,
                   const ListenerOptions& options)
    : fds_(std::move(fds)), port_(port), options_(options) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

Listener::~Listener() {
  Stop();
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

void Listener::Start(grpc::Server* server) {
  thread_ = std::thread([this, server] { Run(server); });
}

void Listener::Stop() {
  if (thread_.joinable()) {
    const char byte = 0;
    (void)!write(wake_[1], &byte, 1);
    thread_.join();
  }
  CloseAll(fds_);
  fds_.clear();
}

namespace {

// A connection accepted, waiting for its preface until `deadline`.
struct Pending {
  int fd;
  absl::Time deadline;
};

// What the listener's thread keeps between polls.
struct Acceptor {
  Acceptor(const ListenerOptions& options, ListenerStats* stats)
      : options(options),
        stats(stats),
        taken(options, stats),
        capped(options.max_per_client > 0 || options.max_total > 0) {}
  ~Acceptor() {
    for (const Pending& p : pending) close(p.fd);
    if (spare >= 0) close(spare);
  }

  const ListenerOptions& options;
  ListenerStats* const stats;
  TakenByClient taken;
  const bool capped;
  const int fd_limit = OpenFileLimit();
  // Held to be closed when descriptors run out, making room for one.
  int spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::deque<Pending> pending;  // oldest first, so deadlines ascend
};

void Drop(int fd, std::atomic<uint64_t>* counter) {
  close(fd);
  counter->fetch_add(1, std::memory_order_relaxed);
}

// The waiting connections that sent something (SO_RCVLOWAT: the whole
// preface), closed or failed, as `polled` says in `pending`'s order: each
// handed to gRPC with its preface whole, or dropped when it is not HTTP/2;
// then those past their deadline are dropped.
void TakePrefaces(grpc::Server* server, const pollfd* polled, Acceptor* a) {
  std::deque<Pending> still;
  for (size_t i = 0; i < a->pending.size(); ++i) {
    const Pending& p = a->pending[i];
    if (polled[i].revents == 0) {
      still.push_back(p);
      continue;
    }
    char head[kPrefaceBytes];
    const ssize_t n = recv(p.fd, head, sizeof(head), MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      still.push_back(p);
    } else if (n == kPrefaceBytes && std::memcmp(head, kPreface, n) == 0) {
      const int one = 1;
      setsockopt(p.fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
      grpc::AddInsecureChannelFromFd(server, p.fd);
      a->stats->accepted.fetch_add(1, std::memory_order_relaxed);
    } else if (n > 0 && n < kPrefaceBytes &&
               std::memcmp(head, kPreface, n) == 0) {
      still.push_back(p);  // the rest is on its way
    } else {
      Drop(p.fd, &a->stats->rejected);  // not HTTP/2, closed or failed
    }
  }
  a->pending.swap(still);
  const absl::Time now = absl::Now();
  while (!a->pending.empty() && a->pending.front().deadline <= now) {
    Drop(a->pending.front().fd, &a->stats->timed_out);
    a->pending.pop_front();
  }
}

// Accepts every connection waiting on `listening`: each counted by its
// client and set to wait for its preface, or shed.
void AcceptAll(int listening, Acceptor* a) {
  for (;;) {
    const int fd =
        accept4(listening, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && a->spare >= 0) {
        // Out of descriptors: free the spare to take the connection off
        // the queue, close it, and take the spare back.
        close(a->spare);
        const int shed = accept4(listening, nullptr, nullptr, SOCK_CLOEXEC);
        if (shed >= 0) Drop(shed, &a->stats->shed);
        a->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
        continue;
      }
      return;  // EAGAIN: all taken (or an error the next poll retries)
    }
    if (fd >= a->fd_limit - a->options.reserve_fds) {
      Drop(fd, &a->stats->shed);
      continue;
    }
    // Who the client is, asked once a connection (a sock_diag query on
    // loopback), and remembered for its calls: whatever a call on an
    // earlier connection with this descriptor number was found to be is
    // not this one's (PeerClient, CachedPeerUid).
    const std::string client = SocketClient(fd);
    if (a->capped && !a->taken.Admit(fd, client)) {
      close(fd);
      continue;
    }
    NewConnectionOnDescriptor(fd, client);
    if (a->pending.size() >= a->options.max_pending) {
      Drop(a->pending.front().fd, &a->stats->shed);
      a->pending.pop_front();
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const int preface = kPrefaceBytes;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &preface, sizeof(preface));
    a->pending.push_back({fd, absl::Now() + a->options.handshake_timeout});
  }
}

}  // namespace

void Listener::Run(grpc::Server* server) {
  Acceptor acceptor(options_, &stats_);
  std::vector<pollfd> polled;
  for (;;) {
    // The wake pipe, the listening sockets, then the waiting connections.
    polled.clear();
    polled.push_back({wake_[0], POLLIN, 0});
    for (int fd : fds_) polled.push_back({fd, POLLIN, 0});
    for (const Pending& p : acceptor.pending) {
      polled.push_back({p.fd, POLLIN, 0});
    }
    int timeout_ms = -1;
    if (!acceptor.pending.empty()) {
      timeout_ms = static_cast<int>(std::max<int64_t>(
          0, absl::ToInt64Milliseconds(acceptor.pending.front().deadline -
                                       absl::Now()) +
                 1));
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0 && errno != EINTR) {
      return;
    }
    if (polled[0].revents != 0) return;  // Stop
    TakePrefaces(server, polled.data() + 1 + fds_.size(), &acceptor);
    for (size_t l = 0; l < fds_.size(); ++l) {
      if (polled[1 + l].revents != 0) AcceptAll(fds_[l], &acceptor);
    }
  }
}

}  // namespace ptoserve
