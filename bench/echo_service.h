// The echo service both echo servers run: Execute answers each job with a
// dst tile that is a copy of its first instruction's src0, so the reply has
// the size ptoserve's would; ExecuteStream does the same per job, one job
// in flight per stream. Nothing is computed.
#ifndef PTOSERVE_BENCH_ECHO_SERVICE_H_
#define PTOSERVE_BENCH_ECHO_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "bench/one_in_flight_stream.h"
#include "ptoserve/v1/service.grpc.pb.h"

namespace ptoserve {

inline void Echo(const v1::Job& job, v1::JobResult* result) {
  result->set_id(job.id());
  if (job.instructions_size() == 0) return;
  const v1::Instruction& inst = job.instructions(0);
  auto it = job.tiles().find(inst.src0());
  if (it == job.tiles().end()) return;
  (*result->mutable_tiles())[inst.dst()] = it->second;
}

class EchoService final : public v1::TileCompute::CallbackService {
 public:
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const v1::Job* job,
                                    v1::JobResult* result) override {
    Echo(*job, result);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerBidiReactor<v1::Job, v1::JobResult>* ExecuteStream(
      grpc::CallbackServerContext*) override {
    return new OneInFlightStream<v1::Job, v1::JobResult>(
        [](const v1::Job& job, v1::JobResult* result) {
          Echo(job, result);
          return grpc::Status::OK;
        });
  }
};

}  // namespace ptoserve

#endif  // PTOSERVE_BENCH_ECHO_SERVICE_H_
