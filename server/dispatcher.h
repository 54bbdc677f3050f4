// Between the gRPC service and the engine: takes a decoded v1::Job, makes
// it ready (assembly lowered, checked, its memory reserved, its tiles
// made), submits it to the scheduler and turns the job that ran into a
// v1::JobResult. No gRPC here: the service keeps calls, bytes and auth.
#ifndef PTOSERVE_SERVER_DISPATCHER_H_
#define PTOSERVE_SERVER_DISPATCHER_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/engine.h"
#include "ptoserve/v1/job.pb.h"
#include "ptoserve/v1/service.pb.h"
#include "server/memory_budget.h"
#include "server/scheduler.h"
#include "server/service_metrics.h"
#include "server/shared_memory.h"
#include "server/task_pool.h"

namespace ptoserve {

// Numbers that describe a server, beside what the engine knows.
struct ServerLimits {
  uint64_t max_message_bytes = 0;
  uint64_t max_job_bytes = 0;        // what one job may hold
  uint64_t memory_budget_bytes = 0;  // what all jobs may hold together
  uint32_t priority_levels = 1;
  uint32_t queue_capacity = 0;  // instructions
  uint32_t stream_window = 1;   // jobs of one stream in flight
  uint32_t max_jobs_per_batch = 1;
  // How long an answer may wait for a client that does not read it.
  absl::Duration stall_timeout = absl::ZeroDuration();
  SharedMemoryOptions shared_memory;
};

// Runs the scheduler's batches on the engine.
class EngineRunner final : public BatchRunner {
 public:
  // `engine` and `metrics` must outlive the runner.
  EngineRunner(const Engine* engine, ServiceMetrics* metrics)
      : engine_(engine), metrics_(metrics) {}
  void RunBatch(absl::Span<const WorkItem> batch) override {
    engine_->RunBatch(batch);
    // Here, not from the job's result: this sees each batch exactly once.
    metrics_->BatchRan(batch);
  }

 private:
  const Engine* engine_;
  ServiceMetrics* metrics_;
};

// What the dispatcher needs to know of the call a job came on.
struct CallInfo {
  absl::Time deadline = absl::InfiniteFuture();
  // Whether the caller has gone; may be called on any thread.
  std::function<bool()> cancelled;
  // The caller's user, asked for while the job is decoded if it names a
  // shared-memory region (null: a caller inside the process, not checked).
  CallerUid caller_uid;
  // The caller's client's share of the memory budget (null: bounded by the
  // whole budget only).
  std::shared_ptr<MemoryBudget::Share> share;
};

class Dispatcher {
 public:
  // A job's result, and its share of the memory budget, to be held until
  // the reply is on its way.
  using Done =
      std::function<void(absl::StatusOr<v1::JobResult>, MemoryBudget::Hold)>;

  // Why Dispatch refused a job, when the caller can do better than pass
  // the refusal on.
  enum class Refusal { kFinal, kOverBudget };

  // `engine`, `scheduler`, `metrics`, `budget`, `shared` (null: no shared
  // memory) and `finishers` must outlive the dispatcher. A job whose result
  // is heavy to build (many event records, or large tiles) has it built,
  // and its `done` run, on `finishers` (null: none), not on the scheduler's
  // worker that ran its last instruction: the workers stay free for
  // batches, other clients' included. Shut `finishers` down after the
  // scheduler.
  Dispatcher(const Engine* engine, Scheduler* scheduler,
             const ServerLimits& limits, ServiceMetrics* metrics,
             MemoryBudget* budget, const SharedMemoryRegistry* shared = nullptr,
             TaskPool* finishers = nullptr);

  // Decodes, checks, reserves memory for and submits `job`, whose request
  // was `request_bytes` on the wire; `done` then runs exactly once with its
  // result (with `run_here`, possibly on this thread before Dispatch
  // returns; see Scheduler::Submit). Returns the error instead (and never
  // calls `done`) when the job is refused at once; with `may_wait`, a job
  // refused only because the memory budget is full sets `*refusal` to
  // kOverBudget and is not counted, so that the caller may offer it again.
  // Every job, refused or not, is counted in `metrics` once answered.
  absl::Status Dispatch(const v1::Job& job, uint64_t request_bytes,
                        const CallInfo& call, bool run_here, Done done,
                        bool may_wait = false, Refusal* refusal = nullptr);

  // What a job may hold and carry (CheckJobWire reads them).
  const EngineLimits& job_limits() const { return engine_->options().limits; }
  // The server's GetCapabilities answer: fixed for its lifetime.
  const v1::Capabilities& capabilities() const { return capabilities_; }

 private:
  struct Answer;

  // Dispatch's work; notes in `record` what the metrics need to know.
  absl::Status Submit(const v1::Job& job, uint64_t request_bytes,
                      const CallInfo& call, bool run_here, JobRecord* record,
                      Done done, bool* over_budget);
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
  const ServerLimits limits_;
  v1::Capabilities capabilities_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_DISPATCHER_H_
