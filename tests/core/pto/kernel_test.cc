// Kernels written as PTO-ISA's own tests write them (global memory through
// GlobalTensor, tiles placed with TASSIGN, TLOAD, the instruction, TSTORE,
// the AICORE/__gm__ qualifiers, NUM_* shapes), compiled unchanged against
// ptoserve's headers for the target this binary is built for. Every element
// of every result is compared with a scalar loop, the tiles' padding and
// the global memory around what was stored included.
#include <cstdint>
#include <cstring>
#include <pto/common/constants.hpp>
#include <pto/pto-inst.hpp>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/pto/refusals.h"

using namespace pto;

namespace kernels {

// out = x & y over a kRows x kCols matrix, three tiles side by side in the
// unified buffer from byte 0.
template <typename T, int kRows, int kCols>
AICORE void AndKernel(__gm__ T __out__* out, __gm__ T __in__* x,
                      __gm__ T __in__* y) {
  using GlobalShape = Shape<1, 1, 1, kRows, kCols>;
  using GlobalStride = Stride<1, 1, 1, kCols, 1>;
  using Matrix = GlobalTensor<T, GlobalShape, GlobalStride>;
  using TileT =
      Tile<TileType::Vec, T, kRows, kCols, BLayout::RowMajor, DYNAMIC, DYNAMIC>;
  TileT x_tile(kRows, kCols);
  TileT y_tile(kRows, kCols);
  TileT out_tile(kRows, kCols);
  Matrix x_matrix(x);
  Matrix y_matrix(y);
  Matrix out_matrix(out);
  constexpr int kTileBytes = kRows * kCols * sizeof(typename TileT::DType);
  TASSIGN(x_tile, 0);
  TASSIGN(y_tile, kTileBytes);
  TASSIGN(out_tile, 2 * kTileBytes);
  TLOAD(x_tile, x_matrix);
  TLOAD(y_tile, y_matrix);
  TAND(out_tile, x_tile, y_tile);
  TSTORE(out_matrix, out_tile);
}

// out = x ^ y, through a fourth tile where the target needs one.
template <typename T, int kRows, int kCols>
AICORE void XorKernel(__gm__ T __out__* out, __gm__ T __in__* x,
                      __gm__ T __in__* y) {
  using GlobalShape = Shape<1, 1, 1, kRows, kCols>;
  using GlobalStride = Stride<1, 1, 1, kCols, 1>;
  using Matrix = GlobalTensor<T, GlobalShape, GlobalStride>;
  using TileT =
      Tile<TileType::Vec, T, kRows, kCols, BLayout::RowMajor, DYNAMIC, DYNAMIC>;
  TileT x_tile(kRows, kCols);
  TileT y_tile(kRows, kCols);
  TileT out_tile(kRows, kCols);
  TileT scratch(kRows, kCols);
  Matrix x_matrix(x);
  Matrix y_matrix(y);
  Matrix out_matrix(out);
  constexpr int kTileBytes = kRows * kCols * sizeof(typename TileT::DType);
  TASSIGN(x_tile, 0);
  TASSIGN(y_tile, kTileBytes);
  TASSIGN(out_tile, 2 * kTileBytes);
  TASSIGN(scratch, 3 * kTileBytes);
  TLOAD(x_tile, x_matrix);
  TLOAD(y_tile, y_matrix);
  TXOR(out_tile, x_tile, y_tile, scratch);
  TSTORE(out_matrix, out_tile);
}

// A rows x cols window at (top, left) of a matrix `pitch` elements wide:
// dynamic shapes and a row stride wider than the window, tiles of 16 x
// kCols whose valid region is the window, and the result written over x's
// own tile (dst the same place as src0).
template <typename T, int kCols>
AICORE void WindowAndKernel(__gm__ T __out__* out, __gm__ T __in__* x,
                            __gm__ T __in__* y, int rows, int cols, int pitch) {
  using GlobalShape = Shape<1, 1, 1, DYNAMIC, DYNAMIC>;
  using GlobalStride = Stride<1, 1, 1, DYNAMIC, 1>;
  using Window = GlobalTensor<T, GlobalShape, GlobalStride>;
  using TileT = Tile<TileType::Vec, T, NUM_16, kCols, BLayout::RowMajor,
                     DYNAMIC, DYNAMIC>;
  TileT x_tile;
  TileT y_tile;
  TileT result;
  x_tile.SetValidShape(rows, cols);
  y_tile.SetValidShape(rows, cols);
  result.SetValidShape(rows, cols);
  const GlobalShape shape(rows, cols);
  const GlobalStride stride(pitch);
  Window x_window(x, shape, stride);
  Window y_window(y, shape, stride);
  Window out_window(out, shape, stride);
  TASSIGN(x_tile, 0x0);
  TASSIGN(y_tile, 0x2000);
  TASSIGN(result, 0x0);  // x_tile's bytes: computed in place
  TLOAD(x_tile, x_window);
  TLOAD(y_tile, y_window);
  TAND(result, x_tile, y_tile);
  TSTORE(out_window, result);
}

// A launcher as PTO-ISA's tests write one: a half tile is the kernel's
// where the host's type is aclFloat16 (never here: TAND takes integers).
template <typename T, int kRows, int kCols>
void LaunchAnd(T* out, T* x, T* y, void* stream) {
  if constexpr (std::is_same_v<T, aclFloat16>) {
    AndKernel<half, kRows, kCols>((half*)(out), (half*)(x), (half*)(y));
  } else {
    AndKernel<T, kRows, kCols>(out, x, y);
  }
}

}  // namespace kernels

namespace ptoserve {
namespace {

template <typename T>
std::vector<T> RandomMatrix(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> m(n);
  for (T& e : m) e = static_cast<T>(rng());
  return m;
}

// The bytes of a tile bound at `address` of this target's unified buffer.
template <typename T>
const T* BufferAt(uint64_t address) {
  const ptoserve::Target target = static_cast<ptoserve::Target>(pto::kTarget);
  return reinterpret_cast<const T*>(builtin::UnifiedBuffer(target) + address);
}

template <typename T>
class KernelTest : public ::testing::Test {
 protected:
  void SetUp() override { ResetKernel(); }
};
using BitwiseTypes =
    ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;
TYPED_TEST_SUITE(KernelTest, BitwiseTypes);

// One shape of each instruction per type, every target's rows aligned
// (64 columns are 64 bytes or more); PTO-ISA's own test shapes below.
TYPED_TEST(KernelTest, AndAndXorOfEveryType) {
  using T = TypeParam;
  constexpr int kRows = NUM_16, kCols = NUM_64, kN = kRows * kCols;
  const std::vector<T> x = RandomMatrix<T>(kN, 1), y = RandomMatrix<T>(kN, 2);
  std::vector<T> out(kN);
  kernels::AndKernel<T, kRows, kCols>(out.data(), const_cast<T*>(x.data()),
                                      const_cast<T*>(y.data()));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], static_cast<T>(x[i] & y[i])) << "TAND element " << i;
  }
  ResetKernel();
  kernels::XorKernel<T, kRows, kCols>(out.data(), const_cast<T*>(x.data()),
                                      const_cast<T*>(y.data()));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], static_cast<T>(x[i] ^ y[i])) << "TXOR element " << i;
  }
  // The tiles where the kernel bound them: x, y, x ^ y, and the fourth
  // (scratch) is OR(x, y) where the target computes through it, zeros
  // where it does not.
  constexpr uint64_t kTileBytes = kN * sizeof(T);
  const T* scratch = BufferAt<T>(3 * kTileBytes);
  const T* result = BufferAt<T>(2 * kTileBytes);
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(result[i], static_cast<T>(x[i] ^ y[i])) << i;
    ASSERT_EQ(scratch[i],
              pto::Rules::kTxorUsesTmp ? static_cast<T>(x[i] | y[i]) : T(0))
        << "scratch element " << i << " on " << pto::Rules::kName;
  }
}

template <typename T, int kRows, int kCols>
void ExpectKernelsAgree(uint32_t seed) {
  constexpr int kN = kRows * kCols;
  const std::vector<T> x = RandomMatrix<T>(kN, seed),
                       y = RandomMatrix<T>(kN, seed + 1);
  std::vector<T> out(kN);
  ResetKernel();
  kernels::AndKernel<T, kRows, kCols>(out.data(), const_cast<T*>(x.data()),
                                      const_cast<T*>(y.data()));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], static_cast<T>(x[i] & y[i]))
        << kRows << "x" << kCols << " TAND element " << i;
  }
  ResetKernel();
  kernels::XorKernel<T, kRows, kCols>(out.data(), const_cast<T*>(x.data()),
                                      const_cast<T*>(y.data()));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], static_cast<T>(x[i] ^ y[i]))
        << kRows << "x" << kCols << " TXOR element " << i;
  }
}

// Through a launcher naming half and aclFloat16; the events carry the
// instructions' numbers, as a job's events do.
TEST(KernelShapesTest, LauncherAndEventNumbers) {
  using T = int32_t;
  const std::vector<T> x = RandomMatrix<T>(NUM_8 * NUM_64, 40),
                       y = RandomMatrix<T>(NUM_8 * NUM_64, 41);
  std::vector<T> out(NUM_8 * NUM_64);
  ResetKernel();
  kernels::LaunchAnd<T, NUM_8, NUM_64>(out.data(), const_cast<T*>(x.data()),
                                       const_cast<T*>(y.data()), nullptr);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i], x[i] & y[i]) << i;
  }
  using TileT = Tile<TileType::Vec, T, NUM_8, NUM_64>;
  TileT a, b, c, tmp;
  const RecordEvent first = TAND(c, a, b);  // the kernel's was number 0
  const RecordEvent second = TXOR(c, a, b, tmp, first);
  EXPECT_EQ(first.index, 1u);
  EXPECT_EQ(second.index, 2u);
  ResetKernel();
  EXPECT_EQ(TAND(c, a, b).index, 0u);
}

// The shapes PTO-ISA's TAND and TXOR tests instantiate.
TEST(KernelShapesTest, PtoIsaTestShapes) {
  ExpectKernelsAgree<int16_t, NUM_64, NUM_64>(10);
  ExpectKernelsAgree<int32_t, NUM_16, NUM_256>(11);
  ExpectKernelsAgree<int32_t, NUM_32, NUM_32>(12);
  ExpectKernelsAgree<int32_t, NUM_77, NUM_96>(13);
  ExpectKernelsAgree<int32_t, NUM_8, NUM_64>(14);
  ExpectKernelsAgree<uint32_t, NUM_64, NUM_64>(15);
  ExpectKernelsAgree<uint32_t, NUM_16, NUM_32>(16);
  ExpectKernelsAgree<uint32_t, NUM_12, NUM_128>(17);
  ExpectKernelsAgree<uint32_t, NUM_4, NUM_64>(18);
}

// A window of a wider matrix: only the window is read and written; the
// tile's padding reads as zeros, as TLOAD leaves it; dst computed over
// src0's own bytes.
TEST(KernelShapesTest, AWindowWithPaddingAndInPlaceDst) {
  using T = uint16_t;
  constexpr int kPitch = 40, kHeight = 20, kCols = NUM_32;
  constexpr int kTop = 3, kLeft = 5, kRows = 9, kWidth = 21;
  const std::vector<T> x = RandomMatrix<T>(kPitch * kHeight, 30),
                       y = RandomMatrix<T>(kPitch * kHeight, 31);
  const T kUntouched = 0xBEEF;
  std::vector<T> out(kPitch * kHeight, kUntouched);
  const int at = kTop * kPitch + kLeft;
  ResetKernel();
  kernels::WindowAndKernel<T, kCols>(
      out.data() + at, const_cast<T*>(x.data()) + at,
      const_cast<T*>(y.data()) + at, kRows, kWidth, kPitch);
  for (int r = 0; r < kHeight; ++r) {
    for (int c = 0; c < kPitch; ++c) {
      const bool inside =
          r >= kTop && r < kTop + kRows && c >= kLeft && c < kLeft + kWidth;
      const int i = r * kPitch + c;
      ASSERT_EQ(out[i], inside ? static_cast<T>(x[i] & y[i]) : kUntouched)
          << "global element (" << r << ", " << c << ")";
    }
  }
  // The result tile at 0x0: the window's AND, zeros around it.
  const T* tile = BufferAt<T>(0);
  for (int r = 0; r < NUM_16; ++r) {
    for (int c = 0; c < kCols; ++c) {
      const bool valid = r < kRows && c < kWidth;
      const int g = (kTop + r) * kPitch + kLeft + c;
      ASSERT_EQ(tile[r * kCols + c], valid ? static_cast<T>(x[g] & y[g]) : 0)
          << "tile element (" << r << ", " << c << ")";
    }
  }
}

// TLOAD writes the whole tile: the valid region from global memory, the
// padding as the tile's PadValue says (zero by default, the type's largest
// for Max), whatever the tile's bytes held before.
TEST(KernelShapesTest, TloadWritesThePadding) {
  using Zeroed = Tile<TileType::Vec, int16_t, NUM_4, NUM_16, BLayout::RowMajor,
                      DYNAMIC, DYNAMIC>;
  using Maxed = Tile<TileType::Vec, int16_t, NUM_4, NUM_16, BLayout::RowMajor,
                     DYNAMIC, DYNAMIC, SLayout::NoneBox, 512, PadValue::Max>;
  using Window = GlobalTensor<int16_t, Shape<1, 1, 1, DYNAMIC, DYNAMIC>,
                              Stride<1, 1, 1, DYNAMIC, 1>>;
  ResetKernel();
  std::vector<int16_t> global(NUM_4 * NUM_16);
  for (size_t i = 0; i < global.size(); ++i) {
    global[i] = static_cast<int16_t>(i + 1);
  }
  Window window(global.data(), Shape<1, 1, 1, DYNAMIC, DYNAMIC>(3, 10),
                Stride<1, 1, 1, DYNAMIC, 1>(NUM_16));
  Zeroed zeroed(3, 10);
  Maxed maxed(3, 10);
  for (int i = 0; i < NUM_4 * NUM_16; ++i) {
    zeroed.data()[i] = maxed.data()[i] = -7;  // what the bytes held
  }
  TLOAD(zeroed, window);
  TLOAD(maxed, window);
  for (int r = 0; r < NUM_4; ++r) {
    for (int c = 0; c < NUM_16; ++c) {
      const bool valid = r < 3 && c < 10;
      const int16_t loaded = global[r * NUM_16 + c];
      ASSERT_EQ(zeroed(r, c), valid ? loaded : 0) << r << ", " << c;
      ASSERT_EQ(maxed(r, c), valid ? loaded : int16_t{32767}) << r << ", " << c;
    }
  }
  // A tile whose valid shape is not the GlobalTensor's is refused.
  Zeroed other(2, 10);
  EXPECT_EQ(refusals::RefusalOf([&] { TLOAD(other, window); }),
            "TLOAD: tile \"t2\": valid shape 2x10 differs from the "
            "GlobalTensor's 3x10 (shape dimensions 0-3 by 4)");
}

// Refusals come in the service's words, through the failure handler.
using refusals::RefusalOf;

TEST(KernelRefusalTest, AddressesAreCheckedAsTheServiceChecksThem) {
  using TileT = Tile<TileType::Vec, int32_t, NUM_16, NUM_16>;
  ResetKernel();
  TileT a;
  a.SetName("a");
  EXPECT_EQ(RefusalOf([&] { TASSIGN(a, 0x10); }),
            "tile \"a\": address 0x10 is not 32-byte aligned");
  const uint64_t end =
      builtin::UnifiedBufferBytes(static_cast<ptoserve::Target>(pto::kTarget));
  const std::string past = RefusalOf([&] { TASSIGN(a, end - 512); });
  EXPECT_THAT(past, ::testing::HasSubstr("tile \"a\": 16x16 int32 at ["));
  EXPECT_THAT(past,
              ::testing::HasSubstr(std::string("does not fit in the ") +
                                   pto::Rules::kName + " unified buffer of " +
                                   std::to_string(end) + " bytes"));
  EXPECT_FALSE(a.IsBound());
  EXPECT_EQ(RefusalOf([&] { TASSIGN(a, end - 1024); }), "");
  EXPECT_TRUE(a.IsBound());
}

// On a2a3 TXOR's operands may not overlap in manual mode; elsewhere the
// same kernel runs, and its dst is computed aside where it overlaps a
// source, so that the sources are read before dst is written.
TEST(KernelRefusalTest, OverlappingTxorOperands) {
  using TileT = Tile<TileType::Vec, uint8_t, NUM_4, NUM_32>;
  ResetKernel();
  TileT d, a, b, tmp;
  d.SetName("d");
  a.SetName("a");
  b.SetName("b");
  tmp.SetName("tmp");
  TASSIGN(a, 0x0);
  TASSIGN(d, 0x40);  // over a's last two rows and b's first two
  TASSIGN(b, 0x80);
  TASSIGN(tmp, 0x100);
  // a's and b's bytes (d's lie among them).
  uint8_t* buffer =
      builtin::UnifiedBuffer(static_cast<ptoserve::Target>(pto::kTarget));
  std::vector<uint8_t> before(0x100);
  for (int i = 0; i < 0x100; ++i) {
    before[i] = buffer[i] = static_cast<uint8_t>(i * 7);
  }
  const std::string refused = RefusalOf([&] { TXOR(d, a, b, tmp); });
  if (pto::Rules::kTxorUsesTmp) {
    EXPECT_EQ(refused,
              "instruction 0 (TXOR on a2a3): dst \"d\" [0x40, 0xc0) overlaps "
              "src0 \"a\" [0x0, 0x80); in manual mode the regions of dst, "
              "src0, src1 and tmp must not overlap");
    return;
  }
  EXPECT_EQ(refused, "");
  // d = a ^ b, from a's and b's bytes as they were before.
  for (int i = 0; i < 0x80; ++i) {
    ASSERT_EQ(reinterpret_cast<const uint8_t*>(d.data())[i],
              static_cast<uint8_t>(before[i] ^ before[0x80 + i]))
        << i;
  }
}

}  // namespace
}  // namespace ptoserve
