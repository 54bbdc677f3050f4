// flat_server: the ceiling a user compares ptoserve with, the simplest C++
// gRPC server that does a TAND's arithmetic, on the simplest message that
// carries it (bench/flat/flat.proto: two operands' bytes, a dtype, rows and
// cols). The callback API with nothing registered but the service, as
// plain_tand_server, which does the same on ptoserve's own Job. Tand
// answers src0 & src1 over the whole tile; TandStream does the same per
// message, one in flight per stream. With --echo, dst is a copy of src0:
// nothing computed, what the messages alone cost.
#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/one_in_flight_stream.h"
#include "bench/plain_server.h"
#include "flat/flat.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50056", "Address to listen on.");
ABSL_FLAG(bool, echo, false, "Answer src0 as dst: compute nothing.");

namespace ptoserve {
namespace {

// dst = src0 & src1 (or src0, echoing); INVALID_ARGUMENT for operands of
// different sizes.
grpc::Status Compute(const bench::FlatJob& job, bench::FlatResult* result,
                     bool echo) {
  const std::string& x = job.src0();
  const std::string& y = job.src1();
  if (echo) {
    result->set_dst(x);
    return grpc::Status::OK;
  }
  if (x.size() != y.size()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad operands");
  }
  std::string* out = result->mutable_dst();
  out->resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    (*out)[i] = static_cast<char>(x[i] & y[i]);
  }
  return grpc::Status::OK;
}

class FlatService final : public bench::Flat::CallbackService {
 public:
  explicit FlatService(bool echo) : echo_(echo) {}

  grpc::ServerUnaryReactor* Tand(grpc::CallbackServerContext* context,
                                 const bench::FlatJob* job,
                                 bench::FlatResult* result) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(Compute(*job, result, echo_));
    return reactor;
  }

  grpc::ServerBidiReactor<bench::FlatJob, bench::FlatResult>* TandStream(
      grpc::CallbackServerContext*) override {
    const bool echo = echo_;
    return new OneInFlightStream<bench::FlatJob, bench::FlatResult>(
        [echo](const bench::FlatJob& job, bench::FlatResult* result) {
          return Compute(job, result, echo);
        });
  }

 private:
  const bool echo_;
};

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::FlatService service(absl::GetFlag(FLAGS_echo));
  return ptoserve::ServePlain("flat_server", &service,
                              absl::GetFlag(FLAGS_address));
}
