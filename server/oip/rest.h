// The Open Inference Protocol's REST shape (docs/INFERENCE.md): an
// inference request's JSON, with Triton's binary tensor data after it
// (Inference-Header-Content-Length), made into the gRPC protocol's
// ModelInferRequest, so that one conversion (server/oip/infer.h) makes
// both doors' jobs; and the answers as JSON (binary outputs after it).
#ifndef PTOSERVE_SERVER_OIP_REST_H_
#define PTOSERVE_SERVER_OIP_REST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "inference/grpc_service.pb.h"
#include "server/intake/protocol.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"

namespace ptoserve {

// An inference request's body: `json_bytes` of JSON (the whole body when
// no Inference-Header-Content-Length came), then each binary input's
// bytes in the order of its inputs. The model and version are the path's.
absl::Status RestInferRequest(absl::string_view body, size_t json_bytes,
                              absl::string_view model,
                              absl::string_view version,
                              inference::ModelInferRequest* request);

// The response's JSON and, for outputs the request asked for as binary,
// their bytes after it; `*json_bytes` is the JSON's length (what the
// answer's Inference-Header-Content-Length says when any output is
// binary).
std::string RestInferResponse(const inference::ModelInferResponse& response,
                              const InferEnvelope& envelope,
                              size_t* json_bytes);

// The other answers as JSON.
std::string RestServerMetadata(const inference::ServerMetadataResponse& m);
std::string RestModelMetadata(const inference::ModelMetadataResponse& m);
std::string RestRepositoryIndex(const inference::RepositoryIndexResponse& r);
std::string RestError(absl::string_view message);

// POST /v2/models/{model}/infer through the pipeline's seam. One object
// per request: Parse keeps what the answer needs.
class RestInferProtocol final : public JobProtocol {
 public:
  // `json_bytes`: the Inference-Header-Content-Length (checked against
  // the body's size in Scan), or the body's whole size.
  RestInferProtocol(const ModelCatalog* catalog, std::string model,
                    std::string version, size_t json_bytes, bool header_given)
      : catalog_(catalog),
        model_(std::move(model)),
        version_(std::move(version)),
        json_bytes_(json_bytes),
        header_given_(header_given) {}

  absl::StatusOr<WireShape> Scan(const RequestBody& body,
                                 const EngineLimits& limits) const override;
  absl::Status Parse(const RequestBody& body, absl::string_view what,
                     v1::Job* job) const override;

  const InferEnvelope& envelope() const { return envelope_; }

 private:
  const ModelCatalog* const catalog_;
  const std::string model_, version_;
  const size_t json_bytes_;
  const bool header_given_;
  mutable InferEnvelope envelope_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_OIP_REST_H_
