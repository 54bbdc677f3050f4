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
#include "core/backends/instruction.h"
#include "core/kernels.h"
#include "core/ops.h"
#include "core/targets/target_spec.h"
#include "core/tile.h"
#include "core/trace.h"
#include "core/types.h"

namespace ptoserve {

// A target's figures, as GetCapabilities reports them.
struct TargetRules {
  Target target;
  absl::string_view description;
  uint64_t buffer_bytes;  // unified buffer size (see TargetSpec)
  uint32_t
      row_alignment_bytes;  // physical row bytes must be a multiple; 1: any
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

  // The note an instruction's event carries when it names tmp `name` and
  // `opcode` does not use one here: `tmp "t" is accepted and unused on
  // host`; "" when it does.
  std::string UnusedTmpNote(Opcode opcode, absl::string_view name) const;

  // OK if `inst` may run here; else INVALID_ARGUMENT of the form
  // "instruction 2 (TXOR on a2a3): tmp element type int32 differs from dst
  // element type int16". Each address is checked separately
  // (CheckPlacement); this checks the overlap rule between tiles the
  // client bound, since the engine places the others apart.
  absl::Status Check(const InstructionSig& inst) const;

  std::vector<OpcodeSupport> Supported() const;

  // Executes every instruction of `batch`, appending what each did to its
  // trace: each of the opcode's steps runs over the whole batch before the
  // next, with the best kernels.
  // REQUIRES: Check passed for each; traces.size() == batch.size().
  void Run(Batch batch, BatchTraces traces) const;

  // Executes one instruction whose dst overlaps a source without being the
  // same place (MustStageDst): dst is computed into a copy of itself (its
  // bytes outside the valid region kept) and copied into place, so that
  // every source is read before any of dst is written, as a vector unit
  // does. REQUIRES: Check passed.
  void RunStaged(const BoundInstruction& inst, Trace* trace) const;

  // How this target computes `opcode`: its steps, then the kernels that
  // run them, e.g. "dst = vxor(src0, src1) (tmp unused), with avx2 kernels".
  std::string Algorithm(Opcode opcode) const;

 private:
  TargetSpec spec_;
  TargetRules rules_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BACKENDS_BACKEND_H_
