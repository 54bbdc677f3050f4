// IncomingBody: a body's bytes held against its client's share as they
// arrive, a step ahead, never as declared.
#include "server/intake/request_body.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kKiB = 1 << 10;
constexpr uint64_t kMiB = 1 << 20;

TEST(IncomingBodyTest, ADeclaredLengthHoldsOnlyTheFirstStep) {
  MemoryBudget budget(64 * kMiB);
  auto share = budget.ShareOf("a client");
  IncomingBody body(BodyFormat::kJson, &budget, share, 64 * kMiB);
  ASSERT_TRUE(body.Expect(60 * kMiB, "--max_message_mb").ok());
  EXPECT_EQ(budget.held(), 64 * kKiB);
  EXPECT_EQ(share->held(), 64 * kKiB);
  EXPECT_EQ(body.size(), 0u);
  // More than the limit is refused on its declaration, holding nothing.
  IncomingBody other(BodyFormat::kJson, &budget, share, 64 * kMiB);
  absl::Status over = other.Expect(64 * kMiB + 1, "--max_message_mb");
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.message()),
              HasSubstr("the body is 67108865 bytes, over the limit of "
                        "67108864 (--max_message_mb)"));
  EXPECT_EQ(budget.held(), 64 * kKiB);
}

TEST(IncomingBodyTest, BytesAreHeldAsTheyArriveAStepAhead) {
  MemoryBudget budget(64 * kMiB);
  auto share = budget.ShareOf("a client");
  IncomingBody body(BodyFormat::kJson, &budget, share, 64 * kMiB);
  const std::string piece(10 * kKiB, 'x');
  uint64_t sent = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(body.Append(piece, "--max_message_mb").ok());
    sent += piece.size();
    // Never less than what arrived; never more than twice it while small,
    // or a megabyte ahead once large.
    ASSERT_GE(budget.held(), sent);
    ASSERT_LE(budget.held(), std::max(2 * sent, sent + kMiB) + 64 * kKiB);
    ASSERT_EQ(body.held(), budget.held());
  }
  EXPECT_EQ(body.size(), sent);
  EXPECT_EQ(body.text(), std::string(sent, 'x'));
  body.Discard();
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(body.size(), 0u);
}

TEST(IncomingBodyTest, ABodyPastItsShareOrLimitIsRefusedKeepingNothingMore) {
  MemoryBudget budget(64 * kMiB, /*client_limit_bytes=*/2 * kMiB);
  auto share = budget.ShareOf("a client");
  IncomingBody body(BodyFormat::kJson, &budget, share, 64 * kMiB);
  const std::string piece(256 * kKiB, 'x');
  absl::Status appended;
  int pieces = 0;
  while ((appended = body.Append(piece, "--max_message_mb")).ok()) ++pieces;
  EXPECT_EQ(appended.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(appended.message()),
              HasSubstr("this client's share"));
  EXPECT_EQ(body.size(), pieces * piece.size());
  EXPECT_LE(share->held(), 2 * kMiB);
  // Another client is not refused for this one's body.
  IncomingBody other(BodyFormat::kJson, &budget, budget.ShareOf("another"),
                     64 * kMiB);
  EXPECT_TRUE(other.Append(piece, "--max_message_mb").ok());
  // The limit.
  IncomingBody small(BodyFormat::kJson, &budget, budget.ShareOf("third"), 100);
  EXPECT_TRUE(small.Append(std::string(100, 'y'), "--max_message_mb").ok());
  absl::Status over = small.Append("z", "--max_message_mb");
  EXPECT_THAT(std::string(over.message()),
              HasSubstr("the body is over the limit of 100 bytes "
                        "(--max_message_mb)"));
  EXPECT_EQ(small.size(), 100u);
  EXPECT_LE(small.held(), 100u);
}

}  // namespace
}  // namespace ptoserve
