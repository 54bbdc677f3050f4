// A hardware target as the engine uses it: the checks its rules imply and
// the execution of its steps over a batch. What differs from one target to
// the next is data, in core/targets/ (one header each); this one Backend
// class serves them all.
#ifndef PTOSERVE_CORE_BACKENDS_BACKEND_H_
#define PTOSERVE_CORE_BACKENDS_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/kernels.h"
#include "core/ops.h"
#include "core/targets/target_spec.h"
#include "core/tile.h"
#include "core/trace.h"
#include "core/types.h"

namespace ptoserve {

// One operand as the rules see it.
struct Operand {
  absl::string_view role;            // "dst", "src0", "src1", "tmp"
  absl::string_view name;            // the tile's name in the job
  const TileDesc* desc = nullptr;    // nullptr: operand not given (tmp)
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


// A target's figures, as GetCapabilities reports them.
struct TargetRules {
  Target target;
  absl::string_view description;
  uint64_t buffer_bytes;          // unified buffer size (manual-mode bounds)
  uint32_t row_alignment_bytes;   // physical row bytes must be a multiple; 1: any
};

// What one opcode supports on one target (for GetCapabilities).
struct OpcodeSupport {
  Opcode opcode;
  std::vector<DType> dtypes;
  bool tmp_required;
  std::string algorithm;
};

// Number of 256-byte vector repeats that cover `rows` rows of `row_bytes`
// bytes: one run when the rows are contiguous, else whole repeats per row.
uint64_t VectorRepeats(size_t rows, size_t row_bytes, bool contiguous);

class Backend {
 public:
  // `target` as `spec` describes it, with a unified buffer of
  // `buffer_bytes`.
  Backend(Target target, const TargetSpec& spec, uint64_t buffer_bytes);
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const TargetRules& rules() const { return rules_; }
  const TargetSpec& spec() const { return spec_; }
  Target target() const { return rules_.target; }

  // Whether `opcode` computes through its tmp operand on this target.
  bool UsesTmp(Opcode opcode) const { return spec_.rule(opcode).uses_tmp; }

  // OK if `inst` may run here; else INVALID_ARGUMENT of the form
  // "instruction 2 (TXOR on a2a3): tmp element type int32 differs from dst
  // element type int16". Manual-mode placement of each tile is checked
  // separately (CheckPlacement); this checks the overlap rule.
  absl::Status Check(const InstructionSig& inst) const;

  std::vector<OpcodeSupport> Supported() const;

  // Executes every instruction of `batch`, appending what each did to its
  // trace: each of the opcode's steps runs over the whole batch before the
  // next, with the best kernels.
  // REQUIRES: Check passed for each; traces.size() == batch.size().
  void Run(Batch batch, BatchTraces traces) const;

  // How this target computes `opcode`: its steps, then the kernels that
  // run them, e.g. "dst = vxor(src0, src1) (tmp unused), with avx2 kernels".
  std::string Algorithm(Opcode opcode) const;

 private:
  TargetSpec spec_;
  TargetRules rules_;
};

// Owns one backend per target.
class BackendRegistry {
 public:
  // `host_buffer_bytes`: the host target's unified buffer (manual mode).
  explicit BackendRegistry(uint64_t host_buffer_bytes);

  const Backend& Get(Target target) const;
  // In Target order.
  std::vector<const Backend*> All() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;  // indexed by Target
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BACKENDS_BACKEND_H_
