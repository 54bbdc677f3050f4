// A client by its address, trusted proxies, and what their
// X-Forwarded-For says.
#include "server/identity/client_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

namespace ptoserve {
namespace {

Endpoint At(const std::string& address, uint16_t port = 0) {
  Endpoint e;
  in_addr v4;
  in6_addr v6;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    e.address = MappedV4(v4);
  } else if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
    std::copy(v6.s6_addr, v6.s6_addr + 16, e.address.begin());
  }
  e.port = port;
  return e;
}

TEST(AddressClientTest, AnIpv6ClientIsItsSlash64) {
  EXPECT_EQ(AddressClient(At("192.0.2.7")), "address 192.0.2.7");
  EXPECT_EQ(AddressClient(At("2001:db8::7")), "address 2001:db8::/64");
  EXPECT_EQ(AddressClient(At("2001:db8::1:2:3:4")), "address 2001:db8::/64");
  EXPECT_EQ(AddressClient(At("2001:db8:0:5::1")), "address 2001:db8:0:5::/64");
}

TEST(ParseAddressPrefixesTest, AddressesAndPrefixesOfBothFamilies) {
  absl::StatusOr<std::vector<AddressPrefix>> p =
      ParseAddressPrefixes(" 127.0.0.1, 10.0.0.0/8,2001:db8::/32 ,");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_TRUE((*p)[0].Contains(At("127.0.0.1").address));
  EXPECT_FALSE((*p)[0].Contains(At("127.0.0.2").address));
  EXPECT_TRUE((*p)[1].Contains(At("10.200.3.4").address));
  EXPECT_FALSE((*p)[1].Contains(At("11.0.0.1").address));
  EXPECT_TRUE((*p)[2].Contains(At("2001:db8:ffff::1").address));
  EXPECT_FALSE((*p)[2].Contains(At("2001:db9::1").address));
  EXPECT_TRUE(ParseAddressPrefixes("")->empty());
  for (const char* bad :
       {"proxy.example.com", "10.0.0.0/33", "::/129", "10.0.0.0/x", "1.2.3"}) {
    absl::StatusOr<std::vector<AddressPrefix>> refused =
        ParseAddressPrefixes(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("is not an address or a prefix"),
              std::string::npos);
  }
}

TEST(ForwardedClientTest, OnlyATrustedProxysWordAndOnlyItsOwnPart) {
  TrustProxies(*ParseAddressPrefixes("10.0.0.2"));
  const Endpoint proxy = At("10.0.0.2", 40112);
  ASSERT_TRUE(IsTrustedProxy(proxy));
  EXPECT_FALSE(IsTrustedProxy(At("10.0.0.3", 40112)));
  const std::string connection = ProxyConnectionClient(proxy);
  EXPECT_EQ(connection, "proxy 10.0.0.2:40112");
  // The last address is the one the proxy appended; what the caller wrote
  // before it is not read.
  EXPECT_EQ(ForwardedClient(connection, "203.0.113.9"), "address 203.0.113.9");
  EXPECT_EQ(ForwardedClient(connection, "6.6.6.6, 203.0.113.9"),
            "address 203.0.113.9");
  EXPECT_EQ(ForwardedClient(connection, "2001:db8::9"),
            "address 2001:db8::/64");
  // None, or nonsense: the proxy itself.
  EXPECT_EQ(ForwardedClient(connection, ""), "address 10.0.0.2");
  EXPECT_EQ(ForwardedClient(connection, "evil, not-an-ip"), "address 10.0.0.2");
  // A connection that is not a trusted proxy's keeps its client, whatever
  // its header says.
  EXPECT_EQ(ForwardedClient("user 1000", "203.0.113.9"), "user 1000");
  EXPECT_EQ(ForwardedClient("address 10.0.0.3", "203.0.113.9"),
            "address 10.0.0.3");
  EXPECT_EQ(ProxyConnectionClient(At("2001:db8::2", 7)),
            "proxy [2001:db8::2]:7");
  TrustProxies({});
  EXPECT_FALSE(IsTrustedProxy(proxy));
}

}  // namespace
}  // namespace ptoserve
