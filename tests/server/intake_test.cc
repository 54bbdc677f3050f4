// The request pipeline (server/intake/intake.h) with the real dispatcher, a
// scheduler the test runs by hand and one decoder the test can hold busy:
// where each step runs (a light request on the caller's thread, a heavy
// body or heavy tiles on the decoders), the caller's deadline and its going
// checked before the decoders take a request, and every job's deadline cut
// to the server's longest.
#include "server/intake/intake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "tests/server/pipeline.h"
#include "tests/server/signal.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// A 16x16 int32 TAND of fills a and b, its tiles `rows` x 16 (valid 16x16).
v1::Job Tand(uint32_t rows = 16) {
  v1::Job job;
  for (const auto& [name, fill] : {std::pair{"a", 6}, {"b", 3}}) {
    v1::Tile& t = (*job.mutable_tiles())[name];
    t.set_dtype(v1::DTYPE_INT32);
    t.set_rows(rows);
    t.set_cols(16);
    t.set_valid_rows(16);
    t.set_fill(fill);
  }
  v1::Instruction* inst = job.add_instructions();
  inst->set_opcode(v1::OPCODE_TAND);
  inst->set_dst("c");
  inst->set_src0("a");
  inst->set_src1("b");
  return job;
}

// The same as JSON, padded past the light size with a long id.
std::string JsonTand(size_t id_bytes) {
  return "{\"id\": \"" + std::string(id_bytes, 'x') +
         "\", \"tiles\": {\"a\": {\"dtype\": \"DTYPE_INT32\", \"rows\": 16, "
         "\"cols\": 16, \"fill\": 6}, \"b\": {\"dtype\": \"DTYPE_INT32\", "
         "\"rows\": 16, \"cols\": 16, \"fill\": 3}}, \"instructions\": "
         "[{\"opcode\": \"OPCODE_TAND\", \"dst\": \"c\", \"src0\": \"a\", "
         "\"src1\": \"b\"}]}";
}

class IntakeTest : public ::testing::Test, protected Pipeline {
 protected:
  IntakeTest() : Pipeline(Limits(), 256 << 20) {}

  static ServiceLimits Limits() {
    ServiceLimits limits;
    limits.max_job_time = absl::Milliseconds(max_job_ms_);
    return limits;
  }

  static constexpr int max_job_ms_ = 60'000;
};

TEST_F(IntakeTest, ALightRequestRunsOnTheCallersThread) {
  Outcome o;
  Execute(&o, BodyFormat::kProtobuf, Tand().SerializeAsString());
  ASSERT_TRUE(o.done.HasBeenNotified());  // before Execute returned
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.thread, std::this_thread::get_id());
  EXPECT_EQ(o.result.tiles().at("c").data().size(), 16 * 16 * 4u);
  // A small JSON body too.
  Outcome json;
  Execute(&json, BodyFormat::kJson, JsonTand(10));
  ASSERT_TRUE(json.done.HasBeenNotified());
  EXPECT_TRUE(json.status.ok()) << json.status;
  EXPECT_EQ(json.thread, std::this_thread::get_id());
}

TEST_F(IntakeTest, AHeavyJsonBodyIsParsedOnTheDecoders) {
  std::shared_ptr<Signal> release = HoldDecoder();
  Outcome o;
  Execute(&o, BodyFormat::kJson, JsonTand(64 << 10));
  // Waiting for the decoder: nothing parsed, nothing queued.
  EXPECT_FALSE(o.done.HasBeenNotified());
  EXPECT_EQ(scheduler_.queued(), 0u);
  EXPECT_EQ(o.job.instructions_size(), 0);
  release->Notify();
  // Parsed there, then queued for the scheduler (not run where parsed).
  ASSERT_TRUE(WaitUntil([&] { return scheduler_.queued() > 0; }));
  RunScheduler();
  ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.job.id().size(), 64u << 10);
}

TEST_F(IntakeTest, ALightRequestOfHeavyTilesHasThemMadeOnTheDecoders) {
  // 5 KiB on the wire, two 4 MiB tiles to make.
  std::shared_ptr<Signal> release = HoldDecoder();
  Outcome o;
  Execute(&o, BodyFormat::kProtobuf, Tand(65536).SerializeAsString());
  EXPECT_FALSE(o.done.HasBeenNotified());
  EXPECT_EQ(scheduler_.queued(), 0u);
  // Parsed here (it is light), its tiles not yet made: nothing holds them.
  EXPECT_EQ(o.job.tiles_size(), 2);
  EXPECT_LT(budget_.held(), 1u << 20);
  release->Notify();
  ASSERT_TRUE(WaitUntil([&] { return scheduler_.queued() > 0; }));
  EXPECT_GT(budget_.held(), 8u << 20);  // made, and admitted
  RunScheduler();
  ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(o.status.ok()) << o.status;
}

TEST_F(IntakeTest, ACallerGoneOrPastItsDeadlineIsNotDecoded) {
  std::shared_ptr<Signal> release = HoldDecoder();
  std::atomic<bool> gone{false};
  Outcome left, late;
  left.call.cancelled = [&gone] { return gone.load(); };
  late.call.deadline = absl::Now() - absl::Seconds(1);
  Execute(&left, BodyFormat::kJson, JsonTand(64 << 10));
  Execute(&late, BodyFormat::kJson, JsonTand(64 << 10));
  gone = true;
  release->Notify();
  ASSERT_TRUE(left.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(late.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(left.status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(std::string(left.status.message()),
              HasSubstr("cancelled before its request was decoded"));
  EXPECT_EQ(late.status.code(), absl::StatusCode::kDeadlineExceeded);
  // Neither was parsed; what their bodies held is back.
  EXPECT_EQ(left.job.instructions_size(), 0);
  EXPECT_EQ(late.job.instructions_size(), 0);
  left.body->Discard();
  late.body->Discard();
  EXPECT_EQ(budget_.held(), 0u);
}

TEST_F(IntakeTest, AJobWithoutADeadlineHasTheServersLongest) {
  // A server whose longest job time is 1 ms: a job left queued past it is
  // dropped unrun, though its caller asked for no deadline.
  ServiceLimits limits;
  limits.max_job_time = absl::Milliseconds(1);
  Dispatcher dispatcher(&engine_, &scheduler_, limits, &metrics_, &budget_);
  Intake intake(&dispatcher, &metrics_, &budget_, &decoders_);
  Outcome o;
  o.call.share = budget_.ShareOf("a client");
  o.body.emplace(BodyFormat::kProtobuf, &budget_, o.call.share, 64 << 20);
  // Queued, not run here: its tiles are over 1 MiB, so it waits for the
  // decoders, which dispatch it to the scheduler.
  ASSERT_TRUE(o.body->Append(Tand(65536).SerializeAsString(), "").ok());
  ExecuteRequest request;
  request.body = &*o.body;
  request.what = "the request";
  request.call = &o.call;
  request.job = &o.job;
  request.done = [&o](absl::StatusOr<JobReply*> r, MemoryBudget::Hold) {
    o.status = r.status();
    o.done.Notify();
  };
  const absl::Time arrival = absl::Now();
  intake.Execute(std::move(request));
  // Decoding may itself outlast the 1 ms (it does under the sanitizers):
  // then the dispatcher refuses the job before queuing it. Either way the
  // answer must be the deadline's.
  ASSERT_TRUE(WaitUntil(
      [&] { return scheduler_.queued() > 0 || o.done.HasBeenNotified(); }));
  ASSERT_TRUE(
      WaitUntil([&] { return absl::Now() > arrival + absl::Milliseconds(2); }));
  RunScheduler();
  ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kDeadlineExceeded) << o.status;
}

}  // namespace
}  // namespace ptoserve
