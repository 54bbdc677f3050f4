#include "server/rpc/stream_reactor.h"

#include <utility>

namespace ptoserve {

using Reactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

StreamReactor::StreamReactor(StallWatch* stalls,
                             grpc::CallbackServerContext* context)
    : stalls_(stalls) {
  stalls_->Add(&stall_, context);
}

void StreamReactor::Run(std::unique_ptr<StreamMachine> machine) {
  machine_ = std::move(machine);
  machine_->Start();
}

void StreamReactor::OnWriteDone(bool ok) {
  stall_.Written();
  machine_->WriteDone(ok);
}

void StreamReactor::OnDone() {
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
