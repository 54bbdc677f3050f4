#include "tests/integration/grpc_util.h"

#include <grpc/grpc.h>

#include <future>
#include <vector>

#include "absl/status/status.h"

namespace ptoserve {

std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoNanoseconds(d);
}

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

grpc::Status RawExecute(grpc::GenericStub* stub, const std::string& bytes,
                        std::string* reply, absl::Duration deadline) {
  grpc::ClientContext context;
  context.set_deadline(In(deadline));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  std::promise<grpc::Status> done;
  std::future<grpc::Status> result = done.get_future();
  BeforeStartingCall(&done);
  stub->UnaryCall(&context, "/ptoserve.v1.TileCompute/Execute",
                  grpc::StubOptions(), &request, &response,
                  [&](grpc::Status s) {
                    InCallback(&done);
                    done.set_value(std::move(s));
                  });
  grpc::Status status = result.get();
  if (status.ok()) *reply = Bytes(response);
  return status;
}

}  // namespace ptoserve
