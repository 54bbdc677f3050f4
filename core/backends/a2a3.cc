// Atlas A2/A3 training and inference products ("a2a3").
//
// Rules: 192 KiB unified buffer; every operand's rows a multiple of 32 bytes;
// TXOR needs tmp (same element type, row-major, valid shape of dst), and in
// manual mode dst, src0, src1 and tmp must not overlap.
// Algorithm: the vector unit has no xor, so TXOR is computed by
// decomposition, XOR(a,b) = AND(NOT(AND(a,b)), OR(a,b)), in four steps.
#include "core/backends/backend.h"

namespace ptoserve {

namespace {

class A2A3Backend final : public Backend {
 public:
  A2A3Backend()
      : Backend(TargetRules{
            .target = Target::kA2A3,
            .description = "Atlas A2/A3 training and inference products",
            .buffer_bytes = 192 * 1024,
            .row_alignment_bytes = 32,
            .txor_uses_tmp = true,
            .txor_operands_disjoint = true,
        }) {}

  void Run(Batch batch, BatchTraces traces) const override {
    using R = Role;
    if (batch[0]->opcode == Opcode::kTand) {
      Step("vand", BitwiseOp::kAnd, R::kDst, R::kSrc0, R::kSrc1, batch, traces);
      return;
    }
    // tmp = OR(a,b); dst = AND(a,b); dst = NOT(dst); dst = AND(dst,tmp).
    Step("vor", BitwiseOp::kOr, R::kTmp, R::kSrc0, R::kSrc1, batch, traces);
    Step("vand", BitwiseOp::kAnd, R::kDst, R::kSrc0, R::kSrc1, batch, traces);
    InvertStep("vnot", R::kDst, R::kDst, batch, traces);
    Step("vand", BitwiseOp::kAnd, R::kDst, R::kDst, R::kTmp, batch, traces);
  }

 protected:
  std::string Algorithm(Opcode opcode) const override {
    return opcode == Opcode::kTand
               ? "vand"
               : "tmp = vor(src0, src1); dst = vand(src0, src1); "
                 "dst = vnot(dst); dst = vand(dst, tmp)";
  }
};

}  // namespace

std::unique_ptr<Backend> MakeA2A3Backend() {
  return std::make_unique<A2A3Backend>();
}

}  // namespace ptoserve
