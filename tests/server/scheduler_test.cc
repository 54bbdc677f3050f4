// The scheduler driven by a fake clock and a recording runner (RunOnce on
// the test thread), plus a few runs with real worker threads.
#include "server/exec/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/mutex.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::Desc;
using test::JobBuilder;
using ::testing::ElementsAre;

class FakeClock final : public Clock {
 public:
  absl::Time Now() override {
    MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

// Runs batches on a real engine and remembers their keys and sizes; fails
// the test if a batch ever mixes keys.
class RecordingRunner final : public BatchRunner {
 public:
  explicit RecordingRunner(const Engine* engine) : engine_(engine) {}

  // From now on each instruction run moves `clock` on by `cost`: the worker
  // time the scheduler charges its client.
  void TakeTime(FakeClock* clock, absl::Duration cost) {
    MutexLock lock(&mu_);
    clock_ = clock;
    cost_ = cost;
  }

  void RunBatch(absl::Span<const WorkItem> batch) override {
    const BatchKey key = BatchKey::Of(*batch[0].job, batch[0].index);
    for (const WorkItem& item : batch) {
      EXPECT_TRUE(BatchKey::Of(*item.job, item.index) == key) << "keys mixed";
    }
    engine_->RunBatch(batch);
    MutexLock lock(&mu_);
    if (clock_ != nullptr) clock_->Advance(cost_ * batch.size());
    sizes_.push_back(batch.size());
    keys_.push_back(key);
    for (const WorkItem& item : batch) ran_.push_back(item.job);
  }

  std::vector<size_t> sizes() {
    MutexLock lock(&mu_);
    return sizes_;
  }
  std::vector<BatchKey> keys() {
    MutexLock lock(&mu_);
    return keys_;
  }
  std::vector<const PreparedJob*> ran() {
    MutexLock lock(&mu_);
    return ran_;
  }

 private:
  const Engine* engine_;
  absl::Mutex mu_;
  FakeClock* clock_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Duration cost_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> sizes_;
  std::vector<BatchKey> keys_;
  std::vector<const PreparedJob*> ran_;
};

// Counts answers; each job's done must run once.
struct Answers {
  absl::Mutex mu;
  std::vector<absl::StatusCode> codes;
  std::vector<std::unique_ptr<PreparedJob>> jobs;

  std::function<void(absl::StatusOr<std::unique_ptr<PreparedJob>>)> Callback() {
    return [this](absl::StatusOr<std::unique_ptr<PreparedJob>> r) {
      MutexLock lock(&mu);
      codes.push_back(r.status().code());
      if (r.ok()) jobs.push_back(std::move(*r));
    };
  }
  size_t size() {
    MutexLock lock(&mu);
    return codes.size();
  }
};

class SchedulerTest : public ::testing::Test {
 protected:
  // A one-instruction job: `opcode` on rows x cols tiles of `dtype`.
  std::unique_ptr<PreparedJob> OneOp(Opcode opcode = Opcode::kTand,
                                     DType dtype = DType::kInt32,
                                     uint32_t rows = 4, uint32_t cols = 8,
                                     Target target = Target::kHost) {
    JobBuilder job(target);
    job.AddTile("a", Desc(dtype, rows, cols));
    job.AddTile("b", Desc(dtype, rows, cols));
    job.Add(opcode, "d", "a", "b", Op(opcode).accepts_tmp ? "t" : "");
    return engine_.Prepare(job.spec()).value();
  }

  JobTicket Ticket(std::unique_ptr<PreparedJob> job, int priority = 0,
                   std::shared_ptr<const void> client = nullptr) {
    JobTicket t;
    t.job = std::move(job);
    t.priority = priority;
    t.client = std::move(client);
    t.done = answers_.Callback();
    return t;
  }

  SchedulerOptions Manual(size_t max_batch, absl::Duration delay) {
    SchedulerOptions o;
    o.run_by_owner = true;
    o.max_batch_size = max_batch;
    o.max_queue_delay = delay;
    return o;
  }

  Engine engine_{EngineOptions{}};
  RecordingRunner runner_{&engine_};
  FakeClock clock_;
  Answers answers_;
};

TEST_F(SchedulerTest, BatchesFillToTheMaximumAndPartialOnesWaitForTheDelay) {
  Scheduler s(Manual(4, absl::Milliseconds(2)), &runner_, &clock_);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  EXPECT_EQ(s.RunOnce(), 4u);
  EXPECT_EQ(s.RunOnce(), 4u);
  EXPECT_EQ(s.RunOnce(), 0u);  // 2 left: a partial batch, not yet due
  clock_.Advance(absl::Microseconds(1999));
  EXPECT_EQ(s.RunOnce(), 0u);
  clock_.Advance(absl::Microseconds(1));
  EXPECT_EQ(s.RunOnce(), 2u);  // the delay passed
  EXPECT_THAT(runner_.sizes(), ElementsAre(4, 4, 2));
  EXPECT_EQ(answers_.size(), 10u);
  // The events report the batch each instruction ran in.
  MutexLock lock(&answers_.mu);
  for (const auto& job : answers_.jobs) {
    JobOutcome outcome = engine_.Finish(job.get());
    EXPECT_GE(outcome.events[0].batch_size, 2u);
    EXPECT_GT(outcome.events[0].batch_id, 0u);
  }
}

// What the metrics' gauges read.
TEST_F(SchedulerTest, CountsQueuedInstructionsAndJobsInFlight) {
  Scheduler s(Manual(4, absl::ZeroDuration()), &runner_, &clock_);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  EXPECT_EQ(s.queued(), 6u);
  EXPECT_EQ(s.jobs_in_flight(), 6u);
  EXPECT_EQ(s.RunOnce(), 4u);
  EXPECT_EQ(s.queued(), 2u);
  EXPECT_EQ(s.jobs_in_flight(), 2u);
  EXPECT_EQ(s.RunOnce(), 2u);
  EXPECT_EQ(s.queued(), 0u);
  EXPECT_EQ(s.jobs_in_flight(), 0u);
}

TEST_F(SchedulerTest, ZeroDelayRunsWhateverIsQueued) {
  Scheduler s(Manual(64, absl::ZeroDuration()), &runner_, &clock_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  EXPECT_EQ(s.RunOnce(), 3u);
}

TEST_F(SchedulerTest, KeysNeverMix) {
  Scheduler s(Manual(64, absl::ZeroDuration()), &runner_, &clock_);
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand))).ok());
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTxor))).ok());
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand, DType::kInt16))).ok());
  ASSERT_TRUE(
      s.Submit(Ticket(OneOp(Opcode::kTand, DType::kInt32, 4, 16))).ok());
  ASSERT_TRUE(
      s.Submit(Ticket(OneOp(Opcode::kTand, DType::kInt32, 4, 8, Target::kA5)))
          .ok());
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand))).ok());  // joins the first
  size_t batches = 0;
  while (s.RunOnce() > 0) ++batches;
  EXPECT_EQ(batches, 5u);
  EXPECT_EQ(answers_.size(), 6u);
  std::vector<size_t> sizes = runner_.sizes();
  std::sort(sizes.begin(), sizes.end());
  EXPECT_THAT(sizes, ElementsAre(1, 1, 1, 1, 2));
}

TEST_F(SchedulerTest, HigherPriorityRunsFirst) {
  SchedulerOptions o = Manual(64, absl::ZeroDuration());
  o.priority_levels = 3;
  Scheduler s(o, &runner_, &clock_);
  auto low = OneOp(Opcode::kTand);
  auto high = OneOp(Opcode::kTxor);
  const PreparedJob* high_ptr = high.get();
  ASSERT_TRUE(s.Submit(Ticket(std::move(low), 0)).ok());
  ASSERT_TRUE(s.Submit(Ticket(std::move(high), 2)).ok());
  EXPECT_EQ(s.RunOnce(), 1u);
  EXPECT_EQ(runner_.ran().front(), high_ptr);
}

// Clients for the fairness tests: any object's address names one.
std::shared_ptr<const void> NewClient() { return std::make_shared<int>(0); }

// Between clients that have used the workers equally (two new ones),
// priority decides.
TEST_F(SchedulerTest, PriorityBreaksTiesBetweenClients) {
  SchedulerOptions o = Manual(64, absl::ZeroDuration());
  o.priority_levels = 3;
  Scheduler s(o, &runner_, &clock_);
  auto high = OneOp(Opcode::kTxor);
  const PreparedJob* high_ptr = high.get();
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand), 0, NewClient())).ok());
  ASSERT_TRUE(s.Submit(Ticket(std::move(high), 2, NewClient())).ok());
  EXPECT_EQ(s.active_clients(), 2u);
  EXPECT_EQ(s.RunOnce(), 1u);
  EXPECT_EQ(runner_.ran().front(), high_ptr);
}

// One client's stream of top-priority work cannot make another client's
// job wait for its priority to age: the first has used the workers, the
// second not yet.
TEST_F(SchedulerTest, TheClientThatUsedTheWorkersLeastGoesFirst) {
  SchedulerOptions o = Manual(4, absl::ZeroDuration());
  o.priority_levels = 4;
  o.priority_aging = absl::Milliseconds(10);
  Scheduler s(o, &runner_, &clock_);
  runner_.TakeTime(&clock_, absl::Milliseconds(1));
  const auto heavy = NewClient();
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand), 3, heavy)).ok());
  }
  // Alone, it has the workers to itself.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.RunOnce(), 4u);
  EXPECT_EQ(s.active_clients(), 1u);
  auto light = OneOp(Opcode::kTxor);
  const PreparedJob* light_ptr = light.get();
  ASSERT_TRUE(s.Submit(Ticket(std::move(light), 0, NewClient())).ok());
  EXPECT_EQ(s.active_clients(), 2u);
  // It starts level with the heavy client as last served, which has used
  // 4 ms since.
  EXPECT_EQ(s.largest_lead(), absl::Milliseconds(4));
  EXPECT_EQ(s.RunOnce(), 1u);
  EXPECT_EQ(runner_.ran().back(), light_ptr);
  // With the other client answered, the first has the workers again.
  EXPECT_EQ(s.active_clients(), 1u);
  EXPECT_EQ(s.RunOnce(), 4u);
}

// Two clients with work always due share the workers evenly, whatever
// their priorities: neither starves, neither takes more.
TEST_F(SchedulerTest, BusyClientsShareTheWorkersEvenly) {
  SchedulerOptions o = Manual(1, absl::ZeroDuration());
  o.priority_levels = 4;
  Scheduler s(o, &runner_, &clock_);
  runner_.TakeTime(&clock_, absl::Milliseconds(1));
  const auto a = NewClient();
  const auto b = NewClient();
  std::set<const PreparedJob*> from_a;
  for (int i = 0; i < 100; ++i) {
    auto job = OneOp(Opcode::kTand);
    from_a.insert(job.get());
    ASSERT_TRUE(s.Submit(Ticket(std::move(job), 3, a)).ok());
    ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTxor), 0, b)).ok());
  }
  for (int i = 0; i < 100; ++i) ASSERT_EQ(s.RunOnce(), 1u);
  const auto ran = runner_.ran();
  const auto a_ran = std::count_if(
      ran.begin(), ran.end(), [&](auto* job) { return from_a.count(job) > 0; });
  EXPECT_GE(a_ran, 49);
  EXPECT_LE(a_ran, 51);
}

// A client that was idle banks no credit: it starts level with the
// others, not with the worker time it did not use.
TEST_F(SchedulerTest, IdleTimeBanksNoCredit) {
  Scheduler s(Manual(1, absl::ZeroDuration()), &runner_, &clock_);
  runner_.TakeTime(&clock_, absl::Milliseconds(1));
  const auto busy = NewClient();
  const auto idle = NewClient();
  ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTxor), 0, idle)).ok());
  EXPECT_EQ(s.RunOnce(), 1u);  // 1 ms
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand), 0, busy)).ok());
  }
  for (int i = 0; i < 40; ++i) ASSERT_EQ(s.RunOnce(), 1u);  // 40 ms
  std::set<const PreparedJob*> from_idle;
  for (int i = 0; i < 10; ++i) {
    auto job = OneOp(Opcode::kTxor);
    from_idle.insert(job.get());
    ASSERT_TRUE(s.Submit(Ticket(std::move(job), 0, idle)).ok());
  }
  // Not the next 10 batches in a row: they alternate.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(s.RunOnce(), 1u);
  const auto ran = runner_.ran();
  const auto idle_ran =
      std::count_if(ran.end() - 10, ran.end(),
                    [&](auto* job) { return from_idle.count(job) > 0; });
  EXPECT_GE(idle_ran, 4);
  EXPECT_LE(idle_ran, 6);
}

// The chosen client's batch fills up with other clients' instructions of
// the same key: fairness orders the batches, it does not split them.
TEST_F(SchedulerTest, ABatchStillCarriesOtherClientsInstructionsOfItsKey) {
  Scheduler s(Manual(4, absl::ZeroDuration()), &runner_, &clock_);
  runner_.TakeTime(&clock_, absl::Milliseconds(1));
  const auto heavy = NewClient();
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand), 0, heavy)).ok());
  }
  EXPECT_EQ(s.RunOnce(), 4u);
  auto light = OneOp(Opcode::kTand);
  const PreparedJob* light_ptr = light.get();
  ASSERT_TRUE(s.Submit(Ticket(std::move(light), 0, NewClient())).ok());
  EXPECT_EQ(s.RunOnce(), 4u);  // the newcomer first, then three of the others
  const auto ran = runner_.ran();
  EXPECT_EQ(ran[4], light_ptr);
}

// Large tiles gain nothing from sharing a backend call: a batch holds at
// most max_batch_bytes of dst tiles, and a larger instruction runs alone.
TEST_F(SchedulerTest, BatchesAreBoundedByTheirTilesBytes) {
  SchedulerOptions o = Manual(64, absl::ZeroDuration());
  o.max_batch_bytes = 4096;
  Scheduler s(o, &runner_, &clock_);
  for (int i = 0; i < 6; ++i) {  // 16x16 int32: 1 KiB each
    ASSERT_TRUE(
        s.Submit(Ticket(OneOp(Opcode::kTand, DType::kInt32, 16, 16))).ok());
  }
  for (int i = 0; i < 2; ++i) {  // 64x64 int32: 16 KiB each
    ASSERT_TRUE(
        s.Submit(Ticket(OneOp(Opcode::kTxor, DType::kInt32, 64, 64))).ok());
  }
  size_t batches = 0;
  while (s.RunOnce() > 0) ++batches;
  std::vector<size_t> sizes = runner_.sizes();
  std::sort(sizes.begin(), sizes.end());
  EXPECT_THAT(sizes, ElementsAre(1, 1, 2, 4));
}

TEST_F(SchedulerTest, PriorityOutOfRangeIsRefused) {
  SchedulerOptions o = Manual(64, absl::ZeroDuration());
  o.priority_levels = 2;
  Scheduler s(o, &runner_, &clock_);
  absl::Status st = s.Submit(Ticket(OneOp(), 2));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()),
              ::testing::HasSubstr("priority levels 0 to 1"));
  EXPECT_EQ(answers_.size(), 0u);
}

TEST_F(SchedulerTest, LowerLevelsAreNeverStarved) {
  SchedulerOptions o = Manual(1, absl::ZeroDuration());
  o.priority_levels = 4;
  o.priority_aging = absl::Milliseconds(10);
  Scheduler s(o, &runner_, &clock_);
  auto low = OneOp(Opcode::kTxor);
  const PreparedJob* low_ptr = low.get();
  ASSERT_TRUE(s.Submit(Ticket(std::move(low), 0)).ok());
  // A steady stream of top-priority work, one new job per millisecond.
  int steps = 0;
  for (; steps < 1000; ++steps) {
    ASSERT_TRUE(s.Submit(Ticket(OneOp(Opcode::kTand), 3)).ok());
    clock_.Advance(absl::Milliseconds(1));
    s.RunOnce();
    const auto ran = runner_.ran();
    if (std::find(ran.begin(), ran.end(), low_ptr) != ran.end()) break;
  }
  // Aged past 3 levels (30 ms) it outranks fresh top-priority work.
  EXPECT_GE(steps, 25);
  EXPECT_LE(steps, 40);
}

TEST_F(SchedulerTest, DeadlinePassedWhileQueuedIsDroppedAndNeverRun) {
  Scheduler s(Manual(4, absl::Seconds(1)), &runner_, &clock_);
  JobTicket t = Ticket(OneOp());
  t.deadline = clock_.Now() + absl::Milliseconds(5);
  ASSERT_TRUE(s.Submit(std::move(t)).ok());
  EXPECT_EQ(s.queued(), 1u);
  clock_.Advance(absl::Milliseconds(6));
  EXPECT_EQ(s.RunOnce(), 0u);
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_.codes[0], absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(runner_.ran().empty());
  EXPECT_EQ(s.queued(), 0u);
}

TEST_F(SchedulerTest, DeadlineIsCheckedWhenTheBatchIsTaken) {
  // Due at once (full batch) but already past its deadline: never run.
  Scheduler s(Manual(1, absl::ZeroDuration()), &runner_, &clock_);
  JobTicket t = Ticket(OneOp());
  t.deadline = clock_.Now();
  ASSERT_TRUE(s.Submit(std::move(t)).ok());
  EXPECT_EQ(s.RunOnce(), 0u);
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_.codes[0], absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(SchedulerTest, CancelledCallIsDroppedAndNeverRun) {
  Scheduler s(Manual(4, absl::Seconds(1)), &runner_, &clock_);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  JobTicket t = Ticket(OneOp());
  t.cancelled = [cancelled] { return cancelled->load(); };
  ASSERT_TRUE(s.Submit(std::move(t)).ok());
  ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  *cancelled = true;
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(s.RunOnce(), 1u);  // only the other job ran
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_THAT(answers_.codes,
              ::testing::UnorderedElementsAre(absl::StatusCode::kCancelled,
                                              absl::StatusCode::kOk));
}

// A dropped job behind a live one in its queue is answered and deleted at
// once; its queued instruction must go with it, or the queue points to freed
// memory (found by tests/integration/soak_test: a later batch ran a stale
// item against whatever job reused the memory).
TEST_F(SchedulerTest, DroppedJobLeavesNothingQueuedBehind) {
  Scheduler s(Manual(64, absl::Seconds(1)), &runner_, &clock_);
  ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  JobTicket doomed = Ticket(OneOp());
  doomed.deadline = clock_.Now() + absl::Milliseconds(5);
  ASSERT_TRUE(s.Submit(std::move(doomed)).ok());
  ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  clock_.Advance(absl::Milliseconds(6));
  EXPECT_EQ(s.RunOnce(), 0u);  // drops the middle job; the batch is not due
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_.codes[0], absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.queued(), 2u);
  // A new job may reuse the dropped one's memory.
  ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(s.RunOnce(), 3u);
  EXPECT_EQ(s.RunOnce(), 0u);
  EXPECT_EQ(answers_.size(), 4u);
  std::vector<const PreparedJob*> ran = runner_.ran();
  EXPECT_EQ(std::set<const PreparedJob*>(ran.begin(), ran.end()).size(), 3u);
  EXPECT_EQ(s.queued(), 0u);
  EXPECT_EQ(s.jobs_in_flight(), 0u);
}

TEST_F(SchedulerTest, FullQueueRefusesAtOnce) {
  SchedulerOptions o = Manual(64, absl::Seconds(1));
  o.queue_capacity = 3;
  Scheduler s(o, &runner_, &clock_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.Submit(Ticket(OneOp())).ok());
  absl::Status st = s.Submit(Ticket(OneOp()));
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr("queue is full"));
  EXPECT_EQ(answers_.size(), 0u);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(s.RunOnce(), 3u);
  EXPECT_TRUE(s.Submit(Ticket(OneOp())).ok());  // room again
}

TEST_F(SchedulerTest, DependentInstructionsWaitAndIndependentOnesBatch) {
  Scheduler s(Manual(64, absl::ZeroDuration()), &runner_, &clock_);
  JobBuilder job(Target::kHost);
  job.AddValues("a", Desc(DType::kInt32, 1, 4), {1, 2, 3, 4});
  job.AddValues("b", Desc(DType::kInt32, 1, 4), {3, 3, 3, 3});
  job.Tand("c", "a", "b");                       // 0
  job.Tand("e", "b", "b");                       // 1: independent of 0
  job.Txor("d", "c", "a").wait_events = {"e0"};  // 2: after 0
  ASSERT_TRUE(s.Submit(Ticket(engine_.Prepare(job.spec()).value())).ok());
  EXPECT_EQ(s.RunOnce(), 2u);  // 0 and 1 together
  EXPECT_EQ(answers_.size(), 0u);
  EXPECT_EQ(s.RunOnce(), 1u);  // then 2
  ASSERT_EQ(answers_.size(), 1u);
  MutexLock lock(&answers_.mu);
  JobOutcome outcome = engine_.Finish(answers_.jobs[0].get());
  EXPECT_EQ(outcome.events[0].batch_id, outcome.events[1].batch_id);
  EXPECT_EQ(outcome.events[0].batch_size, 2u);
  EXPECT_LT(outcome.events[0].batch_id, outcome.events[2].batch_id);
  // d = (a & b) ^ a.
  std::vector<double> d(4);
  for (const OutputTile& t : outcome.outputs) {
    if (t.name == "d") ToValues(t.tile, absl::MakeSpan(d));
  }
  EXPECT_THAT(d, ElementsAre(0, 0, 0, 4));
}

TEST_F(SchedulerTest, ShutdownRefusesNewJobs) {
  Scheduler s(Manual(64, absl::ZeroDuration()), &runner_, &clock_);
  s.Shutdown();
  EXPECT_EQ(s.Submit(Ticket(OneOp())).code(), absl::StatusCode::kUnavailable);
}

TEST_F(SchedulerTest, WorkersDrainEverythingAcceptedOnShutdown) {
  SchedulerOptions o;
  o.workers = 2;
  o.max_batch_size = 16;
  o.max_queue_delay = absl::Milliseconds(1);
  std::atomic<int> answered{0}, ok{0};
  {
    Scheduler s(o, &runner_);
    std::vector<std::thread> clients;
    std::atomic<int> accepted{0};
    for (int c = 0; c < 4; ++c) {
      clients.emplace_back([&] {
        for (int i = 0; i < 250; ++i) {
          JobTicket t;
          t.job = OneOp(i % 2 ? Opcode::kTand : Opcode::kTxor);
          t.done = [&](absl::StatusOr<std::unique_ptr<PreparedJob>> r) {
            ++answered;
            if (r.ok()) ++ok;
          };
          if (s.Submit(std::move(t)).ok()) ++accepted;
        }
      });
    }
    for (auto& c : clients) c.join();
    s.Shutdown();
    EXPECT_EQ(accepted.load(), 1000);
    EXPECT_EQ(answered.load(),
              1000);  // every accepted job, before Shutdown returned
  }
  EXPECT_EQ(answered.load(), 1000);  // and none twice
  EXPECT_EQ(ok.load(), 1000);
  size_t ran = 0, batched = 0;
  for (size_t n : runner_.sizes()) {
    ran += n;
    batched = std::max(batched, n);
  }
  EXPECT_EQ(ran, 1000u);
  EXPECT_GT(batched, 1u);
}

}  // namespace
}  // namespace ptoserve
