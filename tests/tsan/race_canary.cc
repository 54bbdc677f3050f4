// A deliberate data race inside a gRPC server reactor, for canary_test.cc.
//
// RacyStream::OnReadDone, which gRPC calls from its own threads (with
// grpc:: frames below it), counts messages in a plain int that a thread of
// the reactor's own reads with no lock. Under --config=tsan, with the
// suppressions and tools/tsan/absl_sync.cc that the real tests run with,
// ThreadSanitizer must report it: that is what shows those do not hide a
// race in code of ours that gRPC calls.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "ptoserve/v1/service.grpc.pb.h"

namespace ptoserve {
namespace {

class RacyStream : public grpc::ServerBidiReactor<v1::Job, v1::JobResult> {
 public:
  RacyStream() {
    watcher_ = std::thread([this] {
      for (int i = 0; i < 100; ++i) {
        seen_ = reads_;  // the racy read
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    StartRead(&job_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    ++reads_;  // the racy write
    StartRead(&job_);
  }

  void OnDone() override {
    watcher_.join();
    delete this;
  }

 private:
  v1::Job job_;
  int reads_ = 0;
  int seen_ = 0;
  std::thread watcher_;
};

class RacyService : public v1::TileCompute::CallbackService {
  grpc::ServerBidiReactor<v1::Job, v1::JobResult>* ExecuteStream(
      grpc::CallbackServerContext*) override {
    return new RacyStream;
  }
};

int Run() {
  RacyService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "race_canary: cannot listen on 127.0.0.1\n");
    return 2;
  }
  auto stub = v1::TileCompute::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  auto stream = stub->ExecuteStream(&context);
  v1::Job job;
  for (int i = 0; i < 50; ++i) {
    if (!stream->Write(job)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  server->Shutdown();
  std::printf("race_canary: stream ended %s\n",
              status.ok() ? "OK" : "with an error");
  return status.ok() ? 0 : 1;
}

}  // namespace
}  // namespace ptoserve

int main() { return ptoserve::Run(); }
