#include "server/rpc/stream_reactor.h"

#include <utility>

#include "common/mutex.h"

namespace ptoserve {

using Reactor = grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>;

StreamReactor::StreamReactor(const GrpcMetrics::Method* calls,
                             StallWatch* stalls,
                             grpc::CallbackServerContext* context)
    : count_(calls, context), stalls_(stalls) {
  stalls_->Add(&stall_, context);
}

void StreamReactor::Run(std::unique_ptr<StreamMachine> machine,
                        absl::string_view client) {
  count_.SetClient(client);
  machine_ = std::move(machine);
  // Stated to ThreadSanitizer: gRPC runs the events after this, on other
  // threads, ordered through queues it cannot see.
  TsanReleasing(this);
  machine_->Start();
}

void StreamReactor::OnReadDone(bool ok) {
  TsanAcquired(this);
  if (ok) count_.Received(reading_->Length());
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
  count_.Ended();
  delete this;
}

// The machine calls these with its lock held, on whichever thread took
// the event or finished the job; gRPC runs the events they lead to on its
// own threads, after them (stated to ThreadSanitizer, as in Run).
void StreamReactor::StartRead(grpc::ByteBuffer* message) {
  reading_ = message;
  TsanReleasing(this);
  Reactor::StartRead(message);
}

void StreamReactor::StartWrite(const grpc::ByteBuffer* message, bool more) {
  count_.Sent(message->Length());
  stall_.Writing();
  TsanReleasing(this);
  // A buffered write is done once gRPC holds it, and goes out with the
  // next unbuffered one: the machine's last write is never buffered.
  Reactor::StartWrite(message, more ? grpc::WriteOptions().set_buffer_hint()
                                    : grpc::WriteOptions());
}

void StreamReactor::Finish(const grpc::Status& status) {
  count_.Answered(status.error_code(), status.error_message());
  TsanReleasing(this);
  Reactor::Finish(status);
}

RefusedStream::RefusedStream(const GrpcMetrics::Method* calls,
                             grpc::CallbackServerContext* context,
                             const grpc::Status& status)
    : count_(calls, context) {
  count_.Answered(status.error_code(), status.error_message());
  TsanReleasing(this);
  Finish(status);
}

void RefusedStream::OnDone() {
  TsanAcquired(this);
  count_.Ended();
  delete this;
}

}  // namespace ptoserve
