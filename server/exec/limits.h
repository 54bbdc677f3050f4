// What the server holds every front door's calls to, beside what one job
// may carry (EngineLimits) and the scheduler's own (SchedulerOptions): one
// field per flag, passed down whole.
#ifndef PTOSERVE_SERVER_EXEC_LIMITS_H_
#define PTOSERVE_SERVER_EXEC_LIMITS_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace ptoserve {

struct ServiceLimits {
  // The largest request or answer, on every door (--max_message_mb).
  uint64_t max_message_bytes = uint64_t{64} << 20;
  // The largest job in JSON (the HTTP API's bodies; --max_json_kb).
  // protobuf's JSON parser reads numbers at about 5 MB/s, so this bounds
  // what one body costs a decoder: about 0.2 s. A larger job goes as
  // protobuf, over gRPC.
  uint64_t max_json_bytes = uint64_t{1} << 20;
  // What one job may hold: its request, the tiles the server makes, its
  // result built and serialized (--max_job_mb).
  uint64_t max_job_bytes = uint64_t{256} << 20;
  // What all jobs in flight may hold together (--memory_budget_mb).
  uint64_t memory_budget_bytes = uint64_t{768} << 20;
  // What one client's calls may hold of it (--max_client_memory_mb); 0:
  // half the budget, and at least max_job_bytes (ClientMemoryBytes).
  uint64_t client_memory_bytes = 0;
  // What gRPC may hold for requests its handlers have not taken yet, on
  // every connection together: half-sent messages, connections' buffers
  // (--grpc_memory_mb). 0: a quarter of the budget, and at least two
  // messages of max_message_bytes (TransportMemoryBytes). Counted before any
  // handler runs, so a client's partial messages meet it, not the budget.
  uint64_t transport_memory_bytes = 0;
  // The longest a job may take from its arrival to its answer, whatever
  // deadline or timeout its caller asks for, or none (--max_job_time).
  absl::Duration max_job_time = absl::Minutes(2);
  // Jobs of one ExecuteStream or ExecuteBatches call unanswered at once
  // (--stream_window).
  uint32_t stream_window = 128;
  // Jobs in one JobBatch (--max_jobs_per_batch).
  uint32_t max_jobs_per_batch = 256;
  // How long an answer may wait for a client that does not read it before
  // its call is cancelled (--stall_timeout); zero: forever.
  absl::Duration stall_timeout = absl::Seconds(30);

  // What one client may hold: client_memory_bytes, or its default.
  uint64_t ClientMemoryBytes() const {
    if (client_memory_bytes != 0) return client_memory_bytes;
    return std::min(memory_budget_bytes,
                    std::max(memory_budget_bytes / 2, max_job_bytes));
  }
  // What gRPC may hold below the handlers: transport_memory_bytes, or its
  // default.
  uint64_t TransportMemoryBytes() const {
    if (transport_memory_bytes != 0) return transport_memory_bytes;
    return std::max(memory_budget_bytes / 4, 2 * max_message_bytes);
  }
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_EXEC_LIMITS_H_
