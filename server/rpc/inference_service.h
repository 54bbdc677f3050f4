// The Open Inference Protocol's gRPC service, inference.GRPCInferenceService
// (docs/INFERENCE.md), beside ptoserve.v1.TileCompute on the same port:
// ServerLive and ServerReady answer as the health service does (no token,
// behind no parse); the metadata methods from the model catalog; ModelInfer
// and ModelStreamInfer take their requests as bytes and hand them to the
// request pipeline through server/oip's protocol, as TileCompute's Execute
// and ExecuteStream hand theirs, with the same calls' identity, deadline,
// cancellation and stall watch (TileComputeService::CallOf).
#ifndef PTOSERVE_SERVER_RPC_INFERENCE_SERVICE_H_
#define PTOSERVE_SERVER_RPC_INFERENCE_SERVICE_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "inference/grpc_service.grpc.pb.h"
#include "server/intake/intake.h"
#include "server/metrics/grpc_metrics.h"
#include "server/oip/models.h"
#include "server/rpc/stream_jobs.h"
#include "server/rpc/tile_compute_service.h"

namespace ptoserve {

namespace inference_methods {
using S = inference::GRPCInferenceService;
// Typed methods, but for the two whose requests the pipeline decodes.
using Base = S::WithCallbackMethod_ServerLive<S::WithCallbackMethod_ServerReady<
    S::WithCallbackMethod_ModelReady<S::WithCallbackMethod_ServerMetadata<
        S::WithCallbackMethod_ModelMetadata<S::WithRawCallbackMethod_ModelInfer<
            S::WithRawCallbackMethod_ModelStreamInfer<
                S::WithCallbackMethod_RepositoryIndex<S::Service>>>>>>>>;
}  // namespace inference_methods

class InferenceService final : public inference_methods::Base {
 public:
  // Everything must outlive the service; `ready`: whether the server takes
  // jobs (false once it drains).
  InferenceService(const Intake* intake, const ModelCatalog* catalog,
                   TileComputeService* calls, std::function<bool()> ready);

  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* context,
      const inference::ServerLiveRequest* request,
      inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* context,
      const inference::ServerReadyRequest* request,
      inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* context,
      const inference::ModelReadyRequest* request,
      inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* context,
      const inference::ServerMetadataRequest* request,
      inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* context,
      const inference::ModelMetadataRequest* request,
      inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryIndex(
      grpc::CallbackServerContext* context,
      const inference::RepositoryIndexRequest* request,
      inference::RepositoryIndexResponse* response) override;

  // `request`: a serialized ModelInferRequest; `response`: a serialized
  // ModelInferResponse.
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  // Serialized ModelInferRequests in, ModelStreamInferResponses out.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ModelStreamInfer(
      grpc::CallbackServerContext* context) override;

  // The series in which ModelInfer and ModelStreamInfer count their own
  // calls, as TileCompute's job methods do (GrpcMetrics::CountedByHandler:
  // the interceptor's hooks cost each message a trip through gRPC's
  // completion queue); null: not counted here.
  struct CountedCalls {
    const GrpcMetrics::Method* infer = nullptr;
    const GrpcMetrics::Method* stream = nullptr;
  };
  // Call before the server starts.
  void CountOwnCalls(const CountedCalls& calls) { counted_ = calls; }

 private:
  class Codec;

  const Intake* const intake_;
  TileComputeService* const calls_;
  const std::function<bool()> ready_;
  const ModelCatalog& catalog_;
  const std::unique_ptr<const StreamCodec> codec_;
  CountedCalls counted_;
};

// Answers every method no service serves UNIMPLEMENTED, saying what is
// served: Triton's methods that ptoserve has not (ModelConfig, shared
// memory, ...) by name, and any other with the services there are.
// Finishes at once, reading nothing.
class UnservedMethods final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_INFERENCE_SERVICE_H_
