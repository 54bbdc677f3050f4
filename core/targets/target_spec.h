// What a target is: its buffer and alignment rules, and for each
// instruction the steps it runs. Each target's spec is one header of
// constants beside this one (host.h, a2a3.h, a5.h); the service's backend
// (core/backends/) and the built-in API (core/include/pto/) both execute
// those steps, and the algorithm text GetCapabilities reports is printed
// from them.
//
// Plain C++ without Abseil: the built-in API's users include it.
#ifndef PTOSERVE_CORE_TARGETS_TARGET_SPEC_H_
#define PTOSERVE_CORE_TARGETS_TARGET_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/kernels.h"
#include "core/opcode.h"

namespace ptoserve {

// An operand position of an instruction.
enum class Role : uint8_t { kDst, kSrc0, kSrc1, kTmp };

// "dst", "src0", "src1", "tmp".
constexpr const char* RoleName(Role role) {
  switch (role) {
    case Role::kDst:
      return "dst";
    case Role::kSrc0:
      return "src0";
    case Role::kSrc1:
      return "src1";
    case Role::kTmp:
      return "tmp";
  }
  return "?";
}

// One vector micro-operation over dst's valid region: out = a op b, or,
// when `invert`, out = ~a.
struct Step {
  const char* micro_op;  // "vand", "vnot", ...: traces and algorithm text
  bool invert;
  BitwiseOp op;    // unused when invert
  Role out, a, b;  // b unused when invert
};

constexpr Step BinaryStep(const char* micro_op, BitwiseOp op, Role out, Role a,
                          Role b) {
  return Step{micro_op, false, op, out, a, b};
}
constexpr Step InvertStep(const char* micro_op, Role out, Role in) {
  return Step{micro_op, true, BitwiseOp::kAnd, out, in, in};
}

// Why tmp must differ from the other operands where a target computes
// through it.
inline constexpr char kTmpOwnTileReason[] =
    "tmp must be a tile of its own because it is written before the sources "
    "are read again";

// How one target runs one instruction.
struct OpRule {
  Opcode opcode;
  const Step* steps;
  size_t step_count;  // 0: the target does not run this instruction
  // Computes through tmp: tmp must then be given, typed, laid out and
  // shaped like dst, and a tile of its own (kTmpOwnTileReason).
  bool uses_tmp;
  // What tmp holds, for the error when it is missing; "" unless uses_tmp.
  const char* tmp_purpose;
  // In manual mode, the regions of dst, src0, src1 and tmp must not overlap.
  bool operands_disjoint;
  // Said after the steps in the algorithm text, e.g. "tmp unused"; or "".
  const char* note;
};

struct TargetSpec {
  const char* name;  // "a2a3"
  const char* description;
  // The on-chip unified buffer: manual-mode addresses must fall inside it
  // (the host's is --host_buffer_kb; this is its default).
  uint64_t buffer_bytes;
  // Every operand's physical rows must be a multiple of this; 1: any.
  uint32_t row_alignment_bytes;
  // Whether auto-mode tiles live in the buffer too, placed by the engine
  // and bounded by its size. The host has no on-chip buffer to model, so
  // its auto-mode tiles are ordinary memory.
  bool auto_mode_in_buffer;
  // One per Opcode, in Opcode order.
  const OpRule* ops;
  size_t op_count;

  constexpr const OpRule& rule(Opcode opcode) const {
    return ops[static_cast<size_t>(opcode)];
  }
};

// A rule for an instruction the target does not run.
constexpr OpRule Unsupported(Opcode opcode) {
  return OpRule{opcode, nullptr, 0, false, "", false, ""};
}

// Whether `spec` has one rule per opcode, in Opcode order.
constexpr bool CoversEveryOpcode(const TargetSpec& spec) {
  if (spec.op_count != static_cast<size_t>(kOpcodeCount)) return false;
  for (size_t i = 0; i < spec.op_count; ++i) {
    if (static_cast<size_t>(spec.ops[i].opcode) != i) return false;
  }
  return true;
}

// The steps as text: "tmp = vor(src0, src1); dst = vand(src0, src1);
// dst = vnot(dst); dst = vand(dst, tmp)", then " (NOTE)" if there is one.
inline std::string AlgorithmText(const OpRule& rule) {
  std::string text;
  for (size_t i = 0; i < rule.step_count; ++i) {
    const Step& s = rule.steps[i];
    if (i > 0) text += "; ";
    text +=
        std::string(RoleName(s.out)) + " = " + s.micro_op + "(" + RoleName(s.a);
    if (!s.invert) text += std::string(", ") + RoleName(s.b);
    text += ")";
  }
  if (rule.note[0] != '\0') text += std::string(" (") + rule.note + ")";
  return text;
}

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TARGETS_TARGET_SPEC_H_
