// The host CPU: the fast native path, one SIMD pass per instruction. Rows of
// any length; TXOR's tmp is accepted and unused.
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

inline constexpr OpRule kHostOps[] = {
    {Opcode::kTand, kHostTand, std::size(kHostTand), false, "", false, ""},
    {Opcode::kTxor, kHostTxor, std::size(kHostTxor), false, "", false,
     "tmp unused"},
};

inline constexpr TargetSpec kHost = {
    "host", "host CPU", /*buffer_bytes=*/1 << 20, /*row_alignment_bytes=*/1,
    kHostOps, std::size(kHostOps)};
static_assert(CoversEveryOpcode(kHost));

}  // namespace targets
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_HOST_H_
