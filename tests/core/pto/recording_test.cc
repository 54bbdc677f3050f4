// A kernel's run recorded as a job (pto::KernelRecording): the job, read
// as proto3 JSON and decoded as the server decodes it (proto/codec.h), runs
// on the service's engine to the same bytes the kernel left in its stored
// tiles, on the target this binary is built for; and a run a job cannot
// say is refused with why.
#include <cstdint>
#include <cstring>
#include <pto/common/constants.hpp>
#include <pto/pto-inst.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/engine.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"

using namespace pto;

namespace {

using Window = GlobalTensor<uint32_t, Shape<1, 1, 1, DYNAMIC, DYNAMIC>,
                            Stride<1, 1, 1, DYNAMIC, 1>>;
using TileT = Tile<TileType::Vec, uint32_t, NUM_8, NUM_16, BLayout::RowMajor,
                   DYNAMIC, DYNAMIC>;

// d = (x & y) ^ x over a rows x cols window, through tiles bound (manual
// mode) or not: two instructions, a scratch tile, the result stored.
void TwoStepKernel(uint32_t* out, uint32_t* x, uint32_t* y, int rows, int cols,
                   bool bind, TileT* result) {
  TileT x_tile(rows, cols), y_tile(rows, cols), d(rows, cols),
      scratch(rows, cols);
  x_tile.SetName("x");
  y_tile.SetName("y");
  d.SetName("d");
  scratch.SetName("scratch");
  result->SetName("out");
  if (bind) {
    TASSIGN(x_tile, 0x000);
    TASSIGN(y_tile, 0x200);
    TASSIGN(d, 0x400);
    TASSIGN(scratch, 0x600);
    TASSIGN(*result, 0x800);
  }
  const Shape<1, 1, 1, DYNAMIC, DYNAMIC> shape(rows, cols);
  const Stride<1, 1, 1, DYNAMIC, 1> stride(NUM_16);
  Window x_window(x, shape, stride), y_window(y, shape, stride),
      out_window(out, shape, stride);
  TLOAD(x_tile, x_window);
  TLOAD(y_tile, y_window);
  TAND(d, x_tile, y_tile);
  TXOR(*result, d, x_tile, scratch);
  TSTORE(out_window, *result);
}

// The recorded job, decoded as the server decodes a JSON body, run on the
// engine: the output named `name`'s bytes.
std::string RunRecordedJob(const std::string& json, const std::string& name) {
  ptoserve::v1::Job job;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &job);
  EXPECT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << json;
  const absl::StatusOr<ptoserve::JobSpec> spec = ptoserve::ToJobSpec(job);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok()) return "";
  const absl::StatusOr<ptoserve::JobOutcome> outcome =
      ptoserve::Engine(ptoserve::EngineOptions{}).Execute(*spec);
  EXPECT_TRUE(outcome.ok()) << outcome.status() << "\n" << json;
  if (!outcome.ok()) return "";
  for (const ptoserve::OutputTile& t : outcome->outputs) {
    if (t.name == name) {
      return std::string(reinterpret_cast<const char*>(t.tile.data()),
                         t.tile.size_bytes());
    }
  }
  ADD_FAILURE() << "no output " << name << " in\n" << json;
  return "";
}

std::vector<uint32_t> Random(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(NUM_8 * NUM_16);
  for (uint32_t& e : v) e = rng();
  return v;
}

class RecordingTest : public ::testing::TestWithParam<bool> {};

TEST_P(RecordingTest, TheRecordedJobComputesWhatTheKernelDid) {
  const bool bind = GetParam();
  std::vector<uint32_t> x = Random(1), y = Random(2), out(NUM_8 * NUM_16, 0);
  ResetKernel();
  TileT result(5, 12);
  std::string json, error;
  {
    KernelRecording recording;
    TwoStepKernel(out.data(), x.data(), y.data(), 5, 12, bind, &result);
    json = recording.Job(&error);
  }
  ASSERT_FALSE(json.empty()) << error;
  // What the kernel computed, against a scalar loop.
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 12; ++c) {
      const int i = r * NUM_16 + c;
      ASSERT_EQ(out[i], (x[i] & y[i]) ^ x[i]) << r << ", " << c;
    }
  }
  // The job: the target, manual mode when bound, x and y with their
  // elements, the instructions by name, the stored tile as its output.
  EXPECT_THAT(
      json, ::testing::HasSubstr(std::string("\"target\": \"TARGET_") +
                                 (pto::kTarget == pto::Target::A2A3 ? "A2A3"
                                  : pto::kTarget == pto::Target::A5 ? "A5"
                                                                    : "HOST")));
  EXPECT_EQ(json.find("MODE_MANUAL") != std::string::npos, bind) << json;
  EXPECT_THAT(json, ::testing::HasSubstr(
                        "{\"opcode\": \"OPCODE_TXOR\", \"dst\": \"out\", "
                        "\"src0\": \"d\", \"src1\": \"x\", \"tmp\": "
                        "\"scratch\"}"));
  EXPECT_THAT(json, ::testing::HasSubstr("\"outputs\": [\"out\"]"));
  // Without its target, for the service's default to choose.
  std::string untargeted;
  {
    ResetKernel();
    TileT again(5, 12);
    KernelRecording recording;
    TwoStepKernel(out.data(), x.data(), y.data(), 5, 12, bind, &again);
    untargeted = recording.Job(&error, /*name_target=*/false);
  }
  EXPECT_EQ(untargeted.find("\"target\""), std::string::npos) << untargeted;
  EXPECT_THAT(untargeted, ::testing::HasSubstr("\"instructions\": ["));
  // The service's result is the kernel's tile, padding included.
  const std::string served = RunRecordedJob(json, "out");
  ASSERT_EQ(served.size(), sizeof(uint32_t) * TileT::Numel);
  EXPECT_EQ(std::memcmp(served.data(), result.data(), served.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(BoundOrNot, RecordingTest, ::testing::Bool());

// Tiles filled through data(), as the seeds' examples fill them, carry
// those elements.
TEST(RecordingRefusalTest, ElementsWrittenDirectlyAreCarried) {
  using Small = Tile<TileType::Vec, int16_t, NUM_4, NUM_16>;
  ResetKernel();
  Small a, b, c;
  for (int i = 0; i < Small::Numel; ++i) {
    a.data()[i] = static_cast<int16_t>(i * 3);
    b.data()[i] = static_cast<int16_t>(~i);
  }
  std::string json, error;
  {
    KernelRecording recording;
    TAND(c, a, b);
    json = recording.Job(&error);
  }
  ASSERT_FALSE(json.empty()) << error;
  // No output stored: the job returns every instruction's dst.
  const std::string served = RunRecordedJob(json, c.GetName());
  ASSERT_EQ(served.size(), sizeof(int16_t) * Small::Numel);
  EXPECT_EQ(std::memcmp(served.data(), c.data(), served.size()), 0);
}

TEST(RecordingRefusalTest, ARunAJobCannotSayIsRefusedWithWhy) {
  using Small = Tile<TileType::Vec, int32_t, NUM_4, NUM_16>;
  using Global = GlobalTensor<int32_t, Shape<1, 1, 1, NUM_4, NUM_16>,
                              Stride<1, 1, 1, NUM_16, 1>>;
  std::vector<int32_t> g(NUM_4 * NUM_16, 5);
  Global global(g.data());
  std::string error;
  {
    ResetKernel();
    KernelRecording recording;
    Small a, b, c;
    a.SetName("a");
    TAND(c, a, b);
    TLOAD(a, global);
    EXPECT_EQ(recording.Job(&error), "");
    EXPECT_EQ(error,
              "tile \"a\" is loaded after instruction 0 ran; a job's tiles "
              "hold their elements before its first instruction");
  }
  {
    ResetKernel();
    KernelRecording recording;
    Small a, b, c;
    a.SetName("same");
    b.SetName("same");
    TAND(c, a, b);
    EXPECT_EQ(recording.Job(&error), "");
    EXPECT_EQ(error,
              "two tiles are named \"same\"; a job names each tile once "
              "(Tile::SetName)");
  }
  {
    KernelRecording recording;
    EXPECT_EQ(recording.Job(&error), "");
    EXPECT_EQ(error, "no instruction was recorded");
  }
  {
    // A second run inside the recording: not one job.
    ResetKernel();
    KernelRecording recording;
    Small a, b, c;
    TAND(c, a, b);
    ResetKernel();
    TAND(c, a, b);
    EXPECT_EQ(recording.Job(&error), "");
    EXPECT_EQ(error,
              "ResetKernel ran during the recording, after an instruction; a "
              "job is one run");
  }
  {
    // A wait on an instruction the job would not have.
    ResetKernel();
    Small a, b, c;
    const RecordEvent before = TAND(c, a, b);
    KernelRecording recording;
    TAND(a, b, c, before);
    EXPECT_EQ(recording.Job(&error), "");
    EXPECT_EQ(error,
              "an instruction waits on the event of instruction 0, which ran "
              "before the recording started");
  }
  {
    // ResetKernel before the first instruction starts the run afresh.
    ResetKernel();
    Small a, b, c;
    TAND(c, a, b);
    KernelRecording recording;
    ResetKernel();
    const RecordEvent first = TAND(c, a, b);
    TAND(a, b, c, first);
    const std::string job = recording.Job(&error);
    EXPECT_THAT(job, ::testing::HasSubstr("\"waitEvents\": [\"e0\"]")) << error;
  }
}

}  // namespace
