// Jobs as programs: dependencies between instructions, event records,
// in-order execution, which tiles come back and in which encoding.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::Desc;
using test::DTypeOf;
using test::JobBuilder;
using test::Matrix;
using test::OutputMatrix;
using test::RandomMatrix;
using test::Reference;
using test::SameElements;
using test::StatusIs;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class ProgramTest : public ::testing::Test {
 protected:
  // Declares 4x8 int32 tiles without elements.
  static void AddTiles(JobBuilder& job, std::vector<const char*> names) {
    for (const char* name : names) job.AddTile(name, Desc(DType::kInt32, 4, 8));
  }

  Engine engine_{EngineOptions{}};
};

TEST_F(ProgramTest, PredecessorsFollowWaitsAndDataHazards) {
  JobBuilder job(Target::kHost);
  AddTiles(job, {"a", "b", "c", "d"});
  job.Tand("t", "a", "b");                       // 0
  job.Txor("u", "t", "c");                       // 1: reads t (RAW on 0)
  job.Tand("a", "c", "c");                       // 2: writes a, read by 0 (WAR)
  job.Tand("t", "c", "d");                       // 3: t written by 0, read by 1
  job.Tand("x", "d", "d").wait_events = {"e2"};  // 4: only the wait
  job.Tand("y", "d", "c");                       // 5: reads only
  job.Tand("c", "y", "y");                       // 6: RAW on y; WAR on c

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                       engine_.Prepare(job.spec()));
  ASSERT_EQ(prepared->num_instructions(), 7u);
  EXPECT_THAT(prepared->predecessors(0), IsEmpty());
  EXPECT_THAT(prepared->predecessors(1), ElementsAre(0));
  EXPECT_THAT(prepared->predecessors(2), ElementsAre(0));
  EXPECT_THAT(prepared->predecessors(3), ElementsAre(0, 1));
  EXPECT_THAT(prepared->predecessors(4), ElementsAre(2));
  EXPECT_THAT(prepared->predecessors(5), IsEmpty());
  EXPECT_THAT(prepared->predecessors(6), ElementsAre(1, 2, 3, 5));
}

// An in-place instruction depends on the last writer of its tile once.
TEST_F(ProgramTest, InPlaceChainDependsOnEachPreviousStep) {
  JobBuilder job(Target::kHost);
  AddTiles(job, {"a", "b"});
  job.Tand("a", "a", "b");
  job.Tand("a", "a", "b");
  job.Tand("a", "a", "b").wait_events = {"e0"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                       engine_.Prepare(job.spec()));
  EXPECT_THAT(prepared->predecessors(1), ElementsAre(0));
  EXPECT_THAT(prepared->predecessors(2), ElementsAre(0, 1));
}

// On a2a3, TXOR writes its tmp: sharing one tmp orders the instructions.
TEST_F(ProgramTest, A2A3TmpWritesAreHazards) {
  JobBuilder job(Target::kA2A3);
  AddTiles(job, {"a", "b"});
  job.Txor("d0", "a", "b", "t");  // 0
  job.Txor("d1", "a", "b", "t");  // 1: WAW on t
  job.Tand("e", "t", "a");        // 2: RAW on t
  // Every tile returned, so that all stay live and e takes no dead tile's
  // bytes (which would add hazards of its own: see unified_buffer_test).
  job.spec().outputs = {"d0", "d1", "e", "a", "b", "t"};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                       engine_.Prepare(job.spec()));
  EXPECT_THAT(prepared->predecessors(1), ElementsAre(0));
  EXPECT_THAT(prepared->predecessors(2), ElementsAre(1));

  // Elsewhere tmp is unused, so it creates no dependency.
  JobBuilder a5(Target::kA5);
  AddTiles(a5, {"a", "b", "t"});
  a5.Txor("d0", "a", "b", "t");
  a5.Txor("d1", "a", "b", "t");
  ASSERT_OK_AND_ASSIGN(prepared, engine_.Prepare(a5.spec()));
  EXPECT_THAT(prepared->predecessors(1), IsEmpty());
}

TEST_F(ProgramTest, EventsRecordIdsWaitsAndTimes) {
  JobBuilder job(Target::kA5);
  AddTiles(job, {"a", "b"});
  job.Tand("t", "a", "b").record_event = "first";
  job.Txor("u", "t", "b").wait_events = {"first"};
  job.Tand("v", "a", "b").wait_events = {"first", "e1"};

  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
  EXPECT_EQ(outcome.target, Target::kA5);
  ASSERT_EQ(outcome.events.size(), 3u);
  const Opcode opcodes[] = {Opcode::kTand, Opcode::kTxor, Opcode::kTand};
  const char* ids[] = {"first", "e1", "e2"};
  for (uint32_t i = 0; i < 3; ++i) {
    const Event& e = outcome.events[i];
    SCOPED_TRACE(e.id);
    EXPECT_EQ(e.id, ids[i]);
    EXPECT_EQ(e.index, i);
    EXPECT_EQ(e.opcode, opcodes[i]);
    EXPECT_EQ(e.target, Target::kA5);
    EXPECT_EQ(e.batch_size, 1u);
    EXPECT_LE(e.enqueue_time, e.start_time);
    EXPECT_LE(e.start_time, e.end_time);
    if (i > 0) {
      // Execute runs one instruction per batch, in program order.
      EXPECT_GT(e.batch_id, outcome.events[i - 1].batch_id);
      EXPECT_LE(outcome.events[i - 1].end_time, e.start_time);
    }
  }
  EXPECT_THAT(outcome.events[0].waited_on, IsEmpty());
  EXPECT_THAT(outcome.events[1].waited_on, ElementsAre("first"));
  EXPECT_THAT(outcome.events[2].waited_on, ElementsAre("first", "e1"));
}

// Instructions of two jobs in one RunBatch share a batch id and size.
TEST_F(ProgramTest, RunBatchRecordsTheBatch) {
  JobBuilder job(Target::kHost);
  AddTiles(job, {"a", "b"});
  job.Tand("t", "a", "b");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> first,
                       engine_.Prepare(job.spec()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> second,
                       engine_.Prepare(job.spec()));
  const WorkItem batch[] = {{first.get(), 0}, {second.get(), 0}};
  engine_.RunBatch(batch);
  const JobOutcome one = engine_.Finish(first.get());
  const JobOutcome two = engine_.Finish(second.get());
  EXPECT_EQ(one.events[0].batch_size, 2u);
  EXPECT_EQ(two.events[0].batch_size, 2u);
  EXPECT_EQ(one.events[0].batch_id, two.events[0].batch_id);
  EXPECT_NE(one.events[0].batch_id, 0u);
}

// dst of one instruction feeding the next gives the composed result:
// u = (a & b) ^ c, then u = u & d in place.
TEST_F(ProgramTest, ChainedInstructionsComposeInOrder) {
  std::mt19937 rng(5);
  test::ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    const uint32_t cols = 64 / sizeof(T);
    const auto a = RandomMatrix<T>(4, cols, &rng);
    const auto b = RandomMatrix<T>(4, cols, &rng);
    const auto c = RandomMatrix<T>(4, cols, &rng);
    const auto d = RandomMatrix<T>(4, cols, &rng);
    Matrix<T> want = Reference(BitwiseOp::kAnd, a, b, a, 4, cols);
    want = Reference(BitwiseOp::kXor, want, c, want, 4, cols);
    want = Reference(BitwiseOp::kAnd, want, d, want, 4, cols);
    for (Target target : test::kAllTargets) {
      SCOPED_TRACE(
          absl::StrCat(DTypeName(DTypeOf<T>()), " on ", TargetName(target)));
      JobBuilder job(target);
      job.AddMatrix("a", a);
      job.AddMatrix("b", b);
      job.AddMatrix("c", c);
      job.AddMatrix("d", d);
      job.Tand("t", "a", "b");
      job.Txor("u", "t", "c", "tmp");
      job.Tand("u", "u", "d");
      job.spec().outputs = {"u"};
      ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
      EXPECT_TRUE(SameElements(want, OutputMatrix<T>(outcome, "u")));
    }
  });
}

// Names are found however many a job has (the binder compares the first
// few in turn and hashes the rest): a chain through 20 inputs and 19
// intermediate tiles, each made by an instruction and read by the next,
// with the outputs asked for by name, against a scalar reference.
TEST_F(ProgramTest, ManyNamedTilesChainInOrder) {
  std::mt19937 rng(20);
  constexpr int kInputs = 20;
  std::vector<Matrix<int32_t>> in;
  for (int i = 0; i < kInputs; ++i)
    in.push_back(RandomMatrix<int32_t>(4, 8, &rng));
  Matrix<int32_t> want = in[0];
  for (int i = 1; i < kInputs; ++i) {
    const BitwiseOp op = i % 2 ? BitwiseOp::kAnd : BitwiseOp::kXor;
    want = Reference(op, want, in[i], want, 4, 8);
  }
  for (Target target : test::kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    // Declared in reverse, so that the early names are found last.
    for (int i = kInputs - 1; i >= 0; --i) {
      job.AddMatrix(absl::StrCat("in", i), in[i]);
    }
    std::string acc = "in0";
    for (int i = 1; i < kInputs; ++i) {
      const std::string dst = absl::StrCat("acc", i);
      const std::string src = absl::StrCat("in", i);
      if (i % 2) {
        job.Tand(dst, acc, src);
      } else {
        job.Txor(dst, acc, src, absl::StrCat("tmp", i));
      }
      acc = dst;
    }
    job.spec().outputs = {acc, "in13"};
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
    EXPECT_TRUE(SameElements(want, OutputMatrix<int32_t>(outcome, acc)));
    EXPECT_TRUE(SameElements(in[13], OutputMatrix<int32_t>(outcome, "in13")));
  }
  // A name declared twice, or an unknown one, past the first few.
  JobBuilder twice(Target::kHost);
  for (int i = 0; i < kInputs; ++i)
    twice.AddMatrix(absl::StrCat("in", i), in[i]);
  twice.AddMatrix("in17", in[0]);
  twice.Tand("d", "in0", "in1");
  EXPECT_THAT(engine_.Prepare(twice.spec()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "tile \"in17\" is declared twice"));
  JobBuilder unknown(Target::kHost);
  for (int i = 0; i < kInputs; ++i) {
    unknown.AddMatrix(absl::StrCat("in", i), in[i]);
  }
  unknown.Tand("d", "in19", "in20");
  EXPECT_THAT(engine_.Prepare(unknown.spec()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("src1 \"in20\" is not a tile of the job")));
}

std::vector<std::string> OutputNames(const JobOutcome& outcome) {
  std::vector<std::string> names;
  for (const OutputTile& out : outcome.outputs) names.push_back(out.name);
  return names;
}

TEST_F(ProgramTest, OutputsDefaultToEachDistinctDstInOrder) {
  JobBuilder job(Target::kHost);
  AddTiles(job, {"a", "b"});
  job.Tand("t", "a", "b");
  job.Tand("u", "t", "b");
  job.Tand("t", "u", "b");
  job.Tand("a", "a", "b");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
  EXPECT_THAT(OutputNames(outcome), ElementsAre("t", "u", "a"));
}

// Asked-for outputs come back in the order first asked, inputs included,
// each once.
TEST_F(ProgramTest, ExplicitOutputsInTheirOrder) {
  std::mt19937 rng(9);
  const auto a = RandomMatrix<int32_t>(4, 8, &rng);
  const auto b = RandomMatrix<int32_t>(4, 8, &rng);
  JobBuilder job(Target::kHost);
  job.AddMatrix("a", a);
  job.AddMatrix("b", b);
  job.Tand("t", "a", "b");
  // A name listed again comes back once: a result holds tiles by name.
  job.spec().outputs = {"b", "t", "b", "t", "b"};
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
  EXPECT_THAT(OutputNames(outcome), ElementsAre("b", "t"));
  EXPECT_TRUE(
      SameElements(b, test::ToMatrix<int32_t>(outcome.outputs[0].tile)));
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kAnd, a, b, Matrix<int32_t>(4, 8), 4, 8),
      test::ToMatrix<int32_t>(outcome.outputs[1].tile)));
}

}  // namespace
}  // namespace ptoserve
