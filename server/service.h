// The ptoserve.v1.TileCompute service: translates between protobuf and the
// engine, nothing more.
#ifndef PTOSERVE_SERVER_SERVICE_H_
#define PTOSERVE_SERVER_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "core/engine.h"
#include "ptoserve/v1/service.grpc.pb.h"
#include "server/codec.h"
#include "server/worker_pool.h"

namespace ptoserve {

// absl::Status and grpc::Status share their canonical codes.
grpc::Status ToGrpcStatus(const absl::Status& status);

class TileComputeService final : public v1::TileCompute::CallbackService {
 public:
  // `engine` and `workers` must outlive the service. Jobs run on `workers`,
  // never on gRPC's callback threads.
  TileComputeService(const Engine* engine, WorkerPool* workers,
                     const ServerLimits& limits);

  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const v1::Job* job,
                                    v1::JobResult* result) override;

  grpc::ServerUnaryReactor* GetCapabilities(
      grpc::CallbackServerContext* context,
      const v1::GetCapabilitiesRequest* request,
      v1::Capabilities* capabilities) override;

 private:
  const Engine* engine_;
  WorkerPool* workers_;
  v1::Capabilities capabilities_;  // fixed for the server's lifetime
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_SERVICE_H_
