#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <new>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "server/mutex.h"
#include "server/peer_credentials.h"

namespace ptoserve {

namespace {

// A request at most this large, with at most this many instructions and
// this much assembly, is decoded (and may be run, see kRunHereBytes in
// server/dispatcher.cc) on the
// gRPC thread that received it: a few microseconds to a millisecond.
// Others are decoded on the service's decoders, so that gRPC's threads stay
// free for other calls and health checks.
constexpr uint64_t kLightRequestBytes = 1 << 20;
constexpr size_t kLightInstructions = 64;
constexpr size_t kLightAssemblyBytes = 16 << 10;

// A stream refused at the start: ends the call at once, reading nothing.
class RefusedStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

TileComputeService::TileComputeService(Dispatcher* dispatcher,
                                       const ServerLimits& limits,
                                       ServiceMetrics* metrics,
                                       MemoryBudget* budget, TaskPool* decoders,
                                       const TokenAuthenticator* auth)
    : dispatcher_(dispatcher),
      metrics_(metrics),
      budget_(budget),
      decoders_(decoders),
      auth_(auth),
      max_message_bytes_(limits.max_message_bytes),
      stream_window_(limits.stream_window),
      max_jobs_per_batch_(limits.max_jobs_per_batch),
      stalls_(limits.stall_timeout) {}

absl::Status TileComputeService::Dispatch(const v1::Job& job,
                                          uint64_t request_bytes,
                                          grpc::CallbackServerContext* context,
                                          const Share& share, bool run_here,
                                          Done done, bool may_wait,
                                          Refusal* refusal) {
  CallInfo call;
  call.share = share;
  call.deadline = CallDeadline(*context);
  call.cancelled = [context] { return context->IsCancelled(); };
  call.caller_uid = [context] { return CachedPeerUid(context->peer()); };
  return dispatcher_->Dispatch(job, request_bytes, call, run_here,
                               std::move(done), may_wait, refusal);
}

TileComputeService::Share TileComputeService::ShareOf(
    const grpc::CallbackServerContext& context) const {
  // A token names its holder, on however many connections; without tokens
  // a client is one connection ("ipv4:127.0.0.1:40112", or "fd:12" for
  // one the server's own listener accepted).
  if (auth_ != nullptr) {
    const int token = auth_->Identify(context);
    if (token >= 0) return budget_->ShareOf(absl::StrCat("token ", token));
  }
  return budget_->ShareOf(context.peer());
}

absl::StatusOr<WireShape> TileComputeService::Inspect(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  // What the parse would cost, checked first: 4M repeated wait_events
  // (16 MB on the wire) would take 160 MB as protobuf strings.
  grpc::ByteBuffer shared(bytes);  // shares the slices, copies no bytes
  grpc::ProtoBufferReader reader(&shared);
  absl::StatusOr<WireShape> shape =
      CheckJobWire(&reader, bytes.Length(), dispatcher_->job_limits());
  if (!shape.ok()) {
    metrics_->JobAnswered(JobRecord("unknown"), shape.status().code());
    // "the request (N bytes) is not a ptoserve.v1.Job: ...", or
    // "the request (N bytes): job has more than 1024 tiles, the limit".
    const absl::string_view message = shape.status().message();
    return absl::Status(
        shape.status().code(),
        absl::StrFormat("%s (%u bytes)%s %s", what, bytes.Length(),
                        absl::StartsWith(message, "is not ") ? "" : ":",
                        message));
  }
  return shape;
}

bool TileComputeService::Light(const WireShape& shape, uint64_t bytes) {
  return bytes <= kLightRequestBytes &&
         shape.instructions <= kLightInstructions &&
         shape.assembly_bytes <= kLightAssemblyBytes;
}

absl::Status TileComputeService::Busy(absl::string_view what,
                                      TaskPool::Posted why) const {
  absl::Status status;
  switch (why) {
    case TaskPool::Posted::kStopping:
      // The decoders stop first when the server shuts down: a request they
      // refuse then is refused for that, as every other one is.
      status = absl::UnavailableError(
          absl::StrCat(what, ": the server is shutting down"));
      break;
    case TaskPool::Posted::kClientFull:
      status = absl::ResourceExhaustedError(absl::StrFormat(
          "%s: this client has %d large requests waiting to be decoded, the "
          "most one client may; retry once they are",
          what, kDecodesPerClient));
      break;
    default:
      status = absl::ResourceExhaustedError(
          absl::StrCat(what,
                       ": the server is busy decoding other large "
                       "requests; retry later"));
  }
  metrics_->JobAnswered(JobRecord("unknown"), status.code());
  return status;
}

template <typename M>
absl::StatusOr<std::shared_ptr<M>> TileComputeService::Parse(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  // Parsed straight from the slices. Not through gRPC's Deserialize: on a
  // parse failure that builds protobuf's InitializationErrorString, which
  // walks the half-parsed message (its `tiles` map included) only to say
  // nothing useful about a proto3 message, and crashed on corrupt input in
  // the ThreadSanitizer build.
  grpc::ByteBuffer shared(bytes);  // shares the slices, copies no bytes
  grpc::ProtoBufferReader reader(&shared);
  auto message = std::make_shared<M>();
  bool parsed = false;
  try {
    parsed = reader.status().ok() &&
             message->ParseFromZeroCopyStream(&reader) && reader.status().ok();
  } catch (const std::bad_alloc&) {
    metrics_->JobAnswered(JobRecord("unknown"),
                          absl::StatusCode::kResourceExhausted);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s (%u bytes): the server ran out of memory decoding it", what,
        bytes.Length()));
  }
  if (!parsed) {
    metrics_->JobAnswered(JobRecord("unknown"),
                          absl::StatusCode::kInvalidArgument);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s (%u bytes) is not a %s: its protobuf encoding is truncated or "
        "corrupt",
        what, bytes.Length(), M::descriptor()->full_name()));
  }
  return message;
}

absl::StatusOr<std::shared_ptr<const v1::Job>> TileComputeService::Decode(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  return Parse<v1::Job>(bytes, what);
}

absl::StatusOr<BatchShape> TileComputeService::InspectBatch(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  grpc::ByteBuffer shared(bytes);  // shares the slices, copies no bytes
  grpc::ProtoBufferReader reader(&shared);
  absl::StatusOr<BatchShape> shape = CheckJobBatchWire(
      &reader, bytes.Length(), dispatcher_->job_limits(), max_jobs_per_batch_);
  if (!shape.ok()) {
    metrics_->JobAnswered(JobRecord("unknown"), shape.status().code());
    const absl::string_view message = shape.status().message();
    return absl::Status(
        shape.status().code(),
        absl::StrFormat("%s (%u bytes)%s %s", what, bytes.Length(),
                        absl::StartsWith(message, "is not ") ? "" : ":",
                        message));
  }
  return shape;
}

absl::Status TileComputeService::Encode(const v1::JobResult& result,
                                        grpc::ByteBuffer* bytes) const {
  return EncodeMessage(result, bytes);
}

absl::Status TileComputeService::EncodeMessage(
    const google::protobuf::Message& message, grpc::ByteBuffer* bytes) const {
  bool own_buffer = false;
  grpc::Status serialized =
      grpc::SerializationTraits<google::protobuf::Message>::Serialize(
          message, bytes, &own_buffer);
  if (!serialized.ok()) {
    return absl::InternalError(absl::StrCat("cannot serialize the result: ",
                                            serialized.error_message()));
  }
  if (const size_t size = bytes->Length(); size > max_message_bytes_) {
    bytes->Clear();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the result is %u bytes, more than a message may be (%u, "
        "--max_message_mb)",
        size, max_message_bytes_));
  }
  return absl::OkStatus();
}

// One Execute call: holds the request's job (the engine reads inputs in
// place) and the job's share of the memory budget until gRPC is done with
// the reply.
class TileComputeService::UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // Finish, stated to ThreadSanitizer: gRPC orders Finish before OnDone
  // through queues it cannot see, and the fields below are written on one
  // thread (the scheduler's) and freed on another (gRPC's).
  UnaryCall(const GrpcMetrics::Method* calls, StallWatch* stalls,
            grpc::CallbackServerContext* context)
      : calls_(calls), stalls_(stalls), context_(context) {
    if (calls_ == nullptr) return;
    calls_->started->Increment();
    calls_->received->Increment();
  }

  void Answer(const grpc::Status& status) {
    if (calls_ != nullptr) {
      const int code = status.error_code();
      calls_->handled[code >= 0 && code < 17 ? code : grpc::StatusCode::UNKNOWN]
          ->Increment();
      if (status.ok()) calls_->sent->Increment();
      answered_ = true;
    }
    // An answer with a body waits on the client's reading it.
    if (status.ok()) {
      stalls_->Add(&stall_, context_);
      stall_.Writing();
    }
    TsanReleasing(this);
    Finish(status);
  }
  void OnDone() override {
    TsanAcquired(this);
    stalls_->Remove(&stall_);
    if (calls_ != nullptr && !answered_) {
      calls_->handled[grpc::StatusCode::CANCELLED]->Increment();
    }
    delete this;
  }
  // OnDone only frees (OnCancel is the base's no-op), so gRPC may run it
  // on the thread that completes the call, as it does for its own default
  // reactor, instead of handing it to its executor thread: that hand-off
  // was a thread wake-up per call, about 1.5 context switches per request
  // against 0.15 for a server using the default reactor.
  bool InternalInlineable() override { return true; }

  std::shared_ptr<const v1::Job> job;
  // The caller's share of the memory budget, and what its job holds.
  Share share;
  MemoryBudget::Hold hold;

 private:
  const GrpcMetrics::Method* const calls_;
  StallWatch* const stalls_;
  grpc::CallbackServerContext* const context_;
  StallWatch::Call stall_;
  bool answered_ = false;
};

grpc::ServerUnaryReactor* TileComputeService::Execute(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call = new UnaryCall(execute_calls_, &stalls_, context);
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    call->Answer(ToGrpcStatus(allowed));
    return call;
  }
  absl::StatusOr<WireShape> shape = Inspect(*request, "the request");
  if (!shape.ok()) {
    call->Answer(ToGrpcStatus(shape.status()));
    const_cast<grpc::ByteBuffer*>(request)->Clear();
    return call;
  }
  call->share = ShareOf(*context);
  if (Light(*shape, request->Length())) {
    RunUnary(call, *request, context, response, /*run_here=*/true);
  } else {
    // The task shares the request's slices, copying no bytes; while it
    // waits they count against the memory budget.
    auto bytes = std::make_shared<grpc::ByteBuffer>(*request);
    absl::StatusOr<MemoryBudget::Hold> queued =
        budget_->Reserve(bytes->Length(), call->share);
    auto hold = std::make_shared<MemoryBudget::Hold>();
    if (queued.ok()) *hold = std::move(*queued);
    if (!queued.ok()) {
      metrics_->JobAnswered(JobRecord("unknown"),
                            absl::StatusCode::kResourceExhausted);
      call->Answer(ToGrpcStatus(queued.status()));
    } else if (const TaskPool::Posted posted = decoders_->Post(
                   [this, call, bytes, hold, context, response] {
                     // The deadline first: gRPC cancels a call past it.
                     if (absl::Now() >= CallDeadline(*context)) {
                       metrics_->JobAnswered(
                           JobRecord("unknown"),
                           absl::StatusCode::kDeadlineExceeded);
                       call->Answer(grpc::Status(
                           grpc::StatusCode::DEADLINE_EXCEEDED,
                           "the call's deadline passed before its request was "
                           "decoded; it never ran"));
                       return;
                     }
                     if (context->IsCancelled()) {
                       metrics_->JobAnswered(JobRecord("unknown"),
                                             absl::StatusCode::kCancelled);
                       call->Answer(
                           grpc::Status(grpc::StatusCode::CANCELLED,
                                        "the call was cancelled before "
                                        "its request was decoded"));
                       return;
                     }
                     RunUnary(call, *bytes, context, response,
                              /*run_here=*/false);
                   },
                   call->share.get());
               posted != TaskPool::Posted::kQueued) {
      call->Answer(ToGrpcStatus(Busy("the request", posted)));
    }
  }
  // gRPC would keep the bytes until the call ends (its typed handlers free
  // them once parsed); the buffer is not const, only the interface is.
  const_cast<grpc::ByteBuffer*>(request)->Clear();
  return call;
}

void TileComputeService::RunUnary(UnaryCall* call,
                                  const grpc::ByteBuffer& request,
                                  grpc::CallbackServerContext* context,
                                  grpc::ByteBuffer* response, bool run_here) {
  const uint64_t request_bytes = request.Length();
  absl::StatusOr<std::shared_ptr<const v1::Job>> job =
      Decode(request, "the request");
  if (!job.ok()) {
    call->Answer(ToGrpcStatus(job.status()));
    return;
  }
  call->job = std::move(*job);
  // With run_here, a unary call's thread runs a small job itself when the
  // scheduler is idle: no hand-off.
  absl::Status admitted = Dispatch(
      *call->job, request_bytes, context, call->share, run_here,
      [this, call, response](absl::StatusOr<v1::JobResult> r,
                             MemoryBudget::Hold hold) {
        call->hold = std::move(hold);
        absl::Status encoded = r.ok() ? Encode(*r, response) : r.status();
        call->job.reset();  // the result holds what it needs
        call->Answer(ToGrpcStatus(encoded));
      });
  if (!admitted.ok()) call->Answer(ToGrpcStatus(admitted));
}

// One ExecuteStream call. Reads jobs while fewer than the window are
// unanswered, writes results as they finish (one write at a time, as gRPC
// requires), and finishes once the client is done sending and every result
// is written. A result holds its job's share of the memory budget until it
// is written; a job that does not fit in the budget waits, and the stream
// reads no further, until one of the stream's own results is written (or
// is refused if the stream has none in flight). Deletes itself when gRPC is
// done with it.
class TileComputeService::JobStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  JobStream(TileComputeService* service, grpc::CallbackServerContext* context)
      : service_(service),
        context_(context),
        share_(service->ShareOf(*context)) {
    service_->stalls_.Add(&stall_, context_);
    MutexLock lock(&mu_);
    reading_ = true;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    MutexLock lock(&mu_);
    reading_ = false;
    if (!ok) {
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    ++unanswered_;
    ++received_;
    // The engine reads inputs in place, so the job must live until its
    // result is made; request_ itself is reused by the next read.
    const uint64_t request_bytes = request_.Length();
    const std::string what = absl::StrCat("stream message ", received_);
    absl::StatusOr<WireShape> shape = service_->Inspect(request_, what);
    if (!shape.ok()) {
      // Its id is unknown: the result carries none, and the stream goes on.
      Push(Encoded(Failed("", shape.status())), MemoryBudget::Hold());
    } else if (Light(*shape, request_bytes)) {
      Take(service_->Decode(request_, what), request_bytes, shape->id);
    } else {
      // Decoded off gRPC's threads; the task shares the slices, which
      // count against the memory budget while it waits.
      auto bytes = std::make_shared<grpc::ByteBuffer>(request_);
      absl::StatusOr<MemoryBudget::Hold> queued =
          service_->budget_->Reserve(request_bytes, share_);
      auto hold = std::make_shared<MemoryBudget::Hold>();
      if (queued.ok()) *hold = std::move(*queued);
      ++decoding_;
      if (!queued.ok()) {
        --decoding_;
        service_->metrics_->JobAnswered(JobRecord("unknown"),
                                        absl::StatusCode::kResourceExhausted);
        Push(Encoded(Failed(shape->id, queued.status())), MemoryBudget::Hold());
      } else if (const TaskPool::Posted posted = service_->decoders_->Post(
                     [this, bytes, hold, what, request_bytes, id = shape->id] {
                       absl::StatusOr<std::shared_ptr<const v1::Job>> job =
                           service_->Decode(*bytes, what);
                       MutexLock lock(&mu_);
                       --decoding_;
                       Take(std::move(job), request_bytes, id);
                       MaybeRead();
                       MaybeFinish();
                     },
                     share_.get());
                 posted != TaskPool::Posted::kQueued) {
        --decoding_;
        Push(Encoded(Failed(shape->id, service_->Busy(what, posted))),
             MemoryBudget::Hold());
      }
    }
    request_.Clear();
    MaybeRead();
  }

  void OnWriteDone(bool ok) override {
    stall_.Written();
    MutexLock lock(&mu_);
    writing_ = false;
    --unanswered_;
    outbox_.pop_front();      // gives its share of the budget back
    if (!ok) broken_ = true;  // the client is gone: drop what is left
    // Its share of the budget is back: the jobs waiting for room, in order.
    while (!waiting_.empty() && !broken_) {
      Waiting job = std::move(waiting_.front());
      waiting_.pop_front();
      if (!Start(std::move(job))) break;
    }
    MaybeWrite();
    MaybeRead();
    MaybeFinish();
  }

  void OnDone() override {
    // Finish runs with mu_ held, possibly on a scheduler thread, and gRPC may
    // call OnDone on another thread before that thread lets go of mu_.
    { MutexLock lock(&mu_); }
    service_->stalls_.Remove(&stall_);
    delete this;
  }

 private:
  // A decoded job not yet admitted.
  struct Waiting {
    std::shared_ptr<const v1::Job> job;
    uint64_t request_bytes;
  };
  // A result to write, and the memory its job holds until it is written.
  struct Outgoing {
    grpc::ByteBuffer bytes;
    MemoryBudget::Hold hold;
  };

  static v1::JobResult Failed(const std::string& id, const absl::Status& s) {
    v1::JobResult result;
    result.set_id(id);
    result.mutable_status()->set_code(static_cast<v1::Code>(s.code()));
    result.mutable_status()->set_message(std::string(s.message()));
    return result;
  }

  // `result` serialized; one too large to send, or that memory does not
  // suffice to serialize, becomes its job's error.
  grpc::ByteBuffer Encoded(const v1::JobResult& result) const {
    grpc::ByteBuffer bytes;
    absl::Status encoded;
    try {
      encoded = service_->Encode(result, &bytes);
    } catch (const std::bad_alloc&) {
      encoded = absl::ResourceExhaustedError(
          "the server ran out of memory serializing this job's result");
    }
    // The error in place of the result, with its id (at most 256 bytes,
    // kMaxNameBytes: it fits any message limit), else without it.
    if (!encoded.ok() &&
        !service_->Encode(Failed(result.id(), encoded), &bytes).ok()) {
      (void)service_->Encode(Failed("", encoded), &bytes);
    }
    return bytes;
  }

  // A decoded job (or why it is not one: answered with `id`, the id read
  // from its bytes) into the stream.
  void Take(absl::StatusOr<std::shared_ptr<const v1::Job>> job,
            uint64_t request_bytes, const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!job.ok()) {
      Push(Encoded(Failed(id, job.status())), MemoryBudget::Hold());
      return;
    }
    Waiting waiting{std::move(*job), request_bytes};
    // Behind the jobs already waiting for room (a job decoded off gRPC's
    // threads can finish decoding while others wait): none is dropped, and
    // they start in the order they came.
    if (!waiting_.empty()) {
      waiting_.push_back(std::move(waiting));
      return;
    }
    Start(std::move(waiting));
  }

  // Admits `waiting` (or answers it with its refusal) and returns true; or,
  // while the budget is full and the stream has other jobs in flight (whose
  // results will free some), puts it first among the waiting jobs and
  // returns false.
  bool Start(Waiting waiting) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::string id = waiting.job->id();
    // Read and answered, or admitted: not decoding, not waiting, not this.
    const int64_t in_flight = int64_t{unanswered_} - decoding_ -
                              static_cast<int64_t>(waiting_.size()) - 1;
    Refusal refusal = Refusal::kFinal;
    // Not run_here: done takes mu_, which this reaction holds.
    absl::Status admitted = service_->Dispatch(
        *waiting.job, waiting.request_bytes, context_, share_,
        /*run_here=*/false,
        [this, id, job = waiting.job](absl::StatusOr<v1::JobResult> r,
                                      MemoryBudget::Hold hold) {
          // Serialized before taking mu_: a large result does not hold
          // up this stream's reactions or its other jobs' completions.
          grpc::ByteBuffer bytes =
              Encoded(r.ok() ? std::move(*r) : Failed(id, r.status()));
          MutexLock lock(&mu_);
          Push(std::move(bytes), std::move(hold));
        },
        /*may_wait=*/in_flight > 0, &refusal);
    if (admitted.ok()) return true;
    if (refusal == Refusal::kOverBudget) {
      waiting_.push_front(std::move(waiting));
      return false;
    }
    Push(Encoded(Failed(id, admitted)), MemoryBudget::Hold());
    return true;
  }

  // Queues one job's answer for writing.
  void Push(grpc::ByteBuffer bytes, MemoryBudget::Hold hold)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    outbox_.push_back(Outgoing{std::move(bytes), std::move(hold)});
    MaybeWrite();
  }

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (broken_) {
      unanswered_ -= outbox_.size() + waiting_.size();
      outbox_.clear();
      waiting_.clear();
      MaybeFinish();
      return;
    }
    if (outbox_.empty()) return;
    writing_ = true;
    stall_.Writing();
    StartWrite(&outbox_.front().bytes);
  }

  void MaybeRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reading_ || reads_done_ || broken_ || !waiting_.empty() ||
        unanswered_ >= service_->stream_window_) {
      return;
    }
    reading_ = true;
    StartRead(&request_);
  }

  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || unanswered_ > 0 || writing_ || reading_ || decoding_ > 0) {
      return;
    }
    if (!reads_done_ && !broken_) return;
    finished_ = true;
    Finish(broken_ ? grpc::Status(grpc::StatusCode::CANCELLED,
                                  "the client stopped reading results")
                   : grpc::Status::OK);
  }

  TileComputeService* const service_;
  grpc::CallbackServerContext* const context_;
  const Share share_;  // the caller's share of the memory budget
  StallWatch::Call stall_;
  absl::Mutex mu_;
  grpc::ByteBuffer request_;                          // the read in progress
  std::deque<Outgoing> outbox_ ABSL_GUARDED_BY(mu_);  // front: writing
  // Decoded jobs the memory budget has no room for yet, in the order they
  // came; no reads meanwhile.
  std::deque<Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  uint32_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;  // read, result not written
  uint32_t decoding_ ABSL_GUARDED_BY(mu_) = 0;    // on the decoders
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;    // messages read
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// One ExecuteBatches call: JobStream's rules, a batch at a time. Reads a
// message while fewer than the window's jobs are unanswered; dispatches each
// of its jobs on its own (a job that is refused, the memory budget's
// refusal included, gets its error in its result at once rather than
// waiting); once every job of the batch has its result, serializes the
// batch's answer and writes it (one write at a time). A message that is not
// a valid JobBatch is answered with one result carrying the error. While
// the scheduler is idle, a light message's jobs run on the thread that read
// it, one after another: no hand-off.
class TileComputeService::BatchStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  BatchStream(TileComputeService* service, grpc::CallbackServerContext* context)
      : service_(service),
        context_(context),
        share_(service->ShareOf(*context)) {
    service_->stalls_.Add(&stall_, context_);
    MutexLock lock(&mu_);
    reading_ = true;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    std::string what;
    absl::StatusOr<BatchShape> shape;
    grpc::ByteBuffer bytes;  // a light message, taken out of request_
    {
      MutexLock lock(&mu_);
      reading_ = false;
      if (!ok) {
        reads_done_ = true;
        MaybeFinish();
        return;
      }
      ++received_;
      what = absl::StrCat("stream message ", received_);
      shape = service_->InspectBatch(request_, what);
      if (!shape.ok() || !Light(shape->total, request_.Length())) {
        Queue(std::move(shape), what);
        request_.Clear();
        MaybeRead();
        return;
      }
      unanswered_ += Counted(*shape);
      ++starting_;
      // request_ is free for the next read, which another of the stream's
      // reactions may start from here on.
      bytes.Swap(&request_);
    }
    // Without the lock: when the scheduler is idle the jobs run on this
    // thread, one after the other (no hand-off), and their results take
    // mu_.
    Start(service_->Parse<v1::JobBatch>(bytes, what), *shape,
          /*run_here=*/true);
    MutexLock lock(&mu_);
    --starting_;
    MaybeRead();
    MaybeFinish();
  }

  void OnWriteDone(bool ok) override {
    stall_.Written();
    MutexLock lock(&mu_);
    writing_ = false;
    unanswered_ -= outbox_.front().jobs;
    outbox_.pop_front();      // gives its jobs' share of the budget back
    if (!ok) broken_ = true;  // the client is gone: drop what is left
    MaybeWrite();
    MaybeRead();
    MaybeFinish();
  }

  void OnDone() override {
    // As JobStream's: Finish may run with mu_ held on another thread.
    { MutexLock lock(&mu_); }
    service_->stalls_.Remove(&stall_);
    delete this;
  }

 private:
  // One batch in flight: its jobs (read in place by the engine), its
  // answer, filled a slot per job, and the memory its jobs hold.
  struct Batch {
    std::shared_ptr<v1::JobBatch> jobs;  // a refused job's emptied at once
    v1::JobResultBatch answer;
    std::vector<MemoryBudget::Hold> holds;  // under mu_
    size_t remaining = 0;  // jobs without a result yet, under mu_
  };
  // An answer to write, and the memory its jobs hold until it is written.
  struct Outgoing {
    grpc::ByteBuffer bytes;
    std::vector<MemoryBudget::Hold> holds;
    uint32_t jobs;  // counted in unanswered_
  };

  // A message refused at once (`shape` is its error), or one heavy to
  // decode: that goes to the decoders, which then start its jobs.
  void Queue(absl::StatusOr<BatchShape> shape, const std::string& what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!shape.ok()) {
      Refuse(shape.status());
    } else {
      // Decoded off gRPC's threads; the task shares the slices, which
      // count against the memory budget while it waits.
      auto bytes = std::make_shared<grpc::ByteBuffer>(request_);
      absl::StatusOr<MemoryBudget::Hold> queued =
          service_->budget_->Reserve(bytes->Length(), share_);
      if (!queued.ok()) {
        service_->metrics_->JobAnswered(JobRecord("unknown"),
                                        absl::StatusCode::kResourceExhausted);
        Refuse(queued.status());
      } else {
        const uint64_t jobs = Counted(*shape);
        unanswered_ += jobs;
        ++starting_;
        auto hold = std::make_shared<MemoryBudget::Hold>(std::move(*queued));
        auto task = [this, bytes, hold, what, shape = *std::move(shape)] {
          Start(service_->Parse<v1::JobBatch>(*bytes, what), shape,
                /*run_here=*/false);
          MutexLock lock(&mu_);
          --starting_;
          MaybeRead();
          MaybeFinish();
        };
        if (const TaskPool::Posted posted =
                service_->decoders_->Post(std::move(task), share_.get());
            posted != TaskPool::Posted::kQueued) {
          --starting_;
          unanswered_ -= jobs;
          Refuse(service_->Busy(what, posted));
        }
      }
    }
  }

  static void Fail(const std::string& id, const absl::Status& s,
                   v1::JobResult* result) {
    result->Clear();
    result->set_id(id);
    result->mutable_status()->set_code(static_cast<v1::Code>(s.code()));
    result->mutable_status()->set_message(std::string(s.message()));
  }

  // `answer` serialized. One larger than a message may be becomes, job by
  // job, RESOURCE_EXHAUSTED (each result keeping its id) saying so.
  grpc::ByteBuffer Encoded(v1::JobResultBatch* answer) const {
    grpc::ByteBuffer bytes;
    absl::Status encoded;
    try {
      encoded = service_->EncodeMessage(*answer, &bytes);
    } catch (const std::bad_alloc&) {
      encoded = absl::ResourceExhaustedError(
          "the server ran out of memory serializing this batch's answer");
    }
    if (encoded.ok()) return bytes;
    const absl::Status why(
        encoded.code(), absl::StrCat("the batch's answer could not be sent: ",
                                     encoded.message()));
    for (v1::JobResult& result : *answer->mutable_results()) {
      Fail(std::string(result.id()), why, &result);
    }
    if (service_->EncodeMessage(*answer, &bytes).ok()) return bytes;
    // Even its errors, with their ids, are too large (many jobs and a small
    // --max_message_mb): the batch is answered as one refused message.
    const int jobs = answer->results_size();
    answer->Clear();
    Fail("",
         absl::Status(why.code(), absl::StrFormat("%s; %d results, each an "
                                                  "error, were too large too",
                                                  why.message(), jobs)),
         answer->add_results());
    (void)service_->EncodeMessage(*answer, &bytes);
    return bytes;
  }

  // Answers a message that is not a batch this server takes: one result,
  // no id, the error.
  void Refuse(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::JobResultBatch answer;
    Fail("", status, answer.add_results());
    ++unanswered_;
    Push(Encoded(&answer), {}, 1);
  }

  // What a message of `shape` counts against the window: its jobs, and at
  // least one (its answer), so that empty batches cannot be read without
  // end while their answers pile up unwritten.
  static uint64_t Counted(const BatchShape& shape) {
    return std::max<uint64_t>(1, shape.jobs);
  }

  // Dispatches every job of `parsed` (`shape.jobs` of them, already
  // counted in unanswered_), with Dispatcher::Dispatch's `run_here`.
  void Start(absl::StatusOr<std::shared_ptr<v1::JobBatch>> parsed,
             const BatchShape& shape, bool run_here) ABSL_LOCKS_EXCLUDED(mu_) {
    if (!parsed.ok()) {
      MutexLock lock(&mu_);
      unanswered_ -= Counted(shape);
      Refuse(parsed.status());
      return;
    }
    auto batch = std::make_shared<Batch>();
    batch->jobs = *std::move(parsed);
    const int n = batch->jobs->jobs_size();
    for (int i = 0; i < n; ++i) batch->answer.add_results();
    if (n == 0) {
      MutexLock lock(&mu_);
      Push(Encoded(&batch->answer), {}, 1);
      return;
    }
    {
      MutexLock lock(&mu_);
      batch->remaining = n;
    }
    for (int i = 0; i < n; ++i) {
      const v1::Job& job = batch->jobs->jobs(i);
      absl::Status admitted = service_->Dispatch(
          job, shape.job_bytes[i], context_, share_, run_here,
          [this, batch, i](absl::StatusOr<v1::JobResult> r,
                           MemoryBudget::Hold hold) {
            v1::JobResult* slot = batch->answer.mutable_results(i);
            if (r.ok()) {
              slot->Swap(&*r);
            } else {
              Fail(batch->jobs->jobs(i).id(), r.status(), slot);
            }
            Answered(batch, std::move(hold));
          });
      if (!admitted.ok()) {
        Fail(job.id(), admitted, batch->answer.mutable_results(i));
        // Nothing refers to a refused job: its bytes (which no share of the
        // budget covers) go now, not when its neighbours are done.
        v1::Job().Swap(batch->jobs->mutable_jobs(i));
        Answered(batch, MemoryBudget::Hold());
      }
    }
  }

  // One of `batch`'s jobs has its result in its slot. Each job writes only
  // its own slot; the last one, which mu_ orders after the others,
  // serializes the answer (outside the lock) and queues it.
  void Answered(const std::shared_ptr<Batch>& batch, MemoryBudget::Hold hold)
      ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      batch->holds.push_back(std::move(hold));
      if (--batch->remaining > 0) return;
    }
    // The number of jobs before Encoded, which may replace the results.
    const uint32_t jobs = batch->answer.results_size();
    grpc::ByteBuffer bytes = Encoded(&batch->answer);
    MutexLock lock(&mu_);
    Push(std::move(bytes), std::move(batch->holds), jobs);
  }

  void Push(grpc::ByteBuffer bytes, std::vector<MemoryBudget::Hold> holds,
            uint32_t jobs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    outbox_.push_back(Outgoing{std::move(bytes), std::move(holds), jobs});
    MaybeWrite();
  }

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (broken_) {
      for (const Outgoing& out : outbox_) unanswered_ -= out.jobs;
      outbox_.clear();
      MaybeFinish();
      return;
    }
    if (outbox_.empty()) return;
    writing_ = true;
    stall_.Writing();
    StartWrite(&outbox_.front().bytes);
  }

  void MaybeRead() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reading_ || reads_done_ || broken_ ||
        unanswered_ >= service_->stream_window_) {
      return;
    }
    reading_ = true;
    StartRead(&request_);
  }

  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || unanswered_ > 0 || writing_ || reading_ || starting_ > 0) {
      return;
    }
    if (!reads_done_ && !broken_) return;
    finished_ = true;
    Finish(broken_ ? grpc::Status(grpc::StatusCode::CANCELLED,
                                  "the client stopped reading results")
                   : grpc::Status::OK);
  }

  TileComputeService* const service_;
  grpc::CallbackServerContext* const context_;
  const Share share_;  // the caller's share of the memory budget
  StallWatch::Call stall_;
  absl::Mutex mu_;
  grpc::ByteBuffer request_;                          // the read in progress
  std::deque<Outgoing> outbox_ ABSL_GUARDED_BY(mu_);  // front: writing
  uint64_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;      // jobs read, not written
  // Messages being decoded or having their jobs dispatched.
  uint32_t starting_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;  // messages read
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteStream(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(ToGrpcStatus(allowed));
  }
  return new JobStream(this, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteBatches(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(ToGrpcStatus(allowed));
  }
  return new BatchStream(this, context);
}

grpc::ServerUnaryReactor* TileComputeService::GetCapabilities(
    grpc::CallbackServerContext* context, const v1::GetCapabilitiesRequest*,
    v1::Capabilities* capabilities) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  *capabilities = dispatcher_->capabilities();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace ptoserve
