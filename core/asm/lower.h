// Lowering: binds a parsed program to a request's tiles and target and
// produces the engine job it means (docs/ASSEMBLY.md has the user's view).
//
//  - Each operation becomes one Instruction, in program order. Instruction N
//    records event "eN" and names no waits: the engine orders instructions
//    that share a tile as program order would, so the text needs no syntax
//    for events.
//  - `%name` is tile "name" of the request, or a tile that an earlier
//    operation defined. `%dst = ...` defines a new tile; `outs(%dst : T)`
//    writes an existing one or defines a new one. A new tile is shaped by
//    its spelled-out type, with every key the type leaves out (or `?`, or
//    the whole type as `...`) taken from %src0; a new DPS tmp likewise from
//    %dst.
//  - A spelled-out type of an existing tile must agree with it key by key.
//  - `pto.tassign %t, @tile(A)` sets tile t's address; a program with any
//    binding runs in manual mode.
//  - Where the target computes TXOR through a tmp (a2a3) and the text names
//    none (the SSA and synchronous forms cannot), the lowering adds a
//    scratch tile "<dst>.tmp" shaped like dst, placed in manual mode after
//    the highest-placed tile, and notes this in the instruction's event.
#ifndef PTOSERVE_CORE_ASM_LOWER_H_
#define PTOSERVE_CORE_ASM_LOWER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/asm/ast.h"
#include "core/engine.h"

namespace ptoserve {
namespace pasm {

// The job that runs `program` on `base`'s tiles (TileInput names are the
// program's %names without the '%'), target (unset: `engine`'s default
// target) and mode, with `base`'s outputs. The tiles keep borrowing what
// `base`'s borrowed. INVALID_ARGUMENT "line:column: ..." for what the
// program gets wrong about the tiles, e.g.
// `3:12: type of %src0 says dtype=i16 but tile "src0" is int32`;
// the target's rules are left to Engine::Prepare (see Locate).
// REQUIRES: base.instructions is empty.
absl::StatusOr<JobSpec> Lower(const Program& program, JobSpec base,
                              const Engine& engine);

// Puts the source position of what an engine error is about in front of
// it: "instruction N (...)" gets the position of the N-th operation (from
// 0), `tile "x": ...` the position where the program first names %x, e.g.
// `2:1: instruction 1 (TXOR on a2a3): tmp element type ...`. Other statuses,
// OK included, come back unchanged.
absl::Status Locate(const Program& program, const absl::Status& status);

}  // namespace pasm
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_ASM_LOWER_H_
