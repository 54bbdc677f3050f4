// A request's bytes, from gRPC's buffers to messages and back: what parsing
// them would cost, checked before it is paid (the wire scan of
// proto/codec.h); the parse; decoding off gRPC's threads for requests heavy
// to decode; and answers serialized within the message limit. Every
// refusal names what was refused ("the request", "stream message 3") and
// is counted in the metrics as a job answered with its code.
#ifndef PTOSERVE_SERVER_RPC_REQUEST_BYTES_H_
#define PTOSERVE_SERVER_RPC_REQUEST_BYTES_H_

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/engine.h"
#include "proto/wire_scan.h"
#include "server/jobs/memory_budget.h"
#include "server/jobs/task_pool.h"
#include "server/metrics/service_metrics.h"

namespace ptoserve {

// The most large requests of one client that the decoders hold waiting.
inline constexpr int kDecodesPerClient = 64;

class RequestBytes {
 public:
  // Everything must outlive this. Requests heavy to decode (see Light) are
  // decoded on `decoders`, at most kDecodesPerClient of one client's
  // waiting at once, their bytes held against `budget` meanwhile.
  RequestBytes(const EngineLimits& job_limits, uint32_t max_jobs_per_batch,
               uint64_t max_message_bytes, ServiceMetrics* metrics,
               MemoryBudget* budget, TaskPool* decoders);

  // What parsing `bytes` as a Job (Inspect) or a JobBatch (InspectBatch)
  // would cost, or why they will not be parsed.
  absl::StatusOr<WireShape> Inspect(const grpc::ByteBuffer& bytes,
                                    absl::string_view what) const;
  absl::StatusOr<BatchShape> InspectBatch(const grpc::ByteBuffer& bytes,
                                          absl::string_view what) const;

  // Whether a request of `shape` and `bytes` is quick to decode and run, so
  // that gRPC's thread may do both: small, few instructions, little
  // assembly. Others go to the decoders (Offload).
  static bool Light(const WireShape& shape, uint64_t bytes);

  // The message of type M (v1::Job) in `bytes`, or
  // INVALID_ARGUMENT naming `what` when they are not one, RESOURCE_EXHAUSTED
  // if memory runs out. REQUIRES: Inspect (or InspectBatch) passed them.
  template <typename M>
  absl::StatusOr<std::shared_ptr<M>> Parse(const grpc::ByteBuffer& bytes,
                                           absl::string_view what) const;
  // As Parse, into `message` (which may live on an arena).
  absl::Status ParseInto(const grpc::ByteBuffer& bytes, absl::string_view what,
                         google::protobuf::Message* message) const;

  // Runs `decode` with `bytes` (sharing their slices) on the decoders, for
  // the client of `share`, whose part of the memory budget holds the bytes
  // until `decode` returns. Or returns why not, without running it: the
  // budget, the decoders' queue or the client's part of it is full, or the
  // server is shutting down.
  absl::Status Offload(
      const grpc::ByteBuffer& bytes,
      const std::shared_ptr<MemoryBudget::Share>& share, absl::string_view what,
      std::function<void(const grpc::ByteBuffer&)> decode) const;

  // Serializes `message` into `bytes`, as one slice; RESOURCE_EXHAUSTED,
  // and nothing serialized, if it is larger than a response may be (at
  // most 1 GiB: within protobuf's 2 GiB).
  absl::Status Encode(const google::protobuf::Message& message,
                      grpc::ByteBuffer* bytes) const;

  // Counts a job refused before it was decoded, with `code`.
  void CountRefused(absl::StatusCode code) const;

 private:
  // `scanned` named after `what` and `bytes`, and counted when refused.
  template <typename Shape>
  absl::StatusOr<Shape> Named(absl::StatusOr<Shape> scanned,
                              const grpc::ByteBuffer& bytes,
                              absl::string_view what) const;

  const EngineLimits job_limits_;
  const uint32_t max_jobs_per_batch_;
  const uint64_t max_message_bytes_;
  ServiceMetrics* const metrics_;
  MemoryBudget* const budget_;
  TaskPool* const decoders_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_RPC_REQUEST_BYTES_H_
