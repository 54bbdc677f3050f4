#include "tests/server/small_infer_checks.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/codec.h"
#include "server/oip/infer_wire.h"
#include "tests/server/small_job_checks.h"

namespace ptoserve {

namespace {

std::string EnvelopeText(const InferEnvelope& e) {
  return absl::StrCat("model ", e.model, ", id ", e.id, ", outputs [",
                      absl::StrJoin(e.outputs, ","), "], binary [",
                      absl::StrJoin(e.binary, ","), "], all ", e.all_binary);
}

}  // namespace

std::string SmallInferDiffers(absl::string_view bytes,
                              const ModelCatalog& catalog,
                              const EngineLimits& limits) {
  std::optional<SmallInfer> small = ReadSmallInfer(bytes, catalog, limits);
  if (!small) return "";
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(bytes.size()));
  if (absl::Status scanned =
          ScanInferRequest(&stream, bytes.size(), limits).status();
      !scanned.ok()) {
    return absl::StrCat("the small path read what ScanInferRequest refuses: ",
                        scanned.ToString());
  }
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return "the small path read what protobuf does not parse";
  }
  v1::Job job;
  InferEnvelope envelope;
  if (absl::Status made = JobOfInferRequest(catalog, request, &job, &envelope);
      !made.ok()) {
    return absl::StrCat("the small path read what JobOfInferRequest refuses: ",
                        made.ToString());
  }
  absl::StatusOr<JobSpec> spec = ToJobSpec(job);
  if (!spec.ok()) {
    return absl::StrCat("the small path read what ToJobSpec refuses: ",
                        spec.status().ToString());
  }
  std::string diff;
  if (EnvelopeText(small->envelope) != EnvelopeText(envelope)) {
    absl::StrAppend(&diff, "envelope: ", EnvelopeText(small->envelope), " vs ",
                    EnvelopeText(envelope), "\n");
  }
  const JobHeader& h = small->job.header;
  if (h.id != job.id() || h.priority != job.priority() || h.has_timeout ||
      job.has_timeout()) {
    absl::StrAppend(&diff, "header: id ", h.id, " vs ", job.id(), ", priority ",
                    h.priority, " vs ", job.priority(), ", timeout ",
                    h.has_timeout, " vs ", job.has_timeout(), "\n");
  }
  if (absl::Status same = SameJobSpec(*spec, small->job.spec); !same.ok()) {
    absl::StrAppend(&diff, same.message());
  }
  return diff;
}

std::string WrittenInferResponse(const InferEnvelope& envelope,
                                 const JobOutcome& outcome) {
  const InferResponseWriter writer(envelope, outcome);
  std::string bytes(writer.size(), '\0');
  writer.Write(reinterpret_cast<uint8_t*>(bytes.data()));
  return bytes;
}

}  // namespace ptoserve
