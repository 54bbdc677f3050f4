// One TCP socket's two ends, and the user that owns a socket of this host,
// asked of the kernel for that one socket (sock_diag over netlink, as ss(8)
// asks), so that the cost does not grow with the sockets the host has.
// PeerClient and PeerUid (peer_credentials.h) build on it.
#ifndef PTOSERVE_SERVER_IDENTITY_SOCKET_OWNER_H_
#define PTOSERVE_SERVER_IDENTITY_SOCKET_OWNER_H_

#include <netinet/in.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ptoserve {

// An IPv6 address (IPv4 ones as ::ffff:a.b.c.d) and a port.
struct Endpoint {
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;
  bool operator==(const Endpoint& o) const {
    return address == o.address && port == o.port;
  }
};

// `v4` as an IPv4-mapped IPv6 address.
std::array<uint8_t, 16> MappedV4(const in_addr& v4);

// The far and near ends of the connected socket `fd`, when it is a TCP one.
std::optional<Endpoint> FarEnd(int fd);
std::optional<Endpoint> NearEnd(int fd);

// gRPC's name for the far end of the connected socket `fd`
// ("ipv4:127.0.0.1:40112", "ipv6:[::1]:40112"); empty when it has none.
std::string PeerName(int fd);

// Whether `e`'s address is an IPv4 one (IPv4-mapped).
bool IsMappedV4(const Endpoint& e);

// The user that owns this host's TCP socket whose own end is `local` and
// whose far end is `remote`; nullopt when the kernel has none (or cannot be
// asked).
std::optional<uid_t> OwnerOfSocket(const Endpoint& local,
                                   const Endpoint& remote);

// The user that owns the far end of this process's connected TCP socket
// `fd`, when that end is on this host.
std::optional<uid_t> OwnerOfFarEnd(int fd);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_IDENTITY_SOCKET_OWNER_H_
