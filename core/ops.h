// The instructions ptoserve executes: one row each, read by every layer
// (types, codec, assembler, backends, capabilities, ptoctl) instead of a
// choice between TAND and TXOR written again in each.
//
// Adding an instruction: a value of Opcode, its row in kOps, its steps in
// each target that runs it (core/targets/), and its tests. A switch over
// Opcode anywhere else must be exhaustive so that the compiler names the
// places a new opcode reaches.
#ifndef PTOSERVE_CORE_OPS_H_
#define PTOSERVE_CORE_OPS_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/kernels.h"
#include "core/types.h"

namespace ptoserve {

// The element types the bitwise instructions accept on every target.
inline constexpr DType kBitwiseDTypes[] = {DType::kInt8,  DType::kUInt8,
                                           DType::kInt16, DType::kUInt16,
                                           DType::kInt32, DType::kUInt32};

// What one instruction is, whatever the target.
struct OpInfo {
  Opcode opcode;
  // "TAND": events, error messages, metric labels.
  absl::string_view name;
  // "tand": assembly (`tand`, `pto.tand`) and ptoctl's command.
  absl::string_view mnemonic;
  // Its number in ptoserve.v1.Opcode (proto/codec.cc converts by it;
  // codec_test checks each).
  int wire_value;
  // How many sources it reads: 2 (src0, src1), or 1 (src0 only).
  int sources;
  // dst = src0 op src1, element by element; with one source the other
  // operand is all ones (TNOT: src0 XOR ~0 = ~src0). The reference semantics.
  BitwiseOp op;
  // Whether a tmp operand may be given (a target may then require it).
  bool accepts_tmp;
  absl::Span<const DType> dtypes;
};

// Indexed by Opcode.
inline constexpr OpInfo kOps[] = {
    {Opcode::kTand, "TAND", "tand", 1, 2, BitwiseOp::kAnd,
     /*accepts_tmp=*/false, kBitwiseDTypes},
    {Opcode::kTxor, "TXOR", "txor", 2, 2, BitwiseOp::kXor,
     /*accepts_tmp=*/true, kBitwiseDTypes},
    {Opcode::kTor, "TOR", "tor", 3, 2, BitwiseOp::kOr,
     /*accepts_tmp=*/false, kBitwiseDTypes},
    {Opcode::kTnot, "TNOT", "tnot", 4, 1, BitwiseOp::kXor,
     /*accepts_tmp=*/false, kBitwiseDTypes},
};

constexpr bool OpsIndexedByOpcode() {
  if (sizeof(kOps) / sizeof(kOps[0]) != static_cast<size_t>(kOpcodeCount)) {
    return false;
  }
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (static_cast<size_t>(kOps[i].opcode) != i) return false;
  }
  return true;
}
static_assert(OpsIndexedByOpcode(),
              "kOps must have one row per Opcode, in order");

inline constexpr const OpInfo& Op(Opcode opcode) {
  return kOps[static_cast<size_t>(opcode)];
}

// "TAND", "TXOR".
inline constexpr absl::string_view OpcodeName(Opcode opcode) {
  return Op(opcode).name;
}

// The row whose mnemonic is `mnemonic` ("tand"), or nullptr.
inline const OpInfo* FindOpByMnemonic(absl::string_view mnemonic) {
  for (const OpInfo& op : kOps) {
    if (op.mnemonic == mnemonic) return &op;
  }
  return nullptr;
}

// The row whose wire number is `wire_value`, or nullptr.
inline const OpInfo* FindOpByWireValue(int wire_value) {
  for (const OpInfo& op : kOps) {
    if (op.wire_value == wire_value) return &op;
  }
  return nullptr;
}

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_OPS_H_
