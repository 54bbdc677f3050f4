// An instruction as a backend sees it: named operands for the checks
// (InstructionSig), then bound to tiles for the run (BoundInstruction), and
// the batches the scheduler hands over.
#ifndef PTOSERVE_CORE_BACKENDS_INSTRUCTION_H_
#define PTOSERVE_CORE_BACKENDS_INSTRUCTION_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/opcode.h"
#include "core/targets/target_spec.h"
#include "core/tile.h"
#include "core/trace.h"
#include "core/types.h"

namespace ptoserve {

// One operand as the rules see it.
struct Operand {
  absl::string_view role;          // "dst", "src0", "src1", "tmp"
  absl::string_view name;          // the tile's name in the job
  const TileDesc* desc = nullptr;  // nullptr: operand not given (tmp)
};

// An instruction about to be checked against a target's rules.
struct InstructionSig {
  size_t index = 0;
  Opcode opcode = Opcode::kTand;
  Mode mode = Mode::kAuto;
  Operand dst, src0, src1, tmp;
};

// An instruction bound to the tiles it runs on.
struct BoundInstruction {
  size_t index = 0;
  Opcode opcode = Opcode::kTand;
  Tile* dst = nullptr;
  const Tile* src0 = nullptr;
  const Tile* src1 = nullptr;
  Tile* tmp = nullptr;  // set only when the target uses tmp
};

// The tile in position `role`. REQUIRES: present (tmp only when used).
const Tile& OperandTile(const BoundInstruction& inst, Role role);

// The instructions of one backend call. All share a target, an opcode, an
// element type and a valid shape (the scheduler's batch key).
using Batch = absl::Span<const BoundInstruction* const>;
// One trace per instruction of a Batch, in the same order.
using BatchTraces = absl::Span<Trace* const>;

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BACKENDS_INSTRUCTION_H_
