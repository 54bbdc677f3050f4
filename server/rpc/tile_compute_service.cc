#include "server/rpc/tile_compute_service.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/mutex.h"
#include "server/rpc/batch_stream.h"
#include "server/rpc/job_stream.h"
#include "server/rpc/status.h"
#include "server/rpc/stream_reactor.h"
#include "server/transport/peer_credentials.h"

namespace ptoserve {

namespace {

// A stream refused at the start: ends the call at once, reading nothing.
class RefusedStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RefusedStream(const GrpcMetrics::Method* calls, const grpc::Status& status)
      : count_(calls) {
    count_.Answered(status.error_code());
    TsanReleasing(this);
    Finish(status);
  }
  void OnDone() override {
    TsanAcquired(this);
    count_.Ended();
    delete this;
  }

 private:
  CallCount count_;
};

absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

}  // namespace

TileComputeService::TileComputeService(Dispatcher* dispatcher,
                                       const RequestBytes* bytes,
                                       const ServerLimits& limits,
                                       MemoryBudget* budget,
                                       const TokenAuthenticator* auth)
    : dispatcher_(dispatcher),
      bytes_(bytes),
      budget_(budget),
      auth_(auth),
      stream_window_(limits.stream_window),
      stalls_(limits.stall_timeout) {}

CallInfo TileComputeService::CallOf(
    grpc::CallbackServerContext* context) const {
  CallInfo call;
  call.deadline = CallDeadline(*context);
  call.cancelled = [context] { return context->IsCancelled(); };
  call.caller_uid = [context] { return CachedPeerUid(context->peer()); };
  // A token names its holder, on however many connections; without tokens
  // a client is one connection ("ipv4:127.0.0.1:40112", or "fd:12" for
  // one the server's own listener accepted).
  const int token = auth_ != nullptr ? auth_->Identify(*context) : -1;
  call.share = token >= 0 ? budget_->ShareOf(absl::StrCat("token ", token))
                          : budget_->ShareOf(context->peer());
  return call;
}

grpc::ServerUnaryReactor* TileComputeService::Execute(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  auto* call =
      new UnaryCall(counted_.execute, &stalls_, context, request->Length());
  // gRPC would keep the bytes until the call ends (its typed handlers free
  // them once parsed); the buffer is not const, only the interface is.
  auto* bytes = const_cast<grpc::ByteBuffer*>(request);
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    call->Answer(ToGrpcStatus(allowed));
    return call;
  }
  absl::StatusOr<WireShape> shape = bytes_->Inspect(*bytes, "the request");
  if (!shape.ok()) {
    call->Answer(ToGrpcStatus(shape.status()));
    bytes->Clear();
    return call;
  }
  call->info = CallOf(context);
  if (RequestBytes::Light(*shape, bytes->Length())) {
    RunUnary(call, *bytes, response, /*run_here=*/true);
  } else {
    absl::Status offloaded = bytes_->Offload(
        *bytes, call->info.share, "the request",
        [this, call, response](const grpc::ByteBuffer& b) {
          // The deadline first: gRPC cancels a call past it.
          if (absl::Now() >= call->info.deadline) {
            bytes_->CountRefused(absl::StatusCode::kDeadlineExceeded);
            call->Answer(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                                      "the call's deadline passed before its "
                                      "request was decoded; it never ran"));
            return;
          }
          if (call->info.cancelled()) {
            bytes_->CountRefused(absl::StatusCode::kCancelled);
            call->Answer(grpc::Status(grpc::StatusCode::CANCELLED,
                                      "the call was cancelled before its "
                                      "request was decoded"));
            return;
          }
          RunUnary(call, b, response, /*run_here=*/false);
        });
    if (!offloaded.ok()) call->Answer(ToGrpcStatus(offloaded));
  }
  bytes->Clear();
  return call;
}

void TileComputeService::RunUnary(UnaryCall* call,
                                  const grpc::ByteBuffer& request,
                                  grpc::ByteBuffer* response, bool run_here) {
  v1::Job* job = call->NewJob();
  if (absl::Status parsed = bytes_->ParseInto(request, "the request", job);
      !parsed.ok()) {
    call->Answer(ToGrpcStatus(parsed));
    return;
  }
  call->job = job;
  JobRequest dispatch;
  dispatch.job = job;
  dispatch.request_bytes = request.Length();
  dispatch.call = &call->info;
  // With run_here, a unary call's thread runs a small job itself when the
  // scheduler is idle: no hand-off.
  dispatch.run_here = run_here;
  dispatch.done = [this, call, response](absl::StatusOr<v1::JobResult*> r,
                                         MemoryBudget::Hold hold) {
    call->hold = std::move(hold);
    absl::Status encoded = r.ok() ? bytes_->Encode(**r, response) : r.status();
    call->Answer(ToGrpcStatus(encoded), encoded.ok() ? response->Length() : 0);
  };
  const Dispatched dispatched = dispatcher_->Dispatch(std::move(dispatch));
  if (!dispatched.status.ok()) call->Answer(ToGrpcStatus(dispatched.status));
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteStream(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(counted_.stream, ToGrpcStatus(allowed));
  }
  auto* reactor = new StreamReactor(counted_.stream, &stalls_, context);
  reactor->Run(std::make_unique<JobStream>(
      reactor, stream_window_,
      StreamJobs{dispatcher_, bytes_, CallOf(context)}));
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteBatches(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(counted_.batches, ToGrpcStatus(allowed));
  }
  auto* reactor = new StreamReactor(counted_.batches, &stalls_, context);
  reactor->Run(std::make_unique<BatchStream>(
      reactor, stream_window_,
      StreamJobs{dispatcher_, bytes_, CallOf(context)}));
  return reactor;
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
