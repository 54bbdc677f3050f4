// What a stream's jobs need besides the stream itself: the request
// pipeline they go through (and its limits: the largest answer a message
// may carry) and the call they came on (every job of a stream is one of
// its client's).
#ifndef PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
#define PTOSERVE_SERVER_RPC_STREAM_JOBS_H_

#include "server/intake/intake.h"
#include "server/jobs/dispatcher.h"

namespace ptoserve {

struct StreamJobs {
  const Intake* intake;  // outlives the stream
  CallInfo call;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
