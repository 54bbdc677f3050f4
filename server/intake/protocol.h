// The seam between a protocol and the request pipeline. A door that speaks
// another protocol than ptoserve.v1 (the Open Inference Protocol, a future REST
// shape) brings a JobProtocol: how its request's bytes are checked before they
// are parsed, and how they are parsed into the Job that runs; and, if it has
// one, its small path: how a request of the common shape is read from its bytes
// straight into the engine's job. The door turns the JobResult (a small
// request's, the job's outcome) into its protocol's answer in its JobDone.
// Everything else (the bytes held against the client's share, the parse here or
// on the decoders in the client's turn, the deadline and the caller gone,
// admission, the scheduler) is the pipeline's, unchanged: a new protocol is an
// adapter in a package of its own plus its door's routes, with no change to
// intake, dispatcher or scheduler. ptoserve.v1's Job (protobuf or proto3 JSON)
// is the pipeline's own vocabulary and needs no adapter.
#ifndef PTOSERVE_SERVER_INTAKE_PROTOCOL_H_
#define PTOSERVE_SERVER_INTAKE_PROTOCOL_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/job.h"
#include "proto/small_job.h"
#include "proto/wire_scan.h"
#include "ptoserve/v1/job.pb.h"
#include "server/intake/request_body.h"

namespace ptoserve {

class JobProtocol {
 public:
  virtual ~JobProtocol() = default;

  // What parsing `body` would cost, checked before it is paid against
  // `limits` (a job's tiles, instructions, assembly): the sizes the
  // pipeline's light test reads (a request within them is parsed on the
  // thread that read it), or why it will not be parsed
  // (INVALID_ARGUMENT, RESOURCE_EXHAUSTED), its message saying what was
  // wrong in the protocol's words. Counted as a refusal by the pipeline.
  virtual absl::StatusOr<WireShape> Scan(const RequestBody& body,
                                         const EngineLimits& limits) const = 0;

  // `body` parsed into `job`, or INVALID_ARGUMENT saying what was wrong
  // where (`what` names the request: "the body", "stream message 3").
  // May run on the thread that read it or on a decoder: thread-safe.
  virtual absl::Status Parse(const RequestBody& body, absl::string_view what,
                             v1::Job* job) const = 0;

  // The job `bytes` (a protobuf request, whole, at most kSmallJobBytes)
  // encode, when the protocol's small path covers it, else nullopt and the
  // generic path (Scan, Parse) takes it. A job so read is the one that
  // runs: it must be within what Scan would pass against `limits`, refuse
  // nothing that the generic path would not, and send its tiles' elements
  // whole (so that they are light to make). The pipeline runs it as it
  // would the parsed one, and its JobReply is in the kOutcome form, which
  // the door writes its answer from. The job's views borrow `bytes`. On the
  // thread that read the request.
  virtual std::optional<SmallJob> ReadSmall(absl::string_view bytes,
                                            const EngineLimits& limits) const {
    return std::nullopt;
  }
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_INTAKE_PROTOCOL_H_
