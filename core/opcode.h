// The instructions, by value. What each one is (its name, mnemonic, wire
// value, element operation) is in core/ops.h; how each target runs it, in
// core/targets/. Free of Abseil so that the built-in API can include it.
#ifndef PTOSERVE_CORE_OPCODE_H_
#define PTOSERVE_CORE_OPCODE_H_

#include <cstdint>

namespace ptoserve {

enum class Opcode : uint8_t { kTand, kTxor };

// How many values Opcode has.
inline constexpr int kOpcodeCount = 2;

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_OPCODE_H_
