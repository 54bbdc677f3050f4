// Ascend 950PR/950DT ("a5").
//
// Rules: a 256 KiB unified buffer; every operand's rows a multiple of 32
// bytes. TAND is one vand, TXOR one direct vxor; TXOR's tmp is accepted for
// compatibility with a2a3 and never touched.
#ifndef PTOSERVE_CORE_TARGETS_A5_H_
#define PTOSERVE_CORE_TARGETS_A5_H_

#include <iterator>

#include "core/targets/target_spec.h"

namespace ptoserve {
namespace targets {

inline constexpr Step kA5Tand[] = {
    BinaryStep("vand", BitwiseOp::kAnd, Role::kDst, Role::kSrc0, Role::kSrc1)};
inline constexpr Step kA5Txor[] = {
    BinaryStep("vxor", BitwiseOp::kXor, Role::kDst, Role::kSrc0, Role::kSrc1)};

inline constexpr OpRule kA5Ops[] = {
    {Opcode::kTand, kA5Tand, std::size(kA5Tand), false, "", false, ""},
    {Opcode::kTxor, kA5Txor, std::size(kA5Txor), false, "", false,
     "tmp unused"},
    Unsupported(Opcode::kTor),
    Unsupported(Opcode::kTnot),
};

inline constexpr TargetSpec kA5 = {"a5",
                                   "Ascend 950PR/950DT",
                                   /*buffer_bytes=*/256 * 1024,
                                   /*row_alignment_bytes=*/32,
                                   /*auto_mode_in_buffer=*/true,
                                   kA5Ops,
                                   std::size(kA5Ops)};
static_assert(CoversEveryOpcode(kA5));

}  // namespace targets
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_A5_H_
