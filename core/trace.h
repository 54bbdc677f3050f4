// What running one instruction did, step by step: the vector
// micro-operations a backend ran and the notes it made. Events carry it back
// to clients (JobResult's trace).
#ifndef PTOSERVE_CORE_TRACE_H_
#define PTOSERVE_CORE_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace ptoserve {

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
  // In place for the common instruction, one or two micro-ops.
  absl::InlinedVector<MicroOp, 2> ops;
  std::vector<std::string> notes;
};

}  // namespace ptoserve

#endif  // PTOSERVE_CORE_TRACE_H_
