// The built-in API's machinery: compile-time traits for the seeds'
// constraints; the run-time checks and the target's steps are the
// service's own (core/builtin/runtime.h).
// Include <pto/pto-inst.hpp> instead of this file.
#ifndef PTO_COMMON_PTO_INSTR_IMPL_HPP
#define PTO_COMMON_PTO_INSTR_IMPL_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "core/builtin/recording.h"
#include "core/builtin/runtime.h"
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

// Places an unbound tile in the target's unified buffer at its first use,
// where the service's auto mode would (a2a3 and a5; on the host it keeps
// its own memory, as the service's auto mode keeps host tiles); again if
// ResetKernel gave its bytes back. `as_dst`: it is first used as an
// instruction's dst. A tile that does not fit is refused as the service
// refuses it.
template <typename TileData>
void Seat(TileData& tile, bool as_dst) {
  const ptoserve::Target target = static_cast<ptoserve::Target>(kTarget);
  if (tile.IsBound() || !ptoserve::builtin::PlacesUnbound(target)) return;
  if (tile.IsPlaced() && ptoserve::builtin::Holds(tile.GetHandle())) return;
  uint64_t address = 0, handle = 0;
  const std::string refused = ptoserve::builtin::Place(
      target, detail::RefOf(tile), as_dst, &address, &handle);
  if (!refused.empty()) detail::Refuse(refused.c_str());
  tile.PlaceAt(ptoserve::builtin::UnifiedBuffer(target) + address, address,
               handle);
}

// Checks an instruction with the service's rules and runs it with the
// target's steps (core/builtin/runtime.h), between the observer's two
// looks at it; a refusal is reported as the service words it. `waits`:
// the numbers of the `num_waits` instructions whose events it waits on.
inline RecordEvent Execute(const InstructionView& v, ptoserve::Opcode opcode,
                           const char* algorithm,
                           const ptoserve::builtin::TileRef& dst,
                           const ptoserve::builtin::TileRef& src0,
                           const ptoserve::builtin::TileRef& src1,
                           const ptoserve::builtin::TileRef* tmp,
                           const uint32_t* waits, size_t num_waits) {
  const ptoserve::Target target = static_cast<ptoserve::Target>(kTarget);
  ptoserve::builtin::RecordInstruction(opcode, dst, src0, src1, tmp, waits,
                                       num_waits);
  uint32_t index = 0;
  const std::string refused =
      ptoserve::builtin::Check(target, opcode, dst, src0, src1, tmp, &index);
  if (!refused.empty()) detail::Refuse(refused.c_str());
  if (detail::current_observer != nullptr) detail::current_observer->Before(v);
  ptoserve::builtin::Run(target, opcode, dst, src0, src1, tmp, index, waits,
                         num_waits);
  const RecordEvent event{v.op, kTarget, algorithm,
                          ptoserve::BestKernels().name, index};
  if (detail::current_observer != nullptr) {
    detail::current_observer->After(v, event);
  }
  return event;
}

}  // namespace impl
}  // namespace PTO_TARGET_NAMESPACE
}  // namespace pto

#endif  // PTO_COMMON_PTO_INSTR_IMPL_HPP
