#include "server/jobs/dispatcher.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/full_for_now.h"
#include "common/setting_names.h"
#include "core/status_macros.h"
#include "proto/codec.h"
#include "server/jobs/admission.h"
#include "server/jobs/capabilities.h"
#include "server/jobs/decode.h"
#include "server/jobs/engine_runner.h"
#include "server/shm/job_regions.h"

namespace ptoserve {

namespace {

// A job whose tiles and result are at most this large, with at most this
// many instructions, may run to completion on the thread that admitted it
// (JobRequest::run_here); larger ones go to the scheduler's workers, which
// may run independent instructions of one job at once.
constexpr uint64_t kRunHereBytes = 1 << 20;
constexpr size_t kRunHereInstructions = 64;
// A job with more instructions than this (each an event record), or a
// result larger than this, has its result built on the finishers.
constexpr size_t kFinishHereInstructions = 64;
constexpr uint64_t kFinishHereBytes = 256 << 10;

// The target `job` runs on, named for its metrics.
absl::string_view TargetLabel(const v1::Job& job, const EngineOptions& engine) {
  if (job.target() == v1::TARGET_UNSPECIFIED) {
    return TargetName(engine.TargetOf(std::nullopt));
  }
  absl::StatusOr<Target> target = FromProto(job.target());
  return target.ok() ? TargetName(*target) : "unknown";
}

// The fields of `job` besides its tiles and instructions, as a small job
// carries them.
JobHeader HeaderOf(const v1::Job& job) {
  JobHeader header;
  header.id = job.id();
  header.priority = job.priority();
  header.has_timeout = job.has_timeout();
  if (header.has_timeout) {
    header.timeout_seconds = job.timeout().seconds();
    header.timeout_nanos = job.timeout().nanos();
  }
  return header;
}

}  // namespace

absl::Status StillWanted(const CallInfo& call, absl::Time deadline,
                         absl::string_view step) {
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrFormat("the deadline passed %s; it never ran", step));
  }
  if (call.cancelled && call.cancelled()) {
    return absl::CancelledError(
        absl::StrFormat("the call was cancelled %s", step));
  }
  return absl::OkStatus();
}

Dispatcher::Dispatcher(const Engine* engine, Scheduler* scheduler,
                       const ServiceLimits& limits, ServiceMetrics* metrics,
                       MemoryBudget* budget, const SharedMemoryRegistry* shared,
                       TaskPool* finishers)
    : engine_(engine),
      scheduler_(scheduler),
      metrics_(metrics),
      budget_(budget),
      shared_(shared),
      finishers_(finishers),
      // With a queue delay, the operator asked for jobs to wait for
      // company: none runs without the scheduler.
      max_running_here_(
          scheduler->options().max_queue_delay > absl::ZeroDuration()
              ? 0
              : std::max(1, scheduler->options().WorkerThreads())),
      limits_(limits),
      capabilities_(CapabilitiesOf(
          *engine, scheduler->options(), limits,
          shared != nullptr ? shared->options() : SharedMemoryOptions{})) {}

Dispatched Dispatcher::Dispatch(JobRequest request) {
  // Named by its target once decoded (Submit), or, refused before, by
  // what the job asks for.
  JobRecord record;
  bool over_budget = false;
  Dispatched dispatched;
  try {
    dispatched.status = Submit(&request, &record, &over_budget);
  } catch (const std::bad_alloc&) {
    // Whatever Submit made is gone with the exception; the job never
    // reached the scheduler.
    dispatched.status = FullForNowError(
        "the server ran out of memory preparing this job; retry later");
  }
  if (dispatched.status.ok()) return dispatched;
  dispatched.may_retry = over_budget && request.may_wait;
  // A refused job never reaches its done, which counts the others.
  if (!dispatched.may_retry) {
    if (record.target.empty()) {
      // A small job is named once its target is decided, before anything
      // can refuse it.
      record.target = request.job != nullptr
                          ? TargetLabel(*request.job, engine_->options())
                          : "unknown";
    }
    metrics_->JobAnswered(record, dispatched.status.code());
    if (request.answer_refusals) {
      request.done(dispatched.status, MemoryBudget::Hold());
    }
  }
  return dispatched;
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
  JobDone done;
  v1::JobResult* result = nullptr;  // the caller's, or null
  JobReply::Form form = JobReply::Form::kMessage;
  bool build_elsewhere = false;  // on the finishers
  const void* client = nullptr;  // whose turn it takes there
};

absl::StatusOr<absl::Time> Dispatcher::Deadline(const JobHeader& job,
                                                const CallInfo& call,
                                                absl::Time arrival) const {
  // The scheduler's rule, checked here too: a job that runs to completion
  // never reaches it.
  const uint32_t levels = scheduler_->options().priority_levels;
  if (job.priority >= levels) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "priority %u is out of range: this server has priority levels 0 to %u",
        job.priority, levels - 1));
  }
  // Every job has a deadline: its caller's, or the server's longest.
  absl::Time deadline = std::min(call.deadline, arrival + limits_.max_job_time);
  if (job.has_timeout) {
    const absl::Duration timeout = absl::Seconds(job.timeout_seconds) +
                                   absl::Nanoseconds(job.timeout_nanos);
    if (timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "timeout %s is not positive", absl::FormatDuration(timeout)));
    }
    deadline = std::min(deadline, arrival + timeout);
  }
  return deadline;
}

absl::Status Dispatcher::Admit(const JobCost& cost, const DecodedJob& decoded,
                               JobRequest* request, Answer* answer,
                               bool* over_budget) const {
  const uint64_t result_bytes = ResultBytes(cost, decoded.encodings);
  if (result_bytes > limits_.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the result would be at least %u bytes, more than a message may be "
        "(%u, %s)",
        result_bytes, limits_.max_message_bytes,
        SettingName(Setting::kMaxMessageBytes)));
  }
  const Footprint f = JobFootprint(request->request_bytes, decoded, cost);
  const uint64_t bytes = f.total();
  if (bytes > limits_.max_job_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the job would hold %u bytes (request %u, tiles the server makes "
        "%u, result %u, built and serialized, bookkeeping %u), over the "
        "limit of %u per job (%s)",
        bytes, f.request, f.tiles, f.result, f.bookkeeping,
        limits_.max_job_bytes, SettingName(Setting::kMaxJobBytes)));
  }
  absl::StatusOr<MemoryBudget::Hold> reserved =
      budget_->Reserve(bytes, request->call->share);
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
  request->run_here =
      request->run_here &&
      cost.tile_bytes + result_bytes + placed_bytes <= kRunHereBytes &&
      decoded.spec.instructions.size() <= kRunHereInstructions;
  answer->build_elsewhere =
      decoded.spec.instructions.size() > kFinishHereInstructions ||
      result_bytes + placed_bytes > kFinishHereBytes;
  return absl::OkStatus();
}

absl::Status Dispatcher::Submit(JobRequest* request, JobRecord* record,
                                bool* over_budget) {
  const CallInfo& call = *request->call;
  JobHeader job;
  DecodedJob decoded;
  if (request->small != nullptr) {
    job = request->small->header;
    decoded =
        DecodeSmallJob(request->may_wait ? JobSpec(request->small->spec)
                                         : std::move(request->small->spec),
                       *engine_);
  } else {
    job = HeaderOf(*request->job);
    PTO_ASSIGN_OR_RETURN(
        decoded, DecodeJob(*request->job, *engine_,
                           {shared_, call.caller_uid, !call.shared_memory}));
  }
  record->target = decoded.target_name;
  record->CountInstructions(decoded.spec.instructions);
  JobTicket ticket;
  PTO_ASSIGN_OR_RETURN(ticket.deadline, Deadline(job, call, record->arrival));
  // Decoding (assembly above all) takes time: a caller whose deadline has
  // passed, or that has gone, does not get its tiles made.
  PTO_RETURN_IF_ERROR(
      StillWanted(call, ticket.deadline, "while its job was decoded"));
  // On this stack while the job may still run here; moved to the heap only
  // if the scheduler takes it.
  Answer here(std::string(job.id), *record);
  // What the job will hold, checked and reserved once its tiles are known
  // and before any of them is made.
  // Captured as one pointer, so that the Admission holds it in place
  // rather than on the heap.
  const auto admit = [&](const JobCost& cost) {
    return Admit(cost, decoded, request, &here, over_budget);
  };
  absl::StatusOr<std::unique_ptr<PreparedJob>> prepared = engine_->Prepare(
      decoded.spec, [&admit](const JobCost& cost) { return admit(cost); });
  if (!prepared.ok()) return decoded.Locate(prepared.status());
  here.record.decode = absl::Now() - record->arrival;
  if (!decoded.regions.empty()) {
    here.regions =
        std::make_shared<const JobRegions>(std::move(decoded.regions));
  }
  here.encodings = std::move(decoded.encodings);
  here.done = std::move(request->done);
  here.result = request->result;
  here.form = request->reply_form;
  here.client = call.share.get();
  if (request->run_here && RanHere(&here, &*prepared)) return absl::OkStatus();
  return Enqueue(request, job.priority, std::move(ticket), std::move(here),
                 *std::move(prepared));
}

bool Dispatcher::RanHere(Answer* answer,
                         std::unique_ptr<PreparedJob>* prepared) {
  // Run to completion: a small job runs here, from its request to its
  // result, with no hand-off, unless the scheduler has work waiting (this
  // job would pass it by: priorities and clients' shares are the
  // scheduler's), the server is shutting down (the scheduler refuses it),
  // or as many jobs as it has workers already run this way.
  if (max_running_here_ > 0 && scheduler_->Idle() && !scheduler_->Stopping()) {
    if (const int running = running_here_.fetch_add(1) + 1;
        running <= max_running_here_) {
      EngineRunner(engine_, metrics_).RunToCompletion(prepared->get());
      running_here_.fetch_sub(1);
      Finish(answer, std::move(*prepared));
      return true;
    }
    running_here_.fetch_sub(1);
  }
  return false;
}

absl::Status Dispatcher::Enqueue(JobRequest* request, uint32_t priority,
                                 JobTicket ticket, Answer answer,
                                 std::unique_ptr<PreparedJob> prepared) {
  const CallInfo& call = *request->call;
  ticket.job = std::move(prepared);
  ticket.priority = static_cast<int>(
      std::min<uint32_t>(priority, std::numeric_limits<int>::max()));
  ticket.cancelled = call.cancelled;
  ticket.client = call.share;
  auto queued = std::make_shared<Answer>(std::move(answer));
  ticket.done = [this, answer = queued](
                    absl::StatusOr<std::unique_ptr<PreparedJob>> ran) {
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
  absl::Status submitted = scheduler_->Submit(std::move(ticket));
  // Refused: the done is the caller's again.
  if (!submitted.ok()) request->done = std::move(queued->done);
  return submitted;
}

void Dispatcher::Finish(
    Answer* answer, absl::StatusOr<std::unique_ptr<PreparedJob>> ran) const {
  if (!ran.ok()) {
    answer->regions.reset();
    metrics_->JobAnswered(answer->record, ran.status().code());
    answer->done(ran.status(), std::move(answer->hold));
    return;
  }
  // Built in the form the door reads: where the caller asked, or on this
  // thread's scratch arena, or as bytes.
  std::optional<JobReply> reply;
  absl::StatusOr<JobReply*> result;
  try {
    const absl::Time build_start = absl::Now();
    result = &reply.emplace(answer->id, engine_->Finish(ran->get()),
                            answer->encodings, answer->result);
    reply->Prepare(answer->form);
    answer->record.encode = absl::Now() - build_start;
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
    result = FullForNowError(
        "the server ran out of memory building this job's result");
  }
  metrics_->JobAnswered(answer->record, result.ok() ? absl::StatusCode::kOk
                                                    : result.status().code());
  answer->done(std::move(result), std::move(answer->hold));
}

}  // namespace ptoserve
