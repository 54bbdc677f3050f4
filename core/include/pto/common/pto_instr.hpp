// The instructions of the built-in API, TAND and TXOR, as the seeds declare
// them. Include <pto/pto-inst.hpp> rather than this file.
//
// Each operand has a type of its own, as in PTO-ISA's pto_instr.hpp: this
// accepts every call of the seeds' `TAND(TileData&, TileData&, TileData&)`
// and lets tiles of different physical shapes combine, while a mismatch
// fails with one of the static_assert messages below rather than a
// template deduction failure.
//
// Compile-time checks (static_assert): operands are pto::Tile; element types
// are int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t and all the
// same; operands are row-major TileType::Vec tiles; on a2a3 and a5 each
// operand's rows are a multiple of 32 bytes; valid shapes known at compile
// time agree; events to wait on are RecordEvents.
// Run-time checks: the service's own (core/backends/backend.cc), through
// core/builtin/runtime.h: every operand's valid shape equals dst's; on
// a2a3, TXOR's tmp is a tile of its own; in manual mode (tiles bound by
// TASSIGN), on a2a3, TXOR's operands do not overlap. A refusal is worded as
// the service words it, with the tiles' names (pto_tile.hpp), printed
// after "pto: " to stderr before the program aborts (or handed to the
// FailureHandler set with SetFailureHandler), e.g.
// "pto: instruction 0 (TAND on host): src0 valid shape 8x16 differs from
// dst valid shape 16x16".
// TXOR's tmp is checked and used only where the target computes through it
// (a2a3); elsewhere it is accepted and left untouched.
#ifndef PTO_COMMON_PTO_INSTR_HPP
#define PTO_COMMON_PTO_INSTR_HPP

#include "pto/common/event.hpp"
#include "pto/common/pto_instr_impl.hpp"
#include "pto/common/pto_tile.hpp"

#define PTO_INST inline

namespace pto {
inline namespace PTO_TARGET_NAMESPACE {

namespace impl {

// Both TANDs' work.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1,
          typename... WaitEvents>
PTO_INST RecordEvent Tand(TileDataDst& dst, TileDataSrc0& src0,
                          TileDataSrc1& src1, WaitEvents&... events) {
  static_assert(IsTile<TileDataDst>::value && IsTile<TileDataSrc0>::value &&
                    IsTile<TileDataSrc1>::value,
                "TAND: dst, src0 and src1 must be pto::Tile");
  using T = typename TileDataDst::DType;
  static_assert(impl::kBitwiseElement<T>,
                "TAND: the element type must be int8_t, uint8_t, int16_t, "
                "uint16_t, int32_t or uint32_t");
  static_assert(std::is_same_v<T, typename TileDataSrc0::DType> &&
                    std::is_same_v<T, typename TileDataSrc1::DType>,
                "TAND: dst, src0 and src1 must have the same element type");
  static_assert(impl::kVecRowMajor<TileDataDst> &&
                    impl::kVecRowMajor<TileDataSrc0> &&
                    impl::kVecRowMajor<TileDataSrc1>,
                "TAND: dst, src0 and src1 must be row-major TileType::Vec "
                "tiles (BLayout::RowMajor, SLayout::NoneBox)");
  static_assert(impl::kRowsAligned<TileDataDst> &&
                    impl::kRowsAligned<TileDataSrc0> &&
                    impl::kRowsAligned<TileDataSrc1>,
                "TAND: on a2a3 and a5 each operand's rows (Cols * "
                "sizeof(element)) must be a multiple of 32 bytes");
  static_assert(!impl::kStaticValidShapesDiffer<TileDataSrc0, TileDataDst> &&
                    !impl::kStaticValidShapesDiffer<TileDataSrc1, TileDataDst>,
                "TAND: the valid shapes of src0 and src1 must equal dst's");
  static_assert(impl::kAllRecordEvents<WaitEvents...>,
                "TAND: events to wait on must be RecordEvents returned by "
                "earlier instructions");
  (events.Wait(), ...);
  impl::Seat(dst, /*as_dst=*/true);
  impl::Seat(src0, /*as_dst=*/false);
  impl::Seat(src1, /*as_dst=*/false);
  const InstructionView v{Op::TAND, impl::View(dst), impl::View(src0),
                          impl::View(src1), nullptr};
  const uint32_t waits[] = {events.index..., 0};
  return impl::Execute(v, ptoserve::Opcode::kTand, Rules::kTandAlgorithm,
                       detail::RefOf(dst), detail::RefOf(src0),
                       detail::RefOf(src1), nullptr, waits, sizeof...(events));
}

}  // namespace impl

// dst = src0 & src1 over dst's valid region, after the events waited on,
// as the seed declares it: one tile type for the three operands, so that
// `TAND<TileT>(c, a, b)` and `TAND<TileT, RecordEvent>(c, a, b, e)` compile.
// Operands of different tile types take the overload below; for three of
// one type this one is the more specialized and is chosen.
template <typename TileData, typename... WaitEvents>
PTO_INST RecordEvent TAND(TileData& dst, TileData& src0, TileData& src1,
                          WaitEvents&... events) {
  return impl::Tand(dst, src0, src1, events...);
}

// TAND over operands of different tile types (physical shapes that differ,
// valid shapes that agree).
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1,
          typename... WaitEvents>
PTO_INST RecordEvent TAND(TileDataDst& dst, TileDataSrc0& src0,
                          TileDataSrc1& src1, WaitEvents&... events) {
  return impl::Tand(dst, src0, src1, events...);
}

// dst = src0 ^ src1 over dst's valid region, after the events waited on.
// On a2a3, tmp ends up holding src0 | src1.
template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1,
          typename TileDataTmp, typename... WaitEvents>
PTO_INST RecordEvent TXOR(TileDataDst& dst, TileDataSrc0& src0,
                          TileDataSrc1& src1, TileDataTmp& tmp,
                          WaitEvents&... events) {
  static_assert(IsTile<TileDataDst>::value && IsTile<TileDataSrc0>::value &&
                    IsTile<TileDataSrc1>::value && IsTile<TileDataTmp>::value,
                "TXOR: dst, src0, src1 and tmp must be pto::Tile");
  using T = typename TileDataDst::DType;
  static_assert(impl::kBitwiseElement<T>,
                "TXOR: the element type must be int8_t, uint8_t, int16_t, "
                "uint16_t, int32_t or uint32_t");
  static_assert(std::is_same_v<T, typename TileDataSrc0::DType> &&
                    std::is_same_v<T, typename TileDataSrc1::DType>,
                "TXOR: dst, src0 and src1 must have the same element type");
  static_assert(impl::kVecRowMajor<TileDataDst> &&
                    impl::kVecRowMajor<TileDataSrc0> &&
                    impl::kVecRowMajor<TileDataSrc1>,
                "TXOR: dst, src0 and src1 must be row-major TileType::Vec "
                "tiles (BLayout::RowMajor, SLayout::NoneBox)");
  static_assert(impl::kRowsAligned<TileDataDst> &&
                    impl::kRowsAligned<TileDataSrc0> &&
                    impl::kRowsAligned<TileDataSrc1>,
                "TXOR: on a2a3 and a5 each operand's rows (Cols * "
                "sizeof(element)) must be a multiple of 32 bytes");
  static_assert(!impl::kStaticValidShapesDiffer<TileDataSrc0, TileDataDst> &&
                    !impl::kStaticValidShapesDiffer<TileDataSrc1, TileDataDst>,
                "TXOR: the valid shapes of src0 and src1 must equal dst's");
  if constexpr (Rules::kTxorUsesTmp) {
    static_assert(std::is_same_v<T, typename TileDataTmp::DType>,
                  "TXOR: on a2a3 tmp must have the element type of dst, src0 "
                  "and src1");
    static_assert(impl::kVecRowMajor<TileDataTmp>,
                  "TXOR: on a2a3 tmp must be a row-major TileType::Vec tile "
                  "(BLayout::RowMajor, SLayout::NoneBox)");
    static_assert(impl::kRowsAligned<TileDataTmp>,
                  "TXOR: on a2a3 tmp's rows (Cols * sizeof(element)) must be "
                  "a multiple of 32 bytes");
    static_assert(!impl::kStaticValidShapesDiffer<TileDataTmp, TileDataDst>,
                  "TXOR: on a2a3 the valid shape of tmp must equal dst's");
  }
  static_assert(impl::kAllRecordEvents<WaitEvents...>,
                "TXOR: events to wait on must be RecordEvents returned by "
                "earlier instructions");
  (events.Wait(), ...);
  impl::Seat(dst, /*as_dst=*/true);
  impl::Seat(src0, /*as_dst=*/false);
  impl::Seat(src1, /*as_dst=*/false);
  if constexpr (Rules::kTxorUsesTmp) impl::Seat(tmp, /*as_dst=*/false);
  const TileView tmp_view = impl::View(tmp);
  const InstructionView v{Op::TXOR, impl::View(dst), impl::View(src0),
                          impl::View(src1), &tmp_view};
  const ptoserve::builtin::TileRef tmp_ref = detail::RefOf(tmp);
  const uint32_t waits[] = {events.index..., 0};
  return impl::Execute(v, ptoserve::Opcode::kTxor, Rules::kTxorAlgorithm,
                       detail::RefOf(dst), detail::RefOf(src0),
                       detail::RefOf(src1), &tmp_ref, waits, sizeof...(events));
}

}  // namespace PTO_TARGET_NAMESPACE
}  // namespace pto

#endif  // PTO_COMMON_PTO_INSTR_HPP
