#include "server/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/synchronization/notification.h"

namespace ptoserve {
namespace {

TEST(WorkerPoolTest, RunsEverythingSubmitted) {
  std::atomic<int> sum{0};
  {
    WorkerPool pool(3, 1000);
    for (int i = 1; i <= 100; ++i) {
      ASSERT_TRUE(pool.TrySubmit([&sum, i] { sum += i; }));
    }
  }  // the destructor drains the queue
  EXPECT_EQ(sum.load(), 5050);
}

TEST(WorkerPoolTest, RefusesWorkWhenTheQueueIsFull) {
  absl::Notification started, release;
  std::atomic<int> ran{0};
  {
    WorkerPool pool(1, 2);
    ASSERT_TRUE(pool.TrySubmit([&] {
      started.Notify();
      release.WaitForNotification();
      ++ran;
    }));
    started.WaitForNotification();  // the only worker is now busy
    EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
    EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
    EXPECT_FALSE(pool.TrySubmit([&] { ++ran; }));  // queue holds 2
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace
}  // namespace ptoserve
