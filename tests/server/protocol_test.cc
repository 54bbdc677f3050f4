// A third protocol through the seam alone (server/intake/protocol.h): a
// line-based one defined here, "ID OP ROWSxCOLS A B" (an int32 TAND or
// TXOR of two fills), with nothing of its own but its scan and its parse.
// It gets what every door gets from the pipeline, unchanged: a light line
// run where it was read, a heavy one parsed on the decoders, its bytes held
// against its client's share, the caller's deadline and its going, the
// scan's and the admission's refusals. Results are checked against a
// scalar loop.
#include "server/intake/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/server/pipeline.h"

namespace ptoserve {
namespace {

using ::testing::HasSubstr;

// The toy protocol. Its first line is the job; anything after it (a
// comment, padding) is ignored but still costs its bytes.
class LineProtocol final : public JobProtocol {
 public:
  absl::StatusOr<WireShape> Scan(const RequestBody& body,
                                 const EngineLimits& limits) const override {
    absl::StatusOr<Line> line = Read(body.text());
    if (!line.ok()) return line.status();
    const uint64_t tile_bytes = uint64_t{line->rows} * line->cols * 4;
    if (tile_bytes > limits.max_tile_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("line: a ", line->rows, "x", line->cols,
                       " int32 tile is ", tile_bytes, " bytes, over the ",
                       limits.max_tile_bytes, " a tile may be"));
    }
    WireShape shape;
    shape.instructions = 1;
    return shape;
  }

  absl::Status Parse(const RequestBody& body, absl::string_view what,
                     v1::Job* job) const override {
    absl::StatusOr<Line> line = Read(body.text());
    if (!line.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", line.status().message()));
    }
    job->set_id(line->id);
    for (const auto& [name, fill] : {std::pair{"a", line->a}, {"b", line->b}}) {
      v1::Tile& t = (*job->mutable_tiles())[name];
      t.set_dtype(v1::DTYPE_INT32);
      t.set_rows(line->rows);
      t.set_cols(line->cols);
      t.set_fill(fill);
    }
    v1::Instruction* inst = job->add_instructions();
    inst->set_opcode(line->op == "txor" ? v1::OPCODE_TXOR : v1::OPCODE_TAND);
    inst->set_dst("c");
    inst->set_src0("a");
    inst->set_src1("b");
    job->add_outputs("c");
    return absl::OkStatus();
  }

 private:
  struct Line {
    std::string id, op;
    uint32_t rows = 0, cols = 0;
    int32_t a = 0, b = 0;
  };
  static absl::StatusOr<Line> Read(absl::string_view text) {
    const absl::string_view first = text.substr(0, text.find('\n'));
    const std::vector<absl::string_view> words =
        absl::StrSplit(first, ' ', absl::SkipEmpty());
    if (words.size() != 5) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line: ", words.size(), " words where ID OP ROWSxCOLS A B are 5"));
    }
    Line line{std::string(words[0]), std::string(words[1])};
    if (line.op != "tand" && line.op != "txor") {
      return absl::InvalidArgumentError(
          absl::StrCat("line: OP \"", line.op, "\" is not tand or txor"));
    }
    const std::vector<absl::string_view> shape = absl::StrSplit(words[2], 'x');
    if (shape.size() != 2 || !absl::SimpleAtoi(shape[0], &line.rows) ||
        !absl::SimpleAtoi(shape[1], &line.cols) ||
        !absl::SimpleAtoi(words[3], &line.a) ||
        !absl::SimpleAtoi(words[4], &line.b)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line: \"", first, "\" is not ID OP ROWSxCOLS A B (numbers)"));
    }
    return line;
  }
};

class ProtocolTest : public ::testing::Test, protected Pipeline {
 protected:
  // 64 MiB in all, 8 MiB a client.
  ProtocolTest() : Pipeline(ServiceLimits{}, 64 << 20, 8 << 20) {}

  // Hands `line` to the pipeline through the line protocol, as a door of
  // it would: its bytes, its call, its protocol.
  void Execute(Outcome* o, const std::string& line) {
    Pipeline::Execute(o, BodyFormat::kText, line, "the line", &protocol_);
  }

  // c's values, as int32.
  static std::vector<int32_t> Values(const v1::JobResult& result) {
    const std::string& data = result.tiles().at("c").data();
    std::vector<int32_t> values(data.size() / 4);
    std::memcpy(values.data(), data.data(), values.size() * 4);
    return values;
  }

  const LineProtocol protocol_;
};

TEST_F(ProtocolTest, ALightLineRunsWhereItWasReadAndMatchesAScalarLoop) {
  for (const auto& [line, a, b, xor_op] :
       {std::tuple{"and tand 16x16 12 10", 12, 10, false},
        std::tuple{"xor txor 8x32 -7 1234", -7, 1234, true}}) {
    Outcome o;
    Execute(&o, line);
    ASSERT_TRUE(o.done.HasBeenNotified()) << line;  // before Execute returned
    ASSERT_TRUE(o.status.ok()) << o.status;
    EXPECT_EQ(o.thread, std::this_thread::get_id());
    EXPECT_EQ(o.result.id(), std::string(line).substr(0, 3));
    const std::vector<int32_t> values = Values(o.result);
    ASSERT_EQ(values.size(), 256u);
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], xor_op ? (a ^ b) : (a & b)) << line << " at " << i;
    }
  }
  EXPECT_EQ(budget_.held(), 0u);
}

TEST_F(ProtocolTest, ABadLineIsRefusedInTheProtocolsWords) {
  Outcome words, op, shape;
  Execute(&words, "one tand 16x16 1");
  Execute(&op, "one tor 16x16 1 2");
  Execute(&shape, "one tand 16by16 1 2");
  for (Outcome* o : {&words, &op, &shape}) {
    ASSERT_TRUE(o->done.HasBeenNotified());
    EXPECT_EQ(o->status.code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(std::string(words.status.message()),
              HasSubstr("4 words where ID OP ROWSxCOLS A B are 5"));
  EXPECT_THAT(std::string(op.status.message()),
              HasSubstr("OP \"tor\" is not tand or txor"));
  EXPECT_THAT(std::string(shape.status.message()), HasSubstr("16by16"));
  // The scan's limits are the server's: a tile over --max_tile_mb.
  Outcome huge;
  Execute(&huge, "big tand 4096x4096 1 2");
  EXPECT_EQ(huge.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(huge.status.message()),
              HasSubstr("over the 16777216 a tile may be"));
  // Nothing holds memory but the bodies, which their door lets go.
  for (Outcome* o : {&words, &op, &shape, &huge}) o->body->Discard();
  EXPECT_EQ(budget_.held(), 0u);
}

TEST_F(ProtocolTest, AJobOverItsClientsShareIsRefusedAndAnotherClientRuns) {
  // Two 1024x1024 int32 tiles made and a result: over the 8 MiB share.
  Outcome greedy;
  Execute(&greedy, "big tand 1024x1024 1 3");
  ASSERT_TRUE(greedy.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(greedy.status.code(), absl::StatusCode::kResourceExhausted)
      << greedy.status;
  Outcome other;
  other.call.share = budget_.ShareOf("another client");
  Execute(&other, "small tand 16x16 5 3");
  ASSERT_TRUE(other.done.HasBeenNotified());
  ASSERT_TRUE(other.status.ok()) << other.status;
  EXPECT_EQ(Values(other.result)[0], 5 & 3);
}

TEST_F(ProtocolTest, AHeavyLineIsParsedOnTheDecoders) {
  // A first line and 32 KiB of comment: over the 16 KiB parsed where read.
  const std::string heavy = "pad tand 16x16 6 3\n" + std::string(32 << 10, '#');
  std::shared_ptr<Signal> release = HoldDecoder();
  Outcome o;
  Execute(&o, heavy);
  EXPECT_FALSE(o.done.HasBeenNotified());
  EXPECT_EQ(o.job.instructions_size(), 0);  // not parsed yet
  EXPECT_GE(budget_.held(), heavy.size());  // held meanwhile
  release->Notify();
  // Parsed there, then queued for the scheduler (not run where parsed).
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (scheduler_.queued() == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  RunScheduler();
  ASSERT_TRUE(o.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(Values(o.result)[255], 6 & 3);
}

TEST_F(ProtocolTest, ALineWhoseCallerWentOrWhoseDeadlinePassedNeverRuns) {
  const std::string heavy =
      "late tand 16x16 6 3\n" + std::string(32 << 10, '#');
  std::shared_ptr<Signal> release = HoldDecoder();
  std::atomic<bool> gone{false};
  Outcome left, late;
  left.call.cancelled = [&gone] { return gone.load(); };
  late.call.deadline = absl::Now() - absl::Seconds(1);
  Execute(&left, heavy);
  Execute(&late, heavy);
  gone = true;
  release->Notify();
  ASSERT_TRUE(left.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(late.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(left.status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(late.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(left.status.message()),
              HasSubstr("before its request was decoded"));
  EXPECT_EQ(left.job.instructions_size(), 0);
  EXPECT_EQ(late.job.instructions_size(), 0);
  EXPECT_EQ(scheduler_.queued(), 0u);
}

}  // namespace
}  // namespace ptoserve
