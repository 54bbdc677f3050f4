#include "server/rpc/inference_service.h"

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/mutex.h"
#include "core/quote.h"
#include "server/oip/infer.h"
#include "server/oip/infer_wire.h"
#include "server/rpc/grpc_body.h"
#include "server/rpc/job_stream.h"
#include "server/rpc/status.h"
#include "server/rpc/stream_reactor.h"
#include "server/rpc/unary_call.h"

namespace ptoserve {

namespace {

// The methods served, for the answer to one that is not.
constexpr char kServed[] =
    "ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata, "
    "ModelInfer, ModelStreamInfer and RepositoryIndex";

// A typed call answered at once: `status`, the response filled already.
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                 const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// A ModelInfer call: the call and what reads its request, in one object.
class InferCall final : public UnaryCall {
 public:
  InferCall(const GrpcMetrics::Method* calls, StallWatch* stalls,
            grpc::CallbackServerContext* context, grpc::ByteBuffer* request,
            const ModelCatalog* catalog)
      : UnaryCall(calls, stalls, context, request), protocol(catalog) {}

  GrpcInferProtocol protocol;
};

}  // namespace

// ModelStreamInfer's messages: each a ModelInferRequest, each answered
// with a ModelStreamInferResponse.
class InferenceService::Codec final : public StreamCodec {
 public:
  explicit Codec(const ModelCatalog* catalog) : catalog_(catalog) {}

  std::unique_ptr<JobProtocol> ForMessage() const override {
    return std::make_unique<GrpcInferProtocol>(catalog_);
  }

  absl::Status Encode(const JobProtocol& message,
                      const absl::StatusOr<JobReply*>& result,
                      uint64_t max_bytes,
                      grpc::ByteBuffer* bytes) const override {
    const auto& protocol = static_cast<const GrpcInferProtocol&>(message);
    const InferEnvelope& envelope = protocol.envelope();
    if (result.ok() && protocol.read_small()) {
      const InferResponseWriter writer(
          envelope, (*result)->outcome(),
          InferResponseWriter::Form::kStreamResponse);
      return EncodeWritten(writer.size(), max_bytes, bytes,
                           [&writer](uint8_t* out) { writer.Write(out); });
    }
    inference::ModelStreamInferResponse answer;
    if (result.ok()) {
      InferResponseOf(*(*result)->Message(), envelope,
                      answer.mutable_infer_response());
    } else {
      answer.set_error_message(std::string(result.status().message()));
      answer.mutable_infer_response()->set_id(envelope.id);
      answer.mutable_infer_response()->set_model_name(envelope.model);
    }
    return EncodeReply(answer, max_bytes, bytes);
  }

 private:
  const ModelCatalog* const catalog_;
};

InferenceService::InferenceService(const Intake* intake,
                                   const ModelCatalog* catalog,
                                   TileComputeService* calls,
                                   std::function<bool()> ready)
    : intake_(intake),
      calls_(calls),
      ready_(std::move(ready)),
      catalog_(*catalog),
      codec_(std::make_unique<Codec>(catalog)) {}

grpc::ServerUnaryReactor* InferenceService::ServerLive(
    grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
    inference::ServerLiveResponse* response) {
  response->set_live(true);
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerReady(
    grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
    inference::ServerReadyResponse* response) {
  response->set_ready(ready_());
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelReady(
    grpc::CallbackServerContext* context,
    const inference::ModelReadyRequest* request,
    inference::ModelReadyResponse* response) {
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    return Answer(context, allowed);
  }
  absl::StatusOr<const InferModel*> model =
      catalog_.Find(request->name(), request->version());
  if (!model.ok()) return Answer(context, model.status());
  response->set_ready(ready_());
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerMetadata(
    grpc::CallbackServerContext* context,
    const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    return Answer(context, allowed);
  }
  *response = ServerMetadataOf();
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelMetadata(
    grpc::CallbackServerContext* context,
    const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    return Answer(context, allowed);
  }
  absl::StatusOr<const InferModel*> model =
      catalog_.Find(request->name(), request->version());
  if (!model.ok()) return Answer(context, model.status());
  *response = catalog_.Metadata(**model);
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::RepositoryIndex(
    grpc::CallbackServerContext* context,
    const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    return Answer(context, allowed);
  }
  if (!request->repository_name().empty()) {
    return Answer(context, absl::NotFoundError(absl::StrFormat(
                               "no repository %s: this server has one, unnamed",
                               ShortQuote(request->repository_name(), 100))));
  }
  if (!request->ready() || ready_()) *response = catalog_.Index();
  return Answer(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelInfer(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // As TileCompute's Execute: the call takes the request's slices.
  auto* call = new InferCall(counted_.infer, calls_->mutable_stalls(), context,
                             const_cast<grpc::ByteBuffer*>(request), &catalog_);
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    call->Answer(ToGrpcStatus(allowed));
    return call;
  }
  call->info = calls_->CallOf(context);
  call->SetClient(call->info.share->client());
  call->response = response;
  ExecuteRequest execute;
  execute.body = &call->body;
  execute.what = "the request";
  execute.call = &call->info;
  execute.new_job = [call] { return call->NewJob(); };
  execute.protocol = &call->protocol;
  // Two pointers: the function holds them in place, not on the heap.
  execute.done = [this, call](absl::StatusOr<JobReply*> r,
                              MemoryBudget::Hold hold) {
    call->hold = std::move(hold);
    absl::Status encoded = r.status();
    const uint64_t max_bytes = intake_->limits().max_message_bytes;
    const GrpcInferProtocol& protocol = call->protocol;
    if (r.ok() && protocol.read_small()) {
      const InferResponseWriter writer(protocol.envelope(), (*r)->outcome());
      encoded = EncodeWritten(writer.size(), max_bytes, call->response,
                              [&writer](uint8_t* out) { writer.Write(out); });
    } else if (r.ok()) {
      inference::ModelInferResponse answer;
      InferResponseOf(*(*r)->Message(), protocol.envelope(), &answer);
      encoded = EncodeReply(answer, max_bytes, call->response);
    }
    call->Answer(ToGrpcStatus(encoded),
                 encoded.ok() ? call->response->Length() : 0);
  };
  intake_->Execute(std::move(execute));
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
InferenceService::ModelStreamInfer(grpc::CallbackServerContext* context) {
  if (absl::Status allowed = calls_->Authorize(*context); !allowed.ok()) {
    return new RefusedStream(counted_.stream, context, ToGrpcStatus(allowed));
  }
  auto* reactor =
      new StreamReactor(counted_.stream, calls_->mutable_stalls(), context);
  CallInfo call = calls_->CallOf(context);
  const std::shared_ptr<MemoryBudget::Share> share = call.share;
  reactor->Run(std::make_unique<JobStream>(
                   reactor, intake_->limits().stream_window,
                   StreamJobs{intake_, std::move(call), codec_.get()}),
               share->client());
  return reactor;
}

namespace {

class UnservedCall final : public grpc::ServerGenericBidiReactor {
 public:
  explicit UnservedCall(const grpc::Status& status) {
    TsanReleasing(this);
    Finish(status);
  }
  void OnDone() override {
    TsanAcquired(this);
    delete this;
  }
};

}  // namespace

grpc::ServerGenericBidiReactor* UnservedMethods::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  const std::string& method = context->method();
  const std::string inference = absl::StrCat(
      "/", inference::GRPCInferenceService::service_full_name(), "/");
  std::string message;
  if (absl::StartsWith(method, inference)) {
    message = absl::StrFormat(
        "%s is not served by ptoserve, whose %s serves %s "
        "(docs/INFERENCE.md)",
        ShortQuote(method.substr(1), 120),
        inference::GRPCInferenceService::service_full_name(), kServed);
  } else {
    message = absl::StrFormat(
        "no method %s on this server (its services: ptoserve.v1.TileCompute, "
        "ptoserve.v1.SharedMemory, %s, grpc.health.v1.Health and server "
        "reflection)",
        ShortQuote(method, 120),
        inference::GRPCInferenceService::service_full_name());
  }
  return new UnservedCall(
      grpc::Status(grpc::StatusCode::UNIMPLEMENTED, message));
}

}  // namespace ptoserve
