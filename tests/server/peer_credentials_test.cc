// Which user a caller runs as, from the kernel's socket tables: parsing
// gRPC's peer strings and the tables' hex, the refusals, and real loopback
// connections made by this process and (as root) by a child of another
// user.
#include "server/identity/peer_credentials.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/server/loopback.h"

namespace ptoserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kHeader[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
    "retrnsmt   uid  timeout inode\n";

// One table line: local and remote endpoint in the kernel's hex, state,
// uid, inode.
std::string Line(const std::string& local, const std::string& remote,
                 const std::string& state, int uid, int inode = 12345) {
  return absl::StrCat("   0: ", local, " ", remote, " ", state,
                      " 00000000:00000000 00:00000000 00000000 ", uid,
                      "        0 ", inode,
                      " 1 0000000000000000 20 4 30 10 -1\n");
}

// 127.0.0.1 as the kernel prints it on a little-endian machine: the
// address's bytes in memory, read as a host integer.
std::string V4Hex(const char* address) {
  in_addr a;
  EXPECT_EQ(inet_pton(AF_INET, address, &a), 1);
  uint32_t word;
  std::memcpy(&word, &a, 4);
  char hex[9];
  snprintf(hex, sizeof(hex), "%08X", word);
  return hex;
}

std::string V6Hex(const char* address) {
  in6_addr a;
  EXPECT_EQ(inet_pton(AF_INET6, address, &a), 1);
  std::string hex;
  for (int w = 0; w < 4; ++w) {
    uint32_t word;
    std::memcpy(&word, a.s6_addr + 4 * w, 4);
    char part[9];
    snprintf(part, sizeof(part), "%08X", word);
    hex += part;
  }
  return hex;
}

TEST(PeerUidInTest, FindsTheCallersSocketInEitherTable) {
  const std::string server4 = V4Hex("127.0.0.1") + ":C351";  // port 50001
  const std::string tcp =
      std::string(kHeader) +
      Line(server4, V4Hex("127.0.0.1") + ":D431", "01", 0) +  // the server's
      Line(V4Hex("127.0.0.1") + ":D431", server4, "01", 1000) +
      Line(V4Hex("127.0.0.2") + ":0050", server4, "01", 1001);
  const std::string tcp6 =
      std::string(kHeader) +
      Line(V6Hex("::1") + ":1F90", V6Hex("::1") + ":C351", "01", 1002) +
      Line(V6Hex("::ffff:127.0.0.1") + ":1F91", server4, "01", 1003);
  EXPECT_EQ(PeerUidIn("ipv4:127.0.0.1:54321", tcp, tcp6).value(), 1000u);
  EXPECT_EQ(PeerUidIn("ipv4:127.0.0.2:80", tcp, tcp6).value(), 1001u);
  EXPECT_EQ(PeerUidIn("ipv6:[::1]:8080", tcp, tcp6).value(), 1002u);
  EXPECT_EQ(PeerUidIn("ipv6:%5B::1%5D:8080", tcp, tcp6).value(), 1002u);
  // A dual-stack client socket lists an IPv4 peer in tcp6, mapped.
  EXPECT_EQ(PeerUidIn("ipv4:127.0.0.1:8081", tcp, tcp6).value(), 1003u);
  EXPECT_EQ(PeerUidIn("ipv6:[::ffff:127.0.0.1]:8081", tcp, tcp6).value(),
            1003u);
}

// Counted: established, on the port, and one of the process's sockets.
// Who a client is: on loopback its user, whatever connection or port;
// otherwise its address, whatever its port.
TEST(PeerClientInTest, NamesLoopbackUsersAndOtherAddresses) {
  const std::string server4 = V4Hex("127.0.0.1") + ":C351";
  const std::string tcp =
      std::string(kHeader) +
      Line(V4Hex("127.0.0.1") + ":D431", server4, "01", 1000) +
      Line(V4Hex("127.0.0.1") + ":D432", server4, "01", 1000) +
      Line(V4Hex("127.0.0.3") + ":D433", server4, "01", 1001) +
      Line(V4Hex("127.0.0.1") + ":D434", server4, "01", 1002) +
      Line(V4Hex("127.0.0.1") + ":D434", server4, "01", 1003);
  const std::string tcp6 =
      std::string(kHeader) +
      Line(V6Hex("::1") + ":1F90", V6Hex("::1") + ":C351", "01", 1004);
  // One user's two connections are one client.
  EXPECT_EQ(PeerClientIn("ipv4:127.0.0.1:54321", tcp, tcp6), "user 1000");
  EXPECT_EQ(PeerClientIn("ipv4:127.0.0.1:54322", tcp, tcp6), "user 1000");
  EXPECT_EQ(PeerClientIn("ipv4:127.0.0.3:54323", tcp, tcp6), "user 1001");
  EXPECT_EQ(PeerClientIn("ipv6:[::1]:8080", tcp, tcp6), "user 1004");
  // Not found, or two users' sockets at one address: its address.
  EXPECT_EQ(PeerClientIn("ipv4:127.0.0.1:54324", tcp, tcp6),
            "address 127.0.0.1");
  EXPECT_EQ(PeerClientIn("ipv4:127.0.0.1:9", tcp, tcp6), "address 127.0.0.1");
  // Another host: its address, whatever its port or its sockets here.
  EXPECT_EQ(PeerClientIn("ipv4:192.0.2.7:1234", tcp, tcp6),
            "address 192.0.2.7");
  EXPECT_EQ(PeerClientIn("ipv4:192.0.2.7:5678", tcp, tcp6),
            "address 192.0.2.7");
  // An IPv6 address is its /64: a host has all of it to take addresses
  // from.
  EXPECT_EQ(PeerClientIn("ipv6:[2001:db8::7]:1234", tcp, tcp6),
            "address 2001:db8::/64");
  EXPECT_EQ(PeerClientIn("ipv6:%5B2001:db8::7%5D:1234", tcp, tcp6),
            "address 2001:db8::/64");
  EXPECT_EQ(PeerClientIn("ipv6:[2001:db8::ffff:1:2:3]:1", tcp, tcp6),
            "address 2001:db8::/64");
  EXPECT_EQ(PeerClientIn("ipv6:[2001:db8:0:1::7]:1", tcp, tcp6),
            "address 2001:db8:0:1::/64");
  EXPECT_EQ(PeerClientIn("ipv6:[::ffff:192.0.2.7]:1", tcp, tcp6),
            "address 192.0.2.7");
  // Not TCP: the peer as gRPC names it.
  EXPECT_EQ(PeerClientIn("unix:/tmp/s", tcp, tcp6), "unix:/tmp/s");
}

TEST(EstablishedConnectionsOnPortTest, CountsThisProcesssOwnConnections) {
  // A listener on loopback, two connections to it accepted: the accepted
  // ends have its port; the listening socket and the connecting ends (on
  // ports of their own) do not count.
  const int listening = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listening, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      bind(listening, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  ASSERT_EQ(listen(listening, 4), 0);
  socklen_t n = sizeof(address);
  getsockname(listening, reinterpret_cast<sockaddr*>(&address), &n);
  const int port = ntohs(address.sin_port);
  EXPECT_EQ(EstablishedConnectionsOnPort(port), 0);
  std::vector<int> fds;
  for (int i = 0; i < 2; ++i) {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(
        connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
        0);
    fds.push_back(client);
    fds.push_back(accept4(listening, nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_GE(fds.back(), 0);
  }
  EXPECT_EQ(EstablishedConnectionsOnPort(port), 2);
  EXPECT_EQ(EstablishedConnectionsOnPort(port + 1 == 65536 ? 1 : port + 1), 0);
  // One closed by its client: its accepted end is no longer established.
  close(fds[0]);
  EXPECT_EQ(EstablishedConnectionsOnPort(port), 1);
  for (size_t i = 1; i < fds.size(); ++i) close(fds[i]);
  close(listening);
}

TEST(PeerUidInTest, RefusesWhatItCannotTell) {
  const std::string server4 = V4Hex("127.0.0.1") + ":C351";
  const std::string tcp =
      std::string(kHeader) +
      // Not ESTABLISHED (0A: LISTEN, 06: TIME_WAIT): not a caller.
      Line(V4Hex("127.0.0.1") + ":0001", "00000000:0000", "0A", 1000) +
      Line(V4Hex("127.0.0.1") + ":0002", server4, "06", 1000) +
      // One address, sockets of two users.
      Line(V4Hex("127.0.0.1") + ":0003", server4, "01", 1000) +
      Line(V4Hex("127.0.0.1") + ":0003", V4Hex("127.0.0.1") + ":C352", "01",
           1001) +
      "garbage line\n   1: ZZZZ:1 2 01 x x x 7\n";
  for (const char* peer : {"ipv4:127.0.0.1:1", "ipv4:127.0.0.1:2",
                           "ipv4:10.0.0.1:3", "ipv6:[::1]:1"}) {
    absl::StatusOr<uid_t> got = PeerUidIn(peer, tcp, "");
    EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied) << peer;
    EXPECT_THAT(got.status().message(), HasSubstr("no socket on this host"))
        << peer;
  }
  absl::StatusOr<uid_t> two = PeerUidIn("ipv4:127.0.0.1:3", tcp, "");
  EXPECT_EQ(two.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(two.status().message(), HasSubstr("two users (1000 and 1001)"));
  for (const char* peer :
       {"unix:/tmp/sock", "", "ipv4:", "ipv4:127.0.0.1", "ipv4:127.0.0.1:x",
        "ipv4:127.0.0.1:65536", "ipv6:::1:80", "ipv4:300.0.0.1:1"}) {
    absl::StatusOr<uid_t> got = PeerUidIn(peer, tcp, "");
    EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied) << peer;
    EXPECT_THAT(got.status().message(), HasSubstr("not on a TCP connection"))
        << peer;
  }
}

TEST(PeerUidTest, NamesThisProcesssUserOnARealConnection) {
  LoopbackListener listener;
  const int client = ConnectLoopback(listener.port());
  ASSERT_GE(client, 0);
  const std::string peer = listener.AcceptPeer();
  // As the server's listener does for each connection it accepts.
  NewConnectionOnDescriptor(listener.last_accepted());
  absl::StatusOr<uid_t> got = PeerUid(peer);
  ASSERT_TRUE(got.ok()) << peer << ": " << got.status();
  EXPECT_EQ(*got, geteuid());
  // As gRPC names a connection the server accepted itself: its descriptor.
  const std::string fd = absl::StrCat("fd:", listener.last_accepted());
  got = PeerUid(fd);
  ASSERT_TRUE(got.ok()) << fd << ": " << got.status();
  EXPECT_EQ(*got, geteuid());
  // A descriptor that is not a connected TCP socket names nobody.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  for (int bad : {pipe_fds[0], 100000}) {
    EXPECT_EQ(PeerUid(absl::StrCat("fd:", bad)).status().code(),
              absl::StatusCode::kPermissionDenied)
        << bad;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  close(client);
}

TEST(PeerUidTest, NamesAnotherUsersProcess) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to run a child as nobody";
  constexpr uid_t kNobody = 65534;
  LoopbackListener listener;
  // This process's connection, looked up and remembered by descriptor, then
  // closed: the child's connection is likely to get its descriptor.
  const int own = ConnectLoopback(listener.port());
  ASSERT_GE(own, 0);
  listener.AcceptPeer();
  const int reused = listener.last_accepted();
  NewConnectionOnDescriptor(reused);
  const std::string reused_peer = absl::StrCat("fd:", reused);
  EXPECT_EQ(CachedPeerUid(reused_peer).value(), geteuid());
  EXPECT_EQ(CachedPeerUid(reused_peer).value(), geteuid());
  listener.CloseLast();
  close(own);
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only system calls here: the child becomes nobody, connects and waits
    // for the parent to look.
    if (setgid(kNobody) != 0 || setuid(kNobody) != 0) _exit(2);
    const int fd = ConnectLoopback(listener.port());
    if (fd < 0) _exit(3);
    char byte;
    (void)!read(done[0], &byte, 1);
    _exit(0);
  }
  const std::string peer = listener.AcceptPeer();
  // As the server's listener does for each connection it accepts.
  NewConnectionOnDescriptor(listener.last_accepted());
  absl::StatusOr<uid_t> got = PeerUid(peer);
  absl::StatusOr<uid_t> by_fd =
      PeerUid(absl::StrCat("fd:", listener.last_accepted()));
  // The remembered user is not taken for a new connection on the same
  // descriptor: its socket is another.
  const bool same_fd = listener.last_accepted() == reused;
  absl::StatusOr<uid_t> cached =
      CachedPeerUid(absl::StrCat("fd:", listener.last_accepted()));
  (void)!write(done[1], "x", 1);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(got.ok()) << peer << ": " << got.status();
  EXPECT_EQ(*got, kNobody);
  ASSERT_TRUE(by_fd.ok()) << by_fd.status();
  EXPECT_EQ(*by_fd, kNobody);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(*cached, kNobody) << (same_fd ? "descriptor reused" : "");
  close(done[0]);
  close(done[1]);
}

// Real connections: this process's user, remembered per descriptor until a
// new connection on it; and, as root, a socket another user made.
TEST(PeerClientTest, NamesTheUserOfARealConnection) {
  LoopbackListener listener;
  const int mine = ConnectLoopback(listener.port());
  ASSERT_GE(mine, 0);
  listener.AcceptPeer();
  const int accepted = listener.last_accepted();
  NewConnectionOnDescriptor(accepted);
  const std::string me = absl::StrCat("user ", geteuid());
  EXPECT_EQ(PeerClient(absl::StrCat("fd:", accepted)), me);
  EXPECT_EQ(SocketClient(accepted), me);
  if (geteuid() != 0) return;
  // A socket made while this thread's file-system user is another is that
  // user's in the kernel's tables.
  constexpr uid_t kOther = 54321;
  const uid_t before = setfsuid(kOther);
  const int theirs = socket(AF_INET, SOCK_STREAM, 0);
  setfsuid(before);
  ASSERT_GE(theirs, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(listener.port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(theirs, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  listener.AcceptPeer();
  NewConnectionOnDescriptor(listener.last_accepted());
  EXPECT_EQ(PeerClient(absl::StrCat("fd:", listener.last_accepted())),
            "user 54321");
  // The first connection is still remembered as this process's.
  EXPECT_EQ(PeerClient(absl::StrCat("fd:", accepted)), me);
  close(theirs);
  close(mine);
}

// A descriptor's user is looked up once, and again only after a new
// connection on that descriptor number is announced: a closed descriptor
// still names the user it was found to be until then.
TEST(CachedPeerUidTest, RemembersByDescriptorUntilANewConnection) {
  LoopbackListener listener;
  const int client = ConnectLoopback(listener.port());
  ASSERT_GE(client, 0);
  listener.AcceptPeer();
  const int fd = listener.last_accepted();
  NewConnectionOnDescriptor(fd);
  const std::string peer = absl::StrCat("fd:", fd);
  ASSERT_EQ(CachedPeerUid(peer).value(), geteuid());
  listener.CloseLast();
  close(client);
  EXPECT_EQ(PeerUid(peer).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CachedPeerUid(peer).value(), geteuid());  // no lookup
  NewConnectionOnDescriptor(fd);
  absl::StatusOr<uid_t> again = CachedPeerUid(peer);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kPermissionDenied)
      << "looked up again: descriptor " << fd << " is closed";
  // Peers by address are not remembered.
  EXPECT_EQ(CachedPeerUid("ipv4:127.0.0.1:1").status().code(),
            absl::StatusCode::kPermissionDenied);
}

// A connection is open while it is established, under either name, and
// closed once its client closes it (the kernel's state, waited for with a
// bound: the close reaches the other end at once on loopback, but in
// another thread's time).
TEST(ConnectionsOpenTest, FollowsARealConnectionUntilItCloses) {
  LoopbackListener listener;
  const int client = ConnectLoopback(listener.port());
  ASSERT_GE(client, 0);
  const std::string address = listener.AcceptPeer();
  const int first = listener.last_accepted();
  const std::string fd = absl::StrCat("fd:", first);
  absl::StatusOr<PeerConnection> by_address = FindConnection(address);
  absl::StatusOr<PeerConnection> by_fd = FindConnection(fd);
  ASSERT_TRUE(by_address.ok()) << by_address.status();
  ASSERT_TRUE(by_fd.ok()) << by_fd.status();
  const std::vector<PeerConnection> both = {*by_address, *by_fd};
  EXPECT_THAT(ConnectionsOpen(both), ElementsAre(true, true));
  close(client);
  std::vector<bool> open;
  for (int i = 0; i < 10000; ++i) {  // at most 10 s
    open = ConnectionsOpen(both);
    if (!open[0] && !open[1]) break;
    usleep(1000);
  }
  EXPECT_THAT(open, ElementsAre(false, false));
  // The descriptor closed, and then reused by another connection: not the
  // one registered.
  listener.CloseLast();
  EXPECT_THAT(ConnectionsOpen({*by_fd}), ElementsAre(false));
  const int again = ConnectLoopback(listener.port());
  ASSERT_GE(again, 0);
  listener.AcceptPeer();
  EXPECT_THAT(ConnectionsOpen({*by_fd}), ElementsAre(false))
      << (listener.last_accepted() == first ? "descriptor reused" : "");
  close(again);
  // What is not a connection is refused, as PeerUid refuses it.
  for (const char* peer : {"unix:/tmp/x", "ipv4:127.0.0.1:1", "fd:100000"}) {
    EXPECT_EQ(FindConnection(peer).status().code(),
              absl::StatusCode::kPermissionDenied)
        << peer;
  }
  EXPECT_THAT(ConnectionsOpen({PeerConnection{"unix:/tmp/x", 1}}),
              ElementsAre(false));
}

}  // namespace
}  // namespace ptoserve
