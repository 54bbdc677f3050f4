// One Execute call's reactor: holds the request's job (the engine reads
// inputs in place), parsed on an arena whose first block is the call's own,
// the call's description and the job's part of the
// memory budget until gRPC is done with the reply, counts the call in the
// gRPC metrics, and watches an answer with a body for a client that does
// not read it. Deletes itself when gRPC is done with the call.
#ifndef PTOSERVE_SERVER_RPC_UNARY_CALL_H_
#define PTOSERVE_SERVER_RPC_UNARY_CALL_H_

#include <google/protobuf/arena.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/protobuf_arena.h"
#include "server/jobs/dispatcher.h"
#include "server/metrics/grpc_metrics.h"
#include "server/rpc/grpc_body.h"
#include "server/rpc/stall_watch.h"

namespace ptoserve {

// Not final: a door whose calls hold more extends it (InferenceService's
// calls hold their protocol), so that one allocation holds a call.
class UnaryCall : public grpc::ServerUnaryReactor {
 public:
  // `calls` (null: not counted here) and `stalls` must outlive the call;
  // `request`: the request's bytes, whose slices the call takes (counted
  // as received).
  UnaryCall(const GrpcMetrics::Method* calls, StallWatch* stalls,
            grpc::CallbackServerContext* context, grpc::ByteBuffer* request);

  // Ends the call with `status` (a reply with a body waits on the client
  // reading it), whose reply, when OK, is `reply_bytes` long. Call once.
  void Answer(const grpc::Status& status, uint64_t reply_bytes = 0);

  void OnDone() override;
  // OnDone only frees (OnCancel is the base's no-op), so gRPC may run it
  // on the thread that completes the call, as it does for its own default
  // reactor, instead of handing it to its executor thread: that hand-off
  // was a thread wake-up per call, about 1.5 context switches per request
  // against 0.15 for a server using the default reactor.
  bool InternalInlineable() override { return true; }

  // Names the call's client in its log line; `client` outlives the call.
  void SetClient(absl::string_view client) { count_.SetClient(client); }

  // An empty job to parse the request into: it lives as long as the call.
  // The arena is made then: a job the small-job path reads needs none.
  v1::Job* NewJob() {
    return NewMessage<v1::Job>(
        &arena_.emplace(FirstBlock(first_block_, kFirstBlockBytes)),
        &heap_job_);
  }

  // What the call holds while the job runs and its reply goes out.
  GrpcBody body;                         // the request's bytes, until parsed
  grpc::ByteBuffer* response = nullptr;  // gRPC's, for the reply
  CallInfo info;
  MemoryBudget::Hold hold;

 private:
  // Enough for a job's messages (not its tiles' bytes, which protobuf
  // keeps on the heap) of a few tiles and instructions.
  static constexpr size_t kFirstBlockBytes = 2048;

  static google::protobuf::ArenaOptions FirstBlock(char* block, size_t bytes);

  alignas(std::max_align_t) char first_block_[kFirstBlockBytes];
  std::optional<google::protobuf::Arena> arena_;
  std::unique_ptr<google::protobuf::Message> heap_job_;  // without arenas
  CallCount count_;
  StallWatch* const stalls_;
  grpc::CallbackServerContext* const context_;
  StallWatch::Call stall_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_UNARY_CALL_H_
