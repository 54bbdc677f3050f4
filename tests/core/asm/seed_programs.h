// The assembly in the seeds (TAND.txt, TXOR.txt), character for character:
// each line of "Assembly Syntax" as a program of its own, and each block of
// "ASM Examples" and "PTO Assembly Form" as a whole program.
#ifndef PTOSERVE_TESTS_CORE_ASM_SEED_PROGRAMS_H_
#define PTOSERVE_TESTS_CORE_ASM_SEED_PROGRAMS_H_

#include "core/types.h"

namespace ptoserve {
namespace test {

struct SeedProgram {
  const char* name;  // "TAND Assembly Syntax, synchronous form"
  Opcode opcode;
  const char* text;
};

inline constexpr SeedProgram kSeedPrograms[] = {
    {"TAND Assembly Syntax, synchronous form", Opcode::kTand,
     "%dst = tand %src0, %src1 : !pto.tile<...>"},
    {"TAND Assembly Syntax, AS Level 1 (SSA)", Opcode::kTand,
     "%dst = pto.tand %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>"},
    {"TAND Assembly Syntax, AS Level 2 (DPS)", Opcode::kTand,
     "pto.tand ins(%src0, %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
     "outs(%dst : !pto.tile_buf<...>)"},
    {"TAND ASM Examples, Automatic Mode", Opcode::kTand,
     "# Automatic mode: the compiler/runtime is responsible for resource "
     "placement and scheduling.\n"
     "%dst = pto.tand %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>\n"},
    {"TAND ASM Examples, Manual Mode", Opcode::kTand,
     "# Manual mode: explicitly bind resources first, then issue the "
     "instruction.\n"
     "# Optional (when the instruction contains tile operands):\n"
     "# pto.tassign %arg0, @tile(0x1000)\n"
     "# pto.tassign %arg1, @tile(0x2000)\n"
     "%dst = pto.tand %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>\n"},
    {"TAND PTO Assembly Form", Opcode::kTand,
     "%dst = tand %src0, %src1 : !pto.tile<...>\n"
     "# AS Level 2 (DPS)\n"
     "pto.tand ins(%src0, %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
     "outs(%dst : !pto.tile_buf<...>)\n"},
    {"TXOR Assembly Syntax, synchronous form", Opcode::kTxor,
     "%dst = txor %src0, %src1 : !pto.tile<...>"},
    {"TXOR Assembly Syntax, AS Level 1 (SSA)", Opcode::kTxor,
     "%dst = pto.txor %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>"},
    {"TXOR Assembly Syntax, AS Level 2 (DPS)", Opcode::kTxor,
     "pto.txor ins(%src0, %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
     "outs(%dst : !pto.tile_buf<...>)"},
    {"TXOR ASM Examples, Automatic Mode", Opcode::kTxor,
     "# Automatic mode: the compiler/runtime is responsible for resource "
     "placement and scheduling.\n"
     "%dst = pto.txor %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>\n"},
    {"TXOR ASM Examples, Manual Mode", Opcode::kTxor,
     "# Manual mode: explicitly bind resources first, then issue the "
     "instruction.\n"
     "# Optional (when the instruction contains tile operands):\n"
     "# pto.tassign %arg0, @tile(0x1000)\n"
     "# pto.tassign %arg1, @tile(0x2000)\n"
     "%dst = pto.txor %src0, %src1 : (!pto.tile<...>, !pto.tile<...>) -> "
     "!pto.tile<...>\n"},
    {"TXOR PTO Assembly Form", Opcode::kTxor,
     "%dst = txor %src0, %src1 : !pto.tile<...>\n"
     "# AS Level 2 (DPS)\n"
     "pto.txor ins(%src0, %src1 : !pto.tile_buf<...>, !pto.tile_buf<...>) "
     "outs(%dst : !pto.tile_buf<...>)\n"},
};

}  // namespace test
}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_CORE_ASM_SEED_PROGRAMS_H_
