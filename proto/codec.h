// Translation between the wire schema (ptoserve.v1) and a job's vocabulary
// (core/job.h): bytes and messages only, no engine. Assembly is parsed and
// lowered by server/decode.h; jobs are run by server/dispatcher.h.
#ifndef PTOSERVE_PROTO_CODEC_H_
#define PTOSERVE_PROTO_CODEC_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <optional>

#include "absl/status/statusor.h"
#include "core/job.h"
#include "core/types.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/service.pb.h"

namespace ptoserve {

// The engine's view of `job`'s tiles and instruction list. Tile elements are
// borrowed from `job`, which must outlive the spec and any PreparedJob made
// from it. INVALID_ARGUMENT names the tile or instruction whose enum fields
// are unset or unknown, or whose elements are sent both as data and as
// values.
absl::StatusOr<JobSpec> ToJobSpec(const v1::Job& job);

// The longest line of assembly a job may carry, in bytes: the seeds' forms
// with names at their longest fit in well under 4 KiB.
inline constexpr size_t kMaxAssemblyLineBytes = 4096;

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
};
absl::StatusOr<WireShape> CheckJobWire(google::protobuf::io::ZeroCopyInputStream* bytes,
                                       size_t size, const EngineLimits& limits);

// Fills `out` with the outcome's tiles (each in its encoding; data moves
// rather than copies) and events.
void ToJobResult(JobOutcome outcome, v1::JobResult* out);

v1::Target ToProto(Target target);
v1::DType ToProto(DType dtype);
v1::Opcode ToProto(Opcode opcode);
// REQUIRES: target != TARGET_UNSPECIFIED and is a known value.
absl::StatusOr<Target> FromProto(v1::Target target);

}  // namespace ptoserve

#endif  // PTOSERVE_PROTO_CODEC_H_
