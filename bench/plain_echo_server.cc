// plain_echo_server: the plainest gRPC C++ server for ptoserve.v1.TileCompute,
// the raw ceiling beside echo_server (which has ptoserve's gRPC setup).
//
// The callback API with nothing registered but the service: no health,
// reflection, metrics, interceptors, resource quota or channel arguments
// beyond a message limit large enough for the jobs ptobench sends. Execute
// answers each job with a dst tile that is a copy of its first instruction's
// src0, as echo_server does; ExecuteStream does the same per job, one job in
// flight per stream.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50053", "Address to listen on.");

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

class PlainEchoService final : public v1::TileCompute::CallbackService {
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
  ptoserve::PlainEchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_address),
                           grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "plain_echo_server: cannot listen on "
              << absl::GetFlag(FLAGS_address) << "\n";
    return 1;
  }
  std::cout << "plain_echo_server listening on port " << port << std::endl;
  server->Wait();
  return 0;
}
