// HOST:PORT, resolved for a listening TCP socket: "127.0.0.1:0",
// "[::1]:50051", ":50051" (every interface). The gRPC server and the
// listener both bind what this returns.
#ifndef PTOSERVE_SERVER_TRANSPORT_ADDRESS_H_
#define PTOSERVE_SERVER_TRANSPORT_ADDRESS_H_

#include <netdb.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace ptoserve {

struct FreeAddrInfo {
  void operator()(addrinfo* list) const { freeaddrinfo(list); }
};
using AddrInfoList = std::unique_ptr<addrinfo, FreeAddrInfo>;

// The addresses `address` (HOST:PORT, the host bracketed or not) resolves
// to for a passive stream socket. UNAVAILABLE with the reason alone
// ("expected HOST:PORT", or getaddrinfo's) when it resolves to none.
absl::StatusOr<AddrInfoList> ResolveListenAddress(const std::string& address);

// Whether every address `address` resolves to for listening is a loopback
// one (127.0.0.0/8, ::1), so that only this host's programs can connect;
// false when it resolves to none or to every interface (":50051").
bool IsLoopbackAddress(const std::string& address);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_TRANSPORT_ADDRESS_H_
