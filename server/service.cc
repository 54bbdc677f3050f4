#include "server/service.h"

#include "absl/strings/str_format.h"

namespace ptoserve {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

TileComputeService::TileComputeService(const Engine* engine,
                                       WorkerPool* workers,
                                       const ServerLimits& limits)
    : engine_(engine), workers_(workers) {
  ToCapabilities(*engine, limits, &capabilities_);
}

grpc::ServerUnaryReactor* TileComputeService::Execute(
    grpc::CallbackServerContext* context, const v1::Job* job,
    v1::JobResult* result) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto run = [this, context, job, result, reactor] {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                   "the call was cancelled before it ran"));
      return;
    }
    absl::StatusOr<JobOutcome> outcome = [&]() -> absl::StatusOr<JobOutcome> {
      absl::StatusOr<JobSpec> spec = ToJobSpec(*job);
      if (!spec.ok()) return spec.status();
      return engine_->Execute(*spec);
    }();
    if (!outcome.ok()) {
      reactor->Finish(ToGrpcStatus(outcome.status()));
      return;
    }
    result->set_id(job->id());
    ToJobResult(*outcome, result);
    reactor->Finish(grpc::Status::OK);
  };
  if (!workers_->TrySubmit(std::move(run))) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrFormat("server busy: %u jobs already wait for a worker",
                        workers_->capacity())));
  }
  return reactor;
}

grpc::ServerUnaryReactor* TileComputeService::GetCapabilities(
    grpc::CallbackServerContext* context, const v1::GetCapabilitiesRequest*,
    v1::Capabilities* capabilities) {
  *capabilities = capabilities_;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace ptoserve
