#include "server/rpc/unary_call.h"

#include "common/mutex.h"

namespace ptoserve {

namespace {

google::protobuf::ArenaOptions FirstBlock(char* block, size_t bytes) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = bytes;
  return options;
}

}  // namespace

UnaryCall::UnaryCall(const GrpcMetrics::Method* calls, StallWatch* stalls,
                     grpc::CallbackServerContext* context)
    : arena_(FirstBlock(first_block_, kFirstBlockBytes)),
      calls_(calls),
      stalls_(stalls),
      context_(context) {
  if (calls_ == nullptr) return;
  start_ = absl::Now();
  calls_->started->Increment();
  calls_->received->Increment();
}

void UnaryCall::Answer(const grpc::Status& status) {
  if (calls_ != nullptr) {
    const int code = status.error_code();
    calls_->handled[code >= 0 && code < 17 ? code : grpc::StatusCode::UNKNOWN]
        ->Increment();
    if (status.ok()) calls_->sent->Increment();
    calls_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
    answered_ = true;
  }
  // An answer with a body waits on the client's reading it.
  if (status.ok()) {
    stalls_->Add(&stall_, context_);
    stall_.Writing();
  }
  // Stated to ThreadSanitizer: gRPC orders Finish before OnDone through
  // queues it cannot see, and the fields above are written on one thread
  // (the scheduler's) and freed on another (gRPC's).
  TsanReleasing(this);
  Finish(status);
}

void UnaryCall::OnDone() {
  TsanAcquired(this);
  stalls_->Remove(&stall_);
  if (calls_ != nullptr && !answered_) {
    calls_->handled[grpc::StatusCode::CANCELLED]->Increment();
    calls_->seconds->Observe(absl::ToDoubleSeconds(absl::Now() - start_));
  }
  delete this;
}

}  // namespace ptoserve
