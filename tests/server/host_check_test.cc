// The Host check of every HTTP endpoint: which names a request may give.
#include "server/httpd/host_check.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

namespace ptoserve {
namespace {

sockaddr_storage V4(const char* ip) {
  sockaddr_storage ss{};
  auto& in = reinterpret_cast<sockaddr_in&>(ss);
  in.sin_family = AF_INET;
  inet_pton(AF_INET, ip, &in.sin_addr);
  return ss;
}

sockaddr_storage V6(const char* ip) {
  sockaddr_storage ss{};
  auto& in6 = reinterpret_cast<sockaddr_in6&>(ss);
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, ip, &in6.sin6_addr);
  return ss;
}

TEST(HostCheckTest, LocalhostAndTheAddressReachedAreAllowed) {
  const std::vector<std::string> none;
  for (const char* host : {"localhost", "localhost:8000", "LocalHost:1",
                           "127.0.0.1", "127.0.0.1:8000", ""}) {
    EXPECT_TRUE(HostAllowed(host, V4("127.0.0.1"), none)) << host;
  }
  EXPECT_TRUE(HostAllowed("[::1]:8000", V6("::1"), none));
  EXPECT_TRUE(HostAllowed("[::1]", V6("::1"), none));
  // An IPv4 connection to a dual-stack socket reaches ::ffff:a.b.c.d.
  EXPECT_TRUE(HostAllowed("127.0.0.1:8000", V6("::ffff:127.0.0.1"), none));
  EXPECT_TRUE(HostAllowed("10.0.0.5:8000", V4("10.0.0.5"), none));
}

TEST(HostCheckTest, OtherNamesAndAddressesAreRefused) {
  const std::vector<std::string> none;
  for (const char* host :
       {"evil.test", "evil.test:8000", "localhost.evil.test", "localhost.",
        "127.0.0.2", "127.0.0.1.evil.test", "[::1]", "0x7f.0.0.1", "127.1",
        "2130706433", "local host", "evil.test\r\nX: y"}) {
    EXPECT_FALSE(HostAllowed(host, V4("127.0.0.1"), none)) << host;
  }
  EXPECT_FALSE(HostAllowed("[::2]:8000", V6("::1"), none));
  EXPECT_FALSE(HostAllowed("10.0.0.6", V4("10.0.0.5"), none));
}

TEST(HostCheckTest, AllowedNamesAreComparedWithoutCaseOrPort) {
  const std::vector<std::string> allowed = {"ptoserve.example.com", "ptoserve"};
  EXPECT_TRUE(HostAllowed("ptoserve.example.com", V4("10.0.0.5"), allowed));
  EXPECT_TRUE(
      HostAllowed("PTOSERVE.Example.COM:8000", V4("10.0.0.5"), allowed));
  EXPECT_TRUE(HostAllowed("ptoserve:8000", V4("10.0.0.5"), allowed));
  EXPECT_FALSE(
      HostAllowed("ptoserve.example.com.evil.test", V4("10.0.0.5"), allowed));
  EXPECT_FALSE(HostAllowed("example.com", V4("10.0.0.5"), allowed));
  EXPECT_TRUE(HostAllowed("anything.at.all", V4("10.0.0.5"), {"*"}));
}

}  // namespace
}  // namespace ptoserve
