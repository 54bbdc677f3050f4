#include "server/exec/memory_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/full_for_now.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

TEST(MemoryBudgetTest, HoldsAreGivenBackWhenDestroyedOrMoved) {
  MemoryBudget budget(100);
  {
    absl::StatusOr<MemoryBudget::Hold> a = budget.Reserve(60);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(budget.held(), 60u);
    absl::StatusOr<MemoryBudget::Hold> b = budget.Reserve(41);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(std::string(b.status().message()),
                HasSubstr("this job needs 41 bytes and 60 of 100 "
                          "(limits.memory_budget_bytes)"));
    EXPECT_EQ(budget.held(), 60u);
    MemoryBudget::Hold moved = std::move(*a);
    EXPECT_EQ(moved.bytes(), 60u);
    EXPECT_EQ(budget.held(), 60u);
    ASSERT_TRUE(budget.Reserve(40).ok());  // a temporary: given back at once
    EXPECT_EQ(budget.held(), 60u);
  }
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(budget.Reserve(101).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Near the top of the range: no overflow lets a reservation through.
  MemoryBudget huge(~uint64_t{0} - 1);
  absl::StatusOr<MemoryBudget::Hold> most = huge.Reserve(~uint64_t{0} - 10);
  ASSERT_TRUE(most.ok());
  EXPECT_FALSE(huge.Reserve(100).ok());
}

TEST(MemoryBudgetTest, ConcurrentReservationsNeverExceedTheLimit) {
  MemoryBudget budget(1000);
  std::vector<std::thread> threads;
  std::atomic<bool> over{false};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        absl::StatusOr<MemoryBudget::Hold> h = budget.Reserve(300);
        if (budget.held() > 1000) over = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(over);
  EXPECT_EQ(budget.held(), 0u);
}

TEST(MemoryBudgetTest, AClientHoldsAtMostItsShare) {
  MemoryBudget budget(100, 40);
  EXPECT_EQ(budget.client_limit(), 40u);
  std::shared_ptr<MemoryBudget::Share> a = budget.ShareOf("token 0");
  std::shared_ptr<MemoryBudget::Share> b = budget.ShareOf("token 1");
  EXPECT_EQ(budget.ShareOf("token 0"), a);  // one share per client
  EXPECT_EQ(budget.clients(), 2u);
  absl::StatusOr<MemoryBudget::Hold> a1 = budget.Reserve(30, a);
  ASSERT_TRUE(a1.ok());
  absl::StatusOr<MemoryBudget::Hold> a2 = budget.Reserve(11, a);
  EXPECT_EQ(a2.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(a2.status().message()),
              HasSubstr("this client's share of the server's memory budget "
                        "is full: this job needs 11 bytes and 30 of the 40 a "
                        "client may hold (limits.client_memory_bytes)"));
  EXPECT_EQ(budget.refused_share(), 1u);
  // Full for now, not over a limit of the request's own (HTTP 429).
  EXPECT_TRUE(IsFullForNow(a2.status()));
  // The refusal took nothing from the client or the budget.
  EXPECT_EQ(a->held(), 30u);
  EXPECT_EQ(budget.held(), 30u);
  // Another client still gets its own share, then the budget's end.
  absl::StatusOr<MemoryBudget::Hold> b1 = budget.Reserve(40, b);
  ASSERT_TRUE(b1.ok());
  absl::StatusOr<MemoryBudget::Hold> server = budget.Reserve(30);
  ASSERT_TRUE(server.ok());  // the server's own holds have no share
  std::shared_ptr<MemoryBudget::Share> c = budget.ShareOf("token 2");
  absl::StatusOr<MemoryBudget::Hold> c1 = budget.Reserve(1, c);
  EXPECT_EQ(c1.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(c1.status().message()),
              HasSubstr("the server's memory budget is full"));
  EXPECT_TRUE(IsFullForNow(c1.status()));
  EXPECT_FALSE(IsFullForNow(absl::ResourceExhaustedError("over a limit")));
  EXPECT_EQ(budget.refused_full(), 1u);
  EXPECT_EQ(c->held(), 0u);  // rolled back
  EXPECT_EQ(budget.largest_share_held(), 40u);
  // Holds give back to both.
  b1->Release();
  EXPECT_EQ(b->held(), 0u);
  EXPECT_EQ(budget.held(), 60u);
}

TEST(MemoryBudgetTest, AShareLeavesWithItsLastHolder) {
  MemoryBudget budget(100, 50);
  absl::StatusOr<MemoryBudget::Hold> hold;
  {
    std::shared_ptr<MemoryBudget::Share> share = budget.ShareOf("fd:7");
    hold = budget.Reserve(20, share);
    ASSERT_TRUE(hold.ok());
  }
  // The hold keeps the share: the same client finds what it holds.
  EXPECT_EQ(budget.clients(), 1u);
  EXPECT_EQ(budget.ShareOf("fd:7")->held(), 20u);
  *hold = MemoryBudget::Hold();
  EXPECT_EQ(budget.clients(), 0u);
  EXPECT_EQ(budget.ShareOf("fd:7")->held(), 0u);
  EXPECT_EQ(budget.clients(), 0u);  // that temporary share is gone too
}

TEST(MemoryBudgetTest, ClientsTogetherNeverPassTheirSharesOrTheBudget) {
  MemoryBudget budget(1000, 400);
  std::vector<std::thread> threads;
  std::atomic<bool> over{false};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string client = "client " + std::to_string(t % 3);
      for (int i = 0; i < 20000; ++i) {
        std::shared_ptr<MemoryBudget::Share> share = budget.ShareOf(client);
        absl::StatusOr<MemoryBudget::Hold> h = budget.Reserve(150, share);
        if (budget.held() > 1000 || share->held() > 400) over = true;
        if (i % 7 == 0) (void)budget.largest_share_held();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(over);
  EXPECT_EQ(budget.held(), 0u);
  EXPECT_EQ(budget.clients(), 0u);
}

}  // namespace
}  // namespace ptoserve
