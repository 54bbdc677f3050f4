// The seeds' two C++ examples, character for character (TAND.txt and
// TXOR.txt, "Examples"), each in a namespace of its own because both are
// named example(); their #include does nothing there, the header being
// included above. An observer fills the tiles each example declares before
// its instruction runs and checks the results against a scalar loop after.
// Built once per target (see BUILD.bazel).
#include <cstdint>
#include <cstring>
#include <pto/pto-inst.hpp>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

// From TAND.txt.
namespace tand_seed {
#include <pto/pto-inst.hpp>

using namespace pto;

void example() {
  using TileT = Tile<TileType::Vec, int32_t, 16, 16>;
  TileT a, b, out;
  TAND(out, a, b);
}

}  // namespace tand_seed

// From TXOR.txt.
namespace txor_seed {
#include <pto/pto-inst.hpp>

using namespace pto;

void example() {
  using TileDst = Tile<TileType::Vec, uint32_t, 16, 16>;
  using TileSrc0 = Tile<TileType::Vec, uint32_t, 16, 16>;
  using TileSrc1 = Tile<TileType::Vec, uint32_t, 16, 16>;
  using TileTmp = Tile<TileType::Vec, uint32_t, 16, 16>;
  TileDst dst;
  TileSrc0 src0;
  TileSrc1 src1;
  TileTmp tmp;
  TXOR(dst, src0, src1, tmp);
}

}  // namespace txor_seed

namespace ptoserve {
namespace {

// Before each instruction: fills src0 and src1 with random elements and dst
// and tmp with a sentinel, keeping copies. After it: dst must be the scalar
// op of the copies inside the valid region and untouched outside; tmp must
// hold src0 | src1 on a2a3 and be untouched elsewhere.
template <typename T>
class FillAndCheck : public pto::InstructionObserver {
 public:
  void Before(const pto::InstructionView& v) override {
    ASSERT_EQ(v.dst.element_bytes, static_cast<int>(sizeof(T)));
    a_ = Fill(v.src0, [&] { return static_cast<T>(rng_()); });
    b_ = Fill(v.src1, [&] { return static_cast<T>(rng_()); });
    dst_ = Fill(v.dst, [] { return kSentinel; });
    if (v.tmp != nullptr) tmp_ = Fill(*v.tmp, [] { return kSentinel; });
  }

  void After(const pto::InstructionView& v,
             const pto::RecordEvent& event) override {
    ++instructions_;
    event_ = event;
    const T* dst = static_cast<const T*>(v.dst.data);
    for (int r = 0; r < v.dst.rows; ++r) {
      for (int c = 0; c < v.dst.cols; ++c) {
        const size_t i = static_cast<size_t>(r) * v.dst.cols + c;
        const bool valid = r < v.dst.valid_rows && c < v.dst.valid_cols;
        const T expected = !valid ? dst_[i]
                           : v.op == pto::Op::TAND
                               ? static_cast<T>(a_[i] & b_[i])
                               : static_cast<T>(a_[i] ^ b_[i]);
        ASSERT_EQ(dst[i], expected) << "dst element (" << r << ", " << c << ")";
      }
    }
    if (v.tmp == nullptr) return;
    const T* tmp = static_cast<const T*>(v.tmp->data);
    for (size_t i = 0; i < tmp_.size(); ++i) {
      const T expected =
          pto::Rules::kTxorUsesTmp ? static_cast<T>(a_[i] | b_[i]) : kSentinel;
      ASSERT_EQ(tmp[i], expected) << "tmp element " << i;
    }
  }

  int instructions() const { return instructions_; }
  const pto::RecordEvent& event() const { return event_; }

 private:
  static constexpr T kSentinel = static_cast<T>(0xA5C3A5C3u);

  // Writes next() into every element of `tile`; returns what it wrote.
  template <typename Next>
  static std::vector<T> Fill(const pto::TileView& tile, Next next) {
    std::vector<T> elements(static_cast<size_t>(tile.rows) * tile.cols);
    for (T& e : elements) e = next();
    std::memcpy(tile.data, elements.data(), elements.size() * sizeof(T));
    return elements;
  }

  std::mt19937 rng_{1234};
  std::vector<T> a_, b_, dst_, tmp_;
  int instructions_ = 0;
  pto::RecordEvent event_;
};

TEST(SeedExamplesTest, TandExampleComputesAnd) {
  FillAndCheck<int32_t> check;
  pto::ScopedInstructionObserver observe(&check);
  tand_seed::example();
  EXPECT_EQ(check.instructions(), 1);
  EXPECT_EQ(check.event().op, pto::Op::TAND);
  EXPECT_EQ(check.event().target, pto::kTarget);
  EXPECT_STREQ(check.event().algorithm, pto::Rules::kTandAlgorithm);
}

TEST(SeedExamplesTest, TxorExampleComputesXor) {
  FillAndCheck<uint32_t> check;
  pto::ScopedInstructionObserver observe(&check);
  txor_seed::example();
  EXPECT_EQ(check.instructions(), 1);
  EXPECT_EQ(check.event().op, pto::Op::TXOR);
  EXPECT_STREQ(check.event().algorithm, pto::Rules::kTxorAlgorithm);
}

// Left as the examples make them, tiles start zero-filled: each
// instruction reads zeros and writes zeros (an observer that only reads
// sees both), and TXOR's tmp holds OR(0, 0) = 0 on a2a3.
class ZerosOnly : public pto::InstructionObserver {
 public:
  void Before(const pto::InstructionView& v) override {
    for (const pto::TileView* t : {&v.dst, &v.src0, &v.src1}) {
      ExpectZeros(*t, "before");
    }
  }
  void After(const pto::InstructionView& v, const pto::RecordEvent&) override {
    ++instructions;
    ExpectZeros(v.dst, "after");
    if (v.tmp != nullptr) ExpectZeros(*v.tmp, "after (tmp)");
  }
  int instructions = 0;

 private:
  static void ExpectZeros(const pto::TileView& t, const char* when) {
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    const size_t n = static_cast<size_t>(t.rows) * t.cols * t.element_bytes;
    ASSERT_GT(n, 0u);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(bytes[i], 0) << when << ", byte " << i;
    }
  }
};

TEST(SeedExamplesTest, ExamplesRunOnZeroFilledTiles) {
  ZerosOnly watch;
  pto::ScopedInstructionObserver observe(&watch);
  tand_seed::example();
  txor_seed::example();
  EXPECT_EQ(watch.instructions, 2);
}

}  // namespace
}  // namespace ptoserve
