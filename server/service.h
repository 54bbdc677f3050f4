// The ptoserve.v1.TileCompute service: gRPC calls, their bytes and their
// authentication. Jobs go to the dispatcher (server/dispatcher.h), which
// runs them on the engine.
#ifndef PTOSERVE_SERVER_SERVICE_H_
#define PTOSERVE_SERVER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <functional>

#include "proto/codec.h"
#include "ptoserve/v1/service.grpc.pb.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/grpc_metrics.h"
#include "server/memory_budget.h"
#include "server/service_metrics.h"
#include "server/stall_watch.h"
#include "server/task_pool.h"

namespace ptoserve {

// absl::Status and grpc::Status share their canonical codes.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Execute, ExecuteStream and ExecuteBatches take their messages as bytes and
// decode them here: gRPC would answer a request that does not decode
// UNIMPLEMENTED, with no message, and take a stream message that does not
// for the end of the stream, which then ends OK with later jobs unanswered.
// The most large requests of one client that the decoders hold waiting.
inline constexpr int kDecodesPerClient = 64;

class TileComputeService final
    : public v1::TileCompute::WithCallbackMethod_GetCapabilities<
          v1::TileCompute::WithRawCallbackMethod_Execute<
              v1::TileCompute::WithRawCallbackMethod_ExecuteStream<
                  v1::TileCompute::WithRawCallbackMethod_ExecuteBatches<
                      v1::TileCompute::Service>>>> {
 public:
  // `dispatcher`, `metrics`, `budget`, `decoders` and `auth` (null: no
  // authentication) must outlive the service. Requests that are heavy to
  // decode (see Light) are decoded on `decoders`, not on gRPC's threads, at
  // most kDecodesPerClient of one client's waiting at once; its Shutdown
  // must come before the scheduler's.
  TileComputeService(Dispatcher* dispatcher, const ServerLimits& limits,
                     ServiceMetrics* metrics, MemoryBudget* budget,
                     TaskPool* decoders,
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

  // Execute counts its own calls in `calls` (GrpcMetrics::CountedByHandler)
  // rather than through the interceptor; null: not counted here. Call
  // before the server starts.
  void CountExecuteCalls(const GrpcMetrics::Method* calls) {
    execute_calls_ = calls;
  }

  // The watch that cancels calls whose client reads no answer.
  const StallWatch& stalls() const { return stalls_; }

  grpc::ServerUnaryReactor* GetCapabilities(
      grpc::CallbackServerContext* context,
      const v1::GetCapabilitiesRequest* request,
      v1::Capabilities* capabilities) override;

 private:
  class UnaryCall;
  class JobStream;
  class BatchStream;
  using Done = Dispatcher::Done;
  using Refusal = Dispatcher::Refusal;
  using Share = std::shared_ptr<MemoryBudget::Share>;

  // What parsing `bytes` would cost, checked before it is paid
  // (CheckJobWire); a refusal names `what` ("the request", "stream message
  // 3") and is counted in `metrics_`.
  absl::StatusOr<WireShape> Inspect(const grpc::ByteBuffer& bytes,
                                    absl::string_view what) const;
  // Whether a request of `shape` and `bytes` is quick to decode and run, so
  // that gRPC's thread may do both: small, few instructions, little
  // assembly. Others go to `decoders_`.
  static bool Light(const WireShape& shape, uint64_t bytes);
  // The Job in `bytes`, or INVALID_ARGUMENT naming `what` when they are not
  // one, RESOURCE_EXHAUSTED if memory runs out (both counted in `metrics_`).
  // REQUIRES: Inspect passed them.
  absl::StatusOr<std::shared_ptr<const v1::Job>> Decode(
      const grpc::ByteBuffer& bytes, absl::string_view what) const;
  // Inspect and Decode for a JobBatch (CheckJobBatchWire).
  absl::StatusOr<BatchShape> InspectBatch(const grpc::ByteBuffer& bytes,
                                          absl::string_view what) const;
  // A message of type M parsed from `bytes`, or the error Decode describes.
  template <typename M>
  absl::StatusOr<std::shared_ptr<M>> Parse(const grpc::ByteBuffer& bytes,
                                           absl::string_view what) const;
  // Decodes and admits an Execute call's request; finishes `call` with the
  // result or the error.
  void RunUnary(UnaryCall* call, const grpc::ByteBuffer& request,
                grpc::CallbackServerContext* context,
                grpc::ByteBuffer* response, bool run_here);
  // The answer when `decoders_` refused `what` for `why`.
  absl::Status Busy(absl::string_view what, TaskPool::Posted why) const;
  // Serializes `result` into `bytes`; RESOURCE_EXHAUSTED if it is larger
  // than a response may be.
  absl::Status Encode(const v1::JobResult& result,
                      grpc::ByteBuffer* bytes) const;
  // Encode for any message (a JobResultBatch).
  absl::Status EncodeMessage(const google::protobuf::Message& message,
                             grpc::ByteBuffer* bytes) const;
  // Hands `job` to the dispatcher as a job of the call `context`, whose
  // client's share of the memory budget is `share` (Dispatcher::Dispatch).
  absl::Status Dispatch(const v1::Job& job, uint64_t request_bytes,
                        grpc::CallbackServerContext* context,
                        const Share& share, bool run_here, Done done,
                        bool may_wait = false, Refusal* refusal = nullptr);
  // The share of the memory budget of `context`'s client: its bearer
  // token's, or else its connection's.
  Share ShareOf(const grpc::CallbackServerContext& context) const;

  // OK, or why `context`'s caller may not call (UNAUTHENTICATED).
  absl::Status Authorize(const grpc::CallbackServerContext& context) const {
    return auth_ == nullptr ? absl::OkStatus() : auth_->Check(context);
  }

  Dispatcher* dispatcher_;
  ServiceMetrics* metrics_;
  const GrpcMetrics::Method* execute_calls_ = nullptr;
  MemoryBudget* budget_;
  TaskPool* decoders_;
  const TokenAuthenticator* auth_;
  const uint64_t max_message_bytes_;
  const uint32_t stream_window_;
  const uint32_t max_jobs_per_batch_;
  StallWatch stalls_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SERVICE_H_
