// The built-in API's machinery: compile-time traits for the seeds'
// constraints, run-time checks, and the target's algorithms, which run on
// ptoserve's own kernels (core/kernels.h) exactly as its backends do.
// Include <pto/pto-inst.hpp> instead of this file.
#ifndef PTO_COMMON_PTO_INSTR_IMPL_HPP
#define PTO_COMMON_PTO_INSTR_IMPL_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/kernels.h"
#include "pto/common/event.hpp"
#include "pto/common/observer.hpp"
#include "pto/common/pto_tile.hpp"
#include "pto/common/target.hpp"

namespace pto {
inline namespace PTO_TARGET_NAMESPACE {
namespace impl {

// The element types TAND and TXOR accept on every target.
template <typename T>
inline constexpr bool kBitwiseElement =
    std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
    std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> ||
    std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>;

template <typename TileData>
inline constexpr bool kVecRowMajor =
    TileData::Loc == TileType::Vec&& TileData::isRowMajor;

template <typename TileData>
inline constexpr bool kRowsAligned =
    TileData::Cols *
        sizeof(typename TileData::DType) % Rules::kRowAlignmentBytes
    == 0;

// Whether both valid shapes are known at compile time and differ.
template <typename A, typename B>
inline constexpr bool kStaticValidShapesDiffer = (A::ValidRow != DYNAMIC &&
                                                  B::ValidRow != DYNAMIC &&
                                                  A::ValidRow != B::ValidRow) ||
                                                 (A::ValidCol != DYNAMIC &&
                                                  B::ValidCol != DYNAMIC &&
                                                  A::ValidCol != B::ValidCol);

template <typename... Events>
inline constexpr bool kAllRecordEvents =
    (std::is_same_v<std::remove_const_t<Events>, RecordEvent> && ...);

template <typename TileData>
TileView View(TileData& tile) {
  return TileView{
      tile.data(),        TileData::Rows,
      TileData::Cols,     tile.GetValidRow(),
      tile.GetValidCol(), static_cast<int>(sizeof(typename TileData::DType))};
}

// The run-time rule: an operand's valid shape is dst's.
inline void CheckValidShape(const char* op, const char* role,
                            const TileView& operand, const TileView& dst) {
  if (operand.valid_rows != dst.valid_rows ||
      operand.valid_cols != dst.valid_cols) {
    detail::Fail(op, "%s valid shape %dx%d differs from dst valid shape %dx%d",
                 role, operand.valid_rows, operand.valid_cols, dst.valid_rows,
                 dst.valid_cols);
  }
}

// a2a3 writes tmp before it reads the sources again, so tmp must not be one
// of the other operands.
inline void CheckTmpIsItsOwn(const InstructionView& v) {
  const std::pair<const char*, const TileView*> others[] = {
      {"dst", &v.dst}, {"src0", &v.src0}, {"src1", &v.src1}};
  for (const auto& [role, other] : others) {
    if (other->data == v.tmp->data) {
      detail::Fail("TXOR",
                   "tmp is also %s; on a2a3 tmp must be a tile of its own "
                   "because it is written before the sources are read again",
                   role);
    }
  }
}

// The region an instruction computes: dst's valid rows and columns.
inline ptoserve::Region RegionOf(const InstructionView& v) {
  return {static_cast<size_t>(v.dst.valid_rows),
          static_cast<size_t>(v.dst.valid_cols) * v.dst.element_bytes};
}
inline ptoserve::ConstPlane In(const TileView& t) {
  return {static_cast<const uint8_t*>(t.data),
          static_cast<size_t>(t.cols) * t.element_bytes};
}
inline ptoserve::Plane Out(const TileView& t) {
  return {static_cast<uint8_t*>(t.data),
          static_cast<size_t>(t.cols) * t.element_bytes};
}

inline void RunTand(const InstructionView& v) {
  ptoserve::BestKernels().binary(ptoserve::BitwiseOp::kAnd, RegionOf(v),
                                 In(v.src0), In(v.src1), Out(v.dst));
}

inline void RunTxor(const InstructionView& v) {
  const ptoserve::KernelSet& k = ptoserve::BestKernels();
  const ptoserve::Region region = RegionOf(v);
  if constexpr (Rules::kTxorUsesTmp) {
    // As core/backends/a2a3.cc: XOR(a,b) = AND(NOT(AND(a,b)), OR(a,b)).
    k.binary(ptoserve::BitwiseOp::kOr, region, In(v.src0), In(v.src1),
             Out(*v.tmp));
    k.binary(ptoserve::BitwiseOp::kAnd, region, In(v.src0), In(v.src1),
             Out(v.dst));
    k.invert(region, In(v.dst), Out(v.dst));
    k.binary(ptoserve::BitwiseOp::kAnd, region, In(v.dst), In(*v.tmp),
             Out(v.dst));
  } else {
    k.binary(ptoserve::BitwiseOp::kXor, region, In(v.src0), In(v.src1),
             Out(v.dst));
  }
}

// Runs a checked instruction between the observer's two looks at it.
inline RecordEvent Execute(const InstructionView& v,
                           void (*run)(const InstructionView&),
                           const char* algorithm) {
  if (detail::current_observer != nullptr) detail::current_observer->Before(v);
  run(v);
  const RecordEvent event{v.op, kTarget, algorithm,
                          ptoserve::BestKernels().name};
  if (detail::current_observer != nullptr) {
    detail::current_observer->After(v, event);
  }
  return event;
}

}  // namespace impl
}  // namespace PTO_TARGET_NAMESPACE
}  // namespace pto

#endif  // PTO_COMMON_PTO_INSTR_IMPL_HPP
