#include "server/jobs/capabilities.h"

#include <string>

#include "core/asm/parser.h"
#include "core/quote.h"
#include "core/unified_buffer.h"
#include "core/version.h"
#include "proto/codec.h"

namespace ptoserve {

v1::Capabilities CapabilitiesOf(const Engine& engine,
                                const SchedulerOptions& scheduling,
                                const ServiceLimits& limits,
                                const SharedMemoryOptions& shared_memory) {
  v1::Capabilities capabilities;
  v1::Capabilities* out = &capabilities;
  out->set_server_version(kVersion);
  out->set_default_target(ToProto(engine.options().default_target));
  for (const Backend* backend : engine.backends().All()) {
    const TargetRules& rules = backend->rules();
    v1::TargetInfo* info = out->add_targets();
    info->set_target(ToProto(rules.target));
    info->set_description(std::string(rules.description));
    info->set_buffer_bytes(rules.buffer_bytes);
    info->set_row_alignment_bytes(rules.row_alignment_bytes);
    info->set_address_alignment_bytes(kAddressAlignment);
    info->set_auto_mode_in_buffer(backend->spec().auto_mode_in_buffer);
    for (const OpcodeSupport& support : backend->Supported()) {
      v1::OpcodeSupport* s = info->add_opcodes();
      s->set_opcode(ToProto(support.opcode));
      for (DType d : support.dtypes) s->add_dtypes(ToProto(d));
      s->set_tmp_required(support.tmp_required);
      s->set_algorithm(support.algorithm);
    }
  }
  const EngineLimits& engine_limits = engine.options().limits;
  v1::Limits* l = out->mutable_limits();
  l->set_max_tile_bytes(engine_limits.max_tile_bytes);
  l->set_max_tiles_per_job(engine_limits.max_tiles_per_job);
  l->set_max_instructions_per_job(engine_limits.max_instructions_per_job);
  l->set_max_message_bytes(limits.max_message_bytes);
  l->set_priority_levels(scheduling.priority_levels);
  l->set_queue_capacity(scheduling.queue_capacity);
  l->set_stream_window(limits.stream_window);
  l->set_max_job_bytes(limits.max_job_bytes);
  l->set_memory_budget_bytes(limits.memory_budget_bytes);
  l->set_max_waits_per_instruction(engine_limits.max_waits_per_instruction);
  l->set_max_assembly_bytes(engine_limits.max_assembly_bytes);
  l->set_max_name_bytes(kMaxNameBytes);
  l->set_max_jobs_per_batch(limits.max_jobs_per_batch);
  v1::SharedMemoryInfo* shm = out->mutable_shared_memory();
  shm->set_enabled(shared_memory.enabled.value_or(false));
  shm->set_key_prefix(shared_memory.key_prefix);
  shm->set_max_regions(shared_memory.max_regions);
  shm->set_max_regions_per_user(shared_memory.max_regions_per_user);
  *shm->mutable_lease_grace() = ToDuration(shared_memory.lease_grace);
  for (const std::string& form : pasm::AcceptedForms()) {
    out->add_assembly_forms(form);
  }
  return capabilities;
}

}  // namespace ptoserve
