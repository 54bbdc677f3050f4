// What a stream's jobs need besides the stream itself: the request
// pipeline they go through (and its limits: the largest answer a message
// may carry), the call they came on (every job of a stream is one of
// its client's), and, for a stream of another protocol than ptoserve.v1
// (the Open Inference Protocol's ModelStreamInfer), its codec.
#ifndef PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
#define PTOSERVE_SERVER_RPC_STREAM_JOBS_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "server/intake/intake.h"
#include "server/intake/protocol.h"
#include "server/jobs/dispatcher.h"

namespace ptoserve {

// A stream's messages in another protocol: each message's protocol (which
// keeps what its answer needs), and each answer in that protocol's form.
// Its answers go out in the order their messages came.
class StreamCodec {
 public:
  virtual ~StreamCodec() = default;
  // The protocol that scans and parses one message.
  virtual std::unique_ptr<JobProtocol> ForMessage() const = 0;
  // The answer to the message `message` parsed (or tried to): its job's
  // reply (its JobResult, or, for a job its protocol's small path read,
  // its outcome: JobReply::Form::kOutcome), or why there is none; or why
  // it cannot be made (RESOURCE_EXHAUSTED: over `max_bytes`), which the
  // stream answers instead, as an error.
  virtual absl::Status Encode(const JobProtocol& message,
                              const absl::StatusOr<JobReply*>& result,
                              uint64_t max_bytes,
                              grpc::ByteBuffer* bytes) const = 0;
};

struct StreamJobs {
  const Intake* intake;  // outlives the stream
  CallInfo call;
  // Null: ptoserve.v1's Jobs and JobResults. Outlives the stream.
  const StreamCodec* codec = nullptr;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STREAM_JOBS_H_
