// The numbers that describe a server beside what the engine knows: what
// GetCapabilities reports, what the service's calls and streams may hold,
// and how long an answer may wait for a client that does not read it.
#ifndef PTOSERVE_SERVER_JOBS_LIMITS_H_
#define PTOSERVE_SERVER_JOBS_LIMITS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "server/jobs/shared_memory.h"

namespace ptoserve {

struct ServerLimits {
  uint64_t max_message_bytes = 0;
  uint64_t max_job_bytes = 0;        // what one job may hold
  uint64_t memory_budget_bytes = 0;  // what all jobs may hold together
  uint32_t priority_levels = 1;
  uint32_t queue_capacity = 0;  // instructions
  uint32_t stream_window = 1;   // jobs of one stream in flight
  uint32_t max_jobs_per_batch = 1;
  // How long an answer may wait for a client that does not read it.
  absl::Duration stall_timeout = absl::ZeroDuration();
  SharedMemoryOptions shared_memory;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_LIMITS_H_
