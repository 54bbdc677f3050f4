// Translation between the wire schema (ptoserve.v1) and the engine.
#ifndef PTOSERVE_SERVER_CODEC_H_
#define PTOSERVE_SERVER_CODEC_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <optional>

#include "absl/status/statusor.h"
#include "core/asm/lower.h"
#include "core/asm/parser.h"
#include "core/engine.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/service.pb.h"

namespace ptoserve {

// The engine's view of `job`'s tiles and instruction list. Tile elements are
// borrowed from `job`, which must outlive the spec and any PreparedJob made
// from it. INVALID_ARGUMENT names the tile or instruction whose enum fields
// are unset or unknown, or whose elements are sent both as data and as
// values.
absl::StatusOr<JobSpec> ToJobSpec(const v1::Job& job);

// A job ready for Engine::Prepare, from an instruction list or assembly.
struct DecodedJob {
  JobSpec spec;
  std::optional<pasm::Program> program;  // when the job came as assembly

  // `status` (an engine error about `spec`) with the line:column of the
  // assembly it is about in front, when there is assembly.
  absl::Status Locate(const absl::Status& status) const {
    return program ? pasm::Locate(*program, status) : status;
  }
};

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

// ToJobSpec, then, for a job written as assembly, parses and lowers it
// onto the job's tiles. Errors as ToJobSpec, and "line:column: ..." ones for
// the assembly; both instructions and assembly set is INVALID_ARGUMENT
// (pasm::Lower says so).
absl::StatusOr<DecodedJob> DecodeJob(const v1::Job& job, const Engine& engine);

// Fills `out` with the outcome's tiles (each in its encoding; data moves
// rather than copies) and events.
void ToJobResult(JobOutcome outcome, v1::JobResult* out);

// Numbers that describe a server, beside what the engine knows.
struct ServerLimits {
  uint64_t max_message_bytes = 0;
  uint64_t max_job_bytes = 0;        // what one job may hold
  uint64_t memory_budget_bytes = 0;  // what all jobs may hold together
  uint32_t priority_levels = 1;
  uint32_t queue_capacity = 0;  // instructions
  uint32_t stream_window = 1;   // jobs of one stream in flight
};

void ToCapabilities(const Engine& engine, const ServerLimits& limits,
                    v1::Capabilities* out);

v1::Target ToProto(Target target);
v1::DType ToProto(DType dtype);
v1::Opcode ToProto(Opcode opcode);
// REQUIRES: target != TARGET_UNSPECIFIED and is a known value.
absl::StatusOr<Target> FromProto(v1::Target target);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_CODEC_H_
