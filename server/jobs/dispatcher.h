// Between the front doors (the gRPC service) and the engine: takes a
// decoded v1::Job, makes it ready (assembly lowered, checked, its memory
// reserved, its tiles made), submits it to the scheduler and turns the job
// that ran into a v1::JobResult. No gRPC here: the front doors keep calls,
// bytes and authentication.
#ifndef PTOSERVE_SERVER_JOBS_DISPATCHER_H_
#define PTOSERVE_SERVER_JOBS_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/engine.h"
#include "proto/small_job.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/service.pb.h"
#include "server/exec/limits.h"
#include "server/exec/memory_budget.h"
#include "server/exec/scheduler.h"
#include "server/exec/task_pool.h"
#include "server/jobs/job_reply.h"
#include "server/metrics/service_metrics.h"
#include "server/shm/shared_memory.h"

namespace ptoserve {

// What the dispatcher needs to know of the call a job came on.
struct CallInfo {
  absl::Time deadline = absl::InfiniteFuture();
  // Whether the caller has gone; may be called on any thread.
  std::function<bool()> cancelled;
  // The caller's user, asked for while the job is decoded if it names a
  // shared-memory region (null: a caller inside the process, not checked).
  CallerUid caller_uid;
  // The caller's client's share of the memory budget (null: bounded by the
  // whole budget only); it also names the client to the scheduler and the
  // finishers, which share their threads between clients.
  std::shared_ptr<MemoryBudget::Share> share;
  // Whether the door serves shared memory (gRPC's does; a job on another
  // naming a region is refused, FAILED_PRECONDITION, saying so).
  bool shared_memory = true;
};

// Whether `call`'s work may go on to its next step: DEADLINE_EXCEEDED once
// `deadline` (the call's, or its job's tighter one) has passed, CANCELLED
// once its caller has gone, each saying what never happened (`step`:
// "before its request was decoded"); else OK. The deadline first, as the
// scheduler checks them: gRPC cancels a call whose deadline passed.
absl::Status StillWanted(const CallInfo& call, absl::Time deadline,
                         absl::string_view step);

// A job's result, and its share of the memory budget, to be held until the
// reply is on its way. The reply is the dispatcher's and lives only while
// `done` runs (write its bytes, serialize its message, or Swap what is
// wanted out of that), but a message built where the request named
// (JobRequest::result).
using JobDone =
    std::function<void(absl::StatusOr<JobReply*>, MemoryBudget::Hold)>;

// One job for Dispatch.
struct JobRequest {
  // The job, one of two ways, read in place until `done` runs: each must
  // outlive that. A parsed message, or a job the small-job path read from
  // its request's bytes (proto/small_job.h), whose spec Dispatch takes
  // (copies, with may_wait: a job handed back is offered again).
  const v1::Job* job = nullptr;
  SmallJob* small = nullptr;
  uint64_t request_bytes = 0;  // its request on the wire
  // Outlives the Dispatch call (not the job).
  const CallInfo* call = nullptr;
  // The calling thread may run a small job to completion itself, without
  // the scheduler, when the scheduler has nothing waiting: `done` may then
  // run before Dispatch returns.
  bool run_here = false;
  // A job refused only because the memory budget is full is handed back
  // (Dispatched::may_retry) instead of answered, for the caller to offer
  // again once it has freed some.
  bool may_wait = false;
  // Where the result is built, if the caller keeps it (it must outlive
  // `done`, and nothing else may touch it until then); null: on the
  // dispatcher's scratch memory, reused from job to job.
  v1::JobResult* result = nullptr;
  // The form `done` reads the reply in, made ready before it runs.
  JobReply::Form reply_form = JobReply::Form::kMessage;
  JobDone done;
  // `done` also answers a job refused (with the refusal and no hold), but
  // one handed back with may_retry: it then runs exactly once whatever
  // becomes of the job.
  bool answer_refusals = false;
};

// What became of a JobRequest.
struct Dispatched {
  // OK: admitted, and `done` runs exactly once later (or already has).
  // Otherwise why it was refused; `done` never runs (but with
  // answer_refusals, where it has, with this).
  absl::Status status;
  // Refused only because the memory budget was full, and may_wait was set:
  // not counted in the metrics as answered; offer it again later.
  bool may_retry = false;
};

struct DecodedJob;  // server/jobs/decode.h

class Dispatcher {
 public:
  // `engine`, `scheduler`, `metrics`, `budget`, `shared` (null: no shared
  // memory) and `finishers` must outlive the dispatcher. A job whose result
  // is heavy to build (many event records, or large tiles) has it built,
  // and its `done` run, on `finishers` (null: none), not on the scheduler's
  // worker that ran its last instruction: the workers stay free for
  // batches, other clients' included. Shut `finishers` down after the
  // scheduler.
  Dispatcher(const Engine* engine, Scheduler* scheduler,
             const ServiceLimits& limits, ServiceMetrics* metrics,
             MemoryBudget* budget, const SharedMemoryRegistry* shared = nullptr,
             TaskPool* finishers = nullptr);

  // Decodes, checks, reserves memory for and submits `request.job`. Every
  // job, refused or not, is counted in `metrics` once answered (but one
  // handed back with may_retry).
  Dispatched Dispatch(JobRequest request);

  // What a job may hold and carry (the wire scan reads them).
  const EngineLimits& job_limits() const { return engine_->options().limits; }
  // What the server holds every door's calls to.
  const ServiceLimits& limits() const { return limits_; }
  // The server's GetCapabilities answer: fixed for its lifetime.
  const v1::Capabilities& capabilities() const { return capabilities_; }

 private:
  struct Answer;

  // Dispatch's work; notes in `record` what the metrics need to know and
  // in `*over_budget` whether the memory budget refused it. Its steps:
  // decode, Deadline, Admit (once the tiles are known, before any is
  // made), then RanHere or Enqueue.
  absl::Status Submit(JobRequest* request, JobRecord* record,
                      bool* over_budget);
  // The job's deadline (its caller's, its own timeout, at most
  // --max_job_time from `arrival`), or why its priority or timeout is not
  // one this server takes.
  absl::StatusOr<absl::Time> Deadline(const JobHeader& job,
                                      const CallInfo& call,
                                      absl::Time arrival) const;
  // Admission: the result within a message, the job within --max_job_mb,
  // its memory reserved against the budget and the client's share (held
  // by `answer`); where it may run and where its result is built.
  absl::Status Admit(const JobCost& cost, const DecodedJob& decoded,
                     JobRequest* request, Answer* answer,
                     bool* over_budget) const;
  // Runs the job to completion on this thread and answers it, if the
  // scheduler is idle and a slot for it is free; else false.
  bool RanHere(Answer* answer, std::unique_ptr<PreparedJob>* prepared);
  // Hands the job to the scheduler, its answer built where Admit said.
  absl::Status Enqueue(JobRequest* request, uint32_t priority, JobTicket ticket,
                       Answer answer, std::unique_ptr<PreparedJob> prepared);
  // Builds the result of the job that `ran` (or passes on why it did not)
  // and hands it to `answer`'s done.
  void Finish(Answer* answer,
              absl::StatusOr<std::unique_ptr<PreparedJob>> ran) const;

  const Engine* engine_;
  Scheduler* scheduler_;
  ServiceMetrics* metrics_;
  MemoryBudget* budget_;
  const SharedMemoryRegistry* shared_;
  TaskPool* finishers_;
  // Jobs running to completion on their callers' threads, and the most at
  // once: the scheduler's workers, as many as it would run (none with a
  // queue delay: jobs are to wait for company then).
  std::atomic<int> running_here_{0};
  const int max_running_here_;
  const ServiceLimits limits_;
  const v1::Capabilities capabilities_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_JOBS_DISPATCHER_H_
