// Helpers shared by the core unit tests: a test-side picture of a tile
// (Matrix), the scalar reference (tests/core/reference.h) applied to it, a
// builder for jobs, and a status matcher.
#ifndef PTOSERVE_TESTS_CORE_TEST_UTIL_H_
#define PTOSERVE_TESTS_CORE_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/engine.h"
#include "core/kernels.h"
#include "core/status_macros.h"
#include "core/tile.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/reference.h"

namespace ptoserve {
namespace test {

// The element types TAND and TXOR accept, for typed tests.
using BitwiseTypes =
    ::testing::Types<int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t>;

// Calls f(T{}) once for each type of BitwiseTypes.
template <typename F>
void ForEachBitwiseType(F&& f) {
  f(int8_t{});
  f(uint8_t{});
  f(int16_t{});
  f(uint16_t{});
  f(int32_t{});
  f(uint32_t{});
}

// The targets, in Target order.
inline constexpr Target kAllTargets[] = {Target::kHost, Target::kA2A3,
                                         Target::kA5};

// A row-major matrix of T with a physical shape: the test's own picture of
// a tile's elements, independent of core::Tile.
template <typename T>
struct Matrix {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<T> elements;

  Matrix() = default;
  Matrix(uint32_t rows, uint32_t cols, T fill = T{})
      : rows(rows), cols(cols), elements(size_t{rows} * cols, fill) {}

  T& at(uint32_t r, uint32_t c) { return elements[size_t{r} * cols + c]; }
  const T& at(uint32_t r, uint32_t c) const {
    return elements[size_t{r} * cols + c];
  }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(elements.data()); }
  const uint8_t* bytes() const {
    return reinterpret_cast<const uint8_t*>(elements.data());
  }
  size_t row_bytes() const { return size_t{cols} * sizeof(T); }
  // The elements as a tile's raw little-endian data.
  std::string ToData() const {
    return std::string(reinterpret_cast<const char*>(bytes()),
                       elements.size() * sizeof(T));
  }
  // The elements as a tile's values.
  std::vector<double> ToValues() const {
    return std::vector<double>(elements.begin(), elements.end());
  }
};

// A byte pattern that random data is unlikely to produce by accident.
template <typename T>
T Sentinel() {
  return static_cast<T>(0xA5C3A5C3u);
}

template <typename T>
Matrix<T> RandomMatrix(uint32_t rows, uint32_t cols, std::mt19937* rng) {
  Matrix<T> m(rows, cols);
  for (T& e : m.elements) e = static_cast<T>((*rng)());
  return m;
}

// The elements of `tile`, which must hold T.
template <typename T>
Matrix<T> ToMatrix(const Tile& tile) {
  EXPECT_EQ(tile.desc().dtype, DTypeOf<T>());
  Matrix<T> m(tile.desc().rows, tile.desc().cols);
  std::memcpy(m.bytes(), tile.data(), m.elements.size() * sizeof(T));
  return m;
}

// `dst` with each element (i, j) of the top-left valid_rows x valid_cols
// region replaced by a[i][j] op b[i][j]; every other element kept.
template <typename T>
Matrix<T> Reference(BitwiseOp op, const Matrix<T>& a, const Matrix<T>& b,
                    Matrix<T> dst, uint32_t valid_rows, uint32_t valid_cols) {
  for (uint32_t i = 0; i < valid_rows; ++i) {
    for (uint32_t j = 0; j < valid_cols; ++j) {
      dst.at(i, j) = ScalarOp(op, a.at(i, j), b.at(i, j));
    }
  }
  return dst;
}

// `dst` with each element of the region replaced by ~src[i][j].
template <typename T>
Matrix<T> ReferenceInvert(const Matrix<T>& src, Matrix<T> dst,
                          uint32_t valid_rows, uint32_t valid_cols) {
  for (uint32_t i = 0; i < valid_rows; ++i) {
    for (uint32_t j = 0; j < valid_cols; ++j) {
      dst.at(i, j) = static_cast<T>(~src.at(i, j));
    }
  }
  return dst;
}

// Success if both have the same shape and elements; else names the shapes
// or the first few elements that differ.
template <typename T>
::testing::AssertionResult SameElements(const Matrix<T>& expected,
                                        const Matrix<T>& actual) {
  if (expected.rows != actual.rows || expected.cols != actual.cols) {
    return ::testing::AssertionFailure()
           << "shape " << actual.rows << "x" << actual.cols << ", expected "
           << expected.rows << "x" << expected.cols;
  }
  constexpr int kMaxReported = 5;
  int mismatches = 0;
  auto failure = ::testing::AssertionFailure();
  for (uint32_t i = 0; i < expected.rows; ++i) {
    for (uint32_t j = 0; j < expected.cols; ++j) {
      if (expected.at(i, j) == actual.at(i, j)) continue;
      if (mismatches++ < kMaxReported) {
        // Unary + prints 8-bit elements as numbers, not characters.
        failure << "element (" << i << ", " << j << ") is " << +actual.at(i, j)
                << ", expected " << +expected.at(i, j) << "; ";
      }
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return failure << mismatches << " of " << expected.elements.size()
                 << " elements differ";
}

// Builds a JobSpec and owns the element storage its tiles borrow.
class JobBuilder {
 public:
  explicit JobBuilder(Target target, Mode mode = Mode::kAuto);
  JobBuilder(const JobBuilder&) = delete;
  JobBuilder& operator=(const JobBuilder&) = delete;

  // Declares a tile without elements: it starts zero-filled.
  void AddTile(std::string name, const TileDesc& desc);
  // Declares a tile whose elements travel as raw bytes.
  void AddData(std::string name, const TileDesc& desc, std::string data);
  // Declares a tile whose elements travel as numbers.
  void AddValues(std::string name, const TileDesc& desc,
                 std::vector<double> values);
  // Declares a tile whose every element is `value`.
  void AddFill(std::string name, const TileDesc& desc, double value);
  // Declares a tile holding `m` (as data), with the given valid region.
  template <typename T>
  void AddMatrix(std::string name, const Matrix<T>& m, uint32_t valid_rows = 0,
                 uint32_t valid_cols = 0) {
    AddData(std::move(name),
            Desc(DTypeOf<T>(), m.rows, m.cols, valid_rows, valid_cols),
            m.ToData());
  }

  // Appends an instruction. The reference is valid until the next one.
  Instruction& Add(Opcode opcode, std::string dst, std::string src0,
                   std::string src1, std::string tmp = "");
  Instruction& Tand(std::string dst, std::string src0, std::string src1) {
    return Add(Opcode::kTand, std::move(dst), std::move(src0), std::move(src1));
  }
  Instruction& Txor(std::string dst, std::string src0, std::string src1,
                    std::string tmp = "") {
    return Add(Opcode::kTxor, std::move(dst), std::move(src0), std::move(src1),
               std::move(tmp));
  }

  JobSpec& spec() { return spec_; }

 private:
  JobSpec spec_;
  // Deques: adding never moves what earlier tiles borrow.
  std::deque<std::string> data_;
  std::deque<std::vector<double>> values_;
};

// The output named `name`, or nullptr (and a test failure) if none.
const OutputTile* FindOutput(const JobOutcome& outcome, absl::string_view name);

// The elements of output `name`; an empty matrix if there is none.
template <typename T>
Matrix<T> OutputMatrix(const JobOutcome& outcome, absl::string_view name) {
  const OutputTile* out = FindOutput(outcome, name);
  return out == nullptr ? Matrix<T>() : ToMatrix<T>(out->tile);
}

// Matches an absl::Status with code `code` whose message matches
// `message_matcher`, e.g. StatusIs(kInvalidArgument, HasSubstr("tmp")).
MATCHER_P2(StatusIs, code, message_matcher,
           absl::StrFormat("has code %s and a message that %s",
                           absl::StatusCodeToString(code),
                           ::testing::DescribeMatcher<std::string>(
                               message_matcher, negation))) {
  return arg.code() == code &&
         ::testing::ExplainMatchResult(
             message_matcher, std::string(arg.message()), result_listener);
}

}  // namespace test
}  // namespace ptoserve

// Asserts that `expr`, an absl::StatusOr, is OK and moves its value into
// `lhs` (a declaration or an lvalue).
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(PTO_STATUS_CONCAT_(statusor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  ASSERT_TRUE(tmp.ok()) << tmp.status();           \
  lhs = std::move(tmp).value()

#endif  // PTOSERVE_TESTS_CORE_TEST_UTIL_H_
