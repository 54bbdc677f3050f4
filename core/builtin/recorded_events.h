// The events of a kernel's recorded run (core/builtin/recording.h): one per
// instruction the API ran while a recording was on, as the engine fills a
// job's (core/job.h), for what turns them into the service's result of a
// job (proto/recorded_result.h, which client/kernel_trace.h writes). Not
// for the API's users: it names the engine's types.
#ifndef PTOSERVE_CORE_BUILTIN_RECORDED_EVENTS_H_
#define PTOSERVE_CORE_BUILTIN_RECORDED_EVENTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/job.h"

namespace ptoserve {
namespace builtin {

// Whether this thread is recording.
bool RecordingOn();

// ResetKernel ran: a run recorded past an instruction is no job any more,
// and numbering starts again.
void RecordReset();

// Keeps `event`, what running the thread's instruction `index` did, in
// this thread's recording, numbered as the recorded job numbers it, with
// the `num_waits` instructions numbered in `waits` as those it waited on.
void RecordRan(Event event, uint32_t index, const uint32_t* waits,
               size_t num_waits);

// What this thread's last recording kept: its target and its events, in
// the order the instructions ran.
Target RecordedTarget();
const std::vector<Event>& RecordedEvents();

}  // namespace builtin
}  // namespace ptoserve

#endif  // PTOSERVE_CORE_BUILTIN_RECORDED_EVENTS_H_
