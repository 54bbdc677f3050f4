// A kernel's run written as the service writes a job's (client/
// kernel_trace.h): its event records equal, but for times, those the
// service's engine gives the recorded job (ids, instruction numbers, opcode,
// target, pipe, waits, steps, notes, where each operand lay); its Chrome
// trace keeps every rule of the service's; both files written as given.
#include <cstdint>
#include <fstream>
#include <pto/common/constants.hpp>
#include <pto/pto-inst.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "client/kernel_trace.h"
#include "core/engine.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"
#include "tests/client/trace_checks.h"

using namespace pto;

namespace {

using ::testing::HasSubstr;

using TileT = Tile<TileType::Vec, int32_t, NUM_4, NUM_16>;
using Global = GlobalTensor<int32_t, Shape<1, 1, 1, NUM_4, NUM_16>,
                            Stride<1, 1, 1, NUM_16, 1>>;

// d = (x ^ y) & x, d waiting on the TXOR's event; `bind`: every tile bound.
void Kernel(int32_t* out, int32_t* x, int32_t* y, bool bind) {
  TileT a, b, c, tmp, d;
  if (bind) {
    TASSIGN(a, 0x000);
    TASSIGN(b, 0x100);
    TASSIGN(c, 0x200);
    TASSIGN(tmp, 0x300);
    TASSIGN(d, 0x400);
  }
  Global gx(x), gy(y), gout(out);
  TLOAD(a, gx);
  TLOAD(b, gy);
  RecordEvent xored = TXOR(c, a, b, tmp);
  TAND(d, c, a, xored);
  // Every tile an output, so that the service keeps each to the end, as
  // the API does, and places them alike.
  for (TileT* t : {&a, &b, &c, &d}) TSTORE(gout, *t);
  if constexpr (Rules::kTxorUsesTmp) TSTORE(gout, tmp);
  TSTORE(gout, d);
}

// The recorded job on the service's engine, its result as the server
// writes it.
ptoserve::v1::JobResult ServiceResult(const std::string& json) {
  ptoserve::v1::Job job;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &job).ok());
  const absl::StatusOr<ptoserve::JobSpec> spec = ptoserve::ToJobSpec(job);
  EXPECT_TRUE(spec.ok()) << spec.status();
  ptoserve::v1::JobResult result;
  if (!spec.ok()) return result;
  const ptoserve::Engine engine{ptoserve::EngineOptions{}};
  absl::StatusOr<ptoserve::JobOutcome> outcome = engine.Execute(*spec);
  EXPECT_TRUE(outcome.ok()) << outcome.status() << "\n" << json;
  if (!outcome.ok()) return result;
  ptoserve::ToJobResult(std::move(*outcome), ptoserve::ResultEncodings(),
                        &result);
  return result;
}

// `e` without what differs between two runs: its times and batch number.
ptoserve::v1::EventRecord Timeless(ptoserve::v1::EventRecord e) {
  e.clear_enqueue_time();
  e.clear_start_time();
  e.clear_end_time();
  e.clear_queue_time();
  e.clear_execution_time();
  e.clear_batch_id();
  return e;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KernelEventsTest : public ::testing::TestWithParam<bool> {};

TEST_P(KernelEventsTest, AreTheServicesForTheRecordedJob) {
  const bool bind = GetParam();
  std::vector<int32_t> x(TileT::Numel), y(TileT::Numel), out(TileT::Numel);
  for (int i = 0; i < TileT::Numel; ++i) {
    x[i] = i * 7919;
    y[i] = i * 104729 + 3;
  }
  ResetKernel();
  KernelRecording recording;
  Kernel(out.data(), x.data(), y.data(), bind);
  std::string error;
  const std::string job = recording.Job(&error);
  ASSERT_FALSE(job.empty()) << error;
  EXPECT_THAT(job, HasSubstr("\"waitEvents\": [\"e0\"]"));

  const ptoserve::v1::JobResult api = KernelResult();
  const ptoserve::v1::JobResult service = ServiceResult(job);
  EXPECT_EQ(api.target(), service.target());
  ASSERT_EQ(api.events_size(), 2);
  ASSERT_EQ(service.events_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const ptoserve::v1::EventRecord& e = api.events(i);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
        Timeless(e), Timeless(service.events(i))))
        << "the API's:\n"
        << e.DebugString() << "the service's:\n"
        << service.events(i).DebugString();
    // Its own times: run at once, for no less than nothing.
    EXPECT_EQ(e.queue_time().seconds() + e.queue_time().nanos(), 0);
    EXPECT_GE(e.execution_time().nanos(), 0);
    EXPECT_EQ(e.batch_size(), 1u);
  }
  EXPECT_EQ(api.events(0).id(), "e0");
  EXPECT_EQ(api.events(1).waited_on(0), "e0");
  // The operands' places, where the target's tiles live in the buffer.
  const bool in_buffer = bind || ptoserve::builtin::PlacesUnbound(
                                     static_cast<ptoserve::Target>(kTarget));
  EXPECT_EQ(api.events(1).operands_size(), in_buffer ? 3 : 0);

  // The Chrome trace keeps the service's rules, one slice per instruction.
  const std::string trace = KernelChromeTrace();
  const ptoserve::ParsedTrace parsed = ptoserve::CheckChromeTrace(trace);
  ASSERT_EQ(parsed.instructions.size(), 2u);
  EXPECT_EQ(parsed.instructions[0].name, "TXOR e0");
  EXPECT_EQ(parsed.instructions[1].name, "TAND e1");
  EXPECT_EQ(static_cast<int>(parsed.steps.size()),
            api.events(0).trace_size() + api.events(1).trace_size());

  // The files hold what was given.
  const std::string dir = ::testing::TempDir();
  ASSERT_TRUE(WriteKernelTrace((dir + "/k.trace.json").c_str(), &error))
      << error;
  EXPECT_EQ(Read(dir + "/k.trace.json"), trace);
  ASSERT_TRUE(WriteKernelEvents((dir + "/k.events.json").c_str(), &error))
      << error;
  ptoserve::v1::JobResult read_back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  Read(dir + "/k.events.json"), &read_back)
                  .ok());
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(read_back, api));
  EXPECT_FALSE(WriteKernelTrace("/nonexistent/dir/k.json", &error));
  EXPECT_EQ(error, "cannot write /nonexistent/dir/k.json");
}

INSTANTIATE_TEST_SUITE_P(BoundAndNot, KernelEventsTest, ::testing::Bool());

TEST(KernelEventsOutsideTest, NothingRecordedIsSaid) {
  ResetKernel();
  KernelRecording recording;
  std::string error;
  EXPECT_FALSE(
      WriteKernelTrace((::testing::TempDir() + "/empty.json").c_str(), &error));
  EXPECT_EQ(error, "no instruction was recorded");
}

TEST(KernelEventsOutsideTest, InstructionsBeforeTheRecordingAreNotCounted) {
  ResetKernel();
  TileT a, b, c;
  TAND(c, a, b);  // instruction 0 of the thread, not recorded
  KernelRecording recording;
  const RecordEvent e = TAND(a, b, c);
  EXPECT_EQ(e.index, 1u);
  const ptoserve::v1::JobResult api = KernelResult();
  ASSERT_EQ(api.events_size(), 1);
  EXPECT_EQ(api.events(0).id(), "e0");
  EXPECT_EQ(api.events(0).instruction_index(), 0u);
}

}  // namespace
