#include "server/rpc/job_stream.h"

#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "proto/error_result.h"
#include "server/rpc/grpc_body.h"

namespace ptoserve {

namespace {

// The stream whose job this thread is handing to the dispatcher, with that
// stream's lock held: a small job the dispatcher runs to completion on this
// thread has its answer pushed before Dispatch returns, under that lock.
thread_local const void* dispatching = nullptr;

}  // namespace

JobStream::JobStream(StreamWire* wire, uint32_t window, StreamJobs jobs)
    : StreamMachine(wire, window), jobs_(std::move(jobs)) {}

// One message on its way to a job: what Intake::Decode reads from until
// it is parsed.
struct JobStream::Incoming {
  Incoming(grpc::ByteBuffer* message, uint64_t number,
           std::unique_ptr<JobProtocol> protocol)
      : body(message), number(number), protocol(std::move(protocol)) {}
  GrpcBody body;  // let go once parsed
  const uint64_t number;
  // The codec's protocol for this message (null: ptoserve.v1's Job).
  const std::unique_ptr<JobProtocol> protocol;
  // The generic path's: "stream message N", for its refusals, and the Job
  // parsed. A job the small-job path reads needs neither.
  std::string what;
  std::optional<v1::Job> job;
  // The job, when the small-job path read it from `body` (kept then).
  std::optional<SmallJob> small;
};

void JobStream::Take(grpc::ByteBuffer* message, uint64_t number) {
  Expect(1);
  auto incoming = std::make_shared<Incoming>(
      message, number,
      jobs_.codec != nullptr ? jobs_.codec->ForMessage() : nullptr);
  incoming->small =
      jobs_.intake->ReadSmall(incoming->body, incoming->protocol.get());
  if (incoming->small) {
    Admit(std::shared_ptr<v1::Job>(), incoming->body.size(),
          std::string(incoming->small->header.id), /*run_here=*/true, incoming);
    return;
  }
  incoming->what = absl::StrCat("stream message ", number);
  absl::StatusOr<WireShape> shape = jobs_.intake->Scan(
      incoming->body, incoming->what, incoming->protocol.get());
  if (!shape.ok()) {
    // Its id is unknown: the result carries none, and the stream goes on.
    PushError(*incoming, "", shape.status());
    return;
  }
  // Until decoded, the stream does not finish.
  BeginWork();
  const DecodeRequest decode{&incoming->body, incoming->what,
                             &jobs_.call,     &incoming->job.emplace(),
                             *shape,          incoming->protocol.get()};
  jobs_.intake->Decode(
      decode, [this, incoming,
               id = shape->id](Decoded decoded) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        // Here: inside Take, whose caller holds mu_.
        std::optional<MutexLock> lock;
        if (decoded.here) {
          mu_.AssertHeld();
        } else {
          lock.emplace(&mu_);
        }
        EndWork();
        Admit(decoded.status.ok()
                  ? absl::StatusOr<std::shared_ptr<v1::Job>>(
                        std::shared_ptr<v1::Job>(incoming, &*incoming->job))
                  : decoded.status,
              decoded.request_bytes, id, decoded.here, incoming);
        if (!decoded.here) Resume();
      });
}

void JobStream::Admit(absl::StatusOr<std::shared_ptr<v1::Job>> job,
                      uint64_t request_bytes, const std::string& id,
                      bool run_here, const std::shared_ptr<Incoming>& message) {
  if (!job.ok()) {
    PushError(*message, id, job.status());
    return;
  }
  Waiting waiting{*std::move(job), request_bytes, message};
  // Behind the jobs already waiting for room (a job decoded off gRPC's
  // threads can finish decoding while others wait): none is dropped, and
  // they start in the order they came.
  if (!waiting_.empty()) {
    waiting_.push_back(std::move(waiting));
    return;
  }
  StartJob(std::move(waiting), run_here);
}

bool JobStream::StartJob(Waiting waiting, bool run_here) {
  const std::string id = waiting.job != nullptr
                             ? waiting.job->id()
                             : std::string(waiting.message->small->header.id);
  // Admitted or answered, not written yet: not decoding, not waiting, not
  // this one.
  const int64_t in_flight = static_cast<int64_t>(unanswered()) -
                            static_cast<int64_t>(working()) -
                            static_cast<int64_t>(waiting_.size()) - 1;
  JobRequest request;
  request.job = waiting.job.get();
  if (request.job == nullptr) request.small = &*waiting.message->small;
  request.request_bytes = waiting.request_bytes;
  request.call = &jobs_.call;
  request.run_here = run_here;
  request.may_wait = in_flight > 0;
  // A protocol answers its small jobs from their outcomes.
  if (jobs_.codec == nullptr) {
    request.reply_form = JobReply::Form::kBytes;
  } else if (request.small != nullptr) {
    request.reply_form = JobReply::Form::kOutcome;
  }
  request.done = [this, id, job = waiting.job, message = waiting.message](
                     absl::StatusOr<JobReply*> r, MemoryBudget::Hold hold) {
    // Serialized before taking mu_: a large result does not hold up this
    // stream's events or its other jobs' completions.
    grpc::ByteBuffer bytes;
    if (jobs_.codec != nullptr) {
      bytes = Encoded(*message, r);
    } else {
      bytes = r.ok() ? Encoded(**r, id) : EncodedError(id, r.status());
    }
    Holds holds;
    holds.push_back(std::move(hold));
    if (dispatching == this) {
      // Run to completion inside Dispatch below, whose caller holds mu_.
      mu_.AssertHeld();
      Deliver(*message, std::move(bytes), std::move(holds));
      return;
    }
    MutexLock lock(&mu_);
    Deliver(*message, std::move(bytes), std::move(holds));
  };
  const void* const outer = dispatching;
  dispatching = this;
  const Dispatched dispatched =
      jobs_.intake->dispatcher()->Dispatch(std::move(request));
  dispatching = outer;
  if (dispatched.status.ok()) return true;
  if (dispatched.may_retry) {
    waiting_.push_front(std::move(waiting));
    return false;
  }
  PushError(*waiting.message, id, dispatched.status);
  return true;
}

void JobStream::Room() {
  // Its share of the budget is back: the jobs waiting for room, in order.
  while (!waiting_.empty()) {
    Waiting job = std::move(waiting_.front());
    waiting_.pop_front();
    if (!StartJob(std::move(job), /*run_here=*/true)) break;
  }
}

uint64_t JobStream::DropWaiting() {
  const uint64_t dropped = waiting_.size();
  waiting_.clear();
  // The dropped jobs will have no answers: those that waited for theirs
  // go now, and later ones as they come.
  unordered_ = true;
  for (auto& [number, answer] : early_) {
    Push(std::move(answer.first), std::move(answer.second), 1);
  }
  early_.clear();
  return dropped;
}

void JobStream::PushError(const Incoming& message, const std::string& id,
                          const absl::Status& status) {
  if (jobs_.codec != nullptr) {
    Deliver(message, Encoded(message, status), {});
    return;
  }
  Push(EncodedError(id, status), {}, 1);
}

void JobStream::Deliver(const Incoming& message, grpc::ByteBuffer bytes,
                        Holds holds) {
  if (jobs_.codec == nullptr || unordered_) {
    Push(std::move(bytes), std::move(holds), 1);
    return;
  }
  early_.emplace(message.number,
                 std::make_pair(std::move(bytes), std::move(holds)));
  for (auto first = early_.begin();
       first != early_.end() && first->first == next_; first = early_.begin()) {
    Push(std::move(first->second.first), std::move(first->second.second), 1);
    early_.erase(first);
    ++next_;
  }
}

grpc::ByteBuffer JobStream::Encoded(
    const Incoming& message, const absl::StatusOr<JobReply*>& result) const {
  const uint64_t max_bytes = jobs_.intake->limits().max_message_bytes;
  grpc::ByteBuffer bytes;
  absl::Status encoded;
  try {
    encoded = jobs_.codec->Encode(*message.protocol, result, max_bytes, &bytes);
  } catch (const std::bad_alloc&) {
    encoded = absl::ResourceExhaustedError(
        "the server ran out of memory serializing this job's result");
  }
  // Its error in the protocol's form: small, whatever the limit.
  if (!encoded.ok()) {
    (void)jobs_.codec->Encode(*message.protocol, encoded, max_bytes, &bytes);
  }
  return bytes;
}

grpc::ByteBuffer JobStream::Encoded(JobReply& reply,
                                    const std::string& id) const {
  grpc::ByteBuffer bytes;
  absl::Status encoded;
  try {
    encoded =
        EncodeReply(reply, jobs_.intake->limits().max_message_bytes, &bytes);
  } catch (const std::bad_alloc&) {
    encoded = absl::ResourceExhaustedError(
        "the server ran out of memory serializing this job's result");
  }
  if (encoded.ok()) return bytes;
  return EncodedError(id, encoded);
}

grpc::ByteBuffer JobStream::EncodedError(const std::string& id,
                                         const absl::Status& status) const {
  // The error in place of the result, with its id (at most 256 bytes,
  // kMaxNameBytes: it fits any message limit), else without it.
  grpc::ByteBuffer bytes;
  v1::JobResult failed;
  ToErrorResult(id, status, &failed);
  if (!EncodeReply(failed, jobs_.intake->limits().max_message_bytes, &bytes)
           .ok()) {
    ToErrorResult("", status, &failed);
    (void)EncodeReply(failed, jobs_.intake->limits().max_message_bytes, &bytes);
  }
  return bytes;
}

}  // namespace ptoserve
