// What the service shows for a job, written for a kernel's run through the
// built-in API: the event records and the Chrome trace of the instructions
// the thread's last pto::KernelRecording recorded (pto/common/recording.hpp),
// made by the service's own code (the engine's events, proto/codec.h's
// ToJobResult, client/chrome_trace.h's ChromeTrace).
//
//   pto::KernelRecording recording;
//   MyKernel(...);
//   std::string error;
//   if (!pto::WriteKernelTrace("kernel.trace.json", &error)) { ... }
//
// Link //client:kernel_trace beside //core/include:pto.
#ifndef PTOSERVE_CLIENT_KERNEL_TRACE_H_
#define PTOSERVE_CLIENT_KERNEL_TRACE_H_

#include <string>

#include "ptoserve/v1/job.pb.h"

namespace pto {

// The recorded run as the service's result of its job, without tiles: the
// target and one EventRecord per instruction (id "e0", "e1", ... from the
// recording's first instruction; its steps, notes, waits and, on targets
// whose tiles live in the unified buffer, where each operand lay). An
// instruction runs as soon as it is called: its queue time is 0 and it is
// a batch of its own.
ptoserve::v1::JobResult KernelResult();

// KernelResult() as proto3 JSON, as the HTTP API writes a job's result.
std::string KernelEventsJson();

// KernelResult() as a Chrome trace, as `ptoctl run --trace` writes one.
std::string KernelChromeTrace();

// Write KernelEventsJson() or KernelChromeTrace() to `path`; false with
// *error set if that fails, or if no instruction was recorded.
bool WriteKernelEvents(const char* path, std::string* error);
bool WriteKernelTrace(const char* path, std::string* error);

}  // namespace pto

#endif  // PTOSERVE_CLIENT_KERNEL_TRACE_H_
