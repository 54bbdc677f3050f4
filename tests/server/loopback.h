// Real loopback TCP connections for tests: a listener that names each
// accepted connection's peer as gRPC would, and a client that connects to
// it.
#ifndef PTOSERVE_TESTS_SERVER_LOOPBACK_H_
#define PTOSERVE_TESTS_SERVER_LOOPBACK_H_

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ptoserve {

// A listener on 127.0.0.1; AcceptPeer names the peer as gRPC would.
class LoopbackListener {
 public:
  LoopbackListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t n = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackListener() {
    for (int c : accepted_) close(c);
    close(fd_);
  }
  uint16_t port() const { return port_; }
  int last_accepted() const { return accepted_.back(); }
  void CloseLast() {
    close(accepted_.back());
    accepted_.pop_back();
  }

  // Accepts one connection; its peer as "ipv4:ADDRESS:PORT".
  std::string AcceptPeer() {
    sockaddr_in a{};
    socklen_t n = sizeof(a);
    const int c = accept(fd_, reinterpret_cast<sockaddr*>(&a), &n);
    EXPECT_GE(c, 0);
    accepted_.push_back(c);
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    return absl::StrCat("ipv4:", host, ":", ntohs(a.sin_port));
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::vector<int> accepted_;
};

// A client connected to `port` on 127.0.0.1; -1 if it could not.
inline int ConnectLoopback(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  return fd;
}

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_LOOPBACK_H_
