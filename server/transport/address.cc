#include "server/transport/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace ptoserve {

absl::StatusOr<AddrInfoList> ResolveListenAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::UnavailableError("expected HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(),
                           &hints, &found);
      rc != 0) {
    return absl::UnavailableError(gai_strerror(rc));
  }
  return AddrInfoList(found);
}

bool IsLoopbackAddress(const std::string& address) {
  absl::StatusOr<AddrInfoList> list = ResolveListenAddress(address);
  if (!list.ok()) return false;
  for (const addrinfo* a = list->get(); a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) return false;
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      const in6_addr& a = in6->sin6_addr;
      // ::1, or an IPv4 loopback address written as ::ffff:127.x.y.z.
      const bool mapped_loopback =
          IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
      if (!IN6_IS_ADDR_LOOPBACK(&a) && !mapped_loopback) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace ptoserve
