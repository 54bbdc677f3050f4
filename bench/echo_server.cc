// echo_server: the gRPC ceiling that ptoserve is measured against.
//
// It serves ptoserve.v1.TileCompute with the same gRPC settings as ptoserve
// (server/grpc_server.h: callback API, message limits, health, reflection)
// but computes nothing: Execute answers each job with a dst tile that is a
// copy of its first instruction's src0, so the reply has the size ptoserve's
// would. ExecuteStream does the same per job.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "ptoserve/v1/service.grpc.pb.h"
#include "server/grpc_server.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50052", "Address to listen on.");
ABSL_FLAG(int, max_message_mb, 64, "Largest message, in MiB (as ptoserve).");

namespace ptoserve {
namespace {

void Echo(const v1::Job& job, v1::JobResult* result) {
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
    // Reads a job, writes its echo, reads the next: one in flight, the
    // simplest correct reactor.
    class Stream final
        : public grpc::ServerBidiReactor<v1::Job, v1::JobResult> {
     public:
      Stream() { StartRead(&job_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        result_.Clear();
        Echo(job_, &result_);
        StartWrite(&result_);
      }
      void OnWriteDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        StartRead(&job_);
      }
      void OnDone() override { delete this; }

     private:
      v1::Job job_;
      v1::JobResult result_;
    };
    return new Stream();
  }
};

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::BlockShutdownSignals();
  ptoserve::EchoService service;
  auto running = ptoserve::StartGrpcServer(
      {absl::GetFlag(FLAGS_address), absl::GetFlag(FLAGS_max_message_mb) << 20},
      {&service});
  if (!running.ok()) {
    std::cerr << "echo_server: " << running.status().message() << "\n";
    return 1;
  }
  std::cout << "echo_server listening on " << running->address << std::endl;
  ptoserve::ServeUntilSignalled(&*running, absl::Seconds(5),
                                absl::ZeroDuration(), "echo_server");
  return 0;
}
