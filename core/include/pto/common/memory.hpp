// Moving data: TASSIGN binds a tile to its place in the target's unified
// buffer (the seeds' pto.tassign: manual mode), TLOAD fills a tile from a
// GlobalTensor and TSTORE writes one back. Include <pto/pto-inst.hpp>
// rather than this file.
//
//   TASSIGN(a, 0x0);      // a's bytes: [0x0, 0x0 + sizeof a's elements)
//   TASSIGN(b, 0x400);
//   TLOAD(a, global_a);   // a's valid region from global_a, padding zeroed
//
// The unified buffer is the service's: the same size per target (host: the
// service's default, 1 MiB), zeroed when a thread first uses it and by
// ResetKernel. TASSIGN refuses, as the service does, an address that is
// not 32-byte aligned or a tile that does not fit; and an address whose
// bytes an unbound tile still holds, which the API placed there at its
// first use (on a2a3 and a5; bind tiles before using unbound ones). Tiles bound
// to overlapping bytes share them; the service's rules for overlapping operands
// (on a2a3, TXOR's may not overlap) apply at each instruction.
#ifndef PTO_COMMON_MEMORY_HPP
#define PTO_COMMON_MEMORY_HPP

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "core/builtin/recording.h"
#include "core/builtin/runtime.h"
#include "pto/common/global_tensor.hpp"
#include "pto/common/pto_instr_impl.hpp"
#include "pto/common/pto_tile.hpp"
#include "pto/common/target.hpp"

namespace pto {

// Starts a kernel's run as the service starts a job: this thread's unified
// buffers zeroed, instructions and tile names numbered from 0 again.
inline void ResetKernel() { ptoserve::builtin::Reset(); }

// PTO-ISA's CPU simulator's names for clearing its memory model.
inline void NPU_MEMORY_CLEAR() { ResetKernel(); }

inline namespace PTO_TARGET_NAMESPACE {

// Binds `tile` to byte `address` of this target's unified buffer; its
// elements are then the bytes there. Or points a GlobalTensor at `address`.
template <typename T, typename AddrType>
void TASSIGN(T& obj, AddrType address) {
  if constexpr (IsTile<T>::value) {
    static_assert(std::is_integral_v<AddrType>,
                  "TASSIGN: a tile is bound to a byte address, an integer");
    const ptoserve::Target target = static_cast<ptoserve::Target>(kTarget);
    const ptoserve::builtin::TileRef ref = detail::RefOf(obj);
    if constexpr (std::is_signed_v<AddrType>) {
      if (address < 0) {
        detail::Fail("TASSIGN", "tile \"%s\": address %lld is negative",
                     ref.name, static_cast<long long>(address));
      }
    }
    const uint64_t at = static_cast<uint64_t>(address);
    uint64_t handle = 0;
    const std::string refused =
        ptoserve::builtin::Assign(target, ref, at, &handle);
    if (!refused.empty()) detail::Refuse(refused.c_str());
    obj.BindTo(ptoserve::builtin::UnifiedBuffer(target) + at, at, handle);
  } else {
    static_assert(IsGlobalTensor<T>::value,
                  "TASSIGN: binds a pto::Tile or a pto::GlobalTensor");
    static_assert(std::is_pointer_v<AddrType>,
                  "TASSIGN: a GlobalTensor is given a pointer");
    obj.SetAddr(address);
  }
}

namespace impl {

// What a tile's padding reads as after TLOAD.
template <typename TileData>
constexpr typename TileData::DType PadOf() {
  using T = typename TileData::DType;
  switch (TileData::PadVal) {
    case PadValue::Max:
      return std::numeric_limits<T>::max();
    case PadValue::Min:
      return std::numeric_limits<T>::min();
    default:
      return T(0);
  }
}

template <typename TileData, typename GlobalData>
void CheckMove(const char* op, const TileData& tile, const GlobalData& global) {
  static_assert(IsTile<TileData>::value, "TLOAD/TSTORE: a pto::Tile");
  static_assert(IsGlobalTensor<GlobalData>::value,
                "TLOAD/TSTORE: a pto::GlobalTensor");
  static_assert(
      sizeof(typename TileData::DType) == sizeof(typename GlobalData::DType),
      "TLOAD/TSTORE: the tile's and the GlobalTensor's elements "
      "must be the same size");
  static_assert(GlobalData::layout == Layout::ND,
                "TLOAD/TSTORE: only Layout::ND GlobalTensors here");
  static_assert(TileData::isRowMajor,
                "TLOAD/TSTORE: only row-major tiles here");
  if (global.Rows() != tile.GetValidRow() ||
      global.Cols() != tile.GetValidCol()) {
    detail::Fail(op,
                 "tile \"%s\": valid shape %dx%d differs from the "
                 "GlobalTensor's %lldx%lld (shape dimensions 0-3 by 4)",
                 tile.GetName(), tile.GetValidRow(), tile.GetValidCol(),
                 static_cast<long long>(global.Rows()),
                 static_cast<long long>(global.Cols()));
  }
}

}  // namespace impl

// dst's valid region from src; the rest of dst reads as its PadValue (0
// unless Max or Min).
template <typename TileData, typename GlobalData>
void TLOAD(TileData& dst, GlobalData& src) {
  impl::CheckMove("TLOAD", dst, src);
  impl::Seat(dst, /*as_dst=*/false);
  using T = typename TileData::DType;
  T* out = dst.data();
  for (int i = 0; i < TileData::Numel; ++i) out[i] = impl::PadOf<TileData>();
  for (int r = 0; r < dst.GetValidRow(); ++r) {
    for (int c = 0; c < dst.GetValidCol(); ++c) {
      const auto value = src.At(r, c);
      std::memcpy(&dst(r, c), &value, sizeof(T));
    }
  }
  ptoserve::builtin::RecordLoad(detail::RefOf(dst));
}

// src's valid region into dst; nothing else of dst is written.
template <typename GlobalData, typename TileData>
void TSTORE(GlobalData& dst, TileData& src) {
  impl::CheckMove("TSTORE", src, dst);
  impl::Seat(src, /*as_dst=*/false);
  using G = std::remove_reference_t<decltype(dst.At(0, 0))>;
  for (int r = 0; r < src.GetValidRow(); ++r) {
    for (int c = 0; c < src.GetValidCol(); ++c) {
      G value;
      std::memcpy(&value, &src(r, c), sizeof(G));
      dst.At(r, c) = value;
    }
  }
  ptoserve::builtin::RecordStore(detail::RefOf(src));
}

}  // namespace PTO_TARGET_NAMESPACE
}  // namespace pto

#endif  // PTO_COMMON_MEMORY_HPP
