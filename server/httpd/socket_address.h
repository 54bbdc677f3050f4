// The socket addresses an HTTP server deals in: the one it listens on,
// given as text, why it cannot, and the client's at a connection's far end.
#ifndef PTOSERVE_SERVER_HTTPD_SOCKET_ADDRESS_H_
#define PTOSERVE_SERVER_HTTPD_SOCKET_ADDRESS_H_

#include <sys/socket.h>

#include <string>

#include "absl/status/statusor.h"

namespace ptoserve {

// `address` ("IP:PORT", "[IPv6]:PORT") as a socket address; numeric only.
// INVALID_ARGUMENT naming `flag` otherwise.
absl::StatusOr<sockaddr_storage> Resolve(const std::string& address,
                                         const std::string& flag);

// Why `address` cannot be listened on, found by trying: "the address is
// already in use" rather than libmicrohttpd's silence.
std::string WhyNotListening(const sockaddr_storage& address);

// The address at the far end of `fd`, as a client: "address 192.0.2.7",
// an IPv6 one by its /64 ("address 2001:db8::/64").
std::string FarAddress(int fd);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTPD_SOCKET_ADDRESS_H_
