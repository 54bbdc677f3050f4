// pto::Tile: a tile of the seeds' C++ built-in API, held in host memory.
//
// The template parameters follow PTO-ISA's Tile, so code written for it
// compiles here:
//
//   Tile<TileType Loc, typename Element, int Rows, int Cols,
//        BLayout BFractal = BLayout::RowMajor,
//        int RowValid = Rows, int ColValid = Cols,
//        SLayout SFractal = SLayout::NoneBox, int SFractalSize = 512,
//        PadValue PadVal = PadValue::Null>
//
// A valid extent of DYNAMIC is set at run time, by the constructor:
//
//   using T = Tile<TileType::Vec, int16_t, 16, 16, BLayout::RowMajor,
//                  DYNAMIC, DYNAMIC>;
//   T t(8, 12);  // valid 8x12
//
// The elements start zero-filled, as a tile the ptoserve server allocates.
#ifndef PTO_COMMON_PTO_TILE_HPP
#define PTO_COMMON_PTO_TILE_HPP

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace pto {

// The on-chip storage a tile lives in.
enum class TileType { Vec, Mat, Left, Right, Acc, Bias, Scaling };

// The element order within the tile.
enum class BLayout { RowMajor, ColMajor };

// The order within boxes (fractals) of a boxed tile; NoneBox: not boxed.
enum class SLayout { NoneBox, RowMajor, ColMajor };

// The value a tile's padding reads as; recorded, not used by TAND and TXOR.
enum class PadValue { Null, Zero, Max, Min };

// A valid extent known only at run time.
constexpr int DYNAMIC = -1;

namespace detail {

// Reports a violated run-time precondition of the built-in API and aborts,
// as an assertion in PTO-ISA's own implementation does. `format` takes
// `args` as printf does.
template <typename... Args>
[[noreturn]] void Fail(const char* what, const char* format, Args... args) {
  std::fprintf(stderr, "pto: %s: ", what);
  std::fprintf(stderr, format, args...);
  std::fprintf(stderr, "\n");
  std::abort();
}

}  // namespace detail

template <TileType Loc_, typename Element_, int Rows_, int Cols_,
          BLayout BFractal_ = BLayout::RowMajor, int RowValid_ = Rows_,
          int ColValid_ = Cols_, SLayout SFractal_ = SLayout::NoneBox,
          int SFractalSize_ = 512, PadValue PadVal_ = PadValue::Null>
class Tile {
 public:
  using DType = Element_;
  using TileDType = DType[Rows_ * Cols_];

  static constexpr TileType Loc = Loc_;
  static constexpr int Rows = Rows_;
  static constexpr int Cols = Cols_;
  static constexpr int ValidRow = RowValid_;  // or DYNAMIC
  static constexpr int ValidCol = ColValid_;  // or DYNAMIC
  static constexpr BLayout BFractal = BFractal_;
  static constexpr SLayout SFractal = SFractal_;
  static constexpr int SFractalSize = SFractalSize_;
  static constexpr PadValue PadVal = PadVal_;
  static constexpr int Numel = Rows * Cols;
  // Plainly row-major: consecutive columns are adjacent, rows follow each
  // other, no boxes.
  static constexpr bool isRowMajor =
      BFractal == BLayout::RowMajor && SFractal == SLayout::NoneBox;

  static_assert(Rows > 0 && Cols > 0, "pto::Tile: Rows and Cols must be > 0");
  static_assert(ValidRow == DYNAMIC || (ValidRow >= 0 && ValidRow <= Rows),
                "pto::Tile: RowValid must be DYNAMIC or in [0, Rows]");
  static_assert(ValidCol == DYNAMIC || (ValidCol >= 0 && ValidCol <= Cols),
                "pto::Tile: ColValid must be DYNAMIC or in [0, Cols]");

  // A DYNAMIC valid extent starts as the full extent.
  Tile() = default;

  // Valid shape valid_rows x valid_cols, for a tile whose both valid extents
  // are DYNAMIC. Aborts if it does not fit the tile.
  template <int R = ValidRow, int C = ValidCol,
            std::enable_if_t<R == DYNAMIC && C == DYNAMIC, int> = 0>
  Tile(int valid_rows, int valid_cols) {
    SetValid(valid_rows, valid_cols);
  }
  // The one DYNAMIC valid extent of a tile that has one.
  template <int R = ValidRow, int C = ValidCol,
            std::enable_if_t<(R == DYNAMIC) != (C == DYNAMIC), int> = 0>
  explicit Tile(int valid_extent) {
    if constexpr (R == DYNAMIC) {
      SetValid(valid_extent, valid_cols_);
    } else {
      SetValid(valid_rows_, valid_extent);
    }
  }

  int GetValidRow() const { return valid_rows_; }
  int GetValidCol() const { return valid_cols_; }

  TileDType& data() { return data_; }
  const TileDType& data() const { return data_; }

  // Element (r, c) of the physical tile.
  DType& operator()(int r, int c) { return data_[Offset(r, c)]; }
  const DType& operator()(int r, int c) const { return data_[Offset(r, c)]; }

 private:
  static constexpr int Offset(int r, int c) {
    return BFractal == BLayout::RowMajor ? r * Cols + c : c * Rows + r;
  }

  void SetValid(int valid_rows, int valid_cols) {
    if (valid_rows < 0 || valid_rows > Rows || valid_cols < 0 ||
        valid_cols > Cols) {
      detail::Fail("Tile", "valid shape %dx%d does not fit the tile's %dx%d",
                   valid_rows, valid_cols, Rows, Cols);
    }
    valid_rows_ = valid_rows;
    valid_cols_ = valid_cols;
  }

  alignas(64) TileDType data_ = {};
  int valid_rows_ = ValidRow == DYNAMIC ? Rows : ValidRow;
  int valid_cols_ = ValidCol == DYNAMIC ? Cols : ValidCol;
};

// Whether T is a pto::Tile.
template <typename T>
struct IsTile : std::false_type {};
template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC,
          SLayout S, int F, PadValue P>
struct IsTile<Tile<L, E, R, C, B, VR, VC, S, F, P>> : std::true_type {};

}  // namespace pto

#endif  // PTO_COMMON_PTO_TILE_HPP
