// An Open Inference Protocol inference request as a ptoserve job, and the
// job's result as the protocol's response: the one conversion both doors
// use (gRPC's ModelInferRequest as it comes; the REST request after
// server/oip/rest.h has made it one). A model's inputs become tiles, its
// parameters the job's target, valid region, timeout and priority, its
// instruction (or the job model's program) the job's instructions; each
// mistake is named in the request's words: the input, the parameter, the
// valid datatypes.
#ifndef PTOSERVE_SERVER_OIP_INFER_H_
#define PTOSERVE_SERVER_OIP_INFER_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/job.h"
#include "inference/grpc_service.pb.h"
#include "proto/wire_scan.h"
#include "ptoserve/v1/job.pb.h"
#include "server/intake/protocol.h"
#include "server/oip/models.h"

namespace ptoserve {

// The most parameters a request, an input or an output may carry.
inline constexpr size_t kMaxInferParameters = 64;

// What a request's answer needs that its job does not carry.
struct InferEnvelope {
  std::string model;
  std::string id;
  // The outputs to answer, in order (empty: every tile of the result, by
  // name), and which of them go as binary data over HTTP. In place for a
  // request's usual one or two.
  absl::InlinedVector<std::string, 2> outputs;
  absl::InlinedVector<bool, 2> binary;
  bool all_binary = false;  // the request's binary_data_output
};

// `request` as a job for its model, or why it is not one: NOT_FOUND for a
// model that is not the catalog's, INVALID_ARGUMENT naming the input,
// output or parameter and what it may be.
absl::Status JobOfInferRequest(const ModelCatalog& catalog,
                               const inference::ModelInferRequest& request,
                               v1::Job* job, InferEnvelope* envelope);

// `result` as the protocol's response to the request `envelope` describes:
// the outputs' elements in raw_output_contents, the target and the event
// records (one line each, as ptoctl prints them) in its parameters.
void InferResponseOf(const v1::JobResult& result, const InferEnvelope& envelope,
                     inference::ModelInferResponse* response);

// Checks a serialized ModelInferRequest, before it is parsed, for what the
// parse would cost (counts of inputs, outputs, parameters and unknown
// fields; elements per input within what a tile may hold; contents of a
// datatype no tile has), and returns its shape as the pipeline reads it.
absl::StatusOr<WireShape> ScanInferRequest(
    google::protobuf::io::ZeroCopyInputStream* bytes, size_t size,
    const EngineLimits& limits);

// ModelInfer's and ModelStreamInfer's requests through the pipeline's seam.
// One object per request: Parse keeps what the answer needs (envelope()).
class GrpcInferProtocol final : public JobProtocol {
 public:
  explicit GrpcInferProtocol(const ModelCatalog* catalog) : catalog_(catalog) {}

  absl::StatusOr<WireShape> Scan(const RequestBody& body,
                                 const EngineLimits& limits) const override;
  absl::Status Parse(const RequestBody& body, absl::string_view what,
                     v1::Job* job) const override;
  // server/oip/infer_wire.h's small path.
  std::optional<SmallJob> ReadSmall(absl::string_view bytes,
                                    const EngineLimits& limits) const override;

  // After Parse or ReadSmall: the request's model, id and outputs.
  const InferEnvelope& envelope() const { return envelope_; }
  // Whether ReadSmall read the request: its answer is written from the
  // job's outcome (InferResponseWriter), there being no result message.
  bool read_small() const { return read_small_; }

 private:
  const ModelCatalog* const catalog_;
  // Parse's or ReadSmall's; one request per object.
  mutable InferEnvelope envelope_;
  mutable bool read_small_ = false;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_OIP_INFER_H_
