// An inference request's parameters (docs/INFERENCE.md, "Parameters"),
// each checked for its kind and range and named in the request's words,
// as the job's target, timeout and priority and what the model reads.
#ifndef PTOSERVE_SERVER_OIP_PARAMETERS_H_
#define PTOSERVE_SERVER_OIP_PARAMETERS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "inference/grpc_service.pb.h"
#include "ptoserve/v1/job.pb.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"

namespace ptoserve {

// The answer to a request that names a shared-memory region.
inline constexpr char kSharedMemoryRefusal[] =
    "system shared memory is not served through the Open Inference "
    "Protocol: register a region and run the job through ptoserve.v1 "
    "(docs/SHARED_MEMORY.md), or send the elements in the request";

// What the request's parameters say beside what goes into the job.
struct RequestParameters {
  uint32_t valid_rows = 0, valid_cols = 0;
  std::string job_json, assembly;
  bool has_job = false, has_assembly = false;
};

// The request's parameters into `job` (target, timeout, priority),
// `envelope` (binary_data_output) and `out`, or INVALID_ARGUMENT naming
// the parameter and what it may be (UNIMPLEMENTED: a shared-memory one).
absl::Status ReadParameters(const InferModel& model,
                            const inference::ModelInferRequest& request,
                            const ModelCatalog& catalog, v1::Job* job,
                            InferEnvelope* envelope, RequestParameters* out);

// A bool parameter's value, or INVALID_ARGUMENT naming it.
absl::StatusOr<bool> BoolParameter(absl::string_view name,
                                   const inference::InferParameter& p);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_OIP_PARAMETERS_H_
