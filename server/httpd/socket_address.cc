#include "server/httpd/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ptoserve {

absl::StatusOr<sockaddr_storage> Resolve(const std::string& address,
                                         const std::string& flag) {
  const size_t colon = address.rfind(':');
  const auto unparsable = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", address,
                     " is not IP:PORT with a numeric IP, e.g. 127.0.0.1:8000"));
  };
  if (colon == std::string::npos || colon == 0) return unparsable();
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), address.substr(colon + 1).c_str(), &hints,
                  &found) != 0) {
    return unparsable();
  }
  sockaddr_storage out{};
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  return out;
}

std::string WhyNotListening(const sockaddr_storage& address) {
  const socklen_t length = address.ss_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                         : sizeof(sockaddr_in);
  std::string why = "it could not be listened on";
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
      why = errno == EADDRINUSE
                ? "the address is already in use (another server, or an "
                  "earlier one still running?)"
                : absl::StrCat("it is not an address of this host (bind: ",
                               std::strerror(errno), ")");
    }
    close(fd);
  }
  return why;
}

std::string FarAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t n = sizeof(ss);
  char text[INET6_ADDRSTRLEN] = "";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &n) != 0) {
    return "unknown";
  }
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(ss).sin_addr, text,
              sizeof text);
    return absl::StrCat("address ", text);
  }
  in6_addr a = reinterpret_cast<sockaddr_in6&>(ss).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof text);
    return absl::StrCat("address ", text);
  }
  std::memset(&a.s6_addr[8], 0, 8);
  inet_ntop(AF_INET6, &a, text, sizeof text);
  return absl::StrCat("address ", text, "/64");
}

}  // namespace ptoserve
