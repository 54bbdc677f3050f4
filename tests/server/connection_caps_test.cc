// Connections counted by client: a client's own cap, and when all are
// taken, the newest connection of the client holding most gives way.
#include "common/connection_caps.h"

#include <gtest/gtest.h>

namespace ptoserve {
namespace {

TEST(ConnectionCapsTest, AClientHasAtMostItsCap) {
  ConnectionCaps caps(/*max_total=*/100, /*max_per_client=*/2);
  EXPECT_TRUE(caps.Open(1, "user 1000").admitted);
  EXPECT_TRUE(caps.Open(2, "user 1000").admitted);
  EXPECT_FALSE(caps.Open(3, "user 1000").admitted);
  // Another client is not held back by this one.
  EXPECT_TRUE(caps.Open(4, "user 1001").admitted);
  EXPECT_EQ(caps.of("user 1000"), 2);
  EXPECT_EQ(caps.refused(), 1u);
  // One closed makes room; a refused one's close changes nothing.
  caps.Close(3);
  caps.Close(1);
  EXPECT_EQ(caps.of("user 1000"), 1);
  EXPECT_TRUE(caps.Open(5, "user 1000").admitted);
  EXPECT_EQ(caps.open(), 3u);
}

TEST(ConnectionCapsTest, WhenAllAreTakenTheNewestOfTheLargestClientGoes) {
  ConnectionCaps caps(/*max_total=*/4, /*max_per_client=*/0);
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_TRUE(caps.Open(id, "attacker").admitted);
  }
  EXPECT_TRUE(caps.Open(10, "victim").admitted);
  // Full: a probe gets in, and the attacker's newest (3) gives way.
  ConnectionCaps::Admission probe = caps.Open(20, "probe");
  EXPECT_TRUE(probe.admitted);
  ASSERT_TRUE(probe.evict.has_value());
  EXPECT_EQ(*probe.evict, 3u);
  EXPECT_EQ(caps.of("attacker"), 2);
  EXPECT_EQ(caps.open(), 4u);
  // The attacker's own newcomer is the one refused: it holds the most.
  EXPECT_FALSE(caps.Open(4, "attacker").admitted);
  EXPECT_EQ(caps.evicted(), 1u);
  // The evicted connection's close, when it comes, is not counted twice.
  caps.Close(3);
  EXPECT_EQ(caps.open(), 4u);
  // With 2, 1, 1 the attacker's newest goes for a newcomer; then every
  // client holds one, and a newcomer is refused rather than taking one
  // client's only connection.
  EXPECT_EQ(*caps.Open(30, "third").evict, 2u);
  EXPECT_FALSE(caps.Open(40, "fourth").admitted);
  EXPECT_EQ(caps.open(), 4u);
}

TEST(ConnectionCapsTest, NoBoundsAdmitsAll) {
  ConnectionCaps caps(0, 0);
  for (uint64_t id = 0; id < 1000; ++id) {
    ConnectionCaps::Admission a = caps.Open(id, "one");
    EXPECT_TRUE(a.admitted);
    EXPECT_FALSE(a.evict.has_value());
  }
  EXPECT_EQ(caps.open(), 1000u);
}

}  // namespace
}  // namespace ptoserve
