// Ascend 950PR/950DT ("a5").
//
// Rules: 256 KiB unified buffer; every operand's rows a multiple of 32 bytes.
// Algorithm: TAND is one vand, TXOR one direct vxor; TXOR's tmp is accepted
// for API compatibility with a2a3 and never touched.
#include "core/backends/backend.h"

namespace ptoserve {

namespace {

class A5Backend final : public Backend {
 public:
  A5Backend()
      : Backend(TargetRules{
            .target = Target::kA5,
            .description = "Ascend 950PR/950DT",
            .buffer_bytes = 256 * 1024,
            .row_alignment_bytes = 32,
            .txor_uses_tmp = false,
            .txor_operands_disjoint = false,
        }) {}

  void Run(Batch batch, BatchTraces traces) const override {
    const bool is_and = batch[0]->opcode == Opcode::kTand;
    Step(is_and ? "vand" : "vxor", is_and ? BitwiseOp::kAnd : BitwiseOp::kXor,
         Role::kDst, Role::kSrc0, Role::kSrc1, batch, traces);
  }

 protected:
  std::string Algorithm(Opcode opcode) const override {
    return opcode == Opcode::kTand ? "vand" : "direct vxor (tmp unused)";
  }
};

}  // namespace

std::unique_ptr<Backend> MakeA5Backend() {
  return std::make_unique<A5Backend>();
}

}  // namespace ptoserve
