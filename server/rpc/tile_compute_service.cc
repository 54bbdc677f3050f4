#include "server/rpc/tile_compute_service.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/mutex.h"
#include "server/identity/client_address.h"
#include "server/identity/peer_credentials.h"
#include "server/rpc/batch_stream.h"
#include "server/rpc/grpc_body.h"
#include "server/rpc/job_stream.h"
#include "server/rpc/status.h"
#include "server/rpc/stream_reactor.h"

namespace ptoserve {

namespace {

absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

}  // namespace

TileComputeService::TileComputeService(const Intake* intake,
                                       MemoryBudget* budget,
                                       const TokenAuthenticator* auth)
    : intake_(intake),
      budget_(budget),
      auth_(auth),
      limits_(intake->limits()),
      stalls_(limits_.stall_timeout) {}

CallInfo TileComputeService::CallOf(
    grpc::CallbackServerContext* context) const {
  CallInfo call;
  call.deadline = CallDeadline(*context);
  call.cancelled = [context] { return context->IsCancelled(); };
  call.caller_uid = [context] { return CachedPeerUid(context->peer()); };
  // A token names its holder, on however many connections; without tokens
  // a client is its peer: the local user of a loopback connection, or the
  // address of another, on however many connections (PeerClient).
  // Through a trusted proxy, the client its X-Forwarded-For names.
  const int token = auth_ != nullptr ? auth_->Identify(*context) : -1;
  if (token >= 0) {
    call.share = budget_->ShareOf(absl::StrCat("token ", token));
    return call;
  }
  std::string client = PeerClient(context->peer());
  if (absl::StartsWith(client, "proxy ")) {
    const auto& metadata = context->client_metadata();
    const auto forwarded = metadata.find("x-forwarded-for");
    client = ForwardedClient(client,
                             forwarded == metadata.end()
                                 ? absl::string_view()
                                 : absl::string_view(forwarded->second.data(),
                                                     forwarded->second.size()));
  }
  call.share = budget_->ShareOf(client);
  return call;
}

grpc::ServerUnaryReactor* TileComputeService::Execute(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // gRPC would keep the bytes until the call ends (its typed handlers free
  // them once parsed); the buffer is not const, only the interface is. The
  // call takes its slices, and frees them once they are parsed.
  auto* call = new UnaryCall(counted_.execute, &stalls_, context,
                             const_cast<grpc::ByteBuffer*>(request));
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    call->Answer(ToGrpcStatus(allowed));
    return call;
  }
  call->info = CallOf(context);
  call->SetClient(call->info.share->client());
  ExecuteRequest execute;
  execute.body = &call->body;
  execute.what = "the request";
  execute.call = &call->info;
  execute.new_job = [call] { return call->NewJob(); };
  execute.reply_form = JobReply::Form::kBytes;
  // Two pointers: the function holds them in place, not on the heap.
  call->response = response;
  execute.done = [this, call](absl::StatusOr<JobReply*> r,
                              MemoryBudget::Hold hold) {
    call->hold = std::move(hold);
    absl::Status encoded =
        r.ok() ? EncodeReply(**r, limits_.max_message_bytes, call->response)
               : r.status();
    call->Answer(ToGrpcStatus(encoded),
                 encoded.ok() ? call->response->Length() : 0);
  };
  intake_->Execute(std::move(execute));
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteStream(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(counted_.stream, context, ToGrpcStatus(allowed));
  }
  auto* reactor = new StreamReactor(counted_.stream, &stalls_, context);
  CallInfo call = CallOf(context);
  const std::shared_ptr<MemoryBudget::Share> share = call.share;
  reactor->Run(
      std::make_unique<JobStream>(reactor, limits_.stream_window,
                                  StreamJobs{intake_, std::move(call)}),
      share->client());
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TileComputeService::ExecuteBatches(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = Authorize(*context); !allowed.ok()) {
    return new RefusedStream(counted_.batches, context, ToGrpcStatus(allowed));
  }
  auto* reactor = new StreamReactor(counted_.batches, &stalls_, context);
  CallInfo call = CallOf(context);
  const std::shared_ptr<MemoryBudget::Share> share = call.share;
  reactor->Run(
      std::make_unique<BatchStream>(reactor, limits_.stream_window,
                                    StreamJobs{intake_, std::move(call)}),
      share->client());
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
  *capabilities = intake_->dispatcher()->capabilities();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace ptoserve
