// The dispatcher without a gRPC server: jobs in, results out, and which
// thread builds a result.
#include "server/jobs/dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "server/jobs/engine_runner.h"
#include "server/metrics/metrics.h"

namespace ptoserve {
namespace {

// A host job: `steps` TANDs, each c = a & b, 16x16 int32 fills.
v1::Job Chain(int steps) {
  v1::Job job;
  job.set_id("chain");
  job.set_target(v1::TARGET_HOST);
  for (const char* name : {"a", "b", "c"}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(16);
    t.set_cols(16);
    if (name[0] != 'c') t.set_fill(name[0] == 'a' ? 0x0ff0 : 0x3c3c);
  }
  for (int i = 0; i < steps; ++i) {
    v1::Instruction* inst = job.add_instructions();
    inst->set_opcode(v1::OPCODE_TAND);
    inst->set_dst("c");
    inst->set_src0("a");
    inst->set_src1("b");
  }
  job.add_outputs("c");
  return job;
}

// A scheduler that runs only when the test calls RunOnce.
SchedulerOptions NoWorkers() {
  SchedulerOptions options;
  options.workers = 0;
  return options;
}

// What a job's done saw.
struct Answer {
  absl::Notification done;
  std::optional<absl::StatusOr<v1::JobResult>> result;
  std::thread::id thread;
  uint64_t held = 0;  // the memory budget the job held, handed over
};

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    limits_.max_message_bytes = 64 << 20;
    limits_.max_job_bytes = 256 << 20;
    limits_.memory_budget_bytes = budget_.limit();
  }

  // Dispatches `job`, runs the scheduler on this thread until it is empty,
  // and waits for the job's done.
  void Run(Dispatcher* dispatcher, const v1::Job& job, Answer* answer) {
    const CallInfo call;
    JobRequest request;
    request.job = &job;
    request.request_bytes = job.ByteSizeLong();
    request.call = &call;
    request.done = [answer](absl::StatusOr<v1::JobResult*> r,
                            MemoryBudget::Hold hold) {
      if (r.ok()) {
        answer->result = **r;  // the dispatcher's until done returns
      } else {
        answer->result = r.status();
      }
      answer->thread = std::this_thread::get_id();
      answer->held = hold.bytes();
      answer->done.Notify();
    };
    const Dispatched dispatched = dispatcher->Dispatch(std::move(request));
    ASSERT_TRUE(dispatched.status.ok()) << dispatched.status;
    while (scheduler_.RunOnce() > 0) {
    }
    ASSERT_TRUE(answer->done.WaitForNotificationWithTimeout(absl::Minutes(1)));
    ASSERT_TRUE(answer->result->ok()) << answer->result->status();
    const v1::JobResult& r = **answer->result;
    EXPECT_EQ(r.id(), "chain");
    EXPECT_EQ(r.events_size(), job.instructions_size());
    const v1::Tile& c = r.tiles().at("c");
    ASSERT_EQ(c.data().size(), 16u * 16 * 4);
    const int32_t first = *reinterpret_cast<const int32_t*>(c.data().data());
    EXPECT_EQ(first, 0x0ff0 & 0x3c3c);
    EXPECT_GT(answer->held, 0u);
  }

  const Engine engine_{EngineOptions{}};
  MetricsRegistry registry_;
  ServiceMetrics metrics_{&registry_};
  EngineRunner runner_{&engine_, &metrics_};
  Scheduler scheduler_{NoWorkers(), &runner_};
  MemoryBudget budget_{64 << 20};
  ServerLimits limits_;
};

// The result of a job of many instructions (an event record each) is built
// on the finishers, not on the thread that ran its last instruction (here
// the test's: the scheduler has no workers), which stays free for batches.
TEST_F(DispatcherTest, HeavyResultsAreBuiltOnTheFinishers) {
  TaskPool finishers(1, 16);
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, &finishers);
  Answer heavy;
  Run(&dispatcher, Chain(65), &heavy);
  EXPECT_NE(heavy.thread, std::this_thread::get_id());
  // A small one's is built where it ran: no hand-off.
  Answer light;
  Run(&dispatcher, Chain(64), &light);
  EXPECT_EQ(light.thread, std::this_thread::get_id());
  EXPECT_EQ(budget_.held(), 0u);
}

TEST_F(DispatcherTest, FinishersThatRefuseLeaveTheResultToTheWorker) {
  TaskPool finishers(1, 0);  // refuses every task
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, &finishers);
  Answer heavy;
  Run(&dispatcher, Chain(65), &heavy);
  EXPECT_EQ(heavy.thread, std::this_thread::get_id());
  finishers.Shutdown();
  Answer after;
  Run(&dispatcher, Chain(65), &after);
  EXPECT_EQ(after.thread, std::this_thread::get_id());
}

}  // namespace
}  // namespace ptoserve
