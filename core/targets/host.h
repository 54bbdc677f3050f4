// The host CPU: the fast native path, one SIMD pass per instruction. Rows of
// any length; TXOR's tmp is accepted and unused. Runs TOR and TNOT too.
#ifndef PTOSERVE_CORE_TARGETS_HOST_H_
#define PTOSERVE_CORE_TARGETS_HOST_H_

#include <iterator>

#include "core/targets/target_spec.h"

namespace ptoserve {
namespace targets {

inline constexpr Step kHostTand[] = {
    BinaryStep("and", BitwiseOp::kAnd, Role::kDst, Role::kSrc0, Role::kSrc1)};
inline constexpr Step kHostTxor[] = {
    BinaryStep("xor", BitwiseOp::kXor, Role::kDst, Role::kSrc0, Role::kSrc1)};

// Beyond the seeds: the OR and NOT that a2a3's TXOR is built from.
inline constexpr Step kHostTor[] = {
    BinaryStep("or", BitwiseOp::kOr, Role::kDst, Role::kSrc0, Role::kSrc1)};
inline constexpr Step kHostTnot[] = {
    InvertStep("not", Role::kDst, Role::kSrc0)};

inline constexpr OpRule kHostOps[] = {
    {Opcode::kTand, kHostTand, std::size(kHostTand), false, "", false, ""},
    {Opcode::kTxor, kHostTxor, std::size(kHostTxor), false, "", false,
     "tmp unused"},
    {Opcode::kTor, kHostTor, std::size(kHostTor), false, "", false, ""},
    {Opcode::kTnot, kHostTnot, std::size(kHostTnot), false, "", false, ""},
};

inline constexpr TargetSpec kHost = {"host",
                                     "host CPU",
                                     /*buffer_bytes=*/1 << 20,
                                     /*row_alignment_bytes=*/1,
                                     /*auto_mode_in_buffer=*/false,
                                     kHostOps,
                                     std::size(kHostOps)};
static_assert(CoversEveryOpcode(kHost));

}  // namespace targets
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_HOST_H_
