#include "server/address.h"

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

}  // namespace ptoserve
