// A v1::Job made ready for the engine: its tiles and instructions from the
// codec, and, for a job written as assembly, the program parsed and lowered
// onto those tiles for the job's target.
#ifndef PTOSERVE_SERVER_JOBS_DECODE_H_
#define PTOSERVE_SERVER_JOBS_DECODE_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/asm/lower.h"
#include "core/asm/parser.h"
#include "core/engine.h"
#include "core/job.h"
#include "proto/codec.h"
#include "ptoserve/v1/job.pb.h"
#include "server/shm/job_regions.h"
#include "server/shm/shared_memory.h"

namespace ptoserve {

// A job ready for Engine::Prepare, from an instruction list or assembly.
struct DecodedJob {
  JobSpec spec;
  std::optional<pasm::Program> program;  // when the job came as assembly
  ResultEncodings encodings;             // how its result's tiles travel
  // The shared-memory regions its tiles are in, held while the job lives
  // (empty when it names none).
  JobRegions regions{nullptr};
  // The target it runs on (spec.target, the default once decided), as
  // metrics name it.
  absl::string_view target_name;

  // `status` (an engine error about `spec`) with the line:column of the
  // assembly it is about in front, when there is assembly.
  absl::Status Locate(const absl::Status& status) const {
    return program ? pasm::Locate(*program, status) : status;
  }
};

// Where a job's shared memory may come from.
struct JobSource {
  // The server's regions (null, or not enabled: the path is off here).
  const SharedMemoryRegistry* shared = nullptr;
  // Who calls, whose access to a region is checked (JobRegions).
  CallerUid caller = nullptr;
  // The call came by a door that carries no shared memory (HTTP): a job
  // that names a region is refused, saying so.
  bool door_without_shared_memory = false;
};

// ToJobSpec, with slices of shared memory resolved in `source`'s regions,
// then, for a job written as assembly, parses and lowers it onto the job's
// tiles, within `engine`'s limits and for its targets, and works out how the
// result's tiles will travel. Errors as ToJobSpec, and "line:column: ..."
// ones for the assembly; both instructions and assembly set is
// INVALID_ARGUMENT (pasm::Lower says so); shared memory over a door without
// it is FAILED_PRECONDITION.
absl::StatusOr<DecodedJob> DecodeJob(const v1::Job& job, const Engine& engine,
                                     JobSource source = {});

// A job the small-job path read (proto/small_job.h), made ready as
// DecodeJob makes one: its target decided, its result's encodings worked
// out. It has no assembly and no shared memory, so nothing to refuse here.
DecodedJob DecodeSmallJob(JobSpec spec, const Engine& engine);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_DECODE_H_
