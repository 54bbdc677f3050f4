#include "server/oip/parameters.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/quote.h"
#include "proto/words.h"

namespace ptoserve {

namespace {

// What a parameter holds, for a message that says what it should.
std::string KindOf(const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return "a bool";
    case inference::InferParameter::kStringParam:
      return "a string";
    case inference::InferParameter::kDoubleParam:
      return "a double";
    case inference::InferParameter::PARAMETER_CHOICE_NOT_SET:
      return "empty";
    default:
      return "an integer";
  }
}

// An integer parameter's value (int64 or uint64, or a double that is
// one), within [low, high].
absl::StatusOr<int64_t> IntParameter(absl::string_view name,
                                     const inference::InferParameter& p,
                                     int64_t low, int64_t high) {
  int64_t v = 0;
  bool integer = true;
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kInt64Param:
      v = p.int64_param();
      break;
    case inference::InferParameter::kUint64Param:
      if (p.uint64_param() > uint64_t(high)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "parameter %s is %u, over %d", name, p.uint64_param(), high));
      }
      v = int64_t(p.uint64_param());
      break;
    case inference::InferParameter::kDoubleParam:
      integer = p.double_param() == double(int64_t(p.double_param()));
      v = int64_t(p.double_param());
      break;
    default:
      integer = false;
  }
  if (!integer) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s must be an integer, not %s", name, KindOf(p)));
  }
  if (v < low || v > high) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s is %d, outside %d to %d", name, v, low, high));
  }
  return v;
}

absl::StatusOr<std::string> StringParameter(absl::string_view name,
                                            const inference::InferParameter& p,
                                            absl::string_view valid) {
  if (p.parameter_choice_case() != inference::InferParameter::kStringParam) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s must be a string (%s), not %s", name, valid, KindOf(p)));
  }
  return p.string_param();
}

}  // namespace

absl::StatusOr<bool> BoolParameter(absl::string_view name,
                                   const inference::InferParameter& p) {
  if (p.parameter_choice_case() != inference::InferParameter::kBoolParam) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "parameter %s must be a bool, not %s", name, KindOf(p)));
  }
  return p.bool_param();
}

// The request's parameters as the job's, and those the job model reads.
absl::Status ReadParameters(const InferModel& model,
                            const inference::ModelInferRequest& request,
                            const ModelCatalog& catalog, v1::Job* job,
                            InferEnvelope* envelope, RequestParameters* out) {
  const std::string valid =
      model.op == nullptr
          ? "job, assembly, target, timeout, priority, binary_data_output"
          : "target, valid_rows, valid_cols, timeout, priority, "
            "binary_data_output";
  for (const auto& [name, p] : request.parameters()) {
    if (name == "target") {
      const std::string targets = TargetList(catalog.targets());
      absl::StatusOr<std::string> t = StringParameter(name, p, targets);
      if (!t.ok()) return t.status();
      v1::Target target = v1::TARGET_UNSPECIFIED;
      for (v1::Target known : catalog.targets()) {
        if (TargetText(known) == absl::AsciiStrToLower(*t)) target = known;
      }
      if (target == v1::TARGET_UNSPECIFIED) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "parameter target is %s, not one of this server's targets: %s",
            ShortQuote(*t), targets));
      }
      job->set_target(target);
    } else if (model.op != nullptr &&
               (name == "valid_rows" || name == "valid_cols")) {
      absl::StatusOr<int64_t> v =
          IntParameter(name, p, 0, std::numeric_limits<uint32_t>::max());
      if (!v.ok()) return v.status();
      (name == "valid_rows" ? out->valid_rows : out->valid_cols) =
          static_cast<uint32_t>(*v);
    } else if (name == "timeout") {
      // Triton's unit: microseconds. The server caps it (--max_job_time).
      absl::StatusOr<int64_t> us =
          IntParameter(name, p, 1, std::numeric_limits<int64_t>::max() / 1000);
      if (!us.ok()) return us.status();
      job->mutable_timeout()->set_seconds(*us / 1000000);
      job->mutable_timeout()->set_nanos(static_cast<int>(*us % 1000000) * 1000);
    } else if (name == "priority") {
      absl::StatusOr<int64_t> v =
          IntParameter(name, p, 0, std::numeric_limits<uint32_t>::max());
      if (!v.ok()) return v.status();
      job->set_priority(static_cast<uint32_t>(*v));
    } else if (name == "binary_data_output") {
      absl::StatusOr<bool> b = BoolParameter(name, p);
      if (!b.ok()) return b.status();
      envelope->all_binary = *b;
    } else if (model.op == nullptr && (name == "job" || name == "assembly")) {
      absl::StatusOr<std::string> text = StringParameter(
          name, p,
          name == "job" ? "a ptoserve.v1.Job in JSON" : "PTO assembly");
      if (!text.ok()) return text.status();
      (name == "job" ? out->job_json : out->assembly) = *std::move(text);
      (name == "job" ? out->has_job : out->has_assembly) = true;
    } else if (name == "shared_memory_region") {
      return absl::UnimplementedError(kSharedMemoryRefusal);
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("parameter %s is not one model %s takes: %s",
                          ShortQuote(name, 100), model.name, valid));
    }
  }
  return absl::OkStatus();
}

}  // namespace ptoserve
