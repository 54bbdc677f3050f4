// gRPC's message bytes as the request pipeline reads them (a RequestBody),
// and answers serialized into gRPC's bytes within the message limit.
#ifndef PTOSERVE_SERVER_RPC_GRPC_BODY_H_
#define PTOSERVE_SERVER_RPC_GRPC_BODY_H_

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "server/intake/request_body.h"
#include "server/jobs/job_reply.h"

namespace ptoserve {

// A protobuf message's bytes, taken from gRPC's buffer without copying
// (they share its slices).
class GrpcBody final : public RequestBody {
 public:
  GrpcBody() = default;
  // Takes `bytes`' slices, leaving it empty.
  explicit GrpcBody(grpc::ByteBuffer* bytes) { bytes_.Swap(bytes); }
  GrpcBody(GrpcBody&& other) noexcept { bytes_.Swap(&other.bytes_); }

  BodyFormat format() const override { return BodyFormat::kProtobuf; }
  uint64_t size() const override { return bytes_.Length(); }
  absl::Status Read(
      absl::FunctionRef<void(google::protobuf::io::ZeroCopyInputStream*)> read)
      const override;
  absl::string_view text() const override { return {}; }
  absl::string_view Gather() override;
  void Discard() override { bytes_.Clear(); }

 private:
  grpc::ByteBuffer bytes_;
};

// Serializes `message` into `bytes`, as one slice; RESOURCE_EXHAUSTED, and
// nothing serialized, if it is larger than `max_bytes` (--max_message_mb;
// at most 1 GiB: within protobuf's 2 GiB).
absl::Status EncodeReply(const google::protobuf::Message& message,
                         uint64_t max_bytes, grpc::ByteBuffer* bytes);
// The same for a job's reply, written straight from its outcome.
absl::Status EncodeReply(JobReply& reply, uint64_t max_bytes,
                         grpc::ByteBuffer* bytes);
// The same for `size` bytes that `write` writes (a writer's, such as the
// inference protocol's InferResponseWriter).
absl::Status EncodeWritten(size_t size, uint64_t max_bytes,
                           grpc::ByteBuffer* bytes,
                           absl::FunctionRef<void(uint8_t*)> write);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_GRPC_BODY_H_
