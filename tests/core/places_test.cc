// Outputs written to the caller's memory (JobSpec::places, the engine's
// side of Job.output_regions): on every target and type the placed bytes
// are what the outcome would have carried, computed by the scalar
// reference; a host job computes into the place itself; the checks name
// what is wrong; and the cost leaves placed tiles out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using ::ptoserve::test::Desc;
using ::ptoserve::test::JobBuilder;
using ::ptoserve::test::Matrix;
using ::ptoserve::test::SameElements;
using ::ptoserve::test::StatusIs;
using ::testing::HasSubstr;

// Memory outside the job, filled with a sentinel so that bytes the engine
// leaves alone show.
template <typename T>
Matrix<T> Place(uint32_t rows, uint32_t cols) {
  return Matrix<T>(rows, cols, test::Sentinel<T>());
}

template <typename T>
absl::Span<uint8_t> BytesOf(Matrix<T>& m) {
  return absl::MakeSpan(m.bytes(), m.elements.size() * sizeof(m.elements[0]));
}

template <typename T>
void PlacedEqualsUnplaced(Target target, Opcode opcode) {
  std::mt19937 rng(7);
  // a2a3 and a5 rows are 32-byte multiples.
  const uint32_t rows = 5, cols = 64 / sizeof(T), valid_rows = 4,
                 valid_cols = cols - 3;
  const Matrix<T> a = test::RandomMatrix<T>(rows, cols, &rng);
  const Matrix<T> b = test::RandomMatrix<T>(rows, cols, &rng);
  const bool tmp = opcode == Opcode::kTxor && target == Target::kA2A3;
  Engine engine{EngineOptions{}};

  auto build = [&](JobBuilder& job) {
    job.AddMatrix("a", a, valid_rows, valid_cols);
    job.AddMatrix("b", b, valid_rows, valid_cols);
    job.Add(opcode, "c", "a", "b", tmp ? "t" : "");
  };
  JobBuilder plain(target);
  build(plain);
  ASSERT_OK_AND_ASSIGN(JobOutcome want, engine.Execute(plain.spec()));

  Matrix<T> place = Place<T>(rows, cols);
  JobBuilder placed(target);
  build(placed);
  placed.spec().places.push_back({"c", BytesOf(place)});
  ASSERT_OK_AND_ASSIGN(JobOutcome got, engine.Execute(placed.spec()));
  ASSERT_EQ(got.outputs.size(), 1u);
  EXPECT_TRUE(got.outputs[0].placed);
  EXPECT_EQ(std::as_const(got.outputs[0].tile).data(), place.bytes());
  // The reference: c is new, so zero outside the valid region.
  const Matrix<T> expected = test::Reference(
      test::OpOf(opcode), a, b, Matrix<T>(rows, cols), valid_rows, valid_cols);
  EXPECT_TRUE(SameElements(expected, place));
  EXPECT_TRUE(SameElements(test::OutputMatrix<T>(want, "c"), place));
}

TEST(PlacesTest, EveryTargetTypeAndOpcodeWritesWhatTheOutcomeWouldCarry) {
  for (Target target : test::kAllTargets) {
    for (Opcode opcode : {Opcode::kTand, Opcode::kTxor}) {
      SCOPED_TRACE(TargetName(target));
      test::ForEachBitwiseType(
          [&](auto t) { PlacedEqualsUnplaced<decltype(t)>(target, opcode); });
    }
  }
}

TEST(PlacesTest, AHostJobComputesInThePlaceAndCostsItNothing) {
  const Matrix<int32_t> a(64, 64, 0x0ff0), b(64, 64, 0x3c3c);
  Matrix<int32_t> place = Place<int32_t>(64, 64);
  JobBuilder job(Target::kHost);
  job.AddMatrix("a", a);
  job.AddMatrix("b", b);
  job.Tand("c", "a", "b");
  job.spec().places.push_back({"c", BytesOf(place)});
  Engine engine{EngineOptions{}};
  std::optional<JobCost> cost;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PreparedJob> prepared,
                       engine.Prepare(job.spec(), [&](const JobCost& c) {
                         cost = c;
                         return absl::OkStatus();
                       }));
  // Inputs read in place, the output written in place: nothing allocated.
  ASSERT_TRUE(cost.has_value());
  EXPECT_EQ(cost->tile_bytes, 0u);
  EXPECT_EQ(prepared->instruction(0).dst->data(), place.bytes());
  const WorkItem item{prepared.get(), 0};
  engine.RunBatch(absl::MakeConstSpan(&item, 1));
  JobOutcome out = engine.Finish(prepared.get());
  EXPECT_TRUE(SameElements(Matrix<int32_t>(64, 64, 0x0ff0 & 0x3c3c), place));
}

TEST(PlacesTest, AnInPlaceUpdateOfItsOwnInputAndDeclaredDestinations) {
  // c arrives in the place itself and is updated there: c = c & m.
  Matrix<uint16_t> c(3, 16);
  for (size_t k = 0; k < c.elements.size(); ++k) c.elements[k] = 1000 + k;
  const Matrix<uint16_t> mask(3, 16, 0x00ff);
  Matrix<uint16_t> place = c;
  JobBuilder job(Target::kHost);
  job.AddData("c", Desc(DType::kUInt16, 3, 16),
              std::string(reinterpret_cast<const char*>(place.bytes()),
                          place.elements.size() * 2));
  // Point the input at the place's own bytes, as a slice of a region would.
  job.spec().tiles[0].data = absl::string_view(
      reinterpret_cast<const char*>(place.bytes()), place.elements.size() * 2);
  job.AddMatrix("m", mask);
  job.Tand("c", "c", "m");
  job.spec().places.push_back({"c", BytesOf(place)});
  Engine engine{EngineOptions{}};
  ASSERT_OK_AND_ASSIGN(JobOutcome out, engine.Execute(job.spec()));
  EXPECT_TRUE(
      SameElements(test::Reference(BitwiseOp::kAnd, c, mask, c, 3, 16), place));

  // A declared dst with a smaller valid region keeps its elements outside
  // it (here: sent as a fill), as the outcome would.
  Matrix<int8_t> d = Place<int8_t>(4, 32);
  JobBuilder fill(Target::kA5);
  fill.AddFill("d", Desc(DType::kInt8, 4, 32, 2, 20), 9);
  fill.AddMatrix("a", Matrix<int8_t>(4, 32, 0x7f), 2, 20);
  fill.Tand("d", "a", "a");
  fill.spec().places.push_back({"d", BytesOf(d)});
  ASSERT_OK_AND_ASSIGN(JobOutcome filled, engine.Execute(fill.spec()));
  Matrix<int8_t> want(4, 32, 9);
  for (uint32_t i = 0; i < 2; ++i) {
    for (uint32_t j = 0; j < 20; ++j) want.at(i, j) = 0x7f;
  }
  EXPECT_TRUE(SameElements(want, d));
}

TEST(PlacesTest, PlacesMustNameAnOutputOnceWithItsSize) {
  Engine engine{EngineOptions{}};
  Matrix<int32_t> place = Place<int32_t>(4, 8);
  auto job_with = [&](std::vector<OutputPlace> places,
                      std::vector<std::string> outputs = {}) {
    auto job = std::make_unique<JobBuilder>(Target::kHost);
    job->AddMatrix("a", Matrix<int32_t>(4, 8, 1));
    job->Tand("c", "a", "a");
    job->spec().places = std::move(places);
    job->spec().outputs = std::move(outputs);
    return job;
  };
  auto small = absl::MakeSpan(place.bytes(), 127);
  EXPECT_THAT(engine.Execute(job_with({{"c", small}})->spec()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tile \"c\" is 4x8 int32, 128 bytes, and its "
                                 "slice is 127 bytes")));
  EXPECT_THAT(
      engine.Execute(job_with({{"a", BytesOf(place)}})->spec()).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("output_regions: \"a\" is not an output")));
  EXPECT_THAT(
      engine.Execute(job_with({{"x", BytesOf(place)}})->spec()).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("output_regions: \"x\" is not an output")));
  EXPECT_THAT(
      engine
          .Execute(
              job_with({{"c", BytesOf(place)}, {"c", BytesOf(place)}})->spec())
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("\"c\" is given twice")));
  // An input listed as an output may be placed: it is copied there.
  Matrix<int32_t> copy = Place<int32_t>(4, 8);
  ASSERT_OK_AND_ASSIGN(
      JobOutcome out,
      engine.Execute(job_with({{"a", BytesOf(copy)}}, {"a", "c"})->spec()));
  EXPECT_TRUE(SameElements(Matrix<int32_t>(4, 8, 1), copy));
  EXPECT_FALSE(out.outputs[1].placed);
}

}  // namespace
}  // namespace ptoserve
