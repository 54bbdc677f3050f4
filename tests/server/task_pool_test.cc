// The task pool: clients take turns by cost, each holds at most its part of
// the queue, and shutting down runs what was queued.
#include "server/exec/task_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/mutex.h"

namespace ptoserve {
namespace {

using ::testing::ElementsAre;
using Posted = TaskPool::Posted;

// Records the order tasks ran in.
class Log {
 public:
  std::function<void()> Task(std::string name) {
    return [this, name] {
      MutexLock lock(&mu_);
      names_.push_back(name);
    };
  }
  std::vector<std::string> names() {
    MutexLock lock(&mu_);
    return names_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> names_;
};

// The first task of a one-thread pool holds its thread until released, so
// that what is posted after it queues up.
class TaskPoolTest : public ::testing::Test {
 protected:
  void Hold(TaskPool* pool) {
    ASSERT_EQ(pool->Post([this] {
      held_.Notify();
      release_.WaitForNotification();
    }),
              Posted::kQueued);
    held_.WaitForNotification();  // off the queue, on the thread
  }

  absl::Notification held_, release_;
  Log log_;
  const int a_ = 0, b_ = 0;  // two clients, by address
};

TEST_F(TaskPoolTest, ClientsTakeTurnsOneTaskEach) {
  TaskPool pool(1, 100);
  Hold(&pool);
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(pool.Post(log_.Task("a" + std::to_string(i)), &a_),
              Posted::kQueued);
  }
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(pool.Post(log_.Task("b" + std::to_string(i)), &b_),
              Posted::kQueued);
  }
  release_.Notify();
  pool.Shutdown();
  EXPECT_THAT(log_.names(), ElementsAre("a1", "b1", "a2", "b2", "a3", "a4"));
}

TEST_F(TaskPoolTest, TurnsAreSharedByCostNotByCount) {
  // a's tasks cost 1,000 each, b's 10: once a has had one, b's five run
  // (50 in all) before a's second.
  TaskPool pool(1, 100);
  Hold(&pool);
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(pool.Post(log_.Task("a" + std::to_string(i)), &a_, 1000),
              Posted::kQueued);
  }
  for (int i = 1; i <= 5; ++i) {
    ASSERT_EQ(pool.Post(log_.Task("b" + std::to_string(i)), &b_, 10),
              Posted::kQueued);
  }
  release_.Notify();
  pool.Shutdown();
  EXPECT_THAT(log_.names(),
              ElementsAre("a1", "b1", "b2", "b3", "b4", "b5", "a2"));
}

TEST_F(TaskPoolTest, AClientRunsOnAllThreadsButOne) {
  // Two threads: a's two long tasks run one at a time, so that b's task
  // finds a thread free while a's first still runs.
  TaskPool pool(2, 100);
  absl::Notification a1_running, b1_ran, release_a1;
  ASSERT_EQ(pool.Post(
                [&] {
                  a1_running.Notify();
                  release_a1.WaitForNotification();
                },
                &a_, 1000),
            Posted::kQueued);
  a1_running.WaitForNotification();
  ASSERT_EQ(pool.Post(log_.Task("a2"), &a_, 1000), Posted::kQueued);
  ASSERT_EQ(pool.Post(
                [&] {
                  log_.Task("b1")();
                  b1_ran.Notify();
                },
                &b_, 10),
            Posted::kQueued);
  // b1 runs beside a1; a2 waits for a1, on whichever thread frees.
  EXPECT_TRUE(b1_ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_THAT(log_.names(), ElementsAre("b1"));
  release_a1.Notify();
  pool.Shutdown();
  EXPECT_THAT(log_.names(), ElementsAre("b1", "a2"));
}

TEST_F(TaskPoolTest, OneClientHoldsAtMostItsPartOfTheQueue) {
  TaskPool pool(1, 4, 2);
  Hold(&pool);
  EXPECT_EQ(pool.Post(log_.Task("a1"), &a_), Posted::kQueued);
  EXPECT_EQ(pool.Post(log_.Task("a2"), &a_), Posted::kQueued);
  EXPECT_EQ(pool.Post(log_.Task("a3"), &a_), Posted::kClientFull);
  // Another client still has room, up to the queue's capacity.
  EXPECT_EQ(pool.Post(log_.Task("b1"), &b_), Posted::kQueued);
  EXPECT_EQ(pool.Post(log_.Task("b2"), &b_), Posted::kQueued);
  EXPECT_EQ(pool.Post(log_.Task("c1")), Posted::kFull);
  release_.Notify();
  pool.Shutdown();
  EXPECT_THAT(log_.names(), ElementsAre("a1", "b1", "a2", "b2"));
}

TEST_F(TaskPoolTest, ShutdownRunsWhatWasQueuedThenRefuses) {
  TaskPool pool(2, 100);
  Hold(&pool);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(pool.Post(log_.Task("t")), Posted::kQueued);
  }
  release_.Notify();
  pool.Shutdown();
  EXPECT_EQ(log_.names().size(), 10u);
  EXPECT_TRUE(pool.Stopping());
  EXPECT_EQ(pool.Post(log_.Task("late")), Posted::kStopping);
  pool.Shutdown();  // idempotent
  EXPECT_EQ(log_.names().size(), 10u);
}

}  // namespace
}  // namespace ptoserve
