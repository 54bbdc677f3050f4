// The ptoserve.v1.TileCompute service: its calls, their authentication and
// which client each belongs to. Execute runs one job (server/rpc/
// unary_call.h); ExecuteStream and ExecuteBatches run a stream machine each
// (server/rpc/job_stream.h, batch_stream.h); the jobs themselves go to the
// dispatcher (server/jobs/dispatcher.h).
//
// Execute, ExecuteStream and ExecuteBatches take their messages as bytes and
// hand them to the request pipeline (server/intake/intake.h), which decodes
// them: gRPC would answer a request that does not decode UNIMPLEMENTED, with
// no message, and take a stream message that does not for the end of the
// stream, which then ends OK with later jobs unanswered.
#ifndef PTOSERVE_SERVER_RPC_TILE_COMPUTE_SERVICE_H_
#define PTOSERVE_SERVER_RPC_TILE_COMPUTE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "ptoserve/v1/service.grpc.pb.h"
#include "server/exec/memory_budget.h"
#include "server/intake/intake.h"
#include "server/jobs/dispatcher.h"
#include "server/metrics/grpc_metrics.h"
#include "server/rpc/stall_watch.h"
#include "server/rpc/unary_call.h"
#include "server/transport/auth.h"

namespace ptoserve {

class TileComputeService final
    : public v1::TileCompute::WithCallbackMethod_GetCapabilities<
          v1::TileCompute::WithRawCallbackMethod_Execute<
              v1::TileCompute::WithRawCallbackMethod_ExecuteStream<
                  v1::TileCompute::WithRawCallbackMethod_ExecuteBatches<
                      v1::TileCompute::Service>>>> {
 public:
  // `intake`, `budget` and `auth` (null: no authentication) must outlive
  // the service; its limits are the dispatcher's.
  TileComputeService(const Intake* intake, MemoryBudget* budget,
                     const TokenAuthenticator* auth = nullptr);

  // `request`: a serialized Job; `response`: a serialized JobResult.
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;

  // Serialized Jobs in, serialized JobResults out.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ExecuteStream(
      grpc::CallbackServerContext* context) override;

  // Serialized JobBatches in, serialized JobResultBatches out.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ExecuteBatches(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* GetCapabilities(
      grpc::CallbackServerContext* context,
      const v1::GetCapabilitiesRequest* request,
      v1::Capabilities* capabilities) override;

  // The series in which the job methods count their own calls
  // (GrpcMetrics::CountedByHandler) rather than through the interceptor,
  // whose hooks cost each message a trip through gRPC's completion queue;
  // null: not counted here.
  struct CountedCalls {
    const GrpcMetrics::Method* execute = nullptr;
    const GrpcMetrics::Method* stream = nullptr;
    const GrpcMetrics::Method* batches = nullptr;
  };
  // Call before the server starts.
  void CountOwnCalls(const CountedCalls& calls) { counted_ = calls; }

  // The watch that cancels calls whose client reads no answer.
  const StallWatch& stalls() const { return stalls_; }
  StallWatch* mutable_stalls() { return &stalls_; }

  // What the dispatcher needs to know of `context`'s call: its deadline,
  // whether it was cancelled, its caller's user, and its client's share of
  // the memory budget (its bearer token's, or else its connection's). The
  // one answer for every gRPC service's jobs (the inference service's too).
  CallInfo CallOf(grpc::CallbackServerContext* context) const;
  // OK, or why `context`'s caller may not call (UNAUTHENTICATED).
  absl::Status Authorize(const grpc::CallbackServerContext& context) const {
    return auth_ == nullptr ? absl::OkStatus() : auth_->Check(context);
  }

 private:
  const Intake* const intake_;
  MemoryBudget* const budget_;
  const TokenAuthenticator* const auth_;
  const ServiceLimits& limits_;
  CountedCalls counted_;
  StallWatch stalls_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_TILE_COMPUTE_SERVICE_H_
