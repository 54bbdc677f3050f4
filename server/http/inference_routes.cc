#include "server/http/inference_routes.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "common/setting_names.h"
#include "core/quote.h"
#include "server/oip/infer.h"

namespace ptoserve {

absl::Status CheckInferContentType(absl::string_view content_type) {
  const std::string type = absl::AsciiStrToLower(content_type);
  for (const char* form : {"text/plain", "multipart/form-data"}) {
    if (absl::StartsWith(type, form)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "an inference request is sent as application/json, "
          "application/octet-stream or with no Content-Type, not %s",
          ShortQuote(type, 100)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> InferJsonBytes(absl::string_view header,
                                        const ServiceLimits& limits) {
  if (header.empty()) return 0;
  uint64_t json = 0;
  if (!absl::SimpleAtoi(header, &json) || json == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Inference-Header-Content-Length %s is not the JSON's length in "
        "bytes",
        ShortQuote(header)));
  }
  if (json > limits.max_json_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Inference-Header-Content-Length is %u, over the %u bytes of JSON "
        "a request may have (%s)",
        json, limits.max_json_bytes, SettingName(Setting::kMaxJsonBytes)));
  }
  return json;
}

InferBody InferAnswerBody(const RestInferProtocol& request,
                          const v1::JobResult& result) {
  inference::ModelInferResponse response;
  InferResponseOf(result, request.envelope(), &response);
  InferBody answer;
  answer.body =
      RestInferResponse(response, request.envelope(), &answer.json_bytes);
  return answer;
}

absl::StatusOr<std::string> ModelAnswer(const ModelCatalog& models,
                                        absl::string_view model,
                                        absl::string_view version,
                                        bool metadata, bool ready) {
  absl::StatusOr<const InferModel*> found = models.Find(model, version);
  if (!found.ok()) return found.status();
  if (metadata) return RestModelMetadata(models.Metadata(**found));
  if (!ready) {
    return absl::UnavailableError(absl::StrFormat(
        "model %s is not ready: the server is shutting down", (*found)->name));
  }
  return std::string();
}

absl::Status NotServed(absl::string_view method, absl::string_view path) {
  return absl::UnimplementedError(absl::StrFormat(
      "%s %s is not served by ptoserve, whose Open Inference Protocol "
      "serves GET /v2, GET /v2/models/{model}[/ready], POST "
      "/v2/models/{model}/infer and POST /v2/repository/index "
      "(docs/INFERENCE.md)",
      method, ShortQuote(path, 200)));
}

}  // namespace ptoserve
