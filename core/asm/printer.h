// Writes a Program as canonical PTO assembly: one statement per line, every
// instruction in the AS level 2 (DPS) form, types as spelled (or `<...>`),
// keys in a fixed order, addresses in hexadecimal, comments kept. This is
// what `ptoctl fmt` prints. Parse(Print(p)) == p for every parsed p.
#ifndef PTOSERVE_CORE_ASM_PRINTER_H_
#define PTOSERVE_CORE_ASM_PRINTER_H_

#include <string>

#include "core/asm/ast.h"

namespace ptoserve {
namespace pasm {

// The whole program, each line ending in '\n'.
std::string Print(const Program& program);

// "!pto.tile_buf<dtype=i16, rows=16>", "!pto.tile<...>"
std::string Print(const TileBufType& type);

// One statement, without a line end:
// "pto.txor ins(%a, %b : !pto.tile<...>, !pto.tile<...>) outs(%c :
// !pto.tile<...>)"
std::string Print(const Statement& statement);

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_PRINTER_H_
