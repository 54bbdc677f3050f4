#include "server/rpc/grpc_body.h"

#include "absl/strings/str_format.h"
#include "common/setting_names.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"

namespace ptoserve {

absl::Status GrpcBody::Read(
    absl::FunctionRef<void(google::protobuf::io::ZeroCopyInputStream*)> read)
    const {
  // The reader only reads the buffer; it takes it by pointer.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&bytes_));
  if (!reader.status().ok()) {
    return absl::InternalError("the message's bytes could not be read");
  }
  read(&reader);
  if (!reader.status().ok()) {
    return absl::InternalError("the message's bytes could not be read");
  }
  return absl::OkStatus();
}

absl::string_view GrpcBody::Gather() {
  grpc::Slice slice;
  if (!bytes_.TrySingleSlice(&slice).ok()) {
    // In pieces (or none): copied into one slice, which replaces them.
    if (!bytes_.DumpToSingleSlice(&slice).ok()) return {};
    grpc::ByteBuffer whole(&slice, 1);
    bytes_.Swap(&whole);
  }
  // The buffer keeps its own reference to the slice's bytes.
  return absl::string_view(reinterpret_cast<const char*>(slice.begin()),
                           slice.size());
}

absl::Status EncodeWritten(size_t size, uint64_t max_bytes,
                           grpc::ByteBuffer* bytes,
                           absl::FunctionRef<void(uint8_t*)> write) {
  if (size > max_bytes) {
    bytes->Clear();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the result is %u bytes, more than a message may be (%u, %s)", size,
        max_bytes, SettingName(Setting::kMaxMessageBytes)));
  }
  grpc::Slice slice(size);
  // The slice is new and this call's alone: its bytes are ours to write.
  write(const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer whole(&slice, 1);
  bytes->Swap(&whole);
  return absl::OkStatus();
}

absl::Status EncodeReply(const google::protobuf::Message& message,
                         uint64_t max_bytes, grpc::ByteBuffer* bytes) {
  // Sized once (gRPC's serializer sizes the message twice, once itself and
  // once in protobuf's stream writer), refused before a byte is written if
  // too large, then written whole into one slice of exactly that size.
  return EncodeWritten(message.ByteSizeLong(), max_bytes, bytes,
                       [&message](uint8_t* out) {
                         message.SerializeWithCachedSizesToArray(out);
                       });
}

absl::Status EncodeReply(JobReply& reply, uint64_t max_bytes,
                         grpc::ByteBuffer* bytes) {
  const ResultWriter& writer = reply.Bytes();
  return EncodeWritten(writer.size(), max_bytes, bytes,
                       [&writer](uint8_t* out) { writer.Write(out); });
}

}  // namespace ptoserve
