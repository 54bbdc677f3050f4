// What a stream's jobs need besides the stream itself: the dispatcher they
// go to, the request bytes that read them, and the call they came on
// (every job of a stream is one of its client's).
#ifndef PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
#define PTOSERVE_SERVER_RPC_STREAM_JOBS_H_

#include "server/jobs/dispatcher.h"
#include "server/rpc/request_bytes.h"

namespace ptoserve {

struct StreamJobs {
  Dispatcher* dispatcher;     // outlives the stream
  const RequestBytes* bytes;  // outlives the stream
  CallInfo call;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
