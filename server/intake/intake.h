// The request pipeline every front door calls: gRPC's Execute, ExecuteStream
// and ExecuteBatches (server/rpc) and the HTTP/JSON API's jobs (server/http).
// A request goes, in order:
//   1. its bytes held against its client's share of the memory budget: an
//      HTTP body's as they arrive (IncomingBody), a gRPC message's when it
//      waits to be decoded;
//   2. the scan: what parsing it would cost, checked before that is paid
//      (the wire scan of a protobuf Job or JobBatch; the objects and depth
//      of a JSON body);
//   3. the parse, protobuf or proto3 JSON: on the calling thread only for a
//      light request, otherwise on the decoders, clients taking turns one
//      task each, so that the threads that read connections (and answer
//      health checks) stay free; a job whose tiles are heavy to make goes
//      to the decoders too, before the dispatcher makes them;
//   4. the caller's deadline, and whether it has gone (CallInfo: a door
//      raises it when its caller cancels or closes its connection),
//      checked before each costly step and, once queued, by the scheduler;
//   5. the dispatcher: admission against the budget, the engine, the result.
// A door maps its protocol onto this and does nothing of its own: its bytes
// as a RequestBody, its call as a CallInfo, its answer from JobDone. A
// unary call or an HTTP request goes through Execute; a stream's message
// through Scan and Decode (steps 1 to 4), its jobs then dispatched on the
// stream's terms (server/rpc/stream_machine.h).
#ifndef PTOSERVE_SERVER_INTAKE_INTAKE_H_
#define PTOSERVE_SERVER_INTAKE_INTAKE_H_

#include <google/protobuf/message.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/small_job.h"
#include "proto/wire_scan.h"
#include "ptoserve/v1/job.pb.h"
#include "server/exec/memory_budget.h"
#include "server/exec/task_pool.h"
#include "server/intake/protocol.h"
#include "server/intake/request_body.h"
#include "server/jobs/dispatcher.h"
#include "server/metrics/service_metrics.h"

namespace ptoserve {

// The most requests of one client that the decoders hold waiting.
inline constexpr int kDecodesPerClient = 64;

// One job for Intake::Execute (a unary call, an HTTP request).
struct ExecuteRequest {
  RequestBody* body = nullptr;  // outlives `done`
  // What the request is called in errors ("the request", "the body"): a
  // string that outlives `done`.
  absl::string_view what;
  const CallInfo* call = nullptr;  // outlives `done`
  // Where the request is parsed into, if it is (a job the small-job path
  // reads is not): `job`, or when null, the one `new_job` makes then.
  // Outlives `done`.
  v1::Job* job = nullptr;
  std::function<v1::Job*()> new_job;
  // Where the result is built (null: the dispatcher's scratch); outlives
  // `done`.
  v1::JobResult* result = nullptr;
  // The form `done` reads the reply in (JobRequest::reply_form); a job
  // that `protocol`'s small path reads is answered in kOutcome's.
  JobReply::Form reply_form = JobReply::Form::kMessage;
  // Runs exactly once: with the result, or why there is none.
  JobDone done;
  // The request's protocol, when it is not ptoserve.v1's Job (protobuf or
  // JSON): it scans and parses the body into `job`. Outlives `done`.
  const JobProtocol* protocol = nullptr;
};

// A request on its way to a message (Intake::Decode): a Job, a JobBatch.
struct DecodeRequest {
  RequestBody* body = nullptr;     // outlives the decode
  absl::string_view what;          // as ExecuteRequest's; outlives the decode
  const CallInfo* call = nullptr;  // outlives the decode
  google::protobuf::Message* message = nullptr;  // parsed into; outlives it
  WireShape shape;  // its scan (Scan; ScanBatch's total)
  // As ExecuteRequest's (`message` is then a v1::Job).
  const JobProtocol* protocol = nullptr;
};

// What became of a DecodeRequest.
struct Decoded {
  // OK: the message is parsed, and the tiles it declares may be made on
  // this thread. Otherwise why it will not go on, counted as a refusal.
  absl::Status status;
  // Inside Decode, on the door's thread (a stream's lock still held; a
  // small job may run to completion here); else on a decoder.
  bool here = true;
  // The request's size as a job's footprint counts it: its bytes on the
  // wire, or (JSON, whose text is larger) its message's.
  uint64_t request_bytes = 0;
};

class Intake {
 public:
  // Everything must outlive the intake. Requests heavy to decode wait on
  // `decoders` (at most kDecodesPerClient of one client's), their bytes
  // held against `budget`.
  Intake(Dispatcher* dispatcher, ServiceMetrics* metrics, MemoryBudget* budget,
         TaskPool* decoders);

  // Steps 1 to 5 for one job: Scan, Decode, then the dispatcher.
  void Execute(ExecuteRequest request) const;

  // Step 3 for a scanned request, the one way every door's messages are
  // parsed (a stream's, whose jobs then go to the dispatcher on the
  // stream's terms: its window, jobs waiting for room in the budget): on
  // this thread if light, else on the decoders in the client's turn, and
  // a light message whose tiles are heavy to make goes on there too.
  // `then(Decoded)` runs exactly once, here or on a decoder.
  template <typename Then>
  void Decode(const DecodeRequest& request, Then then) const;

  // The scan of `body` as a Job (a JobBatch, protobuf only; as
  // `protocol` reads it, if given), or why it will not be parsed, named
  // after `what` ("stream message 3") and counted as a job refused.
  absl::StatusOr<WireShape> Scan(const RequestBody& body,
                                 absl::string_view what,
                                 const JobProtocol* protocol = nullptr) const;
  absl::StatusOr<BatchShape> ScanBatch(const RequestBody& body,
                                       absl::string_view what) const;
  // Steps 2 and 3 for a job a small path covers (proto/small_job.h, or
  // `protocol`'s own): the job `body` holds, read in place (the body must
  // outlive it), when it is a protobuf request that path reads and its
  // tiles are light to make; else nullopt, and nothing counted: the
  // generic path takes it.
  std::optional<SmallJob> ReadSmall(
      RequestBody& body, const JobProtocol* protocol = nullptr) const;
  // Counts a job refused before it was decoded.
  void CountRefused(absl::StatusCode code) const;

  Dispatcher* dispatcher() const { return dispatcher_; }
  // The server's limits (--max_message_mb, --max_json_kb, ...), as every
  // door reads them.
  const ServiceLimits& limits() const { return dispatcher_->limits(); }

 private:
  // Whether a request so scanned may be parsed on the calling thread.
  static bool Light(const WireShape& shape, const RequestBody& body);
  // Whether the tiles a parsed Job (every job of a JobBatch) declares may
  // be made on the calling thread; any other message makes none.
  static bool LightTiles(const google::protobuf::Message& message);
  // Parses `body` into `message`: INVALID_ARGUMENT naming `what` when it is
  // not one, RESOURCE_EXHAUSTED when memory (or, for JSON, whose parser
  // holds some 20 bytes per byte, `call`'s share) runs out; counted then.
  absl::Status Parse(const RequestBody& body, const CallInfo& call,
                     absl::string_view what,
                     google::protobuf::Message* message) const;
  // Runs `task` on the decoders, in `call`'s client's turn, with `bytes`
  // held against its share meanwhile, and with OK; or with why it must not
  // go on (the call's deadline passed, or its caller went, while it
  // waited), which the task answers instead. Or returns why it cannot wait
  // there (the budget, the decoders' queue or the client's part of it is
  // full, or the server is shutting down), without running it.
  absl::Status Offload(const CallInfo& call, uint64_t bytes,
                       absl::string_view what,
                       std::function<void(absl::Status)> task) const;

  // The parse of Decode, on this thread; the body's bytes let go.
  Decoded ParseNow(const DecodeRequest& request) const;
  // Steps 2 to 5 for a job a small path reads (proto/small_job.h, the request's
  // protocol's), on this thread; false, and nothing done, for one it does not.
  bool ExecutedSmall(ExecuteRequest* request) const;
  // Step 5.
  void Dispatch(ExecuteRequest request, const Decoded& decoded) const;
  // `job` (its job already set) for the dispatcher, from `request`.
  static void PrepareDispatch(ExecuteRequest request, const Decoded& decoded,
                              JobRequest* job);
  // `scanned` named after `what` and the body's size, counted if refused.
  template <typename Shape>
  absl::StatusOr<Shape> Named(absl::StatusOr<Shape> scanned,
                              const RequestBody& body,
                              absl::string_view what) const;

  Dispatcher* const dispatcher_;
  ServiceMetrics* const metrics_;
  MemoryBudget* const budget_;
  TaskPool* const decoders_;
};

template <typename Then>
void Intake::Decode(const DecodeRequest& request, Then then) const {
  // Off this thread, `then` is shared by the task and the refusal (Offload
  // drops a task it refuses): a light request's path allocates nothing.
  const auto offload = [this, &request, &then](uint64_t bytes, bool parsed) {
    auto shared = std::make_shared<Then>(std::move(then));
    absl::Status offloaded =
        Offload(*request.call, bytes, request.what,
                [this, request, shared, bytes, parsed](absl::Status go) {
                  Decoded decoded{go, false, bytes};
                  if (go.ok() && !parsed) decoded = ParseNow(request);
                  decoded.here = false;
                  (*shared)(std::move(decoded));
                });
    if (!offloaded.ok()) (*shared)(Decoded{offloaded, true, bytes});
  };
  if (!Light(request.shape, *request.body)) {
    // The bytes an HTTP body holds already are not held twice.
    const RequestBody& body = *request.body;
    offload(body.size() - std::min(body.size(), body.held()),
            /*parsed=*/false);
    return;
  }
  Decoded decoded = ParseNow(request);
  if (!decoded.status.ok() || LightTiles(*request.message)) {
    then(std::move(decoded));
    return;
  }
  offload(decoded.request_bytes, /*parsed=*/true);  // its tiles, there
}

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_INTAKE_INTAKE_H_
