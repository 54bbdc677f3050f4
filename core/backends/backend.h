// A hardware target: its rules (validation) and its algorithms (execution).
//
// Each target lives in one file under core/backends/ (host.cc, a2a3.cc,
// a5.cc) holding its TargetRules and its Run(). Adding an instruction means
// one row in the opcode switch of each Run() plus, if new, one kernel.
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
#include "core/tile.h"
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

// One vector micro-operation of an instruction's implementation.
struct MicroOp {
  absl::string_view op;   // "vand", "vor", "vnot", "vxor", ...
  absl::string_view dst;  // operand written
  absl::InlinedVector<absl::string_view, 2> srcs;  // operands read
  uint64_t repeats = 0;   // 256-byte vector repeats covered
  uint64_t elements = 0;  // elements computed
};

// What a backend reports about running one instruction.
struct Trace {
  std::vector<MicroOp> ops;
  std::vector<std::string> notes;
};

// An operand position of an instruction.
enum class Role : uint8_t { kDst, kSrc0, kSrc1, kTmp };
// "dst", "src0", "src1", "tmp".
absl::string_view RoleName(Role role);
// The tile in position `role`. REQUIRES: present (tmp only when used).
const Tile& OperandTile(const BoundInstruction& inst, Role role);

// The instructions of one backend call. All share a target, an opcode, an
// element type and a valid shape (the scheduler's batch key).
using Batch = absl::Span<const BoundInstruction* const>;
// One trace per instruction of a Batch, in the same order.
using BatchTraces = absl::Span<Trace* const>;


// The data that makes one target different from another.
struct TargetRules {
  Target target;
  absl::string_view description;
  uint64_t buffer_bytes;          // unified buffer size (manual-mode bounds)
  uint32_t row_alignment_bytes;   // physical row bytes must be a multiple; 1: any
  // TXOR computes through tmp, which must then be given, typed and shaped
  // like dst, and distinct from the other operands.
  bool txor_uses_tmp;
  // In manual mode, TXOR's dst, src0, src1 and tmp must not overlap.
  bool txor_operands_disjoint;
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
  explicit Backend(const TargetRules& rules) : rules_(rules) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const TargetRules& rules() const { return rules_; }
  Target target() const { return rules_.target; }

  // Whether `opcode` computes through its tmp operand on this target.
  bool UsesTmp(Opcode opcode) const {
    return opcode == Opcode::kTxor && rules_.txor_uses_tmp;
  }

  // OK if `inst` may run here; else INVALID_ARGUMENT of the form
  // "instruction 2 (TXOR on a2a3): tmp element type int32 differs from dst
  // element type int16". Manual-mode placement of each tile is checked
  // separately (CheckPlacement); this checks the overlap rule.
  absl::Status Check(const InstructionSig& inst) const;

  std::vector<OpcodeSupport> Supported() const;

  // Executes every instruction of `batch`, appending what each did to its
  // trace: each micro-op runs over the whole batch before the next.
  // REQUIRES: Check passed for each; traces.size() == batch.size().
  virtual void Run(Batch batch, BatchTraces traces) const = 0;

 protected:
  // How this target computes `opcode`, e.g. "direct vxor".
  virtual std::string Algorithm(Opcode opcode) const = 0;

  // For each instruction of `batch`: out = a op b over dst's valid region
  // with the best kernels, recorded as micro-op `name`.
  static void Step(absl::string_view name, BitwiseOp op, Role out, Role a,
                   Role b, Batch batch, BatchTraces traces);
  // For each instruction of `batch`: out = ~in likewise.
  static void InvertStep(absl::string_view name, Role out, Role in,
                         Batch batch, BatchTraces traces);

 private:
  TargetRules rules_;
};

std::unique_ptr<Backend> MakeHostBackend(uint64_t buffer_bytes);
std::unique_ptr<Backend> MakeA2A3Backend();
std::unique_ptr<Backend> MakeA5Backend();

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
