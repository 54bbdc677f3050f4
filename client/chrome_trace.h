// A job's event records as a Chrome trace: the JSON trace-event format that
// Perfetto (ui.perfetto.dev) and chrome://tracing open (`ptoctl run
// --trace=FILE`).
#ifndef PTOSERVE_CLIENT_CHROME_TRACE_H_
#define PTOSERVE_CLIENT_CHROME_TRACE_H_

#include <string>

#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

// The job's process id and its rows' thread ids in a trace. Pipes get the
// first thread ids, in the Pipe enum's order; each instruction's wait gets
// a row of its own after them, in the order of the result's events. The
// metadata event that names the process carries the first thread id.
inline constexpr int kTraceProcessId = 1;
inline constexpr int kTraceFirstPipeThreadId = 1;

// `result`'s events as {"traceEvents": [...], "displayTimeUnit": "ns"},
// one event per line. Timestamps (ts) and durations (dur) are microseconds
// with three decimals (whole nanoseconds), counted from the earliest
// enqueue_time of the job's events.
//
// One process, the job, named "job ID (TARGET)" by a process_name metadata
// event (ph "M"); rows named by thread_name metadata events: one per pipe
// of the events (EventRecord.pipe: "PIPE_V"), then one per instruction's
// wait ("queue TAND e0"), so that no wait is drawn inside another's (they
// all start when the job arrives). Each instruction
// is a complete slice (ph "X", cat "instruction") named "TAND e0" on its
// pipe's row from start_time to end_time, with args instruction, event,
// opcode, pipe, batch_id, batch_size, waited_on, notes, queue_time_us,
// execution_time_us, steps and, when the event has them, operands (role,
// tile, begin and end as hex text, bytes). Its micro-op steps
// (EventRecord.trace) are child slices (cat "step", named by op: "vxor")
// that share the instruction's time evenly, in order, with args
// instruction, step, dst, srcs, repeats and elements. A queue slice (cat
// "queue") on the instruction's queue row runs from enqueue_time to
// start_time.
// Instructions of one batch share its time, so their slices stack.
//
// Strings are copied as they are (proto3 strings are UTF-8), escaped for
// JSON.
std::string ChromeTrace(const v1::JobResult& result);

}  // namespace ptoserve

#endif  // PTOSERVE_CLIENT_CHROME_TRACE_H_
