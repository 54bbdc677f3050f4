#include "core/backends/backend.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/error_site.h"
#include "core/status_macros.h"
#include "core/targets/targets.h"
#include "core/unified_buffer.h"

namespace ptoserve {

namespace {

constexpr uint64_t kVectorRepeatBytes = 256;

std::string SupportedNames(absl::Span<const DType> dtypes) {
  return absl::StrJoin(dtypes, ", ", [](std::string* out, DType d) {
    out->append(DTypeName(d).data(), DTypeName(d).size());
  });
}

// Formats rule violations with the instruction's coordinates in front,
// only when one is broken: an instruction that keeps the rules costs none.
class RuleError {
 public:
  RuleError(const InstructionSig& inst, Target target)
      : inst_(inst), target_(target) {}

  template <typename... Args>
  absl::Status operator()(const absl::FormatSpec<Args...>& format,
                          const Args&... args) const {
    return AtInstruction(
        absl::InvalidArgumentError(absl::StrCat(
            absl::StrFormat("instruction %u (%s on %s): ", inst_.index,
                            OpcodeName(inst_.opcode), TargetName(target_)),
            absl::StrFormat(format, args...))),
        inst_.index);
  }

 private:
  const InstructionSig& inst_;
  Target target_;
};

}  // namespace

Backend::Backend(Target target, const TargetSpec& spec, uint64_t buffer_bytes)
    : spec_(spec),
      rules_{target, spec.description, buffer_bytes, spec.row_alignment_bytes} {
}

uint64_t VectorRepeats(size_t rows, size_t row_bytes, bool contiguous) {
  if (contiguous) {
    return (uint64_t{rows} * row_bytes + kVectorRepeatBytes - 1) /
           kVectorRepeatBytes;
  }
  return uint64_t{rows} *
         ((row_bytes + kVectorRepeatBytes - 1) / kVectorRepeatBytes);
}

namespace {

// One instruction as the rules below see it.
struct Checked {
  const InstructionSig& inst;
  Target target;
  const TargetSpec& spec;
  const OpRule& rule;
  // dst, src0, src1, and tmp where the target computes through it.
  absl::InlinedVector<const Operand*, 4> operands;
  RuleError error;
};

// Each rule checks one thing; they run in this order, the first broken one
// answering.
using Rule = absl::Status (*)(const Checked& c);

absl::Status TargetRunsIt(const Checked& c) {
  if (c.rule.step_count > 0) return absl::OkStatus();
  std::string runners;
  for (Target t : kEveryTarget) {
    if (SpecOf(t).rule(c.inst.opcode).step_count == 0) continue;
    absl::StrAppend(&runners, runners.empty() ? "" : ", ", TargetName(t));
  }
  return c.error("%s does not run %s (%s does)", TargetName(c.target),
                 OpcodeName(c.inst.opcode), runners);
}

absl::Status TmpIsGiven(const Checked& c) {
  if (!c.rule.uses_tmp || c.inst.tmp.desc != nullptr) return absl::OkStatus();
  return c.error("tmp is required on %s: %s", TargetName(c.target),
                 c.rule.tmp_purpose);
}

absl::Status ElementTypesAgree(const Checked& c) {
  const TileDesc& dst = *c.inst.dst.desc;
  const absl::Span<const DType> dtypes = Op(c.inst.opcode).dtypes;
  if (std::find(dtypes.begin(), dtypes.end(), dst.dtype) == dtypes.end()) {
    return c.error("dst element type %s is not supported (supported: %s)",
                   DTypeName(dst.dtype), SupportedNames(dtypes));
  }
  for (const Operand* op : c.operands) {
    if (op->desc->dtype != dst.dtype) {
      return c.error("%s element type %s differs from dst element type %s",
                     op->role, DTypeName(op->desc->dtype),
                     DTypeName(dst.dtype));
    }
  }
  return absl::OkStatus();
}

absl::Status RowMajorVecTiles(const Checked& c) {
  for (const Operand* op : c.operands) {
    const TileDesc& d = *op->desc;
    if (d.layout != Layout::kRowMajor) {
      return c.error("%s \"%s\" is %s; %s needs row_major operands", op->role,
                     op->name, LayoutName(d.layout), OpcodeName(c.inst.opcode));
    }
    if (d.location != Location::kVec) {
      return c.error("%s \"%s\" is in %s; %s operates on vec tiles", op->role,
                     op->name, LocationName(d.location),
                     OpcodeName(c.inst.opcode));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidShapesAreDsts(const Checked& c) {
  const TileDesc& dst = *c.inst.dst.desc;
  for (const Operand* op : c.operands) {
    const TileDesc& d = *op->desc;
    if (op != &c.inst.dst &&
        (d.valid_rows != dst.valid_rows || d.valid_cols != dst.valid_cols)) {
      return c.error("%s valid shape %ux%u differs from dst valid shape %ux%u",
                     op->role, d.valid_rows, d.valid_cols, dst.valid_rows,
                     dst.valid_cols);
    }
  }
  return absl::OkStatus();
}

absl::Status RowsAligned(const Checked& c) {
  const uint32_t alignment = c.spec.row_alignment_bytes;
  if (alignment <= 1) return absl::OkStatus();
  for (const Operand* op : c.operands) {
    const TileDesc& d = *op->desc;
    if (d.row_bytes() % alignment != 0) {
      return c.error(
          "%s \"%s\" rows are %u bytes (%u %s columns); %s needs rows of a "
          "multiple of %u bytes",
          op->role, op->name, d.row_bytes(), d.cols, DTypeName(d.dtype),
          TargetName(c.target), alignment);
    }
  }
  return absl::OkStatus();
}

absl::Status TmpIsItsOwnTile(const Checked& c) {
  if (!c.rule.uses_tmp) return absl::OkStatus();
  for (const Operand* op : {&c.inst.dst, &c.inst.src0, &c.inst.src1}) {
    if (op->name == c.inst.tmp.name) {
      return c.error("tmp \"%s\" is also %s; %s", c.inst.tmp.name, op->role,
                     kTmpOwnTileReason);
    }
  }
  return absl::OkStatus();
}

absl::Status PlacementsDisjoint(const Checked& c) {
  if (!c.rule.operands_disjoint || c.inst.mode != Mode::kManual) {
    return absl::OkStatus();
  }
  for (size_t i = 0; i < c.operands.size(); ++i) {
    for (size_t j = i + 1; j < c.operands.size(); ++j) {
      const Operand& a = *c.operands[i];
      const Operand& b = *c.operands[j];
      // Tiles the client left unbound are placed later, apart from every
      // tile live beside them. The seed names no exception: one tile given
      // as both sources overlaps itself.
      if (!a.desc->address || !b.desc->address) continue;
      const ByteRange ra = PlacedRange(*a.desc);
      const ByteRange rb = PlacedRange(*b.desc);
      if (ra.Overlaps(rb)) {
        return c.error(
            "%s \"%s\" %s overlaps %s \"%s\" %s; in manual mode the "
            "regions of dst, src0, src1 and tmp must not overlap",
            a.role, a.name, ra.ToString(), b.role, b.name, rb.ToString());
      }
    }
  }
  return absl::OkStatus();
}

constexpr Rule kRules[] = {ElementTypesAgree,  RowMajorVecTiles,
                           ValidShapesAreDsts, RowsAligned,
                           TmpIsItsOwnTile,    PlacementsDisjoint};

}  // namespace

absl::Status Backend::Check(const InstructionSig& inst) const {
  Checked c{inst,  rules_.target,
            spec_, spec_.rule(inst.opcode),
            {},    RuleError(inst, rules_.target)};
  // Without its tmp the other rules cannot look at the operands.
  PTO_RETURN_IF_ERROR(TargetRunsIt(c));
  PTO_RETURN_IF_ERROR(TmpIsGiven(c));
  c.operands = {&inst.dst, &inst.src0, &inst.src1};
  if (c.rule.uses_tmp) c.operands.push_back(&inst.tmp);
  for (Rule rule : kRules) PTO_RETURN_IF_ERROR(rule(c));
  return absl::OkStatus();
}

void Backend::RunStaged(const BoundInstruction& inst, Trace* trace) const {
  Tile staged(inst.dst->desc());
  std::memcpy(staged.data(), inst.dst->data(), staged.size_bytes());
  BoundInstruction aside = inst;
  aside.dst = &staged;
  const BoundInstruction* one[] = {&aside};
  Run(one, absl::MakeConstSpan(&trace, 1));
  std::memcpy(inst.dst->data(), staged.data(), staged.size_bytes());
}

std::string Backend::Algorithm(Opcode opcode) const {
  return absl::StrCat(AlgorithmText(spec_.rule(opcode)), ", with ",
                      BestKernels().name, " kernels");
}

std::vector<OpcodeSupport> Backend::Supported() const {
  std::vector<OpcodeSupport> out;
  for (const OpInfo& op : kOps) {
    if (spec_.rule(op.opcode).step_count == 0) continue;
    out.push_back({op.opcode,
                   std::vector<DType>(op.dtypes.begin(), op.dtypes.end()),
                   UsesTmp(op.opcode), Algorithm(op.opcode)});
  }
  return out;
}

const Tile& OperandTile(const BoundInstruction& inst, Role role) {
  switch (role) {
    case Role::kDst:
      return *inst.dst;
    case Role::kSrc0:
      return *inst.src0;
    case Role::kSrc1:
      return *inst.src1;
    case Role::kTmp:
      return *inst.tmp;
  }
  return *inst.dst;
}

namespace {

// Records one micro-op over `inst`'s valid region reading `ins`.
void RecordStep(absl::string_view name, const BoundInstruction& inst, Role out,
                std::initializer_list<Role> ins, Trace* trace) {
  const TileDesc& d = inst.dst->desc();
  const size_t row_bytes = d.valid_row_bytes();
  bool contiguous = OperandTile(inst, out).desc().row_bytes() == row_bytes;
  MicroOp op{name, RoleName(out), {}, 0, uint64_t{d.valid_rows} * d.valid_cols};
  for (Role in : ins) {
    contiguous &= OperandTile(inst, in).desc().row_bytes() == row_bytes;
    op.srcs.push_back(RoleName(in));
  }
  op.repeats = VectorRepeats(d.valid_rows, row_bytes, contiguous);
  trace->ops.push_back(std::move(op));
}

ConstPlane In(const BoundInstruction& inst, Role role) {
  const Tile& t = OperandTile(inst, role);
  return ConstPlane{t.data(), t.desc().row_bytes()};
}

// Only dst and tmp are ever written.
Plane Out(const BoundInstruction& inst, Role role) {
  Tile* t = role == Role::kTmp ? inst.tmp : inst.dst;
  return Plane{t->data(), t->desc().row_bytes()};
}

Region ValidRegion(const BoundInstruction& inst) {
  const TileDesc& d = inst.dst->desc();
  return Region{d.valid_rows, d.valid_row_bytes()};
}

}  // namespace

void Backend::Run(Batch batch, BatchTraces traces) const {
  const KernelSet& kernels = BestKernels();
  const OpRule& rule = spec_.rule(batch[0]->opcode);
  for (size_t s = 0; s < rule.step_count; ++s) {
    const Step& step = rule.steps[s];
    for (size_t i = 0; i < batch.size(); ++i) {
      const BoundInstruction& inst = *batch[i];
      if (step.invert) {
        kernels.invert(ValidRegion(inst), In(inst, step.a),
                       Out(inst, step.out));
        RecordStep(step.micro_op, inst, step.out, {step.a}, traces[i]);
      } else {
        kernels.binary(step.op, ValidRegion(inst), In(inst, step.a),
                       In(inst, step.b), Out(inst, step.out));
        RecordStep(step.micro_op, inst, step.out, {step.a, step.b}, traces[i]);
      }
    }
  }
}

std::string Backend::UnusedTmpNote(Opcode opcode,
                                   absl::string_view name) const {
  if (UsesTmp(opcode)) return "";
  return absl::StrFormat("tmp \"%s\" is accepted and unused on %s", name,
                         TargetName(target()));
}

}  // namespace ptoserve
