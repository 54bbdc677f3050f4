#include "server/jobs/decode.h"

#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "core/types.h"
#include "proto/codec.h"

namespace ptoserve {

namespace {

// `text` parsed within `limits`.
absl::StatusOr<pasm::Program> Assemble(const std::string& text,
                                       const EngineLimits& limits) {
  pasm::ParseOptions options;
  options.max_bytes = limits.max_assembly_bytes;
  options.max_line_bytes = kMaxAssemblyLineBytes;
  // Operations, and a binding for each tile.
  options.max_statements =
      limits.max_instructions_per_job + limits.max_tiles_per_job;
  options.keep_comments = false;
  return pasm::Parse(text, options);
}

// FAILED_PRECONDITION naming the first of `job`'s fields in shared memory,
// for a door that carries none; OK if it names none. Shared memory names
// objects on the server's machine, for callers on it that have gRPC: a door
// without it carries every tile in its body.
absl::Status RefuseSharedMemory(const v1::Job& job) {
  for (const auto& [name, tile] : job.tiles()) {
    if (tile.has_shared()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "tiles[%s].shared: shared memory is served over gRPC only; send "
          "the tile's data, values or fill",
          ShortQuote(name)));
    }
  }
  if (!job.output_regions().empty()) {
    return absl::FailedPreconditionError(
        "output_regions: shared memory is served over gRPC only; results "
        "come back in the response");
  }
  return absl::OkStatus();
}

// Decided once, here: what follows (the lowering, the binder, the
// scheduler's batching key, the metrics) sees the target the job runs on.
void DecideTarget(const Engine& engine, DecodedJob* decoded) {
  decoded->spec.target = engine.options().TargetOf(decoded->spec.target);
  decoded->target_name = TargetName(*decoded->spec.target);
}

void DecideEncodings(const Engine& engine, DecodedJob* decoded) {
  const Backend& backend = engine.backends().Get(*decoded->spec.target);
  decoded->encodings = ResultEncodings(
      decoded->spec,
      [&backend](Opcode opcode) { return backend.UsesTmp(opcode); });
}

}  // namespace

absl::StatusOr<DecodedJob> DecodeJob(const v1::Job& job, const Engine& engine,
                                     JobSource source) {
  if (source.door_without_shared_memory) {
    if (absl::Status refused = RefuseSharedMemory(job); !refused.ok()) {
      return refused;
    }
  }
  const EngineLimits& limits = engine.options().limits;
  DecodedJob decoded;
  const SharedMemoryRegistry* shared =
      source.shared != nullptr && source.shared->enabled() ? source.shared
                                                           : nullptr;
  decoded.regions = JobRegions(shared, std::move(source.caller));
  PTO_ASSIGN_OR_RETURN(
      decoded.spec,
      ToJobSpec(job, shared != nullptr ? &decoded.regions : nullptr));
  DecideTarget(engine, &decoded);
  if (!job.assembly().empty()) {
    PTO_ASSIGN_OR_RETURN(decoded.program, Assemble(job.assembly(), limits));
    PTO_ASSIGN_OR_RETURN(
        decoded.spec,
        pasm::Lower(*decoded.program, std::move(decoded.spec), engine));
  }
  DecideEncodings(engine, &decoded);
  if (!job.output_regions().empty()) {
    decoded.encodings.SetPlaced(job.output_regions());
  }
  return decoded;
}

DecodedJob DecodeSmallJob(JobSpec spec, const Engine& engine) {
  DecodedJob decoded;
  decoded.spec = std::move(spec);
  DecideTarget(engine, &decoded);
  DecideEncodings(engine, &decoded);
  return decoded;
}

}  // namespace ptoserve
