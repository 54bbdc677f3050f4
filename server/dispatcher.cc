#include "server/dispatcher.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/asm/parser.h"
#include "core/quote.h"
#include "core/status_macros.h"
#include "core/unified_buffer.h"
#include "core/version.h"
#include "proto/codec.h"
#include "server/admission.h"
#include "server/decode.h"

namespace ptoserve {

namespace {

// A job whose tiles and result are at most this large may run on the
// thread that admitted it when the scheduler is idle; larger ones go to the
// scheduler's workers.
constexpr uint64_t kRunHereBytes = 1 << 20;
// A job with more instructions than this (each an event record), or a
// result larger than this, has its result built on the finishers.
constexpr size_t kFinishHereInstructions = 64;
constexpr uint64_t kFinishHereBytes = 256 << 10;

// The target `job` runs on, named for its metrics.
absl::string_view TargetLabel(const v1::Job& job, Target default_target) {
  if (job.target() == v1::TARGET_UNSPECIFIED) return TargetName(default_target);
  absl::StatusOr<Target> target = FromProto(job.target());
  return target.ok() ? TargetName(*target) : "unknown";
}

// GetCapabilities' answer for `engine` serving with `limits`.
void ToCapabilities(const Engine& engine, const ServerLimits& limits,
                    v1::Capabilities* out) {
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
  l->set_priority_levels(limits.priority_levels);
  l->set_queue_capacity(limits.queue_capacity);
  l->set_stream_window(limits.stream_window);
  l->set_max_job_bytes(limits.max_job_bytes);
  l->set_memory_budget_bytes(limits.memory_budget_bytes);
  l->set_max_waits_per_instruction(engine_limits.max_waits_per_instruction);
  l->set_max_assembly_bytes(engine_limits.max_assembly_bytes);
  l->set_max_name_bytes(kMaxNameBytes);
  l->set_max_jobs_per_batch(limits.max_jobs_per_batch);
  v1::SharedMemoryInfo* shm = out->mutable_shared_memory();
  shm->set_enabled(limits.shared_memory.enabled);
  shm->set_key_prefix(limits.shared_memory.key_prefix);
  shm->set_max_regions(limits.shared_memory.max_regions);
  shm->set_max_regions_per_user(limits.shared_memory.max_regions_per_user);
  *shm->mutable_lease_grace() = ToDuration(limits.shared_memory.lease_grace);
  for (const std::string& form : pasm::AcceptedForms()) {
    out->add_assembly_forms(form);
  }
}

}  // namespace

Dispatcher::Dispatcher(const Engine* engine, Scheduler* scheduler,
                       const ServerLimits& limits, ServiceMetrics* metrics,
                       MemoryBudget* budget, const SharedMemoryRegistry* shared,
                       TaskPool* finishers)
    : engine_(engine),
      scheduler_(scheduler),
      metrics_(metrics),
      budget_(budget),
      shared_(shared),
      finishers_(finishers),
      limits_(limits) {
  ToCapabilities(*engine, limits, &capabilities_);
}

absl::Status Dispatcher::Dispatch(const v1::Job& job, uint64_t request_bytes,
                                  const CallInfo& call, bool run_here,
                                  Done done, bool may_wait, Refusal* refusal) {
  JobRecord record(TargetLabel(job, engine_->options().default_target));
  bool over_budget = false;
  absl::Status queued;
  try {
    queued = Submit(job, request_bytes, call, run_here, &record,
                    std::move(done), &over_budget);
  } catch (const std::bad_alloc&) {
    // Whatever Submit made is gone with the exception; the job never
    // reached the scheduler.
    queued = absl::ResourceExhaustedError(
        "the server ran out of memory preparing this job; retry later");
  }
  if (queued.ok()) return queued;
  if (over_budget && may_wait) {
    *refusal = Refusal::kOverBudget;
    return queued;
  }
  if (refusal != nullptr) *refusal = Refusal::kFinal;
  // A refused job never reaches its done, which counts the others.
  metrics_->JobAnswered(record, queued.code());
  return queued;
}

// What a job's answer needs once it has run.
struct Dispatcher::Answer {
  Answer(std::string id, const JobRecord& record)
      : id(std::move(id)), record(record) {}

  std::string id;
  JobRecord record;
  MemoryBudget::Hold hold;  // the job's part of the memory budget
  ResultEncodings encodings;
  // The regions stay mapped until the job is done with them.
  std::shared_ptr<const JobRegions> regions;
  Done done;
  bool build_elsewhere = false;  // on the finishers
  const void* client = nullptr;  // whose turn it takes there
};

absl::Status Dispatcher::Submit(const v1::Job& job, uint64_t request_bytes,
                                const CallInfo& call, bool run_here,
                                JobRecord* record, Done done,
                                bool* over_budget) {
  PTO_ASSIGN_OR_RETURN(DecodedJob decoded,
                       DecodeJob(job, *engine_, shared_, call.caller_uid));
  record->CountInstructions(decoded.spec.instructions);
  JobTicket ticket;
  ticket.deadline = call.deadline;
  if (job.has_timeout()) {
    const absl::Duration timeout = absl::Seconds(job.timeout().seconds()) +
                                   absl::Nanoseconds(job.timeout().nanos());
    if (timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "timeout %s is not positive", absl::FormatDuration(timeout)));
    }
    ticket.deadline = std::min(ticket.deadline, record->arrival + timeout);
  }
  // Decoding (assembly above all) takes time: a caller whose deadline has
  // passed, or that has gone, does not get its tiles made. The deadline
  // first, as the scheduler checks them: gRPC cancels a call whose deadline
  // passed, so a job past its deadline is also a cancelled one.
  if (absl::Now() >= ticket.deadline) {
    return absl::DeadlineExceededError(
        "the job's deadline passed while it was decoded; it never ran");
  }
  if (call.cancelled && call.cancelled()) {
    return absl::CancelledError(
        "the call was cancelled while its job was decoded");
  }
  auto answer = std::make_shared<Answer>(job.id(), *record);
  // What the job will hold, checked and reserved once its tiles are known
  // and before any of them is made.
  const Admission admit = [&](const JobCost& cost) -> absl::Status {
    const uint64_t result_bytes = ResultBytes(cost, decoded.encodings);
    if (result_bytes > limits_.max_message_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the result would be at least %u bytes, more than a message may be "
          "(%u, --max_message_mb)",
          result_bytes, limits_.max_message_bytes));
    }
    const Footprint f = JobFootprint(request_bytes, decoded, cost);
    const uint64_t bytes = f.total();
    if (bytes > limits_.max_job_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the job would hold %u bytes (request %u, tiles the server makes "
          "%u, result %u, built and serialized, bookkeeping %u), over the "
          "limit of %u per job (--max_job_mb)",
          bytes, f.request, f.tiles, f.result, f.bookkeeping,
          limits_.max_job_bytes));
    }
    absl::StatusOr<MemoryBudget::Hold> reserved =
        budget_->Reserve(bytes, call.share);
    if (!reserved.ok()) {
      *over_budget = true;
      return reserved.status();
    }
    answer->hold = std::move(*reserved);
    // Outputs written to shared memory cost no memory, but time.
    uint64_t placed_bytes = 0;
    for (const JobCost::Output& out : cost.outputs) {
      if (decoded.encodings.Placed(out.name) != nullptr) {
        placed_bytes += out.bytes;
      }
    }
    run_here = run_here &&
               cost.tile_bytes + result_bytes + placed_bytes <= kRunHereBytes;
    answer->build_elsewhere =
        decoded.spec.instructions.size() > kFinishHereInstructions ||
        result_bytes + placed_bytes > kFinishHereBytes;
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<PreparedJob>> prepared =
      engine_->Prepare(decoded.spec, admit);
  if (!prepared.ok()) return decoded.Locate(prepared.status());
  ticket.job = std::move(*prepared);
  ticket.priority = static_cast<int>(
      std::min<uint32_t>(job.priority(), std::numeric_limits<int>::max()));
  ticket.cancelled = call.cancelled;
  ticket.client = call.share;
  if (!decoded.regions.empty()) {
    answer->regions =
        std::make_shared<const JobRegions>(std::move(decoded.regions));
  }
  answer->encodings = std::move(decoded.encodings);
  answer->done = std::move(done);
  answer->client = call.share.get();
  ticket.done = [this,
                 answer](absl::StatusOr<std::unique_ptr<PreparedJob>> ran) {
    if (ran.ok() && answer->build_elsewhere && finishers_ != nullptr) {
      auto job =
          std::make_shared<std::unique_ptr<PreparedJob>>(*std::move(ran));
      if (finishers_->Post(
              [this, answer, job] { Finish(answer.get(), std::move(*job)); },
              answer->client) == TaskPool::Posted::kQueued) {
        return;
      }
      // The finishers are full or stopping: built here instead.
      ran = std::move(*job);
    }
    Finish(answer.get(), std::move(ran));
  };
  return scheduler_->Submit(std::move(ticket), run_here);
}

void Dispatcher::Finish(
    Answer* answer, absl::StatusOr<std::unique_ptr<PreparedJob>> ran) const {
  if (!ran.ok()) {
    answer->regions.reset();
    metrics_->JobAnswered(answer->record, ran.status().code());
    answer->done(ran.status(), std::move(answer->hold));
    return;
  }
  absl::StatusOr<v1::JobResult> result;
  try {
    result.emplace();
    result->set_id(answer->id);
    ToJobResult(engine_->Finish(ran->get()), answer->encodings, &*result);
    // A region cut short while the job ran: its bytes were not the
    // object's.
    if (answer->regions != nullptr) {
      if (absl::Status intact = answer->regions->CheckIntact(); !intact.ok()) {
        result = intact;
      }
    }
    // The job is done with its regions (the result owns what it carries):
    // let them go before the answer does, so that a client that hears it
    // can unregister and have the mapping and its budget back at once.
    answer->regions.reset();
  } catch (const std::bad_alloc&) {
    result = absl::ResourceExhaustedError(
        "the server ran out of memory building this job's result");
  }
  metrics_->JobAnswered(answer->record, result.ok() ? absl::StatusCode::kOk
                                                    : result.status().code());
  answer->done(std::move(result), std::move(answer->hold));
}

}  // namespace ptoserve
