// The scheduler: queues the ready instructions of every client's jobs by
// batch key and runs each group as one backend call (dynamic batching in the
// manner of Triton's dynamic batcher and TF Serving's batch scheduler).
//
// A job's instruction is ready once the instructions it depends on (its
// waits and data hazards, PreparedJob::predecessors) have run; independent
// instructions of one job may run in different batches at once. Jobs carry
// a priority; a queue's effective priority grows with the age of its oldest
// item, so lower levels are never starved. A job whose deadline passes, or
// whose call is cancelled, while any of it is still queued is dropped and
// the rest of it never runs.
//
// Jobs also carry their client, and clients share the workers fairly, by
// fair queuing on worker time (as Linux's CFS shares a CPU between tasks):
// the scheduler counts the worker time each client has used (its batches,
// split evenly among their instructions, and its jobs' done callbacks),
// and of the queues that are due it serves first the client that has used
// the least. A client that had nothing in flight starts level with the
// client served last, so that idle time banks no credit. Priority and age
// order a client's own work, and break ties between clients; they do not
// buy one client more than its share of the workers while others wait.
// Batches still mix clients: the chosen queue's batch fills up with other
// clients' instructions of the same key.
#ifndef PTOSERVE_SERVER_EXEC_SCHEDULER_H_
#define PTOSERVE_SERVER_EXEC_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/mutex.h"
#include "core/engine.h"

namespace ptoserve {

// Instructions with equal keys may share a backend call.
struct BatchKey {
  Target target;
  Opcode opcode;
  DType dtype;
  uint32_t valid_rows;
  uint32_t valid_cols;

  static BatchKey Of(const PreparedJob& job, size_t index);

  bool operator==(const BatchKey& o) const {
    return target == o.target && opcode == o.opcode && dtype == o.dtype &&
           valid_rows == o.valid_rows && valid_cols == o.valid_cols;
  }
  template <typename H>
  friend H AbslHashValue(H h, const BatchKey& k) {
    return H::combine(std::move(h), k.target, k.opcode, k.dtype, k.valid_rows,
                      k.valid_cols);
  }
};

// Runs one batch: the engine in the server, a fake in tests.
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  // REQUIRES: every item has the same BatchKey.
  virtual void RunBatch(absl::Span<const WorkItem> batch) = 0;
};

// Where the scheduler reads the time; tests substitute their own.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  static Clock* Real();
};

struct SchedulerOptions {
  // Most instructions in one backend call.
  size_t max_batch_size = 64;
  // How long a partial batch may wait for company; zero runs whatever is
  // queued as soon as a worker is free (batches still form under load).
  absl::Duration max_queue_delay = absl::ZeroDuration();
  // Most instructions admitted and not yet run; a job that does not fit is
  // refused with RESOURCE_EXHAUSTED.
  size_t queue_capacity = 65536;
  // Worker threads; 0: one per CPU core (--workers has the same meaning).
  int workers = 0;
  // No worker threads at all: the owner runs the scheduler by hand with
  // RunOnce, whatever `workers` says. No flag: for tests.
  bool run_by_owner = false;
  // The worker threads these options start.
  int WorkerThreads() const;
  // Job priorities are 0 .. priority_levels - 1.
  int priority_levels = 4;
  // Each this long that a queue's oldest item waits counts as one priority
  // level more, so that no level starves.
  absl::Duration priority_aging = absl::Milliseconds(10);
  // Most bytes of tiles one batch writes (each instruction's dst valid
  // region): large tiles gain nothing from sharing a backend call, and a
  // batch holds a worker until it ends. An instruction larger than this
  // runs alone. 0: no bound.
  uint64_t max_batch_bytes = uint64_t{1} << 20;
};

// A job handed to the scheduler.
struct JobTicket {
  std::unique_ptr<PreparedJob> job;
  int priority = 0;
  absl::Time deadline = absl::InfiniteFuture();
  // Polled while the job is queued; may be empty.
  std::function<bool()> cancelled;
  // Who sent it: jobs with the same client (by address) share one fair
  // share of the workers. Null: the server's own, one client. The
  // scheduler keeps a reference while it remembers the client's usage.
  std::shared_ptr<const void> client;
  // Called exactly once, without the scheduler's lock held: with the job,
  // every instruction run, or with DEADLINE_EXCEEDED, CANCELLED.
  std::function<void(absl::StatusOr<std::unique_ptr<PreparedJob>>)> done;
};

class Scheduler {
 public:
  // `runner` and `clock` must outlive the scheduler.
  Scheduler(const SchedulerOptions& options, BatchRunner* runner,
            Clock* clock = Clock::Real());
  // Shuts down (see Shutdown) and joins the workers.
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Admits `ticket`, whose done callback then runs exactly once later; or
  // refuses it at once, without calling done: INVALID_ARGUMENT for a
  // priority out of range, RESOURCE_EXHAUSTED when the queue cannot hold
  // the job, UNAVAILABLE once shutting down.
  //
  absl::Status Submit(JobTicket ticket);

  // Refuses new jobs from now on (UNAVAILABLE) and lets partial batches go
  // without waiting for company; returns at once. Idempotent.
  void StopAccepting();

  // StopAccepting(), then returns when every admitted job has been
  // answered (the workers run them). Without workers it only refuses new
  // jobs.
  void Shutdown();

  // Runs at most one batch that is due at the clock's time, on the calling
  // thread; returns how many instructions it held (0: none due). Also drops
  // jobs whose deadline passed or whose call was cancelled.
  size_t RunOnce();

  // Instructions admitted and not yet run.
  size_t queued() const;
  // Whether nothing is queued, read without the lock (a hint: it may change
  // at once).
  bool Idle() const {
    return queued_hint_.load(std::memory_order_relaxed) == 0;
  }
  // Whether StopAccepting has run, read without the lock: work for this
  // scheduler is refused from then on, even work that would not reach it.
  bool Stopping() const {
    return stopping_hint_.load(std::memory_order_acquire);
  }
  // Clients with jobs in flight, who share the workers.
  size_t active_clients() const;
  // How far the client furthest ahead has used more worker time than the
  // client served last: what it would wait, behind the others' work, if they
  // all had work due.
  absl::Duration largest_lead() const;
  // Jobs admitted and not yet answered (their done has not returned).
  size_t jobs_in_flight() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct JobState;
  struct ClientState;
  // Admitted jobs, each owned here from admission until it is retired.
  using LiveJobs = std::list<std::unique_ptr<JobState>>;
  struct Item {
    JobState* job;  // owned by live_
    uint32_t index;
    absl::Time ready;  // when it became ready
  };
  using Queue = std::deque<Item>;
  // The ready instructions of one batch key, one queue per priority level
  // and client; and how long the oldest of them has waited.
  struct LaneId {
    int priority;
    ClientState* client;
    bool operator==(const LaneId& o) const {
      return priority == o.priority && client == o.client;
    }
    template <typename H>
    friend H AbslHashValue(H h, const LaneId& l) {
      return H::combine(std::move(h), l.priority, l.client);
    }
  };
  using Lanes = absl::flat_hash_map<LaneId, Queue>;
  struct Completion {
    std::unique_ptr<JobState> job;  // deleted after its `done` ran
    absl::Status status;
    ClientState* client;  // the job's; Deliver charges it the done
    double seconds = 0;   // how long the done took
  };

  void Work();
  // Takes a due batch from the queues, or returns an empty one and sets
  // `*wake` to when the next partial batch falls due.
  std::vector<Item> TakeBatch(absl::Time now, absl::Time* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The most instructions of `key` one batch may hold.
  size_t BatchLimit(const BatchKey& key) const;
  // The state of `client`, made if new; counts a live job of it.
  ClientState* Join(const std::shared_ptr<const void>& client)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts one live job of `client` fewer; forgets an idle client that is
  // not ahead of the others.
  void Leave(ClientState* client) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `state` live and queues its ready instructions, or refuses it as
  // Submit does (then it is deleted and its done never runs).
  absl::Status AddJob(std::unique_ptr<JobState> state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues instruction `index` of `job`, and wakes idle workers for it.
  void Enqueue(JobState* job, uint32_t index, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetQueued(size_t queued) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    queued_ = queued;
    queued_hint_.store(queued, std::memory_order_relaxed);
  }
  // Drops `job` (its done runs with `status`) and takes its queued
  // instructions out of the queues.
  void Drop(JobState* job, absl::Status status, std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SweepExpired(absl::Time now, std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Complete(const std::vector<Item>& batch, absl::Time now,
                std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sweeps expired jobs, then runs one due batch if any and returns its size
  // (0: none was due); `*wake` is lowered to when the next partial batch
  // falls due.
  size_t RunReadyBatch(absl::Time* wake) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes `job` out of the live set and hands it to `out`; its done runs in
  // Deliver.
  void Retire(JobState* job, absl::Status status, std::vector<Completion>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the done callbacks; call without the lock.
  void Deliver(std::vector<Completion>* completions) ABSL_LOCKS_EXCLUDED(mu_);
  // Shutting down, and every admitted job answered.
  bool Drained() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ && live_.empty() && undelivered_ == 0;
  }

  const SchedulerOptions options_;
  BatchRunner* const runner_;
  Clock* const clock_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<BatchKey, Lanes> queues_ ABSL_GUARDED_BY(mu_);
  LiveJobs live_ ABSL_GUARDED_BY(mu_);  // admitted, unanswered
  // Clients with live jobs, or ahead of the others.
  absl::flat_hash_map<const void*, std::unique_ptr<ClientState>> clients_
      ABSL_GUARDED_BY(mu_);
  size_t active_clients_ ABSL_GUARDED_BY(mu_) = 0;  // with live jobs
  // The worker time used by the client served last, in seconds: where a
  // client that joins starts.
  double virtual_now_ ABSL_GUARDED_BY(mu_) = 0;
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;  // instructions not run
  std::atomic<size_t> queued_hint_{0};      // queued_, for Idle
  std::atomic<bool> stopping_hint_{false};  // stopping_, for Stopping

  size_t undelivered_ ABSL_GUARDED_BY(mu_) = 0;  // retired, done not run
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t arrivals_ ABSL_GUARDED_BY(mu_) = 0;  // wakes idle workers
  absl::Time last_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<std::thread> workers_;
};

}  // namespace ptoserve

#endif  // PTOSERVE_SERVER_EXEC_SCHEDULER_H_
