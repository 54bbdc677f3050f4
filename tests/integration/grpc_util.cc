#include "tests/integration/grpc_util.h"

#include <arpa/inet.h>
#include <grpc/grpc.h>
#include <grpcpp/create_channel_posix.h>
#include <netinet/in.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"

namespace ptoserve {

std::shared_ptr<grpc::Channel> OwnChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

std::shared_ptr<grpc::Channel> OwnChannelAs(uid_t uid,
                                            const std::string& address) {
  const size_t colon = address.rfind(':');
  sockaddr_in to{};
  to.sin_family = AF_INET;
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) {
    return nullptr;
  }
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (geteuid() != 0) return nullptr;
  // setfsuid is the calling thread's alone (glibc does not pass it on to
  // the process's other threads, as it does setuid).
  const uid_t before = setfsuid(uid);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  setfsuid(before);
  if (fd < 0) return nullptr;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return nullptr;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomInsecureChannelFromFd(address, fd, args);
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
