// Which user a caller on this host runs as, from the TCP connection its
// call came on: the kernel knows each socket's address and the user that
// opened it, so the client's end of a loopback connection names the
// client's user. For a connection this process accepted (its descriptor
// known) the kernel is asked for that one socket (sock_diag, as ss(8)
// asks), which costs the same however many sockets the host has; for
// another (gRPC's TLS listener's), its socket tables are read
// (/proc/net/tcp, /proc/net/tcp6). The shared-memory path uses it to map
// only objects the caller itself could open (server/shm/shared_memory.h), and
// PeerClient to tell clients apart.
#ifndef PTOSERVE_SERVER_IDENTITY_PEER_CREDENTIALS_H_
#define PTOSERVE_SERVER_IDENTITY_PEER_CREDENTIALS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ptoserve {

// The user id that owns the established TCP socket at `peer`, gRPC's peer
// string for a call ("ipv4:127.0.0.1:54321", "ipv6:[::1]:54321", or
// "fd:N" for a connection this process accepted as descriptor N), in this
// network namespace. PERMISSION_DENIED, saying why, when `peer` is not a
// TCP address, when no socket of this host has that address (the caller is
// on another host or in another network namespace), or when sockets of two
// users do.
absl::StatusOr<uid_t> PeerUid(absl::string_view peer);

// PeerUid, remembered for connections this process accepted ("fd:N") by
// descriptor number, without a system call once looked up: a descriptor's
// connection stays open while a call on it runs, and whoever accepts a
// connection that gRPC will name "fd:N" announces it first
// (NewConnectionOnDescriptor), which forgets what was remembered for N.
// Other peers are looked up every time.
absl::StatusOr<uid_t> CachedPeerUid(absl::string_view peer);

// Descriptor `fd` holds a new connection from now on: CachedPeerUid looks
// its user up again, and PeerClient answers `client` (SocketClient's, found
// by the caller) without a lookup, or looks it up if none is given. Called
// by the listener for each connection it accepts, before gRPC can see it.
// Thread-safe.
void NewConnectionOnDescriptor(int fd, std::optional<std::string> client = {});

// The same, looked up in `tcp` and `tcp6`, the texts of /proc/net/tcp and
// /proc/net/tcp6.
absl::StatusOr<uid_t> PeerUidIn(absl::string_view peer, absl::string_view tcp,
                                absl::string_view tcp6);

// Who a caller that carries no token is, for what clients share (the
// memory budget's shares, the decoders' turns, the scheduler's fair
// queuing): on a loopback connection, the local user whose socket it is
// ("user 1000"); otherwise the address it comes from, whatever its port
// ("address 192.0.2.7", "address 2001:db8::7"). So every connection of one
// user, or from one address, is one client, however many it opens. A
// loopback socket whose user cannot be found (sockets of two users at its
// address) is named by its address. Remembered per "fd:N" connection as
// CachedPeerUid remembers its user; other peers are looked up each time,
// and only loopback ones read the socket tables.
std::string PeerClient(absl::string_view peer);

// The same for the connected TCP socket `fd` (a connection the HTTP/JSON
// API accepted); "unknown" for a descriptor that is not one.
std::string SocketClient(int fd);

// The same, the user looked up in `tcp` and `tcp6` (the tables' texts).
std::string PeerClientIn(absl::string_view peer, absl::string_view tcp,
                         absl::string_view tcp6);

// A connection a call came on, as the server can find it again later: a
// shared-memory region's lease lasts while its registering connection is
// open (server/shm/shared_memory.h).
struct PeerConnection {
  std::string peer;  // gRPC's peer string
  // "fd:N": the server's socket's inode; an address: the caller's socket's.
  ino_t inode = 0;
};

// The connection a call from `peer` came on, open now; PERMISSION_DENIED
// as PeerUid says when it cannot be found.
absl::StatusOr<PeerConnection> FindConnection(absl::string_view peer);

// Which of `connections` are open now: an "fd:N" one while descriptor N is
// still the same socket and established, an address one while an
// established socket of this host has that address and inode (the tables
// are read once a call, and only for address ones).
std::vector<bool> ConnectionsOpen(absl::Span<const PeerConnection> connections);

// How many established TCP connections this process holds on local port
// `port`: its own descriptors (/proc/self/fd), each asked for its local
// address and state, so that a scrape costs what the server's own
// connections do, however many sockets the host's other processes hold
// (reading the host's tables cost 120 ms beside another user's 33,000).
// For a scrape, not for a call's path.
int EstablishedConnectionsOnPort(int port);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_IDENTITY_PEER_CREDENTIALS_H_
