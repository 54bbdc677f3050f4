#include "server/jobs/decode.h"

#include <string>
#include <utility>

#include "core/status_macros.h"
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

}  // namespace

absl::StatusOr<DecodedJob> DecodeJob(const v1::Job& job, const Engine& engine,
                                     const SharedMemoryRegistry* shared,
                                     CallerUid caller) {
  const EngineLimits& limits = engine.options().limits;
  DecodedJob decoded;
  const bool use_shared = shared != nullptr && shared->enabled();
  decoded.regions =
      JobRegions(use_shared ? shared : nullptr, std::move(caller));
  PTO_ASSIGN_OR_RETURN(decoded.spec,
                       ToJobSpec(job, use_shared ? &decoded.regions : nullptr));
  // Decided once, here: what follows (the lowering, the binder, the
  // scheduler's batching key) sees the target the job runs on.
  decoded.spec.target = engine.options().TargetOf(decoded.spec.target);
  if (!job.assembly().empty()) {
    PTO_ASSIGN_OR_RETURN(decoded.program, Assemble(job.assembly(), limits));
    PTO_ASSIGN_OR_RETURN(
        decoded.spec,
        pasm::Lower(*decoded.program, std::move(decoded.spec), engine));
  }
  const Backend& backend = engine.backends().Get(*decoded.spec.target);
  decoded.encodings = ResultEncodings(decoded.spec, [&backend](Opcode opcode) {
    return backend.UsesTmp(opcode);
  });
  if (!job.output_regions().empty()) {
    decoded.encodings.SetPlaced(job.output_regions());
  }
  return decoded;
}

}  // namespace ptoserve
