// Atlas A2/A3 training and inference products ("a2a3").
//
// Rules: a 192 KiB unified buffer; every operand's rows a multiple of 32
// bytes. The vector unit has no xor, so TXOR is computed by decomposition,
// XOR(a,b) = AND(NOT(AND(a,b)), OR(a,b)), in four steps through tmp; in
// manual mode TXOR's dst, src0, src1 and tmp must not overlap.
#ifndef PTOSERVE_CORE_TARGETS_A2A3_H_
#define PTOSERVE_CORE_TARGETS_A2A3_H_

#include <iterator>

#include "core/targets/target_spec.h"

namespace ptoserve {
namespace targets {

inline constexpr Step kA2A3Tand[] = {
    BinaryStep("vand", BitwiseOp::kAnd, Role::kDst, Role::kSrc0, Role::kSrc1)};
inline constexpr Step kA2A3Txor[] = {
    BinaryStep("vor", BitwiseOp::kOr, Role::kTmp, Role::kSrc0, Role::kSrc1),
    BinaryStep("vand", BitwiseOp::kAnd, Role::kDst, Role::kSrc0, Role::kSrc1),
    InvertStep("vnot", Role::kDst, Role::kDst),
    BinaryStep("vand", BitwiseOp::kAnd, Role::kDst, Role::kDst, Role::kTmp),
};

inline constexpr OpRule kA2A3Ops[] = {
    {Opcode::kTand, kA2A3Tand, std::size(kA2A3Tand), false, "", false, ""},
    {Opcode::kTxor, kA2A3Txor, std::size(kA2A3Txor), /*uses_tmp=*/true,
     "it holds OR(src0, src1) in XOR = AND(NOT(AND(src0, src1)), OR(src0, "
     "src1))",
     /*operands_disjoint=*/true, ""},
    Unsupported(Opcode::kTor),
    Unsupported(Opcode::kTnot),
};

inline constexpr TargetSpec kA2A3 = {
    "a2a3",
    "Atlas A2/A3 training and inference products",
    /*buffer_bytes=*/192 * 1024,
    /*row_alignment_bytes=*/32,
    /*auto_mode_in_buffer=*/true,
    kA2A3Ops,
    std::size(kA2A3Ops)};
static_assert(CoversEveryOpcode(kA2A3));

}  // namespace targets
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_A2A3_H_
