// TAND and TXOR on each target through Engine::Execute: results against the
// scalar reference, the a2a3 XOR decomposition, micro-op traces and vector
// repeats, and what happens to elements outside the valid region.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/backends/backend.h"
#include "core/backends/registry.h"
#include "core/engine.h"
#include "core/targets/targets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::DTypeOf;
using test::JobBuilder;
using test::kAllTargets;
using test::Matrix;
using test::OpOf;
using test::OutputMatrix;
using test::RandomMatrix;
using test::Reference;
using test::SameElements;
using test::Sentinel;
using test::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// The seeds' instructions, which every target runs.
constexpr Opcode kOpcodes[] = {Opcode::kTand, Opcode::kTxor};

std::string Where(Target target, Opcode opcode, DType dtype) {
  return absl::StrFormat("%s on %s, %s", OpcodeName(opcode), TargetName(target),
                         DTypeName(dtype));
}

// Columns that make a row `bytes` long: a2a3 and a5 need rows of a multiple
// of 32 bytes.
template <typename T>
uint32_t ColsFor(uint32_t bytes) {
  return bytes / sizeof(T);
}

template <typename T>
class BackendsTypedTest : public ::testing::Test {
 protected:
  Engine engine_{EngineOptions{}};
  std::mt19937 rng_{7};
};
TYPED_TEST_SUITE(BackendsTypedTest, test::BitwiseTypes);

// Sources and a client-supplied dst of three different physical shapes
// with a common valid region smaller than each: the region follows the
// reference and everything else in dst keeps the client's elements.
TYPED_TEST(BackendsTypedTest, ResultsMatchReferenceOnEveryTarget) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(128);
  const uint32_t valid_rows = 7;
  const uint32_t valid_cols = cols - 3;
  for (Target target : kAllTargets) {
    for (Opcode opcode : kOpcodes) {
      SCOPED_TRACE(Where(target, opcode, DTypeOf<T>()));
      const auto a = RandomMatrix<T>(8, cols, &this->rng_);
      const auto b = RandomMatrix<T>(9, 2 * cols, &this->rng_);
      const auto dst = RandomMatrix<T>(8, cols + ColsFor<T>(32), &this->rng_);
      JobBuilder job(target);
      job.AddMatrix("a", a, valid_rows, valid_cols);
      job.AddMatrix("b", b, valid_rows, valid_cols);
      job.AddMatrix("d", dst, valid_rows, valid_cols);
      job.AddTile("t",
                  test::Desc(DTypeOf<T>(), 8, cols, valid_rows, valid_cols));
      job.Add(opcode, "d", "a", "b", opcode == Opcode::kTxor ? "t" : "");

      ASSERT_OK_AND_ASSIGN(JobOutcome outcome,
                           this->engine_.Execute(job.spec()));
      EXPECT_TRUE(SameElements(
          Reference(OpOf(opcode), a, b, dst, valid_rows, valid_cols),
          OutputMatrix<T>(outcome, "d")));
    }
  }
}

// A dst the job does not declare is allocated by the server, zero-filled,
// with src0's element type, physical shape and valid region (the physical
// shape keeps a2a3/a5 row alignment even when the valid width is odd).
TYPED_TEST(BackendsTypedTest, ServerAllocatedDstIsShapedLikeSrc0) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(128);
  const uint32_t valid_rows = 4;
  const uint32_t valid_cols = ColsFor<T>(64) - 1;
  for (Target target : kAllTargets) {
    for (Opcode opcode : kOpcodes) {
      SCOPED_TRACE(Where(target, opcode, DTypeOf<T>()));
      const auto a = RandomMatrix<T>(8, cols, &this->rng_);
      const auto b = RandomMatrix<T>(valid_rows, ColsFor<T>(64), &this->rng_);
      JobBuilder job(target);
      job.AddMatrix("a", a, valid_rows, valid_cols);
      job.AddMatrix("b", b, valid_rows, valid_cols);
      job.Add(opcode, "out", "a", "b", opcode == Opcode::kTxor ? "t" : "");

      ASSERT_OK_AND_ASSIGN(JobOutcome outcome,
                           this->engine_.Execute(job.spec()));
      ASSERT_THAT(outcome.outputs, SizeIs(1));
      const TileDesc& out = outcome.outputs[0].tile.desc();
      EXPECT_EQ(out.dtype, DTypeOf<T>());
      EXPECT_EQ(out.rows, 8u);
      EXPECT_EQ(out.cols, cols);
      EXPECT_EQ(out.valid_rows, valid_rows);
      EXPECT_EQ(out.valid_cols, valid_cols);
      const Matrix<T> zeros(8, cols);
      EXPECT_TRUE(SameElements(
          Reference(OpOf(opcode), a, b, zeros, valid_rows, valid_cols),
          OutputMatrix<T>(outcome, "out")));
    }
  }
}

// A dst declared without elements starts zero-filled: outside the valid
// region it stays zero.
TYPED_TEST(BackendsTypedTest, DeclaredDstWithoutElementsIsZeroOutsideRegion) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(64);
  for (Target target : kAllTargets) {
    SCOPED_TRACE(Where(target, Opcode::kTand, DTypeOf<T>()));
    const auto a = RandomMatrix<T>(4, cols, &this->rng_);
    const auto b = RandomMatrix<T>(4, cols, &this->rng_);
    JobBuilder job(target);
    job.AddMatrix("a", a, 3, cols - 1);
    job.AddMatrix("b", b, 3, cols - 1);
    job.AddTile("d", test::Desc(DTypeOf<T>(), 4, cols, 3, cols - 1));
    job.Tand("d", "a", "b");

    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, this->engine_.Execute(job.spec()));
    EXPECT_TRUE(SameElements(
        Reference(BitwiseOp::kAnd, a, b, Matrix<T>(4, cols), 3, cols - 1),
        OutputMatrix<T>(outcome, "d")));
  }
}

// dst is src0: legal for TAND everywhere, and for TXOR (whose a2a3
// decomposition writes dst before its last read of the sources finishes).
TYPED_TEST(BackendsTypedTest, InPlaceDstIsSrc0) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(96);
  for (Target target : kAllTargets) {
    for (Opcode opcode : kOpcodes) {
      SCOPED_TRACE(Where(target, opcode, DTypeOf<T>()));
      const auto a = RandomMatrix<T>(5, cols, &this->rng_);
      const auto b = RandomMatrix<T>(5, cols, &this->rng_);
      JobBuilder job(target);
      job.AddMatrix("a", a, 5, cols - 1);
      job.AddMatrix("b", b, 5, cols - 1);
      job.Add(opcode, "a", "a", "b", opcode == Opcode::kTxor ? "t" : "");
      job.AddTile("t", test::Desc(DTypeOf<T>(), 5, cols, 5, cols - 1));

      ASSERT_OK_AND_ASSIGN(JobOutcome outcome,
                           this->engine_.Execute(job.spec()));
      EXPECT_TRUE(SameElements(Reference(OpOf(opcode), a, b, a, 5, cols - 1),
                               OutputMatrix<T>(outcome, "a")));
    }
  }
}

TYPED_TEST(BackendsTypedTest, InPlaceTxorDstIsSrc1OnA2A3) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(64);
  const auto a = RandomMatrix<T>(6, cols, &this->rng_);
  const auto b = RandomMatrix<T>(6, cols, &this->rng_);
  JobBuilder job(Target::kA2A3);
  job.AddMatrix("a", a);
  job.AddMatrix("b", b);
  job.Txor("b", "a", "b", "t");

  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, this->engine_.Execute(job.spec()));
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kXor, a, b, b, 6, cols),
                           OutputMatrix<T>(outcome, "b")));
}

// src0 and src1 the same tile: TAND copies it, TXOR gives all zeros.
TYPED_TEST(BackendsTypedTest, SameTileAsBothSources) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(64);
  for (Target target : kAllTargets) {
    for (Opcode opcode : kOpcodes) {
      SCOPED_TRACE(Where(target, opcode, DTypeOf<T>()));
      const auto a = RandomMatrix<T>(6, cols, &this->rng_);
      JobBuilder job(target);
      job.AddMatrix("a", a);
      job.Add(opcode, "d", "a", "a", opcode == Opcode::kTxor ? "t" : "");

      ASSERT_OK_AND_ASSIGN(JobOutcome outcome,
                           this->engine_.Execute(job.spec()));
      const Matrix<T> want =
          opcode == Opcode::kTand ? a : Matrix<T>(6, cols, T{0});
      EXPECT_TRUE(SameElements(want, OutputMatrix<T>(outcome, "d")));
    }
  }
}

// Random operands of every type: the four-step a2a3 TXOR gives the same
// bits as host's and a5's direct xor and as the reference.
TYPED_TEST(BackendsTypedTest, A2A3TxorDecompositionEqualsDirectXor) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(256);
  const auto a = RandomMatrix<T>(64, cols, &this->rng_);
  const auto b = RandomMatrix<T>(64, cols, &this->rng_);
  const Matrix<T> want =
      Reference(BitwiseOp::kXor, a, b, Matrix<T>(64, cols), 64, cols);
  for (Target target : kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    job.AddMatrix("a", a);
    job.AddMatrix("b", b);
    job.Txor("d", "a", "b", "t");
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, this->engine_.Execute(job.spec()));
    EXPECT_TRUE(SameElements(want, OutputMatrix<T>(outcome, "d")));
  }
}

// Every pair of bytes: src0[i][j] = i, src1[i][j] = j, for i in [first,
// first + 128) and every j, as a 128x256 tile (256-byte rows suit a2a3; the
// four operands take 128 KiB of its 192 KiB buffer). dst must be i ^ j and
// tmp i | j.
template <typename T>
void CheckBytePairs(const Engine& engine, uint32_t first) {
  constexpr uint32_t kRows = 128;
  Matrix<T> a(kRows, 256);
  Matrix<T> b(kRows, 256);
  Matrix<T> want_xor(kRows, 256);
  Matrix<T> want_or(kRows, 256);
  for (uint32_t r = 0; r < kRows; ++r) {
    const uint32_t i = first + r;
    for (uint32_t j = 0; j < 256; ++j) {
      a.at(r, j) = static_cast<T>(i);
      b.at(r, j) = static_cast<T>(j);
      want_xor.at(r, j) = static_cast<T>(i ^ j);
      want_or.at(r, j) = static_cast<T>(i | j);
    }
  }
  Matrix<T> host_result;
  for (Target target : {Target::kHost, Target::kA2A3}) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    job.AddMatrix("a", a);
    job.AddMatrix("b", b);
    job.Txor("d", "a", "b", "t");
    job.spec().outputs = {"d"};
    if (target == Target::kA2A3) job.spec().outputs.push_back("t");

    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine.Execute(job.spec()));
    const Matrix<T> result = OutputMatrix<T>(outcome, "d");
    EXPECT_TRUE(SameElements(want_xor, result));
    if (target == Target::kHost) {
      host_result = result;
    } else {
      EXPECT_TRUE(SameElements(host_result, result));
      EXPECT_TRUE(SameElements(want_or, OutputMatrix<T>(outcome, "t")));
    }
  }
}

template <typename T>
void CheckAllBytePairs(const Engine& engine) {
  SCOPED_TRACE(DTypeName(DTypeOf<T>()));
  CheckBytePairs<T>(engine, 0);
  CheckBytePairs<T>(engine, 128);
}

TEST(A2A3TxorTest, ExhaustiveOverAllBytePairs) {
  const Engine engine{EngineOptions{}};
  CheckAllBytePairs<uint8_t>(engine);
  CheckAllBytePairs<int8_t>(engine);
}

MATCHER_P4(IsMicroOp, op, dst, srcs, repeats, "") {
  return arg.op == op && arg.dst == dst &&
         std::vector<std::string>(arg.srcs.begin(), arg.srcs.end()) == srcs &&
         arg.repeats == static_cast<uint64_t>(repeats);
}

using Strings = std::vector<std::string>;

class TraceTest : public ::testing::Test {
 protected:
  // 16x16 int32 tiles a and b with valid 16 x valid_cols, and TXOR
  // d = a ^ b through a declared 16x16 tmp "t" on `target`.
  absl::StatusOr<JobOutcome> RunTxor(Target target, uint32_t valid_cols,
                                     const Matrix<int32_t>& tmp) {
    JobBuilder job(target);
    job.AddMatrix("a", a_, 16, valid_cols);
    job.AddMatrix("b", b_, 16, valid_cols);
    job.AddTile("d", test::Desc(DType::kInt32, 16, 16, 16, valid_cols));
    job.AddMatrix("t", tmp, 16, valid_cols);
    job.Txor("d", "a", "b", "t");
    job.spec().outputs = {"d", "t"};
    return engine_.Execute(job.spec());
  }

  Engine engine_{EngineOptions{}};
  std::mt19937 rng_{11};
  Matrix<int32_t> a_ = RandomMatrix<int32_t>(16, 16, &rng_);
  Matrix<int32_t> b_ = RandomMatrix<int32_t>(16, 16, &rng_);
};

// 16x16 int32, contiguous: 1024 bytes = 4 repeats of 256 bytes per step.
TEST_F(TraceTest, A2A3TxorIsFourStepsThroughTmp) {
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome,
                       RunTxor(Target::kA2A3, 16, Matrix<int32_t>(16, 16)));
  ASSERT_THAT(outcome.events, SizeIs(1));
  const Trace& trace = outcome.events[0].trace;
  EXPECT_THAT(trace.ops,
              ElementsAre(IsMicroOp("vor", "tmp", Strings{"src0", "src1"}, 4),
                          IsMicroOp("vand", "dst", Strings{"src0", "src1"}, 4),
                          IsMicroOp("vnot", "dst", Strings{"dst"}, 4),
                          IsMicroOp("vand", "dst", Strings{"dst", "tmp"}, 4)));
  for (const MicroOp& op : trace.ops) EXPECT_EQ(op.elements, 256u);

  const Matrix<int32_t> zeros(16, 16);
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kOr, a_, b_, zeros, 16, 16),
                           OutputMatrix<int32_t>(outcome, "t")));
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kXor, a_, b_, zeros, 16, 16),
                           OutputMatrix<int32_t>(outcome, "d")));
}

// Valid 16x15 of 16x16 int32: rows of 60 bytes with gaps between them, so
// each of the 16 rows takes one repeat of its own.
TEST_F(TraceTest, StridedRegionCountsRepeatsPerRow) {
  const Matrix<int32_t> tmp(16, 16, Sentinel<int32_t>());
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, RunTxor(Target::kA2A3, 15, tmp));
  const Trace& trace = outcome.events[0].trace;
  ASSERT_THAT(trace.ops, SizeIs(4));
  for (const MicroOp& op : trace.ops) {
    EXPECT_EQ(op.repeats, 16u) << op.op;
    EXPECT_EQ(op.elements, 240u) << op.op;
  }
  // tmp holds OR(a, b) in the valid region; its last column is untouched.
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kOr, a_, b_, tmp, 16, 15),
                           OutputMatrix<int32_t>(outcome, "t")));
}

TEST_F(TraceTest, A5TxorIsOneVxorAndLeavesTmpAlone) {
  const Matrix<int32_t> tmp(16, 16, Sentinel<int32_t>());
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, RunTxor(Target::kA5, 16, tmp));
  const Trace& trace = outcome.events[0].trace;
  EXPECT_THAT(trace.ops, ElementsAre(IsMicroOp("vxor", "dst",
                                               Strings{"src0", "src1"}, 4)));
  EXPECT_EQ(trace.ops[0].elements, 256u);
  EXPECT_THAT(trace.notes,
              ElementsAre("tmp \"t\" is accepted and unused on a5"));
  EXPECT_TRUE(SameElements(tmp, OutputMatrix<int32_t>(outcome, "t")));
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kXor, a_, b_, Matrix<int32_t>(16, 16), 16, 16),
      OutputMatrix<int32_t>(outcome, "d")));
}

TEST_F(TraceTest, HostTxorIsOneXorAndLeavesTmpAlone) {
  const Matrix<int32_t> tmp(16, 16, Sentinel<int32_t>());
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, RunTxor(Target::kHost, 16, tmp));
  const Trace& trace = outcome.events[0].trace;
  EXPECT_THAT(trace.ops,
              ElementsAre(IsMicroOp("xor", "dst", Strings{"src0", "src1"}, 4)));
  EXPECT_THAT(trace.notes,
              ElementsAre("tmp \"t\" is accepted and unused on host"));
  EXPECT_TRUE(SameElements(tmp, OutputMatrix<int32_t>(outcome, "t")));
}

TEST_F(TraceTest, TandIsOneStepOnEveryTarget) {
  const std::string names[] = {"and", "vand", "vand"};  // in Target order
  for (Target target : kAllTargets) {
    SCOPED_TRACE(TargetName(target));
    JobBuilder job(target);
    job.AddMatrix("a", a_);
    job.AddMatrix("b", b_);
    job.Tand("d", "a", "b");
    ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
    EXPECT_THAT(outcome.events[0].trace.ops,
                ElementsAre(IsMicroOp(names[static_cast<int>(target)], "dst",
                                      Strings{"src0", "src1"}, 4)));
  }
}

// Equal valid regions but src1 twice as wide: its rows are not adjacent, so
// the 16 rows of 64 bytes take 16 repeats instead of 4.
TEST_F(TraceTest, DifferentPhysicalShapesAreNotContiguous) {
  const auto wide = RandomMatrix<int32_t>(16, 32, &rng_);
  JobBuilder job(Target::kA5);
  job.AddMatrix("a", a_);
  job.AddMatrix("b", wide, 16, 16);
  job.Tand("d", "a", "b");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
  EXPECT_THAT(
      outcome.events[0].trace.ops,
      ElementsAre(IsMicroOp("vand", "dst", Strings{"src0", "src1"}, 16)));
  EXPECT_TRUE(SameElements(
      Reference(BitwiseOp::kAnd, a_, wide, Matrix<int32_t>(16, 16), 16, 16),
      OutputMatrix<int32_t>(outcome, "d")));
}

TEST(VectorRepeatsTest, HandComputed) {
  EXPECT_EQ(VectorRepeats(1, 1, true), 1u);
  EXPECT_EQ(VectorRepeats(16, 64, true), 4u);    // 16x16 int32
  EXPECT_EQ(VectorRepeats(16, 60, false), 16u);  // valid 16x15 of 16x16 int32
  EXPECT_EQ(VectorRepeats(3, 100, true), 2u);    // 300 bytes
  EXPECT_EQ(VectorRepeats(3, 100, false), 3u);
  EXPECT_EQ(VectorRepeats(2, 257, false), 4u);
  EXPECT_EQ(VectorRepeats(256, 256, true), 256u);
  EXPECT_EQ(VectorRepeats(4, 256, false), 4u);
}

TEST(SupportedTest, EveryTargetListsTheSixIntegerTypes) {
  const BackendRegistry registry(1 << 20);
  for (const Backend* backend : registry.All()) {
    SCOPED_TRACE(TargetName(backend->target()));
    const std::vector<OpcodeSupport> supported = backend->Supported();
    // The seeds' TAND and TXOR everywhere; TOR and TNOT on the host only.
    ASSERT_THAT(supported, SizeIs(backend->target() == Target::kHost ? 4 : 2));
    for (const OpcodeSupport& s : supported) {
      EXPECT_THAT(s.dtypes,
                  ElementsAre(DType::kInt8, DType::kUInt8, DType::kInt16,
                              DType::kUInt16, DType::kInt32, DType::kUInt32));
      EXPECT_EQ(s.tmp_required, s.opcode == Opcode::kTxor &&
                                    backend->target() == Target::kA2A3);
    }
  }
  EXPECT_EQ(registry.Get(Target::kA2A3).rules().buffer_bytes, 196608u);
  EXPECT_EQ(registry.Get(Target::kA5).rules().buffer_bytes, 262144u);
  EXPECT_EQ(registry.Get(Target::kHost).rules().buffer_bytes, 1u << 20);
  EXPECT_THAT(registry.Get(Target::kA5).Supported()[1].algorithm,
              HasSubstr("vxor"));
  EXPECT_THAT(registry.Get(Target::kHost).Supported()[0].algorithm,
              Not(IsEmpty()));
}

// Beyond the seeds: TOR (dst = src0 | src1) and TNOT (dst = ~src0) on the
// host, element by element against the scalar reference, with dst keeping
// its elements outside the valid region; a2a3 and a5 refuse both, naming
// the target that runs them.
TYPED_TEST(BackendsTypedTest, TorAndTnotOnTheHostOnly) {
  using T = TypeParam;
  const uint32_t cols = ColsFor<T>(64);
  const auto a = RandomMatrix<T>(6, cols, &this->rng_);
  const auto b = RandomMatrix<T>(6, cols, &this->rng_);
  const auto dst = RandomMatrix<T>(6, cols, &this->rng_);
  JobBuilder job(Target::kHost);
  job.AddMatrix("a", a, 5, cols - 1);
  job.AddMatrix("b", b, 5, cols - 1);
  job.AddMatrix("o", dst, 5, cols - 1);
  job.AddMatrix("n", dst, 5, cols - 1);
  job.Add(Opcode::kTor, "o", "a", "b");
  job.Add(Opcode::kTnot, "n", "a", "");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, this->engine_.Execute(job.spec()));
  EXPECT_TRUE(SameElements(Reference(BitwiseOp::kOr, a, b, dst, 5, cols - 1),
                           OutputMatrix<T>(outcome, "o")));
  Matrix<T> expected_not = dst;
  for (uint32_t i = 0; i < 5; ++i) {
    for (uint32_t j = 0; j < cols - 1; ++j) {
      expected_not.at(i, j) = static_cast<T>(~a.at(i, j));
    }
  }
  EXPECT_TRUE(SameElements(expected_not, OutputMatrix<T>(outcome, "n")));
  EXPECT_EQ(outcome.events[1].trace.ops[0].op, "not");

  for (Target target : {Target::kA2A3, Target::kA5}) {
    JobBuilder other(target);
    other.AddMatrix("a", a);
    other.AddMatrix("b", b);
    other.Add(Opcode::kTor, "o", "a", "b");
    EXPECT_THAT(
        this->engine_.Execute(other.spec()).status(),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("instruction 0 (TOR on ", TargetName(target),
                              "): ", TargetName(target),
                              " does not run TOR (host does)")));
  }
}

// TNOT reads src0 only: a src1 is an error naming it.
TEST(TnotTest, Src1IsRefused) {
  const Engine engine{EngineOptions{}};
  JobBuilder job(Target::kHost);
  job.AddTile("a", test::Desc(DType::kInt8, 2, 8));
  job.Add(Opcode::kTnot, "n", "a", "a");
  EXPECT_THAT(
      engine.Execute(job.spec()).status(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          "instruction 0 (TNOT on host): src1 \"a\" is set; TNOT takes one "
          "source (src0)"));
}

// The target specs: named as TargetName names them, one rule per opcode,
// and the algorithm text printed from the steps as the seeds state it.
TEST(TargetSpecTest, SpecsAreNamedAndPrintTheirSteps) {
  for (Target target : kAllTargets) {
    EXPECT_EQ(absl::string_view(SpecOf(target).name), TargetName(target));
    EXPECT_TRUE(CoversEveryOpcode(SpecOf(target)));
  }
  EXPECT_EQ(AlgorithmText(SpecOf(Target::kA2A3).rule(Opcode::kTxor)),
            "tmp = vor(src0, src1); dst = vand(src0, src1); dst = vnot(dst); "
            "dst = vand(dst, tmp)");
  EXPECT_EQ(AlgorithmText(SpecOf(Target::kA5).rule(Opcode::kTxor)),
            "dst = vxor(src0, src1) (tmp unused)");
  EXPECT_EQ(AlgorithmText(SpecOf(Target::kHost).rule(Opcode::kTand)),
            "dst = and(src0, src1)");
  const Engine engine{EngineOptions{}};
  EXPECT_EQ(engine.backends().Get(Target::kA2A3).Supported()[0].algorithm,
            absl::StrCat("dst = vand(src0, src1), with ", BestKernels().name,
                         " kernels"));
}

}  // namespace
}  // namespace ptoserve
