#include "server/decode.h"

#include <utility>

#include "core/status_macros.h"
#include "proto/codec.h"

namespace ptoserve {

absl::StatusOr<DecodedJob> DecodeJob(const v1::Job& job, const Engine& engine) {
  const EngineLimits& limits = engine.options().limits;
  DecodedJob decoded;
  PTO_ASSIGN_OR_RETURN(decoded.spec, ToJobSpec(job));
  if (job.assembly().empty()) return decoded;
  pasm::ParseOptions options;
  options.max_bytes = limits.max_assembly_bytes;
  options.max_line_bytes = kMaxAssemblyLineBytes;
  // Operations, and a binding for each tile.
  options.max_statements = limits.max_instructions_per_job + limits.max_tiles_per_job;
  options.keep_comments = false;
  PTO_ASSIGN_OR_RETURN(decoded.program, pasm::Parse(job.assembly(), options));
  PTO_ASSIGN_OR_RETURN(
      decoded.spec, pasm::Lower(*decoded.program, std::move(decoded.spec), engine));
  return decoded;
}

}  // namespace ptoserve
