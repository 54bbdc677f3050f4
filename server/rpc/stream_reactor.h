// A StreamMachine on gRPC: the bidi reactor of one ExecuteStream or
// ExecuteBatches call, which passes gRPC's events to the machine, carries
// out its reads, writes and end, counts the call and its messages in the
// gRPC metrics, and watches its writes for a client that stops reading
// (server/rpc/stall_watch.h). Deletes itself, and the machine, when gRPC
// is done with the call.
#ifndef PTOSERVE_SERVER_RPC_STREAM_REACTOR_H_
#define PTOSERVE_SERVER_RPC_STREAM_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "server/metrics/grpc_metrics.h"
#include "server/rpc/stall_watch.h"
#include "server/rpc/stream_machine.h"

namespace ptoserve {

class StreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public StreamWire {
 public:
  // Watched in `stalls` (which must outlive the call) as `context`'s call;
  // counted in `calls` (GrpcMetrics::CountedByHandler; null: not counted
  // here), which must outlive it too.
  StreamReactor(const GrpcMetrics::Method* calls, StallWatch* stalls,
                grpc::CallbackServerContext* context);

  // Runs `machine`, made with this as its wire, until the call is done,
  // the call's `client` named in its log line (a name that outlives the
  // machine). Call once, right after construction.
  void Run(std::unique_ptr<StreamMachine> machine, absl::string_view client);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

  // The machine's wire.
  void StartRead(grpc::ByteBuffer* message) override;
  void StartWrite(const grpc::ByteBuffer* message, bool more) override;
  void Finish(const grpc::Status& status) override;

 private:
  CallCount count_;
  StallWatch* const stalls_;
  StallWatch::Call stall_;
  std::unique_ptr<StreamMachine> machine_;
  grpc::ByteBuffer* reading_ = nullptr;  // the read in progress's message
};

// A stream refused at the start: ends the call at once with `status`,
// reading nothing; counted in `calls` (null: not here). Deletes itself.
class RefusedStream final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RefusedStream(const GrpcMetrics::Method* calls,
                grpc::CallbackServerContext* context,
                const grpc::Status& status);
  void OnDone() override;

 private:
  CallCount count_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_STREAM_REACTOR_H_
