// plain_tand_server: the plainest gRPC C++ server that does the work a
// unary TAND (or TXOR) asks for, the CPU-per-call baseline beside
// plain_echo_server (which computes nothing). The callback API with nothing
// registered but the service, as plain_echo_server: Execute parses the Job
// (gRPC's own deserialization), combines its first instruction's src0 and
// src1 data bytes into dst over the whole tile, and answers dst as data.
// No checks beyond what it needs not to crash, no event records, no
// metrics: what any server must spend on such a call, and no more.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/plain_server.h"
#include "ptoserve/v1/service.grpc.pb.h"

ABSL_FLAG(std::string, address, "127.0.0.1:50054", "Address to listen on.");

namespace ptoserve {
namespace {

class TandService final : public v1::TileCompute::CallbackService {
 public:
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const v1::Job* job,
                                    v1::JobResult* result) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(Compute(*job, result));
    return reactor;
  }

 private:
  static grpc::Status Compute(const v1::Job& job, v1::JobResult* result) {
    if (job.instructions_size() == 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no instruction");
    }
    const v1::Instruction& inst = job.instructions(0);
    auto a = job.tiles().find(inst.src0());
    auto b = job.tiles().find(inst.src1());
    if (a == job.tiles().end() || b == job.tiles().end() ||
        a->second.data().size() != b->second.data().size()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad operands");
    }
    result->set_id(job.id());
    v1::Tile& dst = (*result->mutable_tiles())[inst.dst()];
    dst.set_dtype(a->second.dtype());
    dst.set_rows(a->second.rows());
    dst.set_cols(a->second.cols());
    const std::string& x = a->second.data();
    const std::string& y = b->second.data();
    std::string* out = dst.mutable_data();
    out->resize(x.size());
    const bool is_xor = inst.opcode() == v1::OPCODE_TXOR;
    for (size_t i = 0; i < x.size(); ++i) {
      (*out)[i] = static_cast<char>(is_xor ? x[i] ^ y[i] : x[i] & y[i]);
    }
    return grpc::Status::OK;
  }
};

}  // namespace
}  // namespace ptoserve

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  ptoserve::TandService service;
  return ptoserve::ServePlain("plain_tand_server", &service,
                              absl::GetFlag(FLAGS_address));
}
