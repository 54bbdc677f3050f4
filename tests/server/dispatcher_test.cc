// The dispatcher without a gRPC server: jobs in, results out, which thread
// builds a result, and which jobs run to completion on the calling thread.
#include "server/jobs/dispatcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "server/jobs/engine_runner.h"
#include "server/metrics/metrics.h"
#include "tests/server/signal.h"

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
  options.run_by_owner = true;
  return options;
}

// What a job's done saw.
struct Answer {
  Signal done;
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
    request.done = [answer](absl::StatusOr<JobReply*> r,
                            MemoryBudget::Hold hold) {
      if (r.ok()) {
        answer->result =
            *(*r)->Message();  // the dispatcher's until done returns
      } else {
        answer->result = r.status();
      }
      answer->thread = std::this_thread::get_id();
      answer->held = hold.bytes();
      // Given back before the test hears of it: done may run on a finisher
      // thread, and the test then checks that nothing is held.
      { const MemoryBudget::Hold released = std::move(hold); }
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

  // Dispatches `job` as a small unary call would (run_here), with `call`,
  // and returns what Dispatch said; `answer` sees the done.
  absl::Status Offer(Dispatcher* dispatcher, const v1::Job& job,
                     const CallInfo& call, Answer* answer) {
    JobRequest request;
    request.job = &job;
    request.request_bytes = job.ByteSizeLong();
    request.call = &call;
    request.run_here = true;
    request.done = [answer](absl::StatusOr<JobReply*> r, MemoryBudget::Hold) {
      if (r.ok()) {
        answer->result = *(*r)->Message();
      } else {
        answer->result = r.status();
      }
      answer->thread = std::this_thread::get_id();
      answer->done.Notify();
    };
    return dispatcher->Dispatch(std::move(request)).status;
  }

  // How many jobs ran to completion where they were dispatched.
  int RanHere() const {
    const std::string text = registry_.Render();
    const std::string name = "\nptoserve_jobs_run_here_total ";
    const size_t at = text.find(name);
    if (at == std::string::npos) return -1;
    return std::stoi(text.substr(at + name.size()));
  }

  const Engine engine_{EngineOptions{}};
  MetricsRegistry registry_;
  ServiceMetrics metrics_{&registry_};
  EngineRunner runner_{&engine_, &metrics_};
  Scheduler scheduler_{NoWorkers(), &runner_};
  MemoryBudget budget_{64 << 20};
  ServiceLimits limits_;
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

// Run to completion: with nothing waiting in the scheduler, a small job runs
// from its request to its result on the thread that dispatched it, and is
// answered before Dispatch returns.
TEST_F(DispatcherTest, ASmallJobRunsToCompletionWhereItArrives) {
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  const v1::Job job = Chain(3);
  Answer answer;
  ASSERT_TRUE(Offer(&dispatcher, job, CallInfo(), &answer).ok());
  ASSERT_TRUE(answer.done.HasBeenNotified());
  EXPECT_EQ(answer.thread, std::this_thread::get_id());
  ASSERT_TRUE(answer.result->ok()) << answer.result->status();
  const v1::JobResult& r = **answer.result;
  ASSERT_EQ(r.events_size(), 3);
  const std::string& c = r.tiles().at("c").data();
  ASSERT_EQ(c.size(), 16u * 16 * 4);
  for (size_t i = 0; i < c.size(); i += 4) {
    ASSERT_EQ(*reinterpret_cast<const int32_t*>(c.data() + i), 0x0ff0 & 0x3c3c);
  }
  EXPECT_EQ(RanHere(), 1);
  EXPECT_EQ(scheduler_.RunOnce(), 0u);  // the scheduler never saw it
  EXPECT_EQ(budget_.held(), 0u);
}

// Once the scheduler has work waiting, a small job does not pass it by: it
// queues, and the scheduler's priorities order it. Here a priority-3 job
// offered after two priority-0 jobs of the same client runs first.
TEST_F(DispatcherTest,
       ASmallJobQueuesBehindNothingButPriorityWhenTheSchedulerIsBusy) {
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  CallInfo call;
  call.share = budget_.ShareOf("one client");
  const v1::Job low = Chain(65);  // too large to run here
  Answer low1, low2, high;
  ASSERT_TRUE(Offer(&dispatcher, low, call, &low1).ok());
  ASSERT_TRUE(Offer(&dispatcher, low, call, &low2).ok());
  v1::Job urgent = Chain(1);
  urgent.set_priority(3);
  ASSERT_TRUE(Offer(&dispatcher, urgent, call, &high).ok());
  EXPECT_FALSE(high.done.HasBeenNotified());
  EXPECT_EQ(RanHere(), 0);
  // The urgent job's one instruction is the first the scheduler runs.
  ASSERT_GT(scheduler_.RunOnce(), 0u);
  EXPECT_TRUE(high.done.HasBeenNotified());
  EXPECT_FALSE(low1.done.HasBeenNotified());
  while (scheduler_.RunOnce() > 0) {
  }
  ASSERT_TRUE(low1.done.HasBeenNotified() && low2.done.HasBeenNotified());
  EXPECT_TRUE(low1.result->ok() && low2.result->ok() && high.result->ok());
  EXPECT_EQ(RanHere(), 0);
}

// The run-to-completion path keeps the deadline and cancellation rules:
// a job whose timeout has passed, or whose caller has gone, never runs.
TEST_F(DispatcherTest, RunningHereKeepsDeadlinesAndCancellation) {
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  v1::Job hurried = Chain(1);
  hurried.mutable_timeout()->set_nanos(1);
  Answer late;
  const absl::Status timed_out = Offer(&dispatcher, hurried, CallInfo(), &late);
  EXPECT_EQ(timed_out.code(), absl::StatusCode::kDeadlineExceeded) << timed_out;
  CallInfo past;
  past.deadline = absl::Now() - absl::Seconds(1);
  Answer expired;
  EXPECT_EQ(Offer(&dispatcher, Chain(1), past, &expired).code(),
            absl::StatusCode::kDeadlineExceeded);
  CallInfo gone;
  gone.cancelled = [] { return true; };
  Answer cancelled;
  EXPECT_EQ(Offer(&dispatcher, Chain(1), gone, &cancelled).code(),
            absl::StatusCode::kCancelled);
  EXPECT_FALSE(late.done.HasBeenNotified() || expired.done.HasBeenNotified() ||
               cancelled.done.HasBeenNotified());
  EXPECT_EQ(RanHere(), 0);
  EXPECT_EQ(budget_.held(), 0u);
}

// A job dispatched from within another's done (a stream answering one job
// and starting the next on the same thread) runs to completion too, and its
// result does not take the first one's memory: the first result reads the
// same after the second is built.
TEST_F(DispatcherTest, AResultBuiltWithinAnothersDoneLeavesItIntact) {
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  v1::Job outer_job = Chain(2);
  outer_job.set_id("outer");
  v1::Job inner_job = Chain(5);
  inner_job.set_id("inner");
  const CallInfo call;
  Answer inner;
  std::string outer_before, outer_after;
  int inner_events = -1;
  JobRequest request;
  request.job = &outer_job;
  request.request_bytes = outer_job.ByteSizeLong();
  request.call = &call;
  request.run_here = true;
  request.done = [&](absl::StatusOr<JobReply*> r, MemoryBudget::Hold) {
    ASSERT_TRUE(r.ok()) << r.status();
    outer_before = (*r)->Message()->SerializeAsString();
    ASSERT_TRUE(Offer(&dispatcher, inner_job, call, &inner).ok());
    ASSERT_TRUE(inner.done.HasBeenNotified());
    inner_events = (*inner.result)->events_size();
    outer_after = (*r)->Message()->SerializeAsString();
  };
  ASSERT_TRUE(dispatcher.Dispatch(std::move(request)).status.ok());
  EXPECT_EQ(RanHere(), 2);
  EXPECT_EQ(inner_events, 5);
  ASSERT_FALSE(outer_before.empty());
  EXPECT_EQ(outer_after, outer_before);
  v1::JobResult outer;
  ASSERT_TRUE(outer.ParseFromString(outer_after));
  EXPECT_EQ(outer.id(), "outer");
  EXPECT_EQ(outer.events_size(), 2);
}

// A server shutting down runs nothing more here: the job goes to the
// scheduler, which refuses it.
TEST_F(DispatcherTest, NothingRunsHereOnceTheSchedulerStops) {
  Dispatcher dispatcher(&engine_, &scheduler_, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  scheduler_.Shutdown();
  const v1::Job job = Chain(1);
  Answer answer;
  const absl::Status status = Offer(&dispatcher, job, CallInfo(), &answer);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_FALSE(answer.done.HasBeenNotified());
  EXPECT_EQ(RanHere(), 0);
}

// With a queue delay the operator asked jobs to wait for company: none runs
// here.
TEST_F(DispatcherTest, AQueueDelayTurnsRunningHereOff) {
  SchedulerOptions options = NoWorkers();
  options.max_queue_delay = absl::Milliseconds(1);
  Scheduler scheduler(options, &runner_);
  Dispatcher dispatcher(&engine_, &scheduler, limits_, &metrics_, &budget_,
                        nullptr, nullptr);
  const v1::Job job = Chain(1);
  Answer answer;
  ASSERT_TRUE(Offer(&dispatcher, job, CallInfo(), &answer).ok());
  EXPECT_FALSE(answer.done.HasBeenNotified());
  while (!answer.done.HasBeenNotified()) scheduler.RunOnce();
  EXPECT_TRUE(answer.result->ok());
  EXPECT_EQ(RanHere(), 0);
}

}  // namespace
}  // namespace ptoserve
