// pto::RecordEvent: what an instruction of the built-in API returns, and
// what later instructions may name as events to wait on.
#ifndef PTO_COMMON_EVENT_HPP
#define PTO_COMMON_EVENT_HPP

#include "pto/common/target.hpp"

namespace pto {

// The instructions of this API.
enum class Op { TAND, TXOR };

// The record of one executed instruction. On the host every instruction has
// finished when it returns, so waiting on its event never blocks.
struct RecordEvent {
  Op op = Op::TAND;
  Target target = Target::Host;
  // How the target computed it, as the ptoserve backend describes it:
  // "vand", "direct xor", "tmp = vor(src0, src1); ...".
  const char* algorithm = "";
  // The kernel set it ran on, as the service's: "portable", "avx2", ...
  const char* kernels = "";
  // Its number among the instructions this thread ran since it started (or
  // since ResetKernel): the index a job's event of it has.
  uint32_t index = 0;

  void Wait() const {}
};

}  // namespace pto

#endif  // PTO_COMMON_EVENT_HPP
