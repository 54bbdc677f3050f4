// The host CPU target: the fast native path. One SIMD pass per instruction;
// TXOR's tmp is accepted and unused.
#include "core/backends/backend.h"

namespace ptoserve {

namespace {

class HostBackend final : public Backend {
 public:
  explicit HostBackend(uint64_t buffer_bytes)
      : Backend(TargetRules{
            .target = Target::kHost,
            .description = "host CPU",
            .buffer_bytes = buffer_bytes,
            .row_alignment_bytes = 1,
            .txor_uses_tmp = false,
            .txor_operands_disjoint = false,
        }) {}

  void Run(Batch batch, BatchTraces traces) const override {
    const bool is_and = batch[0]->opcode == Opcode::kTand;
    Step(is_and ? "and" : "xor", is_and ? BitwiseOp::kAnd : BitwiseOp::kXor,
         Role::kDst, Role::kSrc0, Role::kSrc1, batch, traces);
  }

 protected:
  std::string Algorithm(Opcode opcode) const override {
    return std::string(opcode == Opcode::kTand ? "direct and" : "direct xor") +
           " (" + BestKernels().name + " kernels)";
  }
};

}  // namespace

std::unique_ptr<Backend> MakeHostBackend(uint64_t buffer_bytes) {
  return std::make_unique<HostBackend>(buffer_bytes);
}

}  // namespace ptoserve
