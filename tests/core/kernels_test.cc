// The bitwise kernels against a scalar loop over typed elements, for every
// kernel set this CPU runs and every element type TAND/TXOR accept.
#include "core/kernels.h"

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/core/test_util.h"

namespace ptoserve {
namespace {

using test::DTypeOf;
using test::ForEachBitwiseType;
using test::Matrix;
using test::RandomMatrix;
using test::Reference;
using test::ReferenceInvert;
using test::SameElements;
using test::Sentinel;

enum class KernelChoice { kPortable, kAvx2, kAvx512, kBest };

std::string KernelChoiceName(
    const ::testing::TestParamInfo<KernelChoice>& info) {
  switch (info.param) {
    case KernelChoice::kPortable:
      return "Portable";
    case KernelChoice::kAvx2:
      return "Avx2";
    case KernelChoice::kAvx512:
      return "Avx512";
    case KernelChoice::kBest:
      return "Best";
  }
  return "?";
}

constexpr BitwiseOp kOps[] = {BitwiseOp::kAnd, BitwiseOp::kOr, BitwiseOp::kXor};

const char* OpName(BitwiseOp op) {
  switch (op) {
    case BitwiseOp::kAnd:
      return "and";
    case BitwiseOp::kOr:
      return "or";
    case BitwiseOp::kXor:
      return "xor";
  }
  return "?";
}

// Region widths in elements: 1, odd widths, and widths whose byte length
// (x1, x2, x4) lands on both sides of the 8-byte word, the 32-byte vector
// and the 128-byte four-vector step.
constexpr uint32_t kValidCols[] = {1,  2,   3,   7,   8,   9,   15,
                                   16, 17,  31,  32,  33,  63,  64,
                                   65, 127, 128, 129, 255, 256, 257};
constexpr uint32_t kValidRows[] = {1, 2, 3, 5, 17};

// Extra physical columns of each operand beyond the region. Zero everywhere
// is the contiguous case the kernels flatten into one long row; any padding
// gives that operand its own row stride.
struct Padding {
  uint32_t a, b, dst;
};
constexpr Padding kPaddings[] = {
    {0, 0, 0},  // contiguous
    {1, 7, 3},  // three different strides
    {0, 2, 0},  // only src1 strided: must not be flattened
    {0, 0, 1},  // only dst strided
};

template <typename T>
Region RegionOf(uint32_t valid_rows, uint32_t valid_cols) {
  return Region{valid_rows, size_t{valid_cols} * sizeof(T)};
}
template <typename T>
ConstPlane ConstPlaneOf(const Matrix<T>& m) {
  return ConstPlane{m.bytes(), m.row_bytes()};
}
template <typename T>
Plane PlaneOf(Matrix<T>* m) {
  return Plane{m->bytes(), m->row_bytes()};
}

class KernelsTest : public ::testing::TestWithParam<KernelChoice> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case KernelChoice::kPortable:
        kernels_ = &PortableKernels();
        break;
      case KernelChoice::kAvx2:
        kernels_ = Avx2Kernels();
        break;
      case KernelChoice::kAvx512:
        kernels_ = Avx512Kernels();
        break;
      case KernelChoice::kBest:
        kernels_ = &BestKernels();
        break;
    }
    if (kernels_ == nullptr) {
      // A CI whose machines have them says so, and then a skip fails.
      if (Required(KernelChoiceName(
              ::testing::TestParamInfo<KernelChoice>(GetParam(), 0)))) {
        FAIL() << "$PTOSERVE_REQUIRE_KERNELS requires this kernel set and the "
                  "CPU lacks it";
      }
      GTEST_SKIP()
          << "this CPU lacks the instructions (tools/test.sh lists skips)";
    }
  }

  // Whether $PTOSERVE_REQUIRE_KERNELS (comma-separated, e.g. "avx2,avx512")
  // names the kernel set `name` ("Avx2", "Avx512").
  static bool Required(const std::string& name) {
    const char* env = std::getenv("PTOSERVE_REQUIRE_KERNELS");
    if (env == nullptr) return false;
    for (absl::string_view wanted :
         absl::StrSplit(env, ',', absl::SkipEmpty())) {
      if (absl::EqualsIgnoreCase(wanted, name)) return true;
    }
    return false;
  }

  // Runs a op b over a valid_rows x valid_cols region of operands padded as
  // `pad`, each with one extra physical row below the region, and compares
  // every element of all three operands with the scalar reference: the
  // region computed, dst's sentinel padding and extra row untouched, and
  // the sources unchanged.
  template <typename T>
  void CheckBinary(BitwiseOp op, uint32_t valid_rows, uint32_t valid_cols,
                   Padding pad) {
    SCOPED_TRACE(absl::StrFormat("%s %s %ux%u, padding a+%u b+%u dst+%u",
                                 OpName(op), DTypeName(DTypeOf<T>()),
                                 valid_rows, valid_cols, pad.a, pad.b,
                                 pad.dst));
    const auto a = RandomMatrix<T>(valid_rows + 1, valid_cols + pad.a, &rng_);
    const auto b = RandomMatrix<T>(valid_rows + 1, valid_cols + pad.b, &rng_);
    Matrix<T> dst(valid_rows + 1, valid_cols + pad.dst, Sentinel<T>());
    const Matrix<T> want = Reference(op, a, b, dst, valid_rows, valid_cols);
    Matrix<T> a_after = a;
    Matrix<T> b_after = b;

    kernels_->binary(op, RegionOf<T>(valid_rows, valid_cols),
                     ConstPlaneOf(a_after), ConstPlaneOf(b_after),
                     PlaneOf(&dst));

    EXPECT_TRUE(SameElements(want, dst));
    EXPECT_TRUE(SameElements(a, a_after));
    EXPECT_TRUE(SameElements(b, b_after));
  }

  template <typename T>
  void CheckInvert(uint32_t valid_rows, uint32_t valid_cols, Padding pad) {
    SCOPED_TRACE(absl::StrFormat("invert %s %ux%u, padding src+%u dst+%u",
                                 DTypeName(DTypeOf<T>()), valid_rows,
                                 valid_cols, pad.a, pad.dst));
    const auto src = RandomMatrix<T>(valid_rows + 1, valid_cols + pad.a, &rng_);
    Matrix<T> dst(valid_rows + 1, valid_cols + pad.dst, Sentinel<T>());
    const Matrix<T> want = ReferenceInvert(src, dst, valid_rows, valid_cols);
    Matrix<T> src_after = src;

    kernels_->invert(RegionOf<T>(valid_rows, valid_cols),
                     ConstPlaneOf(src_after), PlaneOf(&dst));

    EXPECT_TRUE(SameElements(want, dst));
    EXPECT_TRUE(SameElements(src, src_after));
  }

  const KernelSet* kernels_ = nullptr;
  std::mt19937 rng_{20240611};
};

TEST_P(KernelsTest, BinaryOpsMatchScalarReference) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (BitwiseOp op : kOps) {
      for (uint32_t rows : kValidRows) {
        for (uint32_t cols : kValidCols) {
          for (Padding pad : kPaddings) CheckBinary<T>(op, rows, cols, pad);
        }
      }
    }
  });
}

TEST_P(KernelsTest, InvertMatchesScalarReference) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (uint32_t rows : kValidRows) {
      for (uint32_t cols : kValidCols) {
        for (Padding pad : kPaddings) CheckInvert<T>(rows, cols, pad);
      }
    }
  });
}

// Tall and thin, and one long row well past every vector step.
TEST_P(KernelsTest, SingleColumnAndSingleRowRegions) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (BitwiseOp op : kOps) {
      CheckBinary<T>(op, 300, 1, Padding{0, 0, 0});
      CheckBinary<T>(op, 300, 1, Padding{3, 1, 2});
      CheckBinary<T>(op, 1, 1000, Padding{0, 0, 0});
      CheckBinary<T>(op, 1, 1000, Padding{5, 0, 9});
    }
    CheckInvert<T>(300, 1, Padding{3, 0, 2});
    CheckInvert<T>(1, 1000, Padding{0, 0, 0});
  });
}

// dst is src0 (then src1), as in-place TAND and the a2a3 TXOR steps use.
TEST_P(KernelsTest, InPlaceDstIsASource) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (BitwiseOp op : kOps) {
      for (uint32_t cols : {7u, 33u, 127u, 160u}) {
        SCOPED_TRACE(absl::StrFormat("%s %s 5x%u", OpName(op),
                                     DTypeName(DTypeOf<T>()), cols));
        const auto a = RandomMatrix<T>(6, cols + 2, &rng_);
        const auto b = RandomMatrix<T>(6, cols, &rng_);
        const Matrix<T> want_a = Reference(op, a, b, a, 5, cols);
        const Matrix<T> want_b = Reference(op, a, b, b, 5, cols);

        Matrix<T> in_a = a;
        kernels_->binary(op, RegionOf<T>(5, cols), ConstPlaneOf(in_a),
                         ConstPlaneOf(b), PlaneOf(&in_a));
        EXPECT_TRUE(SameElements(want_a, in_a));

        Matrix<T> in_b = b;
        kernels_->binary(op, RegionOf<T>(5, cols), ConstPlaneOf(a),
                         ConstPlaneOf(in_b), PlaneOf(&in_b));
        EXPECT_TRUE(SameElements(want_b, in_b));
      }
    }
  });
}

TEST_P(KernelsTest, InPlaceInvert) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (uint32_t cols : {1u, 33u, 129u}) {
      SCOPED_TRACE(absl::StrFormat("%s 4x%u", DTypeName(DTypeOf<T>()), cols));
      Matrix<T> m = RandomMatrix<T>(5, cols + 1, &rng_);
      const Matrix<T> want = ReferenceInvert(m, m, 4, cols);
      kernels_->invert(RegionOf<T>(4, cols), ConstPlaneOf(m), PlaneOf(&m));
      EXPECT_TRUE(SameElements(want, m));
    }
  });
}

// a == b: AND and OR copy the operand, XOR clears the region.
TEST_P(KernelsTest, SameOperandTwice) {
  ForEachBitwiseType([&](auto element) {
    using T = decltype(element);
    for (uint32_t cols : {7u, 33u, 127u, 160u}) {
      SCOPED_TRACE(absl::StrFormat("%s 3x%u", DTypeName(DTypeOf<T>()), cols));
      const auto a = RandomMatrix<T>(4, cols + 1, &rng_);
      for (BitwiseOp op : kOps) {
        Matrix<T> dst(4, cols, Sentinel<T>());
        Matrix<T> want = dst;
        for (uint32_t i = 0; i < 3; ++i) {
          for (uint32_t j = 0; j < cols; ++j) {
            want.at(i, j) = op == BitwiseOp::kXor ? T{0} : a.at(i, j);
          }
        }
        kernels_->binary(op, RegionOf<T>(3, cols), ConstPlaneOf(a),
                         ConstPlaneOf(a), PlaneOf(&dst));
        EXPECT_TRUE(SameElements(want, dst)) << OpName(op);
      }
    }
  });
}

// Hand-computed bytes, so that the reference itself is checked once.
TEST_P(KernelsTest, HandComputedBytes) {
  Matrix<uint8_t> a(1, 4);
  Matrix<uint8_t> b(1, 4);
  a.elements = {0xF0, 0xFF, 0x00, 0xA5};
  b.elements = {0x3C, 0x0F, 0x00, 0x5A};
  Matrix<uint8_t> dst(1, 4);
  kernels_->binary(BitwiseOp::kAnd, RegionOf<uint8_t>(1, 4), ConstPlaneOf(a),
                   ConstPlaneOf(b), PlaneOf(&dst));
  EXPECT_EQ(dst.elements, (std::vector<uint8_t>{0x30, 0x0F, 0x00, 0x00}));
  kernels_->binary(BitwiseOp::kOr, RegionOf<uint8_t>(1, 4), ConstPlaneOf(a),
                   ConstPlaneOf(b), PlaneOf(&dst));
  EXPECT_EQ(dst.elements, (std::vector<uint8_t>{0xFC, 0xFF, 0x00, 0xFF}));
  kernels_->binary(BitwiseOp::kXor, RegionOf<uint8_t>(1, 4), ConstPlaneOf(a),
                   ConstPlaneOf(b), PlaneOf(&dst));
  EXPECT_EQ(dst.elements, (std::vector<uint8_t>{0xCC, 0xF0, 0x00, 0xFF}));
  kernels_->invert(RegionOf<uint8_t>(1, 4), ConstPlaneOf(a), PlaneOf(&dst));
  EXPECT_EQ(dst.elements, (std::vector<uint8_t>{0x0F, 0x00, 0xFF, 0x5A}));
}

// Regions of 8 MiB and more take the streaming-store path: rows whose dst
// starts off a 64-byte boundary, tails, and padding must all come out right.
TEST_P(KernelsTest, LargeStridedRegion) {
  CheckBinary<uint8_t>(BitwiseOp::kXor, 2100, 4099, Padding{3, 1, 5});
  CheckBinary<uint32_t>(BitwiseOp::kAnd, 1030, 2049, Padding{0, 0, 0});
}

INSTANTIATE_TEST_SUITE_P(AllKernelSets, KernelsTest,
                         ::testing::Values(KernelChoice::kPortable,
                                           KernelChoice::kAvx2,
                                           KernelChoice::kAvx512,
                                           KernelChoice::kBest),
                         KernelChoiceName);

TEST(KernelSetsTest, NamesAndChoice) {
  EXPECT_STREQ(PortableKernels().name, "portable");
  if (Avx2Kernels() != nullptr) {
    EXPECT_STREQ(Avx2Kernels()->name, "avx2");
  }
  if (Avx512Kernels() != nullptr) {
    EXPECT_STREQ(Avx512Kernels()->name, "avx512");
    EXPECT_EQ(&BestKernels(), Avx512Kernels());
  } else if (Avx2Kernels() != nullptr) {
    EXPECT_EQ(&BestKernels(), Avx2Kernels());
  } else {
    EXPECT_EQ(&BestKernels(), &PortableKernels());
  }
}

}  // namespace
}  // namespace ptoserve
