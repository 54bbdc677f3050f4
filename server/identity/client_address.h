// A client named by its address, and proxies whose word on who their
// client is the server trusts.
//
// A client that is neither a token nor a local user is its address:
// "address 192.0.2.7", an IPv6 one by its /64 ("address 2001:db8::/64"),
// which a host has whole to take addresses from. Behind a proxy every
// client would be the proxy's address; a proxy named in --trusted_proxies
// is instead one client per connection ("proxy 10.0.0.5:40112", so that
// connection caps bound its connections in all, not as one client's),
// and each request it forwards is the client its X-Forwarded-For names
// last (what the proxy saw). A header from anyone else is ignored: any
// caller could write one.
#ifndef PTOSERVE_SERVER_IDENTITY_CLIENT_ADDRESS_H_
#define PTOSERVE_SERVER_IDENTITY_CLIENT_ADDRESS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/identity/socket_owner.h"

namespace ptoserve {

// "address 192.0.2.7", "address 2001:db8::/64".
std::string AddressClient(const Endpoint& e);

// An address and the bits of it that count (IPv4 as IPv4-mapped IPv6).
struct AddressPrefix {
  std::array<uint8_t, 16> address{};
  int bits = 128;
  bool Contains(const std::array<uint8_t, 16>& a) const;
};

// "127.0.0.1, 10.0.0.0/8, 2001:db8::/32" as prefixes; INVALID_ARGUMENT
// naming the entry that is not an address or prefix.
absl::StatusOr<std::vector<AddressPrefix>> ParseAddressPrefixes(
    absl::string_view list);

// The proxies trusted from now on (--trusted_proxies). Call once, before
// serving.
void TrustProxies(std::vector<AddressPrefix> proxies);
// Whether `e` is a trusted proxy's end of a connection.
bool IsTrustedProxy(const Endpoint& e);
// "proxy 10.0.0.5:40112": a trusted proxy's connection, as a client.
std::string ProxyConnectionClient(const Endpoint& e);

// Who a request's client is, given its connection's client (PeerClient,
// SocketClient) and the X-Forwarded-For it carries (empty: none): the
// connection's client unless that is a trusted proxy; then the last
// address of the header (the one the proxy appended), or the proxy's own
// address when the header names none.
std::string ForwardedClient(absl::string_view connection_client,
                            absl::string_view forwarded_for);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_IDENTITY_CLIENT_ADDRESS_H_
