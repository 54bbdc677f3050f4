// The instructions, by value. What each one is (its name, mnemonic, wire
// value, element operation) is in core/ops.h; how each target runs it, in
// core/targets/. Free of Abseil so that the built-in API can include it.
#ifndef PTOSERVE_CORE_OPCODE_H_
#define PTOSERVE_CORE_OPCODE_H_

#include <cstdint>

namespace ptoserve {

// TAND and TXOR are the seeds'; TOR and TNOT run on the host target only.
enum class Opcode : uint8_t { kTand, kTxor, kTor, kTnot };

// How many values Opcode has.
inline constexpr int kOpcodeCount = 4;

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_OPCODE_H_
