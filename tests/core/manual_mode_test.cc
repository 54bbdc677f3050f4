// Manual mode: tiles bound to unified-buffer addresses (the seeds'
// pto.tassign), checked for presence, alignment, bounds and, for TXOR on
// a2a3, overlap.
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/engine.h"
#include "core/unified_buffer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::JobBuilder;
using test::kAllTargets;
using test::Matrix;
using test::OutputMatrix;
using test::PlacedDesc;
using test::StatusIs;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr uint64_t kTileBytes = 0x400;  // a 16x16 int32 tile

class ManualModeTest : public ::testing::Test {
 protected:
  absl::Status Prepare(JobBuilder& job) {
    return engine_.Prepare(job.spec()).status();
  }

  // Adds a 16x16 int32 tile without elements at `address`.
  static void Place(JobBuilder& job, const char* name, uint64_t address) {
    job.AddTile(name, PlacedDesc(DType::kInt32, 16, 16, address));
  }

  // A job on `target` whose tiles d, a, b and t sit at the given addresses.
  static void PlaceAll(JobBuilder& job, uint64_t d, uint64_t a, uint64_t b,
                       uint64_t t) {
    Place(job, "d", d);
    Place(job, "a", a);
    Place(job, "b", b);
    Place(job, "t", t);
  }

  Engine engine_{EngineOptions{}};
};

// Binding is optional (the seeds' "Optional" before pto.tassign): a tile
// without an address, declared or allocated, is placed around the bound
// ones (see unified_buffer_test for where).
TEST_F(ManualModeTest, TilesWithoutAnAddressArePlaced) {
  JobBuilder job(Target::kA2A3, Mode::kManual);
  Place(job, "a", 0x1000);
  job.AddTile("b", test::Desc(DType::kInt32, 16, 16));
  job.Tand("a", "a", "b");
  EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);

  JobBuilder allocated(Target::kHost, Mode::kManual);
  Place(allocated, "a", 0x1000);
  allocated.Tand("d", "a", "a");
  EXPECT_TRUE(Prepare(allocated).ok()) << Prepare(allocated);
}

TEST_F(ManualModeTest, AutoModeNeedsNoAddresses) {
  for (Target target : kAllTargets) {
    JobBuilder job(target);
    job.AddTile("a", test::Desc(DType::kInt32, 16, 16));
    job.AddTile("b", test::Desc(DType::kInt32, 16, 16));
    job.Txor("d", "a", "b", "t");
    EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
  }
}

TEST_F(ManualModeTest, AddressesMustBe32ByteAligned) {
  for (uint64_t address : {0x1001u, 0x1010u, 0x101Fu}) {
    JobBuilder job(Target::kA5, Mode::kManual);
    Place(job, "a", address);
    job.Tand("a", "a", "a");
    EXPECT_THAT(Prepare(job),
                StatusIs(kInvalid, absl::StrFormat("tile \"a\": address %#x "
                                                   "is not 32-byte aligned",
                                                   address)));
  }
  JobBuilder job(Target::kA5, Mode::kManual);
  Place(job, "a", 0x1020);
  job.Tand("a", "a", "a");
  EXPECT_TRUE(Prepare(job).ok()) << Prepare(job);
}

struct BufferCase {
  Target target;
  uint64_t host_buffer_bytes;  // EngineOptions::host_buffer_bytes
  uint64_t buffer_bytes;       // the target's unified buffer
};

class BufferBoundsTest : public ::testing::TestWithParam<BufferCase> {
 protected:
  absl::Status PrepareWithTileA(uint32_t bytes, uint64_t address) {
    EngineOptions options;
    options.host_buffer_bytes = GetParam().host_buffer_bytes;
    const Engine engine(options);
    JobBuilder job(GetParam().target, Mode::kManual);
    job.AddTile("a", PlacedDesc(DType::kUInt8, 1, bytes, address));
    job.AddTile("b", PlacedDesc(DType::kUInt8, 1, bytes, 0));
    job.Tand("b", "a", "b");
    return engine.Prepare(job.spec()).status();
  }
};

TEST_P(BufferBoundsTest, TileMustEndInsideTheBuffer) {
  const uint64_t end = GetParam().buffer_bytes;
  const Target target = GetParam().target;
  // Ends exactly at the end of the buffer.
  EXPECT_TRUE(PrepareWithTileA(1024, end - 1024).ok())
      << PrepareWithTileA(1024, end - 1024);
  // One byte longer.
  EXPECT_THAT(
      PrepareWithTileA(1025, end - 1024),
      StatusIs(kInvalid,
               absl::StrFormat("tile \"a\": 1x1025 uint8 at [%#x, "
                               "%#x) does not fit in the %s unified "
                               "buffer of %u bytes",
                               end - 1024, end + 1, TargetName(target), end)));
  // Starting at or past the end, and far past it (no wrap-around).
  EXPECT_THAT(PrepareWithTileA(1024, end - 1024 + 32),
              StatusIs(kInvalid, HasSubstr("does not fit")));
  EXPECT_THAT(PrepareWithTileA(32, end),
              StatusIs(kInvalid, HasSubstr("does not fit")));
  EXPECT_THAT(PrepareWithTileA(32, 0xFFFFFFFFFFFFFFE0u),
              StatusIs(kInvalid, HasSubstr("does not fit")));
}

INSTANTIATE_TEST_SUITE_P(
    Targets, BufferBoundsTest,
    ::testing::Values(BufferCase{Target::kA2A3, 1 << 20, 196608},
                      BufferCase{Target::kA5, 1 << 20, 262144},
                      BufferCase{Target::kHost, 1 << 20, 1 << 20},
                      BufferCase{Target::kHost, 8192, 8192}),
    [](const ::testing::TestParamInfo<BufferCase>& info) {
      return absl::StrFormat("%s_%u", TargetName(info.param.target),
                             info.param.buffer_bytes);
    });

// Each pair of TXOR's four operands on a2a3: the second placed half-way
// into the first. The message names both tiles and both ranges.
TEST_F(ManualModeTest, A2A3TxorRejectsEveryOverlappingPair) {
  const char* names[] = {"d", "a", "b", "t"};
  const char* roles[] = {"dst", "src0", "src1", "tmp"};
  for (int x = 0; x < 4; ++x) {
    for (int y = x + 1; y < 4; ++y) {
      SCOPED_TRACE(absl::StrCat(roles[x], " and ", roles[y]));
      uint64_t address[4] = {0x1000, 0x2000, 0x3000, 0x4000};
      address[y] = address[x] + 0x200;
      JobBuilder job(Target::kA2A3, Mode::kManual);
      PlaceAll(job, address[0], address[1], address[2], address[3]);
      job.Txor("d", "a", "b", "t");
      EXPECT_THAT(
          Prepare(job),
          StatusIs(
              kInvalid,
              absl::StrFormat(
                  "instruction 0 (TXOR on a2a3): %s \"%s\" [%#x, %#x) "
                  "overlaps %s \"%s\" [%#x, %#x); in manual mode the "
                  "regions of dst, src0, src1 and tmp must not overlap",
                  roles[x], names[x], address[x], address[x] + kTileBytes,
                  roles[y], names[y], address[y], address[y] + kTileBytes)));
    }
  }
}

// Disjoint operands, adjacent ones included, run and give the right result.
TEST_F(ManualModeTest, A2A3TxorAcceptsDisjointOperands) {
  std::mt19937 rng(1);
  const auto a = test::RandomMatrix<int32_t>(16, 16, &rng);
  const auto b = test::RandomMatrix<int32_t>(16, 16, &rng);
  JobBuilder job(Target::kA2A3, Mode::kManual);
  Place(job, "d", 0x0);
  job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x400), a.ToData());
  job.AddData("b", PlacedDesc(DType::kInt32, 16, 16, 0x800), b.ToData());
  Place(job, "t", 0xC00);
  job.Txor("d", "a", "b", "t");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(job.spec()));
  EXPECT_TRUE(test::SameElements(
      test::Reference(BitwiseOp::kXor, a, b, Matrix<int32_t>(16, 16), 16, 16),
      OutputMatrix<int32_t>(outcome, "d")));
}

// The seed: "the memory regions of dst, src0, src1, and tmp must not
// overlap", with no exception for one tile named as both sources. In auto
// mode, where the rule does not apply, the same program runs.
TEST_F(ManualModeTest, A2A3TxorSameTileAsBothSourcesIsAnOverlap) {
  std::mt19937 rng(2);
  const auto a = test::RandomMatrix<int32_t>(16, 16, &rng);
  JobBuilder job(Target::kA2A3, Mode::kManual);
  Place(job, "d", 0x0);
  job.AddData("a", PlacedDesc(DType::kInt32, 16, 16, 0x400), a.ToData());
  Place(job, "t", 0x800);
  job.Txor("d", "a", "a", "t");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid,
                       "instruction 0 (TXOR on a2a3): src0 \"a\" "
                       "[0x400, 0x800) overlaps src1 \"a\" [0x400, "
                       "0x800); in manual mode the regions of dst, "
                       "src0, src1 and tmp must not overlap"));

  JobBuilder auto_mode(Target::kA2A3);
  auto_mode.AddMatrix("a", a);
  auto_mode.Txor("d", "a", "a", "t");
  ASSERT_OK_AND_ASSIGN(JobOutcome outcome, engine_.Execute(auto_mode.spec()));
  EXPECT_TRUE(test::SameElements(Matrix<int32_t>(16, 16, 0),
                                 OutputMatrix<int32_t>(outcome, "d")));
}

// In-place TXOR shares dst's region with src0, which a2a3 forbids in
// manual mode (it is fine in auto mode; see backends_test).
TEST_F(ManualModeTest, A2A3TxorInPlaceIsAnOverlap) {
  JobBuilder job(Target::kA2A3, Mode::kManual);
  PlaceAll(job, 0x1000, 0x2000, 0x3000, 0x4000);
  job.Txor("a", "a", "b", "t");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid, HasSubstr("dst \"a\" [0x2000, 0x2400) "
                                           "overlaps src0 \"a\" [0x2000, "
                                           "0x2400)")));
}

TEST_F(ManualModeTest, OverlapIsAllowedWhereNoRuleForbidsIt) {
  // TAND on a2a3: dst on top of src0 and src1.
  JobBuilder tand(Target::kA2A3, Mode::kManual);
  PlaceAll(tand, 0x1000, 0x1000, 0x1200, 0x1000);
  tand.Tand("d", "a", "b");
  EXPECT_TRUE(Prepare(tand).ok()) << Prepare(tand);

  // TXOR on a5 and host: no overlap rule, tmp unused.
  for (Target target : {Target::kA5, Target::kHost}) {
    JobBuilder txor(target, Mode::kManual);
    PlaceAll(txor, 0x1000, 0x1000, 0x1200, 0x1100);
    txor.Txor("d", "a", "b", "t");
    EXPECT_TRUE(Prepare(txor).ok()) << Prepare(txor);
  }
}

TEST(ByteRangeTest, OverlapsIsHalfOpen) {
  const ByteRange r{0x1000, 0x1400};
  EXPECT_TRUE(r.Overlaps(ByteRange{0x13E0, 0x1800}));
  EXPECT_TRUE(r.Overlaps(ByteRange{0x1100, 0x1200}));
  EXPECT_TRUE(r.Overlaps(ByteRange{0x0, 0x2000}));
  EXPECT_FALSE(r.Overlaps(ByteRange{0x1400, 0x1800}));
  EXPECT_FALSE(r.Overlaps(ByteRange{0x0, 0x1000}));
}

TEST(ByteRangeTest, ToString) {
  EXPECT_EQ((ByteRange{0x1000, 0x1400}).ToString(), "[0x1000, 0x1400)");
}

// Address zero prints as 0x0 like every other address.
TEST(ByteRangeTest, ToStringAtAddressZero) {
  EXPECT_EQ((ByteRange{0x0, 0x400}).ToString(), "[0x0, 0x400)");
}

// An overlap error at address 0.
TEST_F(ManualModeTest, OverlapMessageAtAddressZero) {
  JobBuilder job(Target::kA2A3, Mode::kManual);
  PlaceAll(job, 0x0, 0x200, 0x1000, 0x2000);
  job.Txor("d", "a", "b", "t");
  EXPECT_THAT(Prepare(job),
              StatusIs(kInvalid, HasSubstr("dst \"d\" [0x0, 0x400) overlaps "
                                           "src0 \"a\" [0x200, 0x600)")));
}

}  // namespace
}  // namespace ptoserve
