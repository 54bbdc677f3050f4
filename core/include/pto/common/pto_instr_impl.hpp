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

// Where a target computes through tmp it writes tmp before it reads the
// sources again, so tmp must not be one of the other operands.
inline void CheckTmpIsItsOwn(const InstructionView& v) {
  const std::pair<const char*, const TileView*> others[] = {
      {"dst", &v.dst}, {"src0", &v.src0}, {"src1", &v.src1}};
  for (const auto& [role, other] : others) {
    if (other->data == v.tmp->data) {
      detail::Fail("TXOR", "tmp is also %s; on %s %s", role, Rules::kName,
                   ptoserve::kTmpOwnTileReason);
    }
  }
}

// The region an instruction computes: dst's valid rows and columns.
inline ptoserve::Region RegionOf(const InstructionView& v) {
  return {static_cast<size_t>(v.dst.valid_rows),
          static_cast<size_t>(v.dst.valid_cols) * v.dst.element_bytes};
}
inline const TileView& Operand(const InstructionView& v, ptoserve::Role role) {
  switch (role) {
    case ptoserve::Role::kDst:
      return v.dst;
    case ptoserve::Role::kSrc0:
      return v.src0;
    case ptoserve::Role::kSrc1:
      return v.src1;
    case ptoserve::Role::kTmp:
      return *v.tmp;
  }
  return v.dst;
}
inline ptoserve::ConstPlane In(const InstructionView& v, ptoserve::Role role) {
  const TileView& t = Operand(v, role);
  return {static_cast<const uint8_t*>(t.data),
          static_cast<size_t>(t.cols) * t.element_bytes};
}
inline ptoserve::Plane Out(const InstructionView& v, ptoserve::Role role) {
  const TileView& t = Operand(v, role);
  return {static_cast<uint8_t*>(t.data),
          static_cast<size_t>(t.cols) * t.element_bytes};
}

// Runs the target's steps for `opcode` (core/targets/) on one instruction,
// as the service's backend runs them on a batch.
inline void RunSteps(ptoserve::Opcode opcode, const InstructionView& v) {
  const ptoserve::KernelSet& k = ptoserve::BestKernels();
  const ptoserve::OpRule& rule = Rules::kSpec.rule(opcode);
  const ptoserve::Region region = RegionOf(v);
  for (size_t i = 0; i < rule.step_count; ++i) {
    const ptoserve::Step& s = rule.steps[i];
    if (s.invert) {
      k.invert(region, In(v, s.a), Out(v, s.out));
    } else {
      k.binary(s.op, region, In(v, s.a), In(v, s.b), Out(v, s.out));
    }
  }
}

// Runs a checked instruction between the observer's two looks at it.
inline RecordEvent Execute(const InstructionView& v, ptoserve::Opcode opcode,
                           const char* algorithm) {
  if (detail::current_observer != nullptr) detail::current_observer->Before(v);
  RunSteps(opcode, v);
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
