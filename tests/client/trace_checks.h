// The rules every Chrome trace of a job (client/chrome_trace.h) follows,
// checked on the JSON text: by the unit tests on hand-made results and by
// ptoctl_test on a real server's.
#ifndef PTOSERVE_TESTS_CLIENT_TRACE_CHECKS_H_
#define PTOSERVE_TESTS_CLIENT_TRACE_CHECKS_H_

#include <google/protobuf/struct.pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptoserve {

// One complete ("X") slice of a trace.
struct TraceSlice {
  std::string name;
  std::string category;  // "instruction", "step" or "queue"
  // In whole nanoseconds (the file's microseconds, times 1000).
  int64_t ts = 0;
  int64_t dur = 0;
  int tid = 0;
  google::protobuf::Struct args;
};

struct ParsedTrace {
  std::string process_name;
  std::map<int, std::string> threads;  // tid -> thread_name
  // Each category's slices, in the file's order.
  std::vector<TraceSlice> instructions, steps, queued;
};

// Parses `json` and reports, as gtest failures, each rule it breaks:
// {"traceEvents": [...], "displayTimeUnit": "ns"}; every event has ph, ts,
// pid and tid, and there is one pid; one process_name; one thread_name per
// row: "queue" and one per pipe that the instructions ran on; one
// instruction slice per instruction, on its pipe's row, with its args; its
// step slices on the same row, in order, one after the other, filling it;
// one queue slice per instruction, on the queue row, ending where the
// instruction starts; no slice before time 0 or of negative duration.
// Returns what it parsed, for the caller's own expectations.
ParsedTrace CheckChromeTrace(const std::string& json);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_CLIENT_TRACE_CHECKS_H_
