#include "server/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace ptoserve {

namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

// Cancellation and deadlines of queued jobs are swept at most this often;
// the items of a batch are also checked when it is taken.
constexpr absl::Duration kSweepInterval = absl::Milliseconds(1);
// A waiting worker looks again at least this often while jobs are live,
// for the sweep; with none, it sleeps until work arrives.
constexpr absl::Duration kIdleWait = absl::Milliseconds(5);

}  // namespace

Clock* Clock::Real() {
  static RealClock clock;
  return &clock;
}

BatchKey BatchKey::Of(const PreparedJob& job, size_t index) {
  const BoundInstruction& inst = job.instruction(index);
  const TileDesc& dst = inst.dst->desc();
  return BatchKey{job.target(), inst.opcode, dst.dtype, dst.valid_rows,
                  dst.valid_cols};
}

struct Scheduler::JobState {
  JobTicket ticket;
  std::vector<uint32_t> waiting;  // unfinished predecessors, per instruction
  std::vector<std::vector<uint32_t>> successors;
  size_t unfinished = 0;  // instructions not yet run to the end
  size_t running = 0;     // instructions in a batch right now
  bool dropped = false;
  absl::Status drop_status;
  LiveJobs::iterator live;  // its own entry in live_

  bool Expired(absl::Time now, absl::Status* why) const {
    if (now >= ticket.deadline) {
      *why = absl::DeadlineExceededError(
          "the job's deadline passed while it was queued; it was not run");
      return true;
    }
    if (ticket.cancelled && ticket.cancelled()) {
      *why =
          absl::CancelledError("the call was cancelled; the job was not run");
      return true;
    }
    return false;
  }
};

Scheduler::Scheduler(const SchedulerOptions& options, BatchRunner* runner,
                     Clock* clock)
    : options_(options),
      runner_(runner),
      clock_(clock),
      queues_(std::max(1, options.priority_levels)) {
  for (int i = 0; i < options_.workers; ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

Scheduler::~Scheduler() {
  Shutdown();
  for (std::thread& t : workers_) t.join();
  // Without workers, finish what is left on this thread.
  while (true) {
    {
      MutexLock lock(&mu_);
      if (live_.empty()) break;
    }
    RunOnce();
  }
}

absl::Status Scheduler::Submit(JobTicket ticket, bool run_here) {
  if (ticket.priority < 0 || ticket.priority >= options_.priority_levels) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "priority %d is out of range: this server has priority levels 0 to %d",
        ticket.priority, options_.priority_levels - 1));
  }
  const PreparedJob& job = *ticket.job;
  const size_t n = job.num_instructions();
  auto state = std::make_unique<JobState>();
  state->waiting.resize(n);
  state->successors.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    state->waiting[i] = static_cast<uint32_t>(job.predecessors(i).size());
    for (uint32_t p : job.predecessors(i)) state->successors[p].push_back(i);
  }
  state->unfinished = n;
  state->ticket = std::move(ticket);

  {
    MutexLock lock(&mu_);
    // Only an idle scheduler runs work on the caller: under load the
    // workers batch it with what is queued already.
    run_here = run_here && queued_ == 0;
    PTO_RETURN_IF_ERROR(AddJob(std::move(state), /*notify=*/!run_here));
  }
  if (!run_here) return absl::OkStatus();
  absl::Time wake = absl::InfiniteFuture();
  RunReadyBatch(&wake);
  // Whatever that left queued (work that was not due, or more than one
  // batch) is the workers' to run.
  MutexLock lock(&mu_);
  if (queued_ > 0) ++arrivals_;
  return absl::OkStatus();
}

absl::Status Scheduler::AddJob(std::unique_ptr<JobState> state, bool notify) {
  const size_t n = state->unfinished;
  if (stopping_) {
    return absl::UnavailableError("the server is shutting down");
  }
  if (n > options_.queue_capacity) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "this job has %u instructions and the queue holds at most %u "
        "(--queue_capacity): it can never be queued; split it",
        n, options_.queue_capacity));
  }
  if (queued_ + n > options_.queue_capacity) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the queue is full: %u instructions wait and this job has %u, over "
        "the capacity of %u; retry later",
        queued_, n, options_.queue_capacity));
  }
  queued_ += n;
  JobState* job = state.get();
  job->live = live_.insert(live_.end(), std::move(state));
  const absl::Time now = clock_->Now();
  for (uint32_t i = 0; i < n; ++i) {
    if (job->waiting[i] == 0) Enqueue(job, i, now, notify);
  }
  return absl::OkStatus();
}

void Scheduler::Enqueue(JobState* job, uint32_t index, absl::Time now,
                        bool notify) {
  const BatchKey key = BatchKey::Of(*job->ticket.job, index);
  queues_[job->ticket.priority][key].push_back(Item{job, index, now});
  if (notify) ++arrivals_;
}

void Scheduler::Drop(JobState* job, absl::Status status,
                     std::vector<Completion>* out) {
  if (job->dropped) return;
  job->dropped = true;
  job->drop_status = std::move(status);
  queued_ -= job->unfinished - job->running;
  // A retired job is deleted once answered: no queue may point to it then.
  auto& queues = queues_[job->ticket.priority];
  absl::flat_hash_set<BatchKey> keys;
  for (uint32_t i = 0; i < job->waiting.size(); ++i) {
    if (job->waiting[i] == 0) keys.insert(BatchKey::Of(*job->ticket.job, i));
  }
  for (const BatchKey& key : keys) {
    auto it = queues.find(key);
    if (it == queues.end()) continue;
    Queue& q = it->second;
    q.erase(std::remove_if(q.begin(), q.end(),
                           [job](const Item& item) { return item.job == job; }),
            q.end());
    if (q.empty()) queues.erase(it);
  }
  if (job->running == 0) Retire(job, job->drop_status, out);
}

void Scheduler::Retire(JobState* job, absl::Status status,
                       std::vector<Completion>* out) {
  std::unique_ptr<JobState> owned = std::move(*job->live);
  live_.erase(job->live);
  ++undelivered_;
  out->push_back({std::move(owned), std::move(status)});
}

void Scheduler::SweepExpired(absl::Time now, std::vector<Completion>* out) {
  if (now - last_sweep_ < kSweepInterval) return;
  last_sweep_ = now;
  std::vector<std::pair<JobState*, absl::Status>> expired;
  for (const std::unique_ptr<JobState>& job : live_) {
    absl::Status why;
    if (!job->dropped && job->Expired(now, &why)) {
      expired.push_back({job.get(), why});
    }
  }
  for (auto& [job, why] : expired) Drop(job, std::move(why), out);
}

std::vector<Scheduler::Item> Scheduler::TakeBatch(absl::Time now,
                                                  absl::Time* wake) {
  Queue* best = nullptr;
  double best_score = 0;
  for (size_t level = 0; level < queues_.size(); ++level) {
    auto& queues = queues_[level];
    for (auto it = queues.begin(); it != queues.end();) {
      Queue& q = it->second;
      while (!q.empty() && q.front().job->dropped) q.pop_front();
      if (q.empty()) {
        queues.erase(it++);
        continue;
      }
      const absl::Duration age = now - q.front().ready;
      const bool due = stopping_ || q.size() >= options_.max_batch_size ||
                       age >= options_.max_queue_delay;
      if (!due) {
        *wake = std::min(*wake, q.front().ready + options_.max_queue_delay);
      } else {
        const double score =
            level + absl::FDivDuration(age, options_.priority_aging);
        if (best == nullptr || score > best_score) {
          best = &q;
          best_score = score;
        }
      }
      ++it;
    }
  }
  std::vector<Item> batch;
  if (best == nullptr) return batch;
  while (!best->empty() && batch.size() < options_.max_batch_size) {
    Item item = best->front();
    best->pop_front();
    if (item.job->dropped) continue;
    batch.push_back(item);
  }
  return batch;
}

void Scheduler::Complete(const std::vector<Item>& batch, absl::Time now,
                         std::vector<Completion>* out) {
  for (const Item& item : batch) {
    JobState* job = item.job;
    --job->running;
    --job->unfinished;
    if (job->dropped) {
      if (job->running == 0) Retire(job, job->drop_status, out);
      continue;
    }
    for (uint32_t next : job->successors[item.index]) {
      if (--job->waiting[next] == 0) Enqueue(job, next, now);
    }
    if (job->unfinished == 0) Retire(job, absl::OkStatus(), out);
  }
}

void Scheduler::Deliver(std::vector<Completion>* completions) {
  if (completions->empty()) return;
  const size_t n = completions->size();
  for (Completion& c : *completions) {
    // Freed as soon as its own done returns, not after every done here.
    std::unique_ptr<JobState> job = std::move(c.job);
    if (c.status.ok()) {
      job->ticket.done(std::move(job->ticket.job));
    } else {
      job->ticket.done(std::move(c.status));
    }
  }
  completions->clear();
  MutexLock lock(&mu_);
  undelivered_ -= n;
}

size_t Scheduler::RunReadyBatch(absl::Time* wake) {
  std::vector<Completion> completions;
  std::vector<Item> batch;
  {
    MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    SweepExpired(now, &completions);
    batch = TakeBatch(now, wake);
    // A job may have expired since the last sweep: never run it.
    std::vector<Item> live;
    for (const Item& item : batch) {
      absl::Status why;
      if (!item.job->dropped && item.job->Expired(now, &why)) {
        Drop(item.job, std::move(why), &completions);
      }
      if (!item.job->dropped) live.push_back(item);
    }
    batch = std::move(live);
    for (const Item& item : batch) ++item.job->running;
    queued_ -= batch.size();
  }
  Deliver(&completions);
  if (batch.empty()) return 0;

  std::vector<WorkItem> work;
  work.reserve(batch.size());
  for (const Item& item : batch) {
    work.push_back(WorkItem{item.job->ticket.job.get(), item.index});
  }
  runner_->RunBatch(work);
  {
    MutexLock lock(&mu_);
    Complete(batch, clock_->Now(), &completions);
  }
  Deliver(&completions);
  return batch.size();
}

size_t Scheduler::RunOnce() {
  absl::Time wake = absl::InfiniteFuture();
  return RunReadyBatch(&wake);
}

void Scheduler::Work() {
  while (true) {
    absl::Time wake = absl::InfiniteFuture();
    uint64_t seen;
    {
      MutexLock lock(&mu_);
      seen = arrivals_;
    }
    if (RunReadyBatch(&wake) > 0) continue;
    MutexLock lock(&mu_);
    if (Drained()) return;
    // Sleep until something arrives, a partial batch falls due, or it is
    // time to sweep (only needed while some job is live). `wake` is on the
    // injected clock, which need not be the real one, so the mutex is given
    // how long to wait rather than a deadline.
    const absl::Time now = clock_->Now();
    const absl::Time sweep =
        live_.empty() ? absl::InfiniteFuture() : now + kIdleWait;
    std::pair<Scheduler*, uint64_t> arg(this, seen);
    AwaitWithTimeout(
        &mu_,
        +[](std::pair<Scheduler*, uint64_t>* a)
             ABSL_NO_THREAD_SAFETY_ANALYSIS {  // runs with mu_ held
               return a->first->arrivals_ != a->second || a->first->Drained();
             },
        &arg, std::min(wake, sweep) - now);
  }
}

void Scheduler::StopAccepting() {
  MutexLock lock(&mu_);
  stopping_ = true;
  ++arrivals_;
}

void Scheduler::Shutdown() {
  StopAccepting();
  MutexLock lock(&mu_);
  if (workers_.empty()) return;
  Await(
      &mu_,
      +[](Scheduler* s) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // mu_ held
        return s->Drained();
      },
      this);
}

size_t Scheduler::queued() const {
  MutexLock lock(&mu_);
  return queued_;
}

size_t Scheduler::jobs_in_flight() const {
  MutexLock lock(&mu_);
  return live_.size() + undelivered_;
}

}  // namespace ptoserve
