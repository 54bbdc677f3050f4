// The small-job path: a serialized Job of the shape most calls carry, read
// straight from its bytes into the engine's vocabulary (core/job.h) in one
// pass, without the generic message. The names and tile bytes it reads are
// views into those bytes. Anything it does not cover, it declines, and the
// generic path (CheckJobWire, the protobuf parse, ToJobSpec) takes the job
// as it would any other: it never refuses a job itself, so a job's answer,
// or its refusal, is the same whichever path reads it.
#ifndef PTOSERVE_PROTO_SMALL_JOB_H_
#define PTOSERVE_PROTO_SMALL_JOB_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "core/job.h"

namespace ptoserve {

// The fields of a Job that are not its tiles and instructions, as the
// dispatcher reads them from either path.
struct JobHeader {
  absl::string_view id;
  uint32_t priority = 0;
  bool has_timeout = false;
  int64_t timeout_seconds = 0;
  int32_t timeout_nanos = 0;
};

struct SmallJob {
  JobHeader header;
  JobSpec spec;  // as ToJobSpec makes it: tiles in name order
};

// The most a small job may be: larger ones are the generic path's.
inline constexpr size_t kSmallJobBytes = 64 << 10;
inline constexpr size_t kSmallJobTiles = 16;
inline constexpr size_t kSmallJobInstructions = 16;

// The job `bytes` encode, when it is one the small-job path covers, else
// nullopt. Covered: at most kSmallJobBytes, kSmallJobTiles tiles (and
// outputs) and kSmallJobInstructions instructions, within `limits`; every
// tile's elements as `data`, or none; no assembly, no shared memory, no
// output_regions; every enum a value ToJobSpec takes, dtype set; names in
// ASCII of at most kMaxNameBytes; each tile named once and each message
// field of a message at most once; no field the schema lacks; and bytes
// that are well formed to the end. Reads `bytes` once; the job's views
// borrow them, and they must outlive it and any PreparedJob made from it.
std::optional<SmallJob> ReadSmallJob(absl::string_view bytes,
                                     const EngineLimits& limits);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_SMALL_JOB_H_
