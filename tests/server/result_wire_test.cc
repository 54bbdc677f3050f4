// ResultWriter (proto/result_wire.h) against ToJobResult: for jobs run by
// the engine on every target and for outcomes made by hand with every
// field set, the bytes it writes are those of the message ToJobResult
// builds, serialized deterministically.
#include "proto/result_wire.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/engine.h"
#include "server/jobs/decode.h"
#include "tests/integration/random_jobs.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace {

// The writer's bytes and ToJobResult's, for one outcome.
void ExpectSameBytes(absl::string_view id, JobOutcome outcome,
                     const ResultEncodings& encodings,
                     const std::string& what) {
  const std::string written = WrittenResult(id, outcome, encodings);
  v1::JobResult message;
  message.set_id(std::string(id));
  ToJobResult(std::move(outcome), encodings, &message);
  EXPECT_EQ(written, DeterministicBytes(message)) << what;
}

TEST(ResultWireTest, JobsRunOnEveryTargetWriteAsTheirMessage) {
  const Engine engine{EngineOptions{}};
  std::mt19937 rng(52);
  for (int i = 0; i < 300; ++i) {
    ExpectedJob expected = RandomValidJob(&rng);
    if (i % 2 == 0) {
      // Tile a sent as values instead: its result travels as values too.
      v1::Tile& a = (*expected.job.mutable_tiles())["a"];
      const size_t n = size_t{a.rows()} * a.cols();
      a.clear_data();
      for (size_t k = 0; k < n; ++k) a.add_values(static_cast<double>(k % 7));
    }
    absl::StatusOr<DecodedJob> decoded = DecodeJob(expected.job, engine);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    absl::StatusOr<JobOutcome> outcome = engine.Execute(decoded->spec);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    ExpectSameBytes(expected.job.id(), *std::move(outcome), decoded->encodings,
                    "job " + std::to_string(i));
  }
}

TEST(ResultWireTest, EveryFieldAtItsEdgesWritesAsItsMessage) {
  TileDesc desc;
  desc.dtype = DType::kUInt16;
  desc.rows = 2;
  desc.cols = 16;
  desc.valid_rows = 1;
  desc.valid_cols = 5;
  desc.layout = Layout::kColMajor;
  desc.location = Location::kScaling;
  desc.address = 0;
  const std::string bytes(desc.bytes(), '\x7f');
  JobOutcome outcome;
  outcome.target = Target::kA2A3;
  // Out of key order, one placed in shared memory, one named "".
  outcome.outputs.push_back(
      {"z", Tile::Borrow(desc, reinterpret_cast<const uint8_t*>(bytes.data())),
       false});
  outcome.outputs.push_back(
      {"p", Tile::Borrow(desc, reinterpret_cast<const uint8_t*>(bytes.data())),
       true});
  TileDesc plain = desc;
  plain.address.reset();
  plain.layout = Layout::kRowMajor;
  plain.location = Location::kVec;
  outcome.outputs.push_back({"", Tile(plain), false});
  Event e;
  e.id = std::string(300, 'e');  // a length of two varint bytes
  e.index = 1u << 31;
  e.opcode = Opcode::kTxor;
  e.target = Target::kA5;
  e.waited_on = {"", "w"};
  e.enqueue_time = absl::FromUnixNanos(-1'500'000'001);  // before 1970
  e.start_time = absl::FromUnixNanos(3);
  e.end_time = absl::FromUnixNanos(int64_t{1} << 62);
  e.batch_id = ~uint64_t{0};
  e.batch_size = 7;
  MicroOp op;
  op.op = "vxor";
  op.dst = "c";
  op.srcs = {"a", ""};
  op.repeats = (uint64_t{1} << 32) + 5;  // written as a uint32
  op.elements = 0;
  e.trace.ops.push_back(op);
  e.trace.notes = {"", "a note"};
  e.operands.push_back({"dst", "c", 0, ~uint64_t{0}});
  e.operands.push_back({"src0", "", 5, 0});
  outcome.events.push_back(e);
  outcome.events.push_back(Event{});  // every field at its default
  google::protobuf::Map<std::string, v1::RegionSlice> placed;
  placed["p"].set_region("region");
  placed["p"].set_offset(1u << 20);
  placed["p"].set_size(desc.bytes());
  ResultEncodings encodings;
  encodings.SetPlaced(placed);
  ExpectSameBytes(std::string(200, 'i'), std::move(outcome), encodings,
                  "every field");
  ExpectSameBytes("", JobOutcome{}, ResultEncodings{}, "nothing at all");
}

}  // namespace
}  // namespace ptoserve
