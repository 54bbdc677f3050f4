#include "server/service.h"

#include <chrono>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "server/mutex.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

// The target `job` runs on, named for its metrics.
absl::string_view TargetLabel(const v1::Job& job, Target default_target) {
  if (job.target() == v1::TARGET_UNSPECIFIED) return TargetName(default_target);
  absl::StatusOr<Target> target = FromProto(job.target());
  return target.ok() ? TargetName(*target) : "unknown";
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

TileComputeService::TileComputeService(const Engine* engine,
                                       Scheduler* scheduler,
                                       const ServerLimits& limits,
                                       ServiceMetrics* metrics,
                                       const TokenAuthenticator* auth)
    : engine_(engine),
      scheduler_(scheduler),
      metrics_(metrics),
      auth_(auth),
      max_message_bytes_(limits.max_message_bytes),
      stream_window_(limits.stream_window) {
  ToCapabilities(*engine, limits, &capabilities_);
}

absl::StatusOr<std::shared_ptr<const v1::Job>> TileComputeService::Decode(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  // Parsed straight from the slices. Not through gRPC's Deserialize: on a
  // parse failure that builds protobuf's InitializationErrorString, which
  // walks the half-parsed message (its `tiles` map included) only to say
  // nothing useful about a proto3 message, and crashed on corrupt input in
  // the ThreadSanitizer build.
  grpc::ByteBuffer shared(bytes);  // shares the slices, copies no bytes
  grpc::ProtoBufferReader reader(&shared);
  auto job = std::make_shared<v1::Job>();
  if (!reader.status().ok() || !job->ParseFromZeroCopyStream(&reader) ||
      !reader.status().ok()) {
    metrics_->JobAnswered(JobRecord("unknown"), absl::StatusCode::kInvalidArgument);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s (%u bytes) is not a ptoserve.v1.Job: its protobuf encoding is "
        "truncated or corrupt",
        what, bytes.Length()));
  }
  return job;
}

absl::Status TileComputeService::Encode(const v1::JobResult& result,
                                        grpc::ByteBuffer* bytes) const {
  bool own_buffer = false;
  grpc::Status serialized = grpc::SerializationTraits<v1::JobResult>::Serialize(
      result, bytes, &own_buffer);
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

absl::Status TileComputeService::Admit(const v1::Job& job,
                                       grpc::CallbackServerContext* context,
                                       bool run_here, Done done) {
  JobRecord record(TargetLabel(job, engine_->options().default_target));
  absl::Status queued = Queue(job, context, run_here, &record, std::move(done));
  // A refused job never reaches its done, which counts the others.
  if (!queued.ok()) metrics_->JobAnswered(record, queued.code());
  return queued;
}

absl::Status TileComputeService::Queue(const v1::Job& job,
                                       grpc::CallbackServerContext* context,
                                       bool run_here, JobRecord* record,
                                       Done done) {
  PTO_ASSIGN_OR_RETURN(DecodedJob decoded, DecodeJob(job, *engine_));
  record->CountInstructions(decoded.spec.instructions);
  JobTicket ticket;
  ticket.deadline = CallDeadline(*context);
  if (job.has_timeout()) {
    const absl::Duration timeout = absl::Seconds(job.timeout().seconds()) +
                                   absl::Nanoseconds(job.timeout().nanos());
    if (timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "timeout %s is not positive", absl::FormatDuration(timeout)));
    }
    ticket.deadline = std::min(ticket.deadline, record->arrival + timeout);
  }
  absl::StatusOr<std::unique_ptr<PreparedJob>> prepared =
      engine_->Prepare(decoded.spec);
  if (!prepared.ok()) return decoded.Locate(prepared.status());
  ticket.job = std::move(*prepared);
  ticket.priority = static_cast<int>(
      std::min<uint32_t>(job.priority(), std::numeric_limits<int>::max()));
  ticket.cancelled = [context] { return context->IsCancelled(); };
  ticket.done = [this, id = job.id(), record = *record, done = std::move(done)](
                    absl::StatusOr<std::unique_ptr<PreparedJob>> ran) {
    if (!ran.ok()) {
      metrics_->JobAnswered(record, ran.status().code());
      done(ran.status());
      return;
    }
    v1::JobResult result;
    result.set_id(id);
    ToJobResult(engine_->Finish(ran->get()), &result);
    metrics_->JobAnswered(record, absl::StatusCode::kOk);
    done(std::move(result));
  };
  return scheduler_->Submit(std::move(ticket), run_here);
}

grpc::ServerUnaryReactor* TileComputeService::Execute(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  absl::StatusOr<std::shared_ptr<const v1::Job>> job =
      Decode(*request, "the request");
  // The job has its own copy now. gRPC would keep the bytes until the call
  // ends (its typed handlers free them once parsed); the buffer is not const,
  // only the interface is.
  const_cast<grpc::ByteBuffer*>(request)->Clear();
  if (!job.ok()) {
    reactor->Finish(ToGrpcStatus(job.status()));
    return reactor;
  }
  // A unary call's thread runs the job itself when it can: no hand-off.
  // The engine reads inputs in place, so the job lives until its result is
  // made.
  absl::Status admitted = Admit(
      **job, context, /*run_here=*/true,
      [this, reactor, response, job = *job](absl::StatusOr<v1::JobResult> r) {
        absl::Status encoded = r.ok() ? Encode(*r, response) : r.status();
        reactor->Finish(ToGrpcStatus(encoded));
      });
  if (!admitted.ok()) reactor->Finish(ToGrpcStatus(admitted));
  return reactor;
}

// One ExecuteStream call. Reads jobs while fewer than the window are
// unanswered, writes results as they finish (one write at a time, as gRPC
// requires), and finishes once the client is done sending and every result
// is written. Deletes itself when gRPC is done with it.
class TileComputeService::JobStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  JobStream(TileComputeService* service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
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
    absl::StatusOr<std::shared_ptr<const v1::Job>> job = service_->Decode(
        request_, absl::StrCat("stream message ", received_));
    request_.Clear();
    if (!job.ok()) {
      // Its id is unknown: the result carries none, and the stream goes on.
      Push(Encoded(Failed("", job.status())));
    } else {
      const std::string id = (*job)->id();
      // Not run_here: done takes mu_, which this reaction holds.
      absl::Status admitted = service_->Admit(
          **job, context_, /*run_here=*/false,
          [this, id, job = *job](absl::StatusOr<v1::JobResult> r) {
            // Serialized before taking mu_: a large result does not hold
            // up this stream's reactions or its other jobs' completions.
            grpc::ByteBuffer bytes =
                Encoded(r.ok() ? std::move(*r) : Failed(id, r.status()));
            MutexLock lock(&mu_);
            Push(std::move(bytes));
          });
      if (!admitted.ok()) Push(Encoded(Failed(id, admitted)));
    }
    MaybeRead();
  }

  void OnWriteDone(bool ok) override {
    MutexLock lock(&mu_);
    writing_ = false;
    --unanswered_;
    outbox_.pop_front();
    if (!ok) broken_ = true;  // the client is gone: drop what is left
    MaybeWrite();
    MaybeRead();
    MaybeFinish();
  }

  void OnDone() override {
    // Finish runs with mu_ held, possibly on a scheduler thread, and gRPC may
    // call OnDone on another thread before that thread lets go of mu_.
    { MutexLock lock(&mu_); }
    delete this;
  }

 private:
  static v1::JobResult Failed(const std::string& id, const absl::Status& s) {
    v1::JobResult result;
    result.set_id(id);
    result.mutable_status()->set_code(static_cast<v1::Code>(s.code()));
    result.mutable_status()->set_message(std::string(s.message()));
    return result;
  }

  // `result` serialized; one too large to send becomes its job's error.
  grpc::ByteBuffer Encoded(const v1::JobResult& result) const {
    grpc::ByteBuffer bytes;
    if (absl::Status encoded = service_->Encode(result, &bytes); !encoded.ok()) {
      (void)service_->Encode(Failed(result.id(), encoded), &bytes);
    }
    return bytes;
  }

  // Queues one job's answer for writing.
  void Push(grpc::ByteBuffer bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    outbox_.push_back(std::move(bytes));
    MaybeWrite();
  }

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (broken_) {
      unanswered_ -= outbox_.size();
      outbox_.clear();
      MaybeFinish();
      return;
    }
    if (outbox_.empty()) return;
    writing_ = true;
    StartWrite(&outbox_.front());
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
    if (finished_ || unanswered_ > 0 || writing_ || reading_) return;
    if (!reads_done_ && !broken_) return;
    finished_ = true;
    Finish(broken_ ? grpc::Status(grpc::StatusCode::CANCELLED,
                                  "the client stopped reading results")
                   : grpc::Status::OK);
  }

  TileComputeService* const service_;
  grpc::CallbackServerContext* const context_;
  absl::Mutex mu_;
  grpc::ByteBuffer request_;  // the read in progress
  std::deque<grpc::ByteBuffer> outbox_ ABSL_GUARDED_BY(mu_);  // front: writing
  uint32_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;  // read, result not written
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;    // messages read
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteStream(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    // Ends the call at once, reading nothing.
    class Refused final
        : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
     public:
      explicit Refused(const grpc::Status& status) { Finish(status); }
      void OnDone() override { delete this; }
    };
    return new Refused(ToGrpcStatus(allowed));
  }
  return new JobStream(this, context);
}

grpc::ServerUnaryReactor* TileComputeService::GetCapabilities(
    grpc::CallbackServerContext* context, const v1::GetCapabilitiesRequest*,
    v1::Capabilities* capabilities) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    reactor->Finish(ToGrpcStatus(allowed));
    return reactor;
  }
  *capabilities = capabilities_;
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace ptoserve
