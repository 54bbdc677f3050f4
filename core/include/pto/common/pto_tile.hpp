// pto::Tile: a tile of the seeds' C++ built-in API.
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
// A valid extent of DYNAMIC is set at run time, by the constructor or by
// SetValidShape (SetValidRow, SetValidCol):
//
//   using T = Tile<TileType::Vec, int16_t, 16, 16, BLayout::RowMajor,
//                  DYNAMIC, DYNAMIC>;
//   T t(8, 12);  // valid 8x12
//   t.SetValidShape(4, 16);
//
// A tile's elements live in host memory of its own, zero-filled, until
// TASSIGN(tile, address) binds it to that byte of the target's unified
// buffer (pto/common/memory.hpp); data() then points there, and tiles bound
// to overlapping bytes share them. On a2a3 and a5 a tile left unbound is
// placed in the unified buffer when the kernel first uses it (TLOAD,
// TSTORE or an instruction), where the service's auto mode would place it,
// carrying the elements it had; its destructor gives those bytes back. A
// copy of a tile is an unbound tile holding a copy of its elements.
//
// Each tile has a name, which the API's refusals use as the service's use
// a job's tile names: "t0", "t1", ... in the order the thread made them
// (pto::ResetKernel starts again at t0), or one set with SetName.
#ifndef PTO_COMMON_PTO_TILE_HPP
#define PTO_COMMON_PTO_TILE_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/builtin/runtime.h"
#include "pto/common/type.hpp"

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

// What a refusal of the built-in API calls: by default it prints
// "pto: " and the message to stderr and aborts, as an assertion in
// PTO-ISA's own implementation does. A handler must not return (it may
// throw, or end the program); if it does, the program aborts.
using FailureHandler = void (*)(const char* message);

namespace detail {

[[noreturn]] inline void PrintAndAbort(const char* message) {
  std::fprintf(stderr, "pto: %s\n", message);
  std::abort();
}

inline FailureHandler& CurrentFailureHandler() {
  static FailureHandler handler = nullptr;
  return handler;
}

// Reports a refusal: `message` as the service words it.
[[noreturn]] inline void Refuse(const char* message) {
  if (FailureHandler handler = CurrentFailureHandler()) handler(message);
  PrintAndAbort(message);
}

// Reports a violated run-time precondition of the API itself: "WHAT: "
// then `format` with `args`, as printf does.
template <typename... Args>
[[noreturn]] void Fail(const char* what, const char* format, Args... args) {
  char message[512];
  const int n = std::snprintf(message, sizeof(message), "%s: ", what);
  std::snprintf(message + n, sizeof(message) - n, format, args...);
  Refuse(message);
}

// The element type's code in the service's vocabulary.
template <typename T>
constexpr ptoserve::DType DTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) return ptoserve::DType::kInt8;
  if constexpr (std::is_same_v<T, uint8_t>) return ptoserve::DType::kUInt8;
  if constexpr (std::is_same_v<T, int16_t>) return ptoserve::DType::kInt16;
  if constexpr (std::is_same_v<T, uint16_t>) return ptoserve::DType::kUInt16;
  if constexpr (std::is_same_v<T, int32_t>) return ptoserve::DType::kInt32;
  if constexpr (std::is_same_v<T, uint32_t>) return ptoserve::DType::kUInt32;
  return ptoserve::DType::kFloat16;  // none TAND or TXOR takes
}

}  // namespace detail

// Sets what a refusal calls on every thread (null: the default, print and
// abort); returns the handler set before.
inline FailureHandler SetFailureHandler(FailureHandler handler) {
  FailureHandler previous = detail::CurrentFailureHandler();
  detail::CurrentFailureHandler() = handler;
  return previous;
}

template <TileType Loc_, typename Element_, int Rows_, int Cols_,
          BLayout BFractal_ = BLayout::RowMajor, int RowValid_ = Rows_,
          int ColValid_ = Cols_, SLayout SFractal_ = SLayout::NoneBox,
          int SFractalSize_ = 512, PadValue PadVal_ = PadValue::Null>
class Tile {
 public:
  using DType = Element_;
  using TileDType = DType*;

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
  Tile() { Name(); }

  // Valid shape valid_rows x valid_cols, for a tile whose both valid extents
  // are DYNAMIC. Refused if it does not fit the tile.
  template <int R = ValidRow, int C = ValidCol,
            std::enable_if_t<R == DYNAMIC && C == DYNAMIC, int> = 0>
  Tile(int valid_rows, int valid_cols) {
    Name();
    SetValid(valid_rows, valid_cols);
  }
  // The one DYNAMIC valid extent of a tile that has one.
  template <int R = ValidRow, int C = ValidCol,
            std::enable_if_t<(R == DYNAMIC) != (C == DYNAMIC), int> = 0>
  explicit Tile(int valid_extent) {
    Name();
    if constexpr (R == DYNAMIC) {
      SetValid(valid_extent, valid_cols_);
    } else {
      SetValid(valid_rows_, valid_extent);
    }
  }

  // An unbound tile with a copy of `other`'s elements, valid shape and
  // name.
  Tile(const Tile& other) { *this = other; }
  Tile& operator=(const Tile& other) {
    if (this == &other) return *this;
    std::memmove(own_, other.data_, sizeof(own_));
    Unhold();
    data_ = own_;
    bound_ = false;
    placed_ = false;
    address_ = 0;
    valid_rows_ = other.valid_rows_;
    valid_cols_ = other.valid_cols_;
    std::memcpy(name_, other.name_, sizeof(name_));
    return *this;
  }

  int GetValidRow() const { return valid_rows_; }
  int GetValidCol() const { return valid_cols_; }

  // A new valid shape, for a tile whose valid extents are both DYNAMIC.
  // Refused if it does not fit the tile.
  void SetValidShape(int valid_rows, int valid_cols) {
    static_assert(ValidRow == DYNAMIC && ValidCol == DYNAMIC,
                  "pto::Tile: SetValidShape needs both valid extents "
                  "DYNAMIC");
    SetValid(valid_rows, valid_cols);
  }
  void SetValidRow(int valid_rows) {
    static_assert(ValidRow == DYNAMIC,
                  "pto::Tile: SetValidRow needs a DYNAMIC RowValid");
    SetValid(valid_rows, valid_cols_);
  }
  void SetValidCol(int valid_cols) {
    static_assert(ValidCol == DYNAMIC,
                  "pto::Tile: SetValidCol needs a DYNAMIC ColValid");
    SetValid(valid_rows_, valid_cols);
  }

  // The elements, row-major: the tile's own memory, or its place in the
  // unified buffer once bound.
  DType* data() { return data_; }
  const DType* data() const { return data_; }

  // Element (r, c) of the physical tile.
  DType& operator()(int r, int c) { return data_[Offset(r, c)]; }
  const DType& operator()(int r, int c) const { return data_[Offset(r, c)]; }

  // The name refusals use (at most 31 characters are kept).
  const char* GetName() const { return name_; }
  void SetName(const char* name) {
    std::snprintf(name_, sizeof(name_), "%s", name);
  }

  // Gives back the bytes it holds in the unified buffer.
  ~Tile() { Unhold(); }

  // Whether TASSIGN bound it, or the API placed it, and at which byte of
  // the unified buffer.
  bool IsBound() const { return bound_; }
  bool IsPlaced() const { return placed_; }
  uint64_t GetAddress() const { return address_; }
  // What the runtime (core/builtin/runtime.h) knows its bytes by; 0: none.
  uint64_t GetHandle() const { return handle_; }

  // Binds the tile to `bytes`, its place at `address` in the unified
  // buffer, held by `handle`. Use TASSIGN, which checks the address first.
  void BindTo(void* bytes, uint64_t address, uint64_t handle = 0) {
    Unhold();
    data_ = static_cast<DType*>(bytes);
    bound_ = true;
    placed_ = false;
    address_ = address;
    handle_ = handle;
  }

  // Moves the tile's elements to `bytes`, the place at `address` the API
  // chose for it, held by `handle`. The API calls it at the tile's first
  // use.
  void PlaceAt(void* bytes, uint64_t address, uint64_t handle) {
    std::memmove(bytes, data_, sizeof(own_));
    Unhold();
    data_ = static_cast<DType*>(bytes);
    placed_ = true;
    address_ = address;
    handle_ = handle;
  }

 private:
  static constexpr int Offset(int r, int c) {
    return BFractal == BLayout::RowMajor ? r * Cols + c : c * Rows + r;
  }

  void Unhold() {
    if (handle_ != 0) ptoserve::builtin::Release(handle_);
    handle_ = 0;
  }

  void Name() {
    std::snprintf(name_, sizeof(name_), "t%u",
                  static_cast<unsigned>(ptoserve::builtin::NextTileNumber()));
  }

  void SetValid(int valid_rows, int valid_cols) {
    if (valid_rows < 0 || valid_rows > Rows || valid_cols < 0 ||
        valid_cols > Cols) {
      detail::Fail("Tile",
                   "tile \"%s\": valid shape %dx%d does not fit "
                   "the tile's %dx%d",
                   name_, valid_rows, valid_cols, Rows, Cols);
    }
    valid_rows_ = valid_rows;
    valid_cols_ = valid_cols;
  }

  alignas(64) DType own_[Rows * Cols] = {};
  DType* data_ = own_;
  bool bound_ = false;
  bool placed_ = false;
  uint64_t address_ = 0;
  uint64_t handle_ = 0;
  int valid_rows_ = ValidRow == DYNAMIC ? Rows : ValidRow;
  int valid_cols_ = ValidCol == DYNAMIC ? Cols : ValidCol;
  char name_[32] = {};
};

namespace detail {

// A tile as the runtime (core/builtin/runtime.h) takes it.
template <typename TileData>
ptoserve::builtin::TileRef RefOf(TileData& tile) {
  ptoserve::builtin::TileRef ref;
  ref.name = tile.GetName();
  ref.data = reinterpret_cast<uint8_t*>(
      const_cast<std::remove_const_t<typename TileData::DType>*>(tile.data()));
  ref.dtype = detail::DTypeOf<typename TileData::DType>();
  ref.rows = TileData::Rows;
  ref.cols = TileData::Cols;
  ref.valid_rows = static_cast<uint32_t>(tile.GetValidRow());
  ref.valid_cols = static_cast<uint32_t>(tile.GetValidCol());
  ref.bound = tile.IsBound();
  ref.placed = tile.IsPlaced();
  ref.address = tile.GetAddress();
  ref.handle = tile.GetHandle();
  return ref;
}

}  // namespace detail

// Whether T is a pto::Tile.
template <typename T>
struct IsTile : std::false_type {};
template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC,
          SLayout S, int F, PadValue P>
struct IsTile<Tile<L, E, R, C, B, VR, VC, S, F, P>> : std::true_type {};

}  // namespace pto

#endif  // PTO_COMMON_PTO_TILE_HPP
