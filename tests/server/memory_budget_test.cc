#include "server/memory_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

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
    EXPECT_THAT(
        std::string(b.status().message()),
        HasSubstr(
            "this job needs 41 bytes and 60 of 100 (--memory_budget_mb)"));
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

}  // namespace
}  // namespace ptoserve
