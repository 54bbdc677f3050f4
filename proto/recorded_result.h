// A kernel's recorded run (core/builtin/recording.h) as the service's
// result of a job: what client/kernel_trace.h writes, so that a kernel's
// author sees the event records the service would show, without the
// engine's types.
#ifndef PTOSERVE_PROTO_RECORDED_RESULT_H_
#define PTOSERVE_PROTO_RECORDED_RESULT_H_

#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// This thread's last recording as a JobResult without tiles: the target
// and one EventRecord per instruction, in the order they ran.
v1::JobResult RecordedJobResult();

// Whether this thread's last recording kept any instruction.
bool AnyInstructionRecorded();

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_RECORDED_RESULT_H_
