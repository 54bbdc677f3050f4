#include "server/rpc/request_bytes.h"

#include <new>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"
#include "ptoserve/v1/job.pb.h"

namespace ptoserve {

namespace {

// A request at most this large, with at most this many instructions and
// this much assembly, is decoded (and may be run, see kRunHereBytes in
// server/jobs/dispatcher.cc) on the gRPC thread that received it: a few
// microseconds to a millisecond. Others are decoded on the decoders, so
// that gRPC's threads stay free for other calls and health checks.
constexpr uint64_t kLightRequestBytes = 1 << 20;
constexpr size_t kLightInstructions = 64;
constexpr size_t kLightAssemblyBytes = 16 << 10;

}  // namespace

RequestBytes::RequestBytes(const EngineLimits& job_limits,
                           uint32_t max_jobs_per_batch,
                           uint64_t max_message_bytes, ServiceMetrics* metrics,
                           MemoryBudget* budget, TaskPool* decoders)
    : job_limits_(job_limits),
      max_jobs_per_batch_(max_jobs_per_batch),
      max_message_bytes_(max_message_bytes),
      metrics_(metrics),
      budget_(budget),
      decoders_(decoders) {}

void RequestBytes::CountRefused(absl::StatusCode code) const {
  metrics_->JobAnswered(JobRecord("unknown"), code);
}

template <typename Shape>
absl::StatusOr<Shape> RequestBytes::Named(absl::StatusOr<Shape> scanned,
                                          const grpc::ByteBuffer& bytes,
                                          absl::string_view what) const {
  if (scanned.ok()) return scanned;
  CountRefused(scanned.status().code());
  // "the request (N bytes) is not a ptoserve.v1.Job: ...", or
  // "the request (N bytes): job has more than 1024 tiles, the limit".
  const absl::string_view message = scanned.status().message();
  return absl::Status(
      scanned.status().code(),
      absl::StrFormat("%s (%u bytes)%s %s", what, bytes.Length(),
                      absl::StartsWith(message, "is not ") ? "" : ":",
                      message));
}

absl::StatusOr<WireShape> RequestBytes::Inspect(const grpc::ByteBuffer& bytes,
                                                absl::string_view what) const {
  // What the parse would cost, checked first: 4M repeated wait_events
  // (16 MB on the wire) would take 160 MB as protobuf strings.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&bytes));
  return Named(CheckJobWire(&reader, bytes.Length(), job_limits_), bytes, what);
}

absl::StatusOr<BatchShape> RequestBytes::InspectBatch(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&bytes));
  return Named(CheckJobBatchWire(&reader, bytes.Length(), job_limits_,
                                 max_jobs_per_batch_),
               bytes, what);
}

bool RequestBytes::Light(const WireShape& shape, uint64_t bytes) {
  return bytes <= kLightRequestBytes &&
         shape.instructions <= kLightInstructions &&
         shape.assembly_bytes <= kLightAssemblyBytes;
}

absl::Status RequestBytes::ParseInto(const grpc::ByteBuffer& bytes,
                                     absl::string_view what,
                                     google::protobuf::Message* message) const {
  // Parsed straight from the slices. Not through gRPC's Deserialize: on a
  // parse failure that builds protobuf's InitializationErrorString, which
  // walks the half-parsed message (its `tiles` map included) only to say
  // nothing useful about a proto3 message, and crashed on corrupt input in
  // the ThreadSanitizer build. The reader only reads the buffer; it takes
  // it by pointer.
  grpc::ProtoBufferReader reader(const_cast<grpc::ByteBuffer*>(&bytes));
  bool parsed = false;
  try {
    parsed = reader.status().ok() &&
             message->ParseFromZeroCopyStream(&reader) && reader.status().ok();
  } catch (const std::bad_alloc&) {
    CountRefused(absl::StatusCode::kResourceExhausted);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s (%u bytes): the server ran out of memory decoding it", what,
        bytes.Length()));
  }
  if (!parsed) {
    CountRefused(absl::StatusCode::kInvalidArgument);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s (%u bytes) is not a %s: its protobuf encoding is truncated or "
        "corrupt",
        what, bytes.Length(), message->GetDescriptor()->full_name()));
  }
  return absl::OkStatus();
}

template <typename M>
absl::StatusOr<std::shared_ptr<M>> RequestBytes::Parse(
    const grpc::ByteBuffer& bytes, absl::string_view what) const {
  std::shared_ptr<M> message;
  try {
    message = std::make_shared<M>();
  } catch (const std::bad_alloc&) {
    CountRefused(absl::StatusCode::kResourceExhausted);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s (%u bytes): the server ran out of memory decoding it", what,
        bytes.Length()));
  }
  PTO_RETURN_IF_ERROR(ParseInto(bytes, what, message.get()));
  return message;
}

template absl::StatusOr<std::shared_ptr<v1::Job>> RequestBytes::Parse(
    const grpc::ByteBuffer&, absl::string_view) const;

absl::Status RequestBytes::Offload(
    const grpc::ByteBuffer& bytes,
    const std::shared_ptr<MemoryBudget::Share>& share, absl::string_view what,
    std::function<void(const grpc::ByteBuffer&)> decode) const {
  // The task shares the request's slices, copying no bytes; while it waits
  // they count against the memory budget.
  absl::StatusOr<MemoryBudget::Hold> hold =
      budget_->Reserve(bytes.Length(), share);
  if (!hold.ok()) {
    CountRefused(absl::StatusCode::kResourceExhausted);
    return hold.status();
  }
  struct Held {
    grpc::ByteBuffer bytes;
    MemoryBudget::Hold hold;
  };
  auto held = std::make_shared<Held>(Held{bytes, *std::move(hold)});
  const TaskPool::Posted posted = decoders_->Post(
      [held, decode = std::move(decode)] { decode(held->bytes); }, share.get());
  absl::Status refused;
  switch (posted) {
    case TaskPool::Posted::kQueued:
      return absl::OkStatus();
    case TaskPool::Posted::kStopping:
      // The decoders stop first when the server shuts down: a request they
      // refuse then is refused for that, as every other one is.
      refused = absl::UnavailableError(
          absl::StrCat(what, ": the server is shutting down"));
      break;
    case TaskPool::Posted::kClientFull:
      refused = absl::ResourceExhaustedError(absl::StrFormat(
          "%s: this client has %d large requests waiting to be decoded, the "
          "most one client may; retry once they are",
          what, kDecodesPerClient));
      break;
    case TaskPool::Posted::kFull:
      refused = absl::ResourceExhaustedError(
          absl::StrCat(what,
                       ": the server is busy decoding other large "
                       "requests; retry later"));
      break;
  }
  CountRefused(refused.code());
  return refused;
}

absl::Status RequestBytes::Encode(const google::protobuf::Message& message,
                                  grpc::ByteBuffer* bytes) const {
  // Sized once (gRPC's serializer sizes the message twice, once itself and
  // once in protobuf's stream writer), refused before a byte is written if
  // too large, then written whole into one slice of exactly that size.
  const size_t size = message.ByteSizeLong();
  if (size > max_message_bytes_) {
    bytes->Clear();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the result is %u bytes, more than a message may be (%u, "
        "--max_message_mb)",
        size, max_message_bytes_));
  }
  grpc::Slice slice(size);
  // The slice is new and this call's alone: its bytes are ours to write.
  message.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer whole(&slice, 1);
  bytes->Swap(&whole);
  return absl::OkStatus();
}

}  // namespace ptoserve
