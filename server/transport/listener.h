// A TCP listener for a plaintext gRPC server that accepts connections
// itself and hands each to gRPC (grpc::AddInsecureChannelFromFd) once it
// has sent the HTTP/2 connection preface. It exists because gRPC 1.51's
// own listener stops accepting for good after one accept() fails for want
// of file descriptors (EMFILE), and holds connections that send nothing
// for two minutes. This one:
//   - never stops: when descriptors run out it sheds the connection it
//     could not take (a spare descriptor makes room to accept and close
//     it), and it closes new connections while the process is within
//     `reserve_fds` of its open-file limit, so that gRPC keeps descriptors
//     for the connections it already serves;
//   - closes a connection that has not sent the preface within
//     `handshake_timeout`, or that sends something else, and holds at most
//     `max_pending` such connections at once (the oldest goes first);
//   - counts connections by client (common/connection_caps.h; the client
//     as the shares know it: the user of a loopback connection, else the
//     address, an IPv6 /64 as one), waiting for their preface or gRPC's:
//     a client that has `max_per_client` open has its newcomer refused;
//     when `max_total` are open, the newest connection of the client
//     holding most is closed for a newcomer of another. One user on many
//     source addresses cannot take every descriptor while others wait.
#ifndef PTOSERVE_SERVER_TRANSPORT_LISTENER_H_
#define PTOSERVE_SERVER_TRANSPORT_LISTENER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ptoserve {

struct ListenerOptions {
  absl::Duration handshake_timeout = absl::Seconds(10);
  size_t max_pending = 1024;
  int reserve_fds = 64;
  // 0: no bound.
  int max_per_client = 0;
  int max_total = 0;
};

// What the listener has done, for metrics and tests.
struct ListenerStats {
  std::atomic<uint64_t> accepted{0};     // handed to gRPC
  std::atomic<uint64_t> shed{0};         // closed for want of descriptors
  std::atomic<uint64_t> timed_out{0};    // closed: no preface in time
  std::atomic<uint64_t> rejected{0};     // closed: not HTTP/2, or closed early
  std::atomic<uint64_t> over_client{0};  // closed: its client had enough
  std::atomic<uint64_t> evicted{0};      // closed for another client's newcomer
};

class Listener {
 public:
  // Binds and listens on every address HOST:PORT resolves to (port 0: a
  // free one, the same for all). UNAVAILABLE with the system's reason
  // ("Address already in use") if it cannot.
  static absl::StatusOr<std::unique_ptr<Listener>> Bind(
      const std::string& address, const ListenerOptions& options);
  ~Listener();

  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // The port bound.
  int port() const { return port_; }

  // Starts accepting on a thread of its own; connections go to `server`.
  // REQUIRES: `server` outlives Stop() (or the listener).
  void Start(grpc::Server* server);
  // Stops accepting, closes connections not yet handed to gRPC and the
  // listening sockets (a client connecting from then on is refused at once,
  // rather than queued by the kernel and never served, so that it tries
  // elsewhere); returns once the thread has ended. Idempotent.
  void Stop();

  const ListenerStats& stats() const { return stats_; }

 private:
  Listener(std::vector<int> fds, int port, const ListenerOptions& options);
  void Run(grpc::Server* server);

  std::vector<int> fds_;  // listening sockets, until Stop
  const int port_;
  const ListenerOptions options_;
  int wake_[2] = {-1, -1};  // a pipe: Stop writes, Run wakes
  std::thread thread_;
  ListenerStats stats_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TRANSPORT_LISTENER_H_
