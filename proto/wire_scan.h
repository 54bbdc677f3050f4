// The wire scan: a serialized Job or JobBatch checked, before it is parsed,
// for what parsing it would cost; from the schema's field numbers alone.
#ifndef PTOSERVE_PROTO_WIRE_SCAN_H_
#define PTOSERVE_PROTO_WIRE_SCAN_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/job.h"

namespace ptoserve {

// Checks a serialized Job, before it is parsed, for what parsing it would
// make the server pay for: the counts of tiles, instructions, outputs and
// waits per instruction, and the assembly's size (RESOURCE_EXHAUSTED over
// `limits`), and names longer than kMaxNameBytes (INVALID_ARGUMENT, quoting
// their start), and fields of no ptoserve.v1 message beyond a few (protobuf
// keeps each). `bytes` holds `size` bytes. Reads them once and allocates
// nothing. Bytes that are malformed anywhere (a field running past the end
// of its message, a bad tag) are INVALID_ARGUMENT "is not a ptoserve.v1.Job:
// its protobuf encoding is truncated or corrupt", whatever else is wrong
// with them; what only the parser checks (UTF-8 in strings) is left to it.
// Returns what it counted.
struct WireShape {
  size_t tiles = 0;
  size_t instructions = 0;
  size_t assembly_bytes = 0;
  // Bytes a protocol's parse reads as JSON (a JobProtocol's: an Open
  // Inference request's JSON, or a job in JSON inside a parameter), which
  // the pipeline prices as JSON while they are parsed.
  size_t json_bytes = 0;
  std::string id;  // Job.id, when it is a name (CheckJobWire only)
};
absl::StatusOr<WireShape> CheckJobWire(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits);

// CheckJobWire for a serialized JobBatch of `size` bytes: at most `max_jobs`
// jobs, each checked as CheckJobWire checks a Job. A problem in a job is
// named with its index ("job 3: job has more than 1024 tiles, the limit").
// Returns the batch's jobs, with their counts summed over them.
struct BatchShape {
  size_t jobs = 0;
  WireShape total;                  // summed over the jobs
  std::vector<uint32_t> job_bytes;  // each job's size on the wire
};
absl::StatusOr<BatchShape> CheckJobBatchWire(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits, size_t max_jobs);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_WIRE_SCAN_H_
