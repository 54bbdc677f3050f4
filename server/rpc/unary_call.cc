#include "server/rpc/unary_call.h"

#include "common/mutex.h"

namespace ptoserve {

UnaryCall::UnaryCall(const GrpcMetrics::Method* calls, StallWatch* stalls,
                     grpc::CallbackServerContext* context,
                     grpc::ByteBuffer* request)
    : body(request),
      count_(calls, context),
      stalls_(stalls),
      context_(context) {
  count_.Received(body.size());
}

google::protobuf::ArenaOptions UnaryCall::FirstBlock(char* block,
                                                     size_t bytes) {
  google::protobuf::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = bytes;
  return options;
}

void UnaryCall::Answer(const grpc::Status& status, uint64_t reply_bytes) {
  if (status.ok()) count_.Sent(reply_bytes);
  count_.Answered(status.error_code(), status.error_message());
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
  count_.Ended();
  delete this;
}

}  // namespace ptoserve
