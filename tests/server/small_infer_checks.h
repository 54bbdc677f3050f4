// The inference protocol's small path held to its generic one, for
// infer_wire_test and the inference fuzzer: a request it reads must be the
// job JobOfInferRequest makes of the same bytes, and a response it writes
// must be the bytes InferResponseOf's message serializes to.
#ifndef PTOSERVE_TESTS_SERVER_SMALL_INFER_CHECKS_H_
#define PTOSERVE_TESTS_SERVER_SMALL_INFER_CHECKS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/job.h"
#include "server/oip/infer.h"
#include "server/oip/models.h"

namespace ptoserve {

// Empty when ReadSmallInfer declines `bytes`, or reads them as the generic
// path does (ScanInferRequest passes them within `limits`, protobuf parses
// them, JobOfInferRequest makes a job of them and ToJobSpec an equal spec, with
// the same id and envelope); otherwise what differs.
std::string SmallInferDiffers(absl::string_view bytes,
                              const ModelCatalog& catalog,
                              const EngineLimits& limits = EngineLimits{});

// The response InferResponseWriter writes for `outcome`.
std::string WrittenInferResponse(const InferEnvelope& envelope,
                                 const JobOutcome& outcome);

}  // namespace ptoserve

#endif  // PTOSERVE_TESTS_SERVER_SMALL_INFER_CHECKS_H_
