// The HTTP door's part of the Open Inference Protocol (docs/INFERENCE.md):
// what an inference request's head must say, and the answers that need no
// job (server and model metadata, readiness, the extensions not served).
// The routes themselves are HttpApi's (http_routes.cc); requests and
// results are converted by server/oip.
#ifndef PTOSERVE_SERVER_HTTP_INFERENCE_ROUTES_H_
#define PTOSERVE_SERVER_HTTP_INFERENCE_ROUTES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ptoserve/v1/job.pb.h"
#include "server/jobs/dispatcher.h"
#include "server/oip/models.h"
#include "server/oip/rest.h"

namespace ptoserve {

// OK for an inference body's Content-Type: JSON, binary, none (as
// tritonclient sends it) or curl -d's form type; INVALID_ARGUMENT for
// text/plain and multipart/form-data, which only a page's form would
// send. (A page of another site is refused by its Origin whatever it
// sends.)
absl::Status CheckInferContentType(absl::string_view content_type);

// The JSON's length an Inference-Header-Content-Length `header` gives (0:
// none given, the body is all JSON), within --max_json_kb.
absl::StatusOr<uint64_t> InferJsonBytes(absl::string_view header,
                                        const ServiceLimits& limits);

// An inference's answer: its JSON, and the outputs asked for as binary
// after it, from `json_bytes` on.
struct InferBody {
  std::string body;
  size_t json_bytes = 0;
  bool binary() const { return json_bytes != body.size(); }
};
InferBody InferAnswerBody(const RestInferProtocol& request,
                          const v1::JobResult& result);

// A model's metadata (`metadata`) or readiness (an empty body; UNAVAILABLE
// while the server is not `ready`), or NOT_FOUND naming the models.
absl::StatusOr<std::string> ModelAnswer(const ModelCatalog& models,
                                        absl::string_view model,
                                        absl::string_view version,
                                        bool metadata, bool ready);

// UNIMPLEMENTED for an extension's path this server does not serve,
// naming the paths it does.
absl::Status NotServed(absl::string_view method, absl::string_view path);

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_HTTP_INFERENCE_ROUTES_H_
