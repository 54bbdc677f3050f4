#include "server/httpd/host_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace ptoserve {

namespace {

// The host of a Host header's value, in lower case: its port and an IPv6
// literal's brackets taken off.
std::string HostName(absl::string_view value) {
  if (absl::StartsWith(value, "[")) {
    const size_t end = value.find(']');
    return absl::AsciiStrToLower(value.substr(
        1, end == absl::string_view::npos ? value.size() - 1 : end - 1));
  }
  const size_t colon = value.rfind(':');
  if (colon != absl::string_view::npos) value = value.substr(0, colon);
  return absl::AsciiStrToLower(value);
}

// Whether `host` is an IP literal for the address `local` (an IPv4 one
// also as IPv4-mapped IPv6).
bool IsAddress(const std::string& host, const sockaddr_storage& local) {
  in6_addr want{};
  if (local.ss_family == AF_INET) {
    const in_addr& v4 = reinterpret_cast<const sockaddr_in&>(local).sin_addr;
    want.s6_addr[10] = want.s6_addr[11] = 0xff;
    std::memcpy(want.s6_addr + 12, &v4, 4);
  } else if (local.ss_family == AF_INET6) {
    want = reinterpret_cast<const sockaddr_in6&>(local).sin6_addr;
  } else {
    return false;
  }
  in6_addr got{};
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    got.s6_addr[10] = got.s6_addr[11] = 0xff;
    std::memcpy(got.s6_addr + 12, &v4, 4);
  } else if (inet_pton(AF_INET6, host.c_str(), &got) != 1) {
    return false;
  }
  return std::memcmp(&got, &want, sizeof(got)) == 0;
}

}  // namespace

bool HostAllowed(absl::string_view host_header, const sockaddr_storage& local,
                 const std::vector<std::string>& allowed) {
  const std::string host = HostName(host_header);
  // HTTP/1.1 requires a Host (libmicrohttpd refuses one without); a
  // browser always sends one.
  return host.empty() || host == "localhost" || IsAddress(host, local) ||
         std::find(allowed.begin(), allowed.end(), host) != allowed.end() ||
         std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
}

}  // namespace ptoserve
