// The scalar reference that the engine, the server and the fuzzers are
// checked against, and small builders for tile descriptions. Free of any
// test framework so that the fuzz targets can use it too.
//
// The reference is deliberately naive: one typed element at a time, no
// strides or kernels shared with the code under test.
#ifndef PTOSERVE_TESTS_CORE_REFERENCE_H_
#define PTOSERVE_TESTS_CORE_REFERENCE_H_

#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "core/kernels.h"
#include "core/tile.h"
#include "core/types.h"

namespace ptoserve {
namespace test {

// A tile description; zero valid extents mean the full extent.
inline TileDesc Desc(DType dtype, uint32_t rows, uint32_t cols,
                     uint32_t valid_rows = 0, uint32_t valid_cols = 0) {
  TileDesc d;
  d.dtype = dtype;
  d.rows = rows;
  d.cols = cols;
  d.valid_rows = valid_rows;
  d.valid_cols = valid_cols;
  return d;
}

// The same, bound to a unified-buffer address for manual mode.
inline TileDesc PlacedDesc(DType dtype, uint32_t rows, uint32_t cols,
                           uint64_t address) {
  TileDesc d = Desc(dtype, rows, cols);
  d.address = address;
  return d;
}

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) {
    return DType::kInt8;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return DType::kUInt8;
  } else if constexpr (std::is_same_v<T, int16_t>) {
    return DType::kInt16;
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return DType::kUInt16;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return DType::kInt32;
  } else {
    static_assert(std::is_same_v<T, uint32_t>, "not a bitwise element type");
    return DType::kUInt32;
  }
}

// Calls f(T{}) with T the C++ type of `dtype`, which must be one of the
// integer types TAND and TXOR accept.
template <typename F>
auto WithBitwiseType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt8:
      return f(int8_t{});
    case DType::kUInt8:
      return f(uint8_t{});
    case DType::kInt16:
      return f(int16_t{});
    case DType::kUInt16:
      return f(uint16_t{});
    case DType::kInt32:
      return f(int32_t{});
    default:
      return f(uint32_t{});
  }
}

// One element of the reference, computed in T.
template <typename T>
T ScalarOp(BitwiseOp op, T a, T b) {
  switch (op) {
    case BitwiseOp::kAnd:
      return static_cast<T>(a & b);
    case BitwiseOp::kOr:
      return static_cast<T>(a | b);
    case BitwiseOp::kXor:
      return static_cast<T>(a ^ b);
  }
  return T{};
}

// The element operation of an instruction with two sources, written out
// here rather than read from core/ops.h, so that a wrong table row shows.
// REQUIRES: opcode is not TNOT (one source: dst = ~src0).
inline BitwiseOp OpOf(Opcode opcode) {
  switch (opcode) {
    case Opcode::kTand:
      return BitwiseOp::kAnd;
    case Opcode::kTxor:
      return BitwiseOp::kXor;
    case Opcode::kTor:
      return BitwiseOp::kOr;
    case Opcode::kTnot:
      break;
  }
  std::abort();
}

// Whether `opcode` reads src0 only (TNOT: dst = ~src0).
inline bool IsUnary(Opcode opcode) { return opcode == Opcode::kTnot; }

}  // namespace test
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_CORE_REFERENCE_H_
