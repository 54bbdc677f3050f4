// infer_fuzzer's body: Open Inference Protocol requests through what the
// server does with one before it runs (server/oip).
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/engine.h"
#include "proto/codec.h"
#include "proto/wire.h"
#include "server/exec/scheduler.h"
#include "server/jobs/capabilities.h"
#include "server/jobs/decode.h"
#include "server/oip/infer.h"
#include "server/oip/infer_wire.h"
#include "server/oip/models.h"
#include "server/oip/rest.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/server/small_infer_checks.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {
namespace fuzz {

namespace {

const Engine& TheEngine() {
  static const Engine* const engine = new Engine(EngineOptions{});
  return *engine;
}

const ModelCatalog& Catalog() {
  static const ModelCatalog* const catalog = new ModelCatalog(CapabilitiesOf(
      TheEngine(), SchedulerOptions{}, ServiceLimits{}, SharedMemoryOptions{}));
  return *catalog;
}

// The small path (server/oip/infer_wire.h) held to the generic one: what
// it reads, the generic path makes the same job of, and the response it
// writes for the job's outcome is the bytes of InferResponseOf's message.
absl::Status CheckSmallPath(absl::string_view bytes) {
  if (std::string differs = SmallInferDiffers(bytes, Catalog());
      !differs.empty()) {
    return absl::InternalError(
        absl::StrCat("the small path read the request otherwise: ", differs));
  }
  std::optional<SmallInfer> small =
      ReadSmallInfer(bytes, Catalog(), EngineLimits{});
  if (!small) return absl::OkStatus();
  const DecodedJob decoded =
      DecodeSmallJob(std::move(small->job.spec), TheEngine());
  absl::StatusOr<JobOutcome> outcome = TheEngine().Execute(decoded.spec);
  if (!outcome.ok()) return absl::OkStatus();  // the engine's refusal
  const std::string written = WrittenInferResponse(small->envelope, *outcome);
  v1::JobResult result;
  ToJobResult(*std::move(outcome), decoded.encodings, &result);
  inference::ModelInferResponse response;
  InferResponseOf(result, small->envelope, &response);
  if (written != DeterministicBytes(response)) {
    return absl::InternalError(
        "the written response differs from its message's bytes");
  }
  return absl::OkStatus();
}

// What a request made a job must be: every tile's bytes its shape's, and
// no more tiles than the request had inputs (the job model's program may
// declare its own, bounded by its JSON's scan).
absl::Status CheckJob(const inference::ModelInferRequest& request,
                      const v1::Job& job, bool program) {
  if (!program && job.tiles_size() > request.inputs_size()) {
    return absl::InternalError(absl::StrCat(job.tiles_size(), " tiles from ",
                                            request.inputs_size(), " inputs"));
  }
  for (const auto& input : request.inputs()) {
    const auto tile = job.tiles().find(input.name());
    if (tile == job.tiles().end()) {
      return absl::InternalError(
          absl::StrCat("input ", input.name(), " made no tile"));
    }
    const v1::Tile& t = tile->second;
    const uint64_t want =
        uint64_t(t.rows()) * t.cols() * WireElementBytes(t.dtype());
    if (t.data().size() != want) {
      return absl::InternalError(absl::StrCat(
          "tile ", input.name(), " has ", t.data().size(), " bytes for ",
          t.rows(), "x", t.cols(), ": ", want, " expected"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunInfer(absl::string_view bytes) {
  inference::ModelInferRequest request;
  if (!bytes.empty() && bytes[0] == '{') {
    // REST: JSON up to the first NUL, binary data after it.
    const size_t json = std::min(bytes.find('\0'), bytes.size());
    if (!RestInferRequest(bytes, json, "tand", "", &request).ok()) {
      return absl::OkStatus();
    }
    // The REST request names no model: the model is the path's; try each.
    for (const InferModel& model : Catalog().models()) {
      request.set_model_name(model.name);
      v1::Job job;
      InferEnvelope envelope;
      if (JobOfInferRequest(Catalog(), request, &job, &envelope).ok()) {
        if (absl::Status s = CheckJob(request, job, model.op == nullptr);
            !s.ok()) {
          return s;
        }
      }
    }
    return absl::OkStatus();
  }
  if (absl::Status small = CheckSmallPath(bytes); !small.ok()) return small;
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  if (!ScanInferRequest(&in, bytes.size(), EngineLimits{}).ok()) {
    return absl::OkStatus();
  }
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::OkStatus();
  }
  if (request.inputs_size() > 1024 || request.parameters_size() > 64) {
    return absl::InternalError("the scan let through more than its bounds");
  }
  v1::Job job;
  InferEnvelope envelope;
  if (!JobOfInferRequest(Catalog(), request, &job, &envelope).ok()) {
    return absl::OkStatus();
  }
  return CheckJob(request, job, request.model_name() == kJobModel);
}

}  // namespace fuzz
}  // namespace ptoserve
