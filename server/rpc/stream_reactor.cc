#include "server/rpc/stream_reactor.h"

#include <utility>

#include "common/mutex.h"

namespace ptoserve {

using Reactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

StreamReactor::StreamReactor(StallWatch* stalls,
                             grpc::CallbackServerContext* context)
    : stalls_(stalls) {
  stalls_->Add(&stall_, context);
}

void StreamReactor::Run(std::unique_ptr<StreamMachine> machine) {
  machine_ = std::move(machine);
  // Stated to ThreadSanitizer: gRPC runs the events after this, on other
  // threads, ordered through queues it cannot see.
  TsanReleasing(this);
  machine_->Start();
}

void StreamReactor::OnReadDone(bool ok) {
  TsanAcquired(this);
  machine_->ReadDone(ok);
}

void StreamReactor::OnWriteDone(bool ok) {
  TsanAcquired(this);
  stall_.Written();
  machine_->WriteDone(ok);
}

void StreamReactor::OnDone() {
  TsanAcquired(this);
  machine_->Done();
  stalls_->Remove(&stall_);
  delete this;
}

void StreamReactor::StartRead(grpc::ByteBuffer* message) {
  Reactor::StartRead(message);
}

void StreamReactor::StartWrite(const grpc::ByteBuffer* message) {
  stall_.Writing();
  Reactor::StartWrite(message);
}

void StreamReactor::Finish(const grpc::Status& status) {
  Reactor::Finish(status);
}

}  // namespace ptoserve
