// The seeds' C++ built-in API on the target this binary is built for:
// results against a scalar loop for every element type, valid regions,
// operands of different shapes, events, TXOR's tmp, agreement with the
// service's engine, and the run-time checks.
#include <cstdint>
#include <cstring>
#include <pto/pto-inst.hpp>
#include <random>
#include <string>

#include "core/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ptoserve {
namespace {

using pto::BLayout;
using pto::DYNAMIC;
using pto::RecordEvent;
using pto::TileType;

constexpr uint8_t kSentinelByte = 0xA5;

// Fills every element of `tile` with random bits.
template <typename TileData>
void Randomize(TileData& tile, std::mt19937& rng) {
  for (int i = 0; i < TileData::Numel; ++i) {
    tile.data()[i] = static_cast<typename TileData::DType>(rng());
  }
}

// The bytes of a tile's elements, padding included.
template <typename TileData>
constexpr size_t Bytes(const TileData&) {
  return sizeof(typename TileData::DType) * TileData::Numel;
}

template <typename TileData>
void FillSentinel(TileData& tile) {
  std::memset(tile.data(), kSentinelByte, Bytes(tile));
}

// Expects `dst` to be a copy of `before` with each element (r, c) of dst's
// valid region replaced by op(a(r, c), b(r, c)).
template <typename Dst, typename A, typename B, typename Op>
void ExpectComputed(const Dst& dst, const Dst& before, const A& a, const B& b,
                    Op op) {
  for (int r = 0; r < Dst::Rows; ++r) {
    for (int c = 0; c < Dst::Cols; ++c) {
      const bool valid = r < dst.GetValidRow() && c < dst.GetValidCol();
      const auto expected =
          valid ? static_cast<typename Dst::DType>(op(a(r, c), b(r, c)))
                : before(r, c);
      ASSERT_EQ(dst(r, c), expected) << "element (" << r << ", " << c << ")";
    }
  }
}

const auto kAnd = [](auto x, auto y) { return x & y; };
const auto kOr = [](auto x, auto y) { return x | y; };
const auto kXor = [](auto x, auto y) { return x ^ y; };

template <typename T>
class BuiltinApiTypedTest : public ::testing::Test {};
using BitwiseTypes =
    ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;
TYPED_TEST_SUITE(BuiltinApiTypedTest, BitwiseTypes);

// 4 rows of 64 bytes, valid 3 x (all but one column).
TYPED_TEST(BuiltinApiTypedTest, ComputesTheValidRegionOnly) {
  using T = TypeParam;
  constexpr int kCols = 64 / sizeof(T);
  using TileT =
      pto::Tile<TileType::Vec, T, 4, kCols, BLayout::RowMajor, 3, kCols - 1>;
  std::mt19937 rng(7);
  TileT a, b, dst, tmp;
  Randomize(a, rng);
  Randomize(b, rng);
  FillSentinel(dst);
  FillSentinel(tmp);
  const TileT before = dst;
  const TileT tmp_before = tmp;

  TAND(dst, a, b);
  ExpectComputed(dst, before, a, b, kAnd);

  TXOR(dst, a, b, tmp);
  ExpectComputed(dst, before, a, b, kXor);
  if (pto::Rules::kTxorUsesTmp) {
    ExpectComputed(tmp, tmp_before, a, b, kOr);
  } else {
    EXPECT_EQ(std::memcmp(tmp.data(), tmp_before.data(), Bytes(tmp)), 0);
  }
}

// Operands of different physical shapes combine when their valid shapes
// agree (the example in DESIGN.md).
TEST(BuiltinApiTest, DifferentPhysicalShapes) {
  using Narrow =
      pto::Tile<TileType::Vec, int16_t, 32, 128, BLayout::RowMajor, 32, 127>;
  using Wide =
      pto::Tile<TileType::Vec, int16_t, 32, 256, BLayout::RowMajor, 32, 127>;
  std::mt19937 rng(8);
  Narrow a, dst, tmp;
  Wide b;
  Randomize(a, rng);
  Randomize(b, rng);
  FillSentinel(dst);
  const Narrow before = dst;
  TXOR(dst, a, b, tmp);
  ExpectComputed(dst, before, a, b, kXor);
  // TAND over mixed tile types takes its second overload.
  FillSentinel(dst);
  TAND(dst, a, b);
  ExpectComputed(dst, before, a, b, kAnd);
}

TEST(BuiltinApiTest, DynamicValidShape) {
  using Dynamic = pto::Tile<TileType::Vec, uint8_t, 16, 32, BLayout::RowMajor,
                            DYNAMIC, DYNAMIC>;
  using DynamicRows =
      pto::Tile<TileType::Vec, uint8_t, 16, 32, BLayout::RowMajor, DYNAMIC, 12>;
  std::mt19937 rng(9);
  Dynamic a(5, 12), dst(5, 12);
  DynamicRows b(5);
  EXPECT_EQ(a.GetValidRow(), 5);
  EXPECT_EQ(b.GetValidCol(), 12);
  EXPECT_EQ(Dynamic().GetValidRow(), 16);  // full until set
  Randomize(a, rng);
  Randomize(b, rng);
  FillSentinel(dst);
  const Dynamic before = dst;
  TAND(dst, a, b);
  ExpectComputed(dst, before, a, b, kAnd);
}

TEST(BuiltinApiTest, InPlaceAndSameSource) {
  using TileT = pto::Tile<TileType::Vec, int32_t, 8, 8>;
  std::mt19937 rng(10);
  TileT a, b, tmp, zero;
  Randomize(a, rng);
  Randomize(b, rng);
  const TileT a_before = a;
  TAND(a, a, b);  // dst is src0
  ExpectComputed(a, a_before, a_before, b, kAnd);
  TXOR(a, b, b, tmp);  // src0 is src1: all zeros
  EXPECT_EQ(std::memcmp(a.data(), zero.data(), Bytes(a)), 0);
}

// The seed's own spellings: TAND's template takes one tile type and the
// events, so the tile type may be named, alone or with the events' type.
TEST(BuiltinApiTest, SeedSpellingsOfTandCompileAndCompute) {
  using pto::TAND;  // named with template arguments: no ADL in C++17
  using TileT = pto::Tile<TileType::Vec, int32_t, 4, 8>;
  std::mt19937 rng(12);
  TileT a, b, c, d;
  Randomize(a, rng);
  Randomize(b, rng);
  FillSentinel(c);
  FillSentinel(d);
  const TileT c_before = c;
  RecordEvent e = TAND<TileT>(c, a, b);
  ExpectComputed(c, c_before, a, b, kAnd);
  const TileT d_before = d;
  const RecordEvent done = TAND<TileT, RecordEvent>(d, c, b, e);
  EXPECT_EQ(done.op, pto::Op::TAND);
  ExpectComputed(d, d_before, c, b, kAnd);
  for (int r = 0; r < 4; ++r) {
    for (int col = 0; col < 8; ++col) {
      ASSERT_EQ(d(r, col), a(r, col) & b(r, col));  // (a & b) & b
    }
  }
}

TEST(BuiltinApiTest, EventsAreRecordedAndWaitedOn) {
  using TileT = pto::Tile<TileType::Vec, uint16_t, 4, 16>;
  std::mt19937 rng(11);
  TileT a, b, d, x, y, tmp;
  Randomize(a, rng);
  Randomize(b, rng);
  const RecordEvent e0 = TAND(d, a, b);
  RecordEvent e1 = TXOR(x, d, b, tmp, e0);
  const RecordEvent e2 = TAND(y, x, d, e0, e1);
  EXPECT_EQ(e0.op, pto::Op::TAND);
  EXPECT_EQ(e1.op, pto::Op::TXOR);
  EXPECT_EQ(e2.target, pto::kTarget);
  EXPECT_STREQ(e1.algorithm, pto::Rules::kTxorAlgorithm);
  EXPECT_STREQ(e1.kernels, BestKernels().name);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 16; ++c) {
      const uint16_t and_ab = a(r, c) & b(r, c);
      ASSERT_EQ(y(r, c), static_cast<uint16_t>((and_ab ^ b(r, c)) & and_ab));
    }
  }
}

// The rules this binary was built under, as the service states them.
TEST(BuiltinApiTest, TargetRulesMatchTheService) {
  const Target target = pto::kTarget == pto::Target::A2A3 ? Target::kA2A3
                        : pto::kTarget == pto::Target::A5 ? Target::kA5
                                                          : Target::kHost;
  const Engine engine{EngineOptions{}};
  const Backend& backend = engine.backends().Get(target);
  EXPECT_EQ(pto::Rules::kName, TargetName(target));
  EXPECT_EQ(pto::Rules::kTxorUsesTmp, backend.UsesTmp(Opcode::kTxor));
  EXPECT_EQ(static_cast<uint32_t>(pto::Rules::kRowAlignmentBytes),
            backend.rules().row_alignment_bytes);
  // The host's description goes on to name its kernel set.
  for (const OpcodeSupport& support : backend.Supported()) {
    // The built-in API has the seeds' TAND and TXOR only.
    if (support.opcode != Opcode::kTand && support.opcode != Opcode::kTxor) {
      continue;
    }
    EXPECT_THAT(support.algorithm,
                ::testing::StartsWith(support.opcode == Opcode::kTand
                                          ? pto::Rules::kTandAlgorithm
                                          : pto::Rules::kTxorAlgorithm));
  }
}

// The same inputs through the built-in API and through the service's engine
// give the same bytes, tmp included, and both are what a scalar loop says:
// src0 ^ src1 in dst's valid region, zeros elsewhere; tmp OR(src0, src1)
// in the valid region on a2a3, untouched (zero) elsewhere and on the other
// targets.
TEST(BuiltinApiTest, MatchesTheService) {
  using TileT =
      pto::Tile<TileType::Vec, int8_t, 8, 64, BLayout::RowMajor, 7, 50>;
  std::mt19937 rng(12);
  TileT a, b, dst, tmp;
  Randomize(a, rng);
  Randomize(b, rng);
  TXOR(dst, a, b, tmp);

  const Target target = pto::kTarget == pto::Target::A2A3 ? Target::kA2A3
                        : pto::kTarget == pto::Target::A5 ? Target::kA5
                                                          : Target::kHost;
  JobSpec job;
  job.target = target;
  const auto add = [&](const char* name, const TileT& tile) {
    TileInput in;
    in.name = name;
    in.desc.dtype = DType::kInt8;
    in.desc.rows = 8;
    in.desc.cols = 64;
    in.desc.valid_rows = 7;
    in.desc.valid_cols = 50;
    in.encoding = Encoding::kData;
    in.data = absl::string_view(reinterpret_cast<const char*>(tile.data()),
                                Bytes(tile));
    job.tiles.push_back(in);
  };
  const TileT zero;
  add("a", a);
  add("b", b);
  add("t", zero);
  Instruction inst;
  inst.opcode = Opcode::kTxor;
  inst.dst = "d";
  inst.src0 = "a";
  inst.src1 = "b";
  inst.tmp = "t";
  job.instructions.push_back(inst);
  job.outputs = {"d", "t"};
  const absl::StatusOr<JobOutcome> outcome =
      Engine(EngineOptions{}).Execute(job);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(
      std::memcmp(outcome->outputs[0].tile.data(), dst.data(), Bytes(dst)), 0);
  EXPECT_EQ(
      std::memcmp(outcome->outputs[1].tile.data(), tmp.data(), Bytes(tmp)), 0);
  const auto* pa = reinterpret_cast<const int8_t*>(a.data());
  const auto* pb = reinterpret_cast<const int8_t*>(b.data());
  const auto* pd = reinterpret_cast<const int8_t*>(dst.data());
  const auto* pt = reinterpret_cast<const int8_t*>(tmp.data());
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 64; ++c) {
      const int i = r * 64 + c;
      const bool valid = r < 7 && c < 50;
      ASSERT_EQ(pd[i], valid ? static_cast<int8_t>(pa[i] ^ pb[i]) : 0)
          << r << "," << c;
      ASSERT_EQ(pt[i], valid && pto::Rules::kTxorUsesTmp
                           ? static_cast<int8_t>(pa[i] | pb[i])
                           : 0)
          << r << "," << c;
    }
  }
}

TEST(BuiltinApiDeathTest, ValidShapesMustAgree) {
  using Dynamic = pto::Tile<TileType::Vec, int16_t, 16, 16, BLayout::RowMajor,
                            DYNAMIC, DYNAMIC>;
  Dynamic dst(16, 16), a(8, 16), b(16, 16), tmp(16, 16);
  // The service's words (core/backends/backend.cc), its instruction
  // numbers and the tiles' names.
  EXPECT_DEATH(TAND(dst, a, b),
               "pto: instruction [0-9]+ \\(TAND on (host|a2a3|a5)\\): src0 "
               "valid shape 8x16 differs from dst valid shape 16x16");
  EXPECT_DEATH(TXOR(dst, b, a, tmp),
               "pto: instruction [0-9]+ \\(TXOR on (host|a2a3|a5)\\): src1 "
               "valid shape 8x16 differs from dst valid shape 16x16");
  EXPECT_DEATH(Dynamic(17, 4),
               "pto: Tile: tile \"t[0-9]+\": valid shape 17x4 does not fit "
               "the tile's 16x16");
}

// Only a target that computes through tmp checks it.
TEST(BuiltinApiDeathTest, TmpIsCheckedWhereItIsUsed) {
  using Dynamic = pto::Tile<TileType::Vec, int16_t, 16, 16, BLayout::RowMajor,
                            DYNAMIC, DYNAMIC>;
  Dynamic dst(16, 16), a(16, 16), b(16, 16), small_tmp(4, 4);
  if (pto::Rules::kTxorUsesTmp) {
    EXPECT_DEATH(TXOR(dst, a, b, small_tmp),
                 "pto: instruction [0-9]+ \\(TXOR on a2a3\\): tmp valid shape "
                 "4x4 differs from dst valid shape 16x16");
    EXPECT_DEATH(TXOR(dst, a, b, dst),
                 "pto: instruction [0-9]+ \\(TXOR on a2a3\\): tmp \"t[0-9]+\" "
                 "is also dst; tmp must be a tile of its own");
  } else {
    // Unused, tmp may be any tile, dst itself included; the result is
    // still src0 ^ src1.
    std::mt19937 rng(5);
    Randomize(a, rng);
    Randomize(b, rng);
    const auto expect_xor = [&] {
      const auto* pa = reinterpret_cast<const int16_t*>(a.data());
      const auto* pb = reinterpret_cast<const int16_t*>(b.data());
      const auto* pd = reinterpret_cast<const int16_t*>(dst.data());
      for (int i = 0; i < 16 * 16; ++i) {
        ASSERT_EQ(pd[i], static_cast<int16_t>(pa[i] ^ pb[i]))
            << "element " << i;
      }
    };
    TXOR(dst, a, b, small_tmp);
    expect_xor();
    TXOR(dst, a, b, dst);
    expect_xor();
  }
}

}  // namespace
}  // namespace ptoserve
