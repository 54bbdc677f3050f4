#include "server/identity/socket_owner.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ptoserve {

std::array<uint8_t, 16> MappedV4(const in_addr& v4) {
  std::array<uint8_t, 16> a{};
  a[10] = a[11] = 0xff;
  std::memcpy(a.data() + 12, &v4, 4);
  return a;
}

// One end of the connected socket `fd`, as `name` (getpeername: the far
// end; getsockname: the near one) gives it, when it is a TCP one.
std::optional<Endpoint> EndOf(int fd, int (*name)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage ss{};
  socklen_t n = sizeof(ss);
  if (name(fd, reinterpret_cast<sockaddr*>(&ss), &n) != 0) {
    return std::nullopt;
  }
  Endpoint e;
  if (ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    e.address = MappedV4(in.sin_addr);
    e.port = ntohs(in.sin_port);
    return e;
  }
  if (ss.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(e.address.data(), &in6.sin6_addr, 16);
    e.port = ntohs(in6.sin6_port);
    return e;
  }
  return std::nullopt;
}

std::optional<Endpoint> FarEnd(int fd) { return EndOf(fd, &getpeername); }
std::optional<Endpoint> NearEnd(int fd) { return EndOf(fd, &getsockname); }

bool IsMappedV4(const Endpoint& e) {
  return std::all_of(e.address.begin(), e.address.begin() + 10,
                     [](uint8_t b) { return b == 0; }) &&
         e.address[10] == 0xff && e.address[11] == 0xff;
}

// The user that owns this host's TCP socket whose own end is `local` and
// whose far end is `remote`: asked of the kernel for that one socket
// (sock_diag over netlink, as ss(8) asks), so its cost does not grow with
// the sockets the host has, as reading /proc/net/tcp's does. nullopt when
// the kernel has none (or cannot be asked).
std::optional<uid_t> OwnerOfSocket(const Endpoint& local,
                                   const Endpoint& remote) {
  const int nl =
      socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof(ask);
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST;
  const bool v4 = IsMappedV4(local) && IsMappedV4(remote);
  ask.request.sdiag_family = v4 ? AF_INET : AF_INET6;
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = ~0u;
  inet_diag_sockid& id = ask.request.id;
  id.idiag_sport = htons(local.port);
  id.idiag_dport = htons(remote.port);
  if (v4) {
    std::memcpy(id.idiag_src, local.address.data() + 12, 4);
    std::memcpy(id.idiag_dst, remote.address.data() + 12, 4);
  } else {
    std::memcpy(id.idiag_src, local.address.data(), 16);
    std::memcpy(id.idiag_dst, remote.address.data(), 16);
  }
  id.idiag_cookie[0] = id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  std::optional<uid_t> owner;
  if (sendto(nl, &ask, sizeof(ask), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) == static_cast<ssize_t>(sizeof(ask))) {
    alignas(nlmsghdr) char answer[1024];
    const ssize_t n = recv(nl, answer, sizeof(answer), 0);
    const auto* reply = reinterpret_cast<const nlmsghdr*>(answer);
    if (n >= static_cast<ssize_t>(sizeof(nlmsghdr)) &&
        NLMSG_OK(reply, static_cast<size_t>(n)) &&
        reply->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
        reply->nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
      owner = static_cast<const inet_diag_msg*>(NLMSG_DATA(reply))->idiag_uid;
    }
  }
  close(nl);
  return owner;
}

// The user that owns the far end of this process's connected TCP socket
// `fd`, when that end is on this host.
std::optional<uid_t> OwnerOfFarEnd(int fd) {
  const std::optional<Endpoint> far = FarEnd(fd);
  const std::optional<Endpoint> near = NearEnd(fd);
  if (!far.has_value() || !near.has_value()) return std::nullopt;
  return OwnerOfSocket(*far, *near);
}

std::string PeerName(int fd) {
  sockaddr_storage ss{};
  socklen_t n = sizeof(ss);
  char host[NI_MAXHOST] = "";
  char port[NI_MAXSERV] = "";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &n) != 0 ||
      getnameinfo(reinterpret_cast<sockaddr*>(&ss), n, host, sizeof host, port,
                  sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "";
  }
  return ss.ss_family == AF_INET6 ? absl::StrCat("ipv6:[", host, "]:", port)
                                  : absl::StrCat("ipv4:", host, ":", port);
}

}  // namespace ptoserve
