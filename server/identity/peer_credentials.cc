#include "server/identity/peer_credentials.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/mutex.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "server/identity/client_address.h"
#include "server/identity/socket_owner.h"

namespace ptoserve {

namespace {

// gRPC's "ipv4:HOST:PORT" or "ipv6:[HOST]:PORT" (the brackets may be
// escaped as %5B and %5D), or "fd:N" for a connection the server accepted
// itself and handed to gRPC (server/transport/listener.h): the socket is this
// process's descriptor N, which stays open while a call on it runs.
std::optional<Endpoint> ParsePeer(absl::string_view peer) {
  if (absl::ConsumePrefix(&peer, "fd:")) {
    int fd = -1;
    if (!absl::SimpleAtoi(peer, &fd) || fd < 0) return std::nullopt;
    return FarEnd(fd);
  }
  const bool v4 = absl::ConsumePrefix(&peer, "ipv4:");
  if (!v4 && !absl::ConsumePrefix(&peer, "ipv6:")) return std::nullopt;
  const size_t colon = peer.rfind(':');
  if (colon == absl::string_view::npos) return std::nullopt;
  Endpoint e;
  uint32_t port = 0;
  if (!absl::SimpleAtoi(peer.substr(colon + 1), &port) || port > 0xffff) {
    return std::nullopt;
  }
  e.port = static_cast<uint16_t>(port);
  std::string host =
      absl::StrReplaceAll(peer.substr(0, colon), {{"%5B", "["}, {"%5D", "]"}});
  if (v4) {
    in_addr a;
    if (inet_pton(AF_INET, host.c_str(), &a) != 1) return std::nullopt;
    e.address = MappedV4(a);
    return e;
  }
  absl::string_view h = host;
  if (!absl::ConsumePrefix(&h, "[") || !absl::ConsumeSuffix(&h, "]")) {
    return std::nullopt;
  }
  host = std::string(h.substr(0, h.find('%')));  // no zone
  in6_addr a;
  if (inet_pton(AF_INET6, host.c_str(), &a) != 1) return std::nullopt;
  std::memcpy(e.address.data(), &a, 16);
  return e;
}

// A table's "ADDRESS:PORT" in hex, each 32-bit word of the address as the
// kernel prints it (the word's bytes as they lie in memory, read as a host
// integer).
std::optional<Endpoint> ParseTableEndpoint(absl::string_view text) {
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos) return std::nullopt;
  const absl::string_view hex = text.substr(0, colon);
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  std::array<uint8_t, 16> raw{};
  for (size_t w = 0; w < hex.size() / 8; ++w) {
    uint32_t word = 0;
    if (!absl::SimpleHexAtoi(hex.substr(w * 8, 8), &word)) return std::nullopt;
    std::memcpy(raw.data() + w * 4, &word, 4);
  }
  Endpoint e;
  if (hex.size() == 8) {
    in_addr a;
    std::memcpy(&a, raw.data(), 4);
    e.address = MappedV4(a);
  } else {
    e.address = raw;
  }
  uint32_t port = 0;
  if (!absl::SimpleHexAtoi(text.substr(colon + 1), &port) || port > 0xffff) {
    return std::nullopt;
  }
  e.port = static_cast<uint16_t>(port);
  return e;
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

namespace {

// The established sockets of the tables' texts (/proc/net/tcp, tcp6): where
// each is bound, who opened it, and its inode.
struct Socket {
  Endpoint local;
  uid_t uid;
  ino_t inode;
};
std::vector<Socket> EstablishedSockets(absl::string_view tcp,
                                       absl::string_view tcp6) {
  std::vector<Socket> found;
  for (absl::string_view table : {tcp, tcp6}) {
    for (absl::string_view line : absl::StrSplit(table, '\n')) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout
      // inode ...
      std::vector<absl::string_view> f =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 10 || f[3] != "01") continue;  // ESTABLISHED only
      const std::optional<Endpoint> local = ParseTableEndpoint(f[1]);
      uint32_t uid = 0;
      uint64_t inode = 0;
      if (!local.has_value() || !absl::SimpleAtoi(f[7], &uid) ||
          !absl::SimpleAtoi(f[9], &inode)) {
        continue;
      }
      found.push_back(
          {*local, static_cast<uid_t>(uid), static_cast<ino_t>(inode)});
    }
  }
  return found;
}

// Those at `want`.
std::vector<Socket> SocketsAt(const Endpoint& want, absl::string_view tcp,
                              absl::string_view tcp6) {
  std::vector<Socket> found = EstablishedSockets(tcp, tcp6);
  found.erase(
      std::remove_if(found.begin(), found.end(),
                     [&](const Socket& s) { return !(s.local == want); }),
      found.end());
  return found;
}

absl::Status NotOnTcp(absl::string_view peer) {
  return absl::PermissionDeniedError(absl::StrFormat(
      "the caller (%s) is not on a TCP connection, so the server cannot "
      "tell which user it runs as",
      ShortQuote(peer)));
}

absl::Status NoSocket(absl::string_view peer) {
  return absl::PermissionDeniedError(absl::StrFormat(
      "the caller (%s) has no socket on this host (another host, or "
      "another network namespace), so the server cannot tell which user "
      "it runs as; shared memory serves clients on the server's host",
      ShortQuote(peer)));
}

// Descriptor N of "fd:N", when it is a socket; its inode in `st`.
std::optional<int> SocketDescriptor(absl::string_view peer, struct stat* st) {
  int fd = -1;
  if (!absl::ConsumePrefix(&peer, "fd:") || !absl::SimpleAtoi(peer, &fd) ||
      fd < 0 || fstat(fd, st) != 0 || !S_ISSOCK(st->st_mode)) {
    return std::nullopt;
  }
  return fd;
}

bool Established(int fd) {
  tcp_info info{};
  socklen_t n = sizeof(info);
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &n) == 0 &&
         info.tcpi_state == TCP_ESTABLISHED;
}

}  // namespace

absl::StatusOr<uid_t> PeerUidIn(absl::string_view peer, absl::string_view tcp,
                                absl::string_view tcp6) {
  const std::optional<Endpoint> want = ParsePeer(peer);
  if (!want.has_value()) return NotOnTcp(peer);
  const std::vector<Socket> sockets = SocketsAt(*want, tcp, tcp6);
  if (sockets.empty()) return NoSocket(peer);
  for (const Socket& s : sockets) {
    if (s.uid != sockets[0].uid) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "the caller's address (%s) belongs to sockets of two users (%u "
          "and %u)",
          ShortQuote(peer), sockets[0].uid, s.uid));
    }
  }
  return sockets[0].uid;
}

absl::StatusOr<uid_t> PeerUid(absl::string_view peer) {
  // A connection this process accepted: its far end asked of the kernel
  // alone; otherwise (or if the kernel cannot be asked) the tables.
  struct stat st;
  if (const std::optional<int> fd = SocketDescriptor(peer, &st)) {
    if (const std::optional<uid_t> owner = OwnerOfFarEnd(*fd)) return *owner;
  }
  return PeerUidIn(peer, ReadFile("/proc/net/tcp"), ReadFile("/proc/net/tcp6"));
}

namespace {

// What CachedPeerUid remembers of descriptor N: the user of the connection
// on it, once looked up, and how many connections were announced on it
// (NewConnectionOnDescriptor), so that a lookup that raced with an
// announcement is not remembered for the new connection.
struct Remembered {
  uint64_t connection = 0;
  std::optional<uid_t> uid;
  std::optional<std::string> client;  // PeerClient's answer
};

absl::Mutex remembered_mu(absl::kConstInit);
// At most one entry a descriptor number: bounded by the open-file limit.
absl::flat_hash_map<int, Remembered>& RememberedUsers()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(remembered_mu) {
  static auto* by_fd = new absl::flat_hash_map<int, Remembered>();
  return *by_fd;
}

}  // namespace

void NewConnectionOnDescriptor(int fd, std::optional<std::string> client) {
  MutexLock lock(&remembered_mu);
  Remembered& r = RememberedUsers()[fd];
  ++r.connection;
  r.uid.reset();
  r.client = std::move(client);
}

absl::StatusOr<uid_t> CachedPeerUid(absl::string_view peer) {
  absl::string_view n = peer;
  int fd = -1;
  if (!absl::ConsumePrefix(&n, "fd:") || !absl::SimpleAtoi(n, &fd) || fd < 0) {
    return PeerUid(peer);
  }
  uint64_t connection = 0;
  {
    MutexLock lock(&remembered_mu);
    auto it = RememberedUsers().find(fd);
    if (it != RememberedUsers().end()) {
      if (it->second.uid.has_value()) return *it->second.uid;
      connection = it->second.connection;
    }
  }
  PTO_ASSIGN_OR_RETURN(uid_t uid, PeerUid(peer));
  MutexLock lock(&remembered_mu);
  Remembered& r = RememberedUsers()[fd];
  if (r.connection == connection) r.uid = uid;
  return uid;
}

namespace {

bool IsLoopback(const Endpoint& e) {
  static constexpr std::array<uint8_t, 16> kV6Loopback = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const bool mapped_v4 = std::all_of(e.address.begin(), e.address.begin() + 10,
                                     [](uint8_t b) { return b == 0; }) &&
                         e.address[10] == 0xff && e.address[11] == 0xff;
  return e.address == kV6Loopback || (mapped_v4 && e.address[12] == 127);
}

// PeerClient of the far end `e`, reading the tables with `tables` (only
// for a loopback one).
template <typename Tables>
std::string ClientAt(const Endpoint& e, const Tables& tables) {
  if (IsTrustedProxy(e)) return ProxyConnectionClient(e);
  if (IsLoopback(e)) {
    const auto [tcp, tcp6] = tables();
    const std::vector<Socket> sockets = SocketsAt(e, tcp, tcp6);
    const bool one_user =
        !sockets.empty() &&
        std::all_of(sockets.begin(), sockets.end(),
                    [&](const Socket& s) { return s.uid == sockets[0].uid; });
    if (one_user) return absl::StrCat("user ", sockets[0].uid);
  }
  return AddressClient(e);
}

std::pair<std::string, std::string> ReadTables() {
  return {ReadFile("/proc/net/tcp"), ReadFile("/proc/net/tcp6")};
}

}  // namespace

std::string PeerClientIn(absl::string_view peer, absl::string_view tcp,
                         absl::string_view tcp6) {
  const std::optional<Endpoint> at = ParsePeer(peer);
  if (!at.has_value()) return std::string(peer);
  return ClientAt(*at, [&] { return std::pair(tcp, tcp6); });
}

std::string SocketClient(int fd) {
  const std::optional<Endpoint> at = FarEnd(fd);
  if (!at.has_value()) return "unknown";
  if (IsTrustedProxy(*at)) return ProxyConnectionClient(*at);
  if (IsLoopback(*at)) {
    if (const std::optional<uid_t> owner = OwnerOfFarEnd(fd)) {
      return absl::StrCat("user ", *owner);
    }
  }
  return ClientAt(*at, ReadTables);
}

std::string PeerClient(absl::string_view peer) {
  absl::string_view n = peer;
  int fd = -1;
  if (!absl::ConsumePrefix(&n, "fd:") || !absl::SimpleAtoi(n, &fd) || fd < 0) {
    const std::optional<Endpoint> at = ParsePeer(peer);
    // Not TCP (a unix: socket): one client per peer gRPC names.
    if (!at.has_value()) return std::string(peer);
    return ClientAt(*at, ReadTables);
  }
  uint64_t connection = 0;
  {
    MutexLock lock(&remembered_mu);
    auto it = RememberedUsers().find(fd);
    if (it != RememberedUsers().end()) {
      if (it->second.client.has_value()) return *it->second.client;
      connection = it->second.connection;
    }
  }
  std::string client = SocketClient(fd);
  MutexLock lock(&remembered_mu);
  Remembered& r = RememberedUsers()[fd];
  if (r.connection == connection) r.client = client;
  return client;
}

absl::StatusOr<PeerConnection> FindConnection(absl::string_view peer) {
  struct stat st;
  if (SocketDescriptor(peer, &st).has_value()) {
    return PeerConnection{std::string(peer), st.st_ino};
  }
  const std::optional<Endpoint> want = ParsePeer(peer);
  if (!want.has_value()) return NotOnTcp(peer);
  const std::vector<Socket> sockets =
      SocketsAt(*want, ReadFile("/proc/net/tcp"), ReadFile("/proc/net/tcp6"));
  if (sockets.size() != 1) return NoSocket(peer);
  return PeerConnection{std::string(peer), sockets[0].inode};
}

std::vector<bool> ConnectionsOpen(
    absl::Span<const PeerConnection> connections) {
  std::vector<bool> open(connections.size(), false);
  std::optional<std::string> tcp, tcp6;  // read once, if needed
  for (size_t i = 0; i < connections.size(); ++i) {
    const PeerConnection& c = connections[i];
    struct stat st;
    if (const std::optional<int> fd = SocketDescriptor(c.peer, &st)) {
      open[i] = st.st_ino == c.inode && Established(*fd);
      continue;
    }
    if (absl::StartsWith(c.peer, "fd:")) continue;  // the descriptor closed
    const std::optional<Endpoint> at = ParsePeer(c.peer);
    if (!at.has_value()) continue;
    if (!tcp.has_value()) {
      tcp = ReadFile("/proc/net/tcp");
      tcp6 = ReadFile("/proc/net/tcp6");
    }
    for (const Socket& s : SocketsAt(*at, *tcp, *tcp6)) {
      open[i] = open[i] || s.inode == c.inode;
    }
  }
  return open;
}

int EstablishedConnectionsOnPort(int port) {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (const dirent* entry = readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(dir)) continue;
    sockaddr_storage local{};
    socklen_t n = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &n) != 0) {
      continue;  // not a socket, or closed meanwhile
    }
    int local_port = -1;
    if (local.ss_family == AF_INET) {
      local_port = ntohs(reinterpret_cast<const sockaddr_in&>(local).sin_port);
    } else if (local.ss_family == AF_INET6) {
      local_port =
          ntohs(reinterpret_cast<const sockaddr_in6&>(local).sin6_port);
    }
    tcp_info info{};
    socklen_t size = sizeof(info);
    count += local_port == port &&
             getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
             info.tcpi_state == TCP_ESTABLISHED;
  }
  closedir(dir);
  return count;
}

}  // namespace ptoserve
