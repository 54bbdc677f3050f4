#include "server/exec/scheduler.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "common/full_for_now.h"
#include "common/setting_names.h"
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

struct Scheduler::ClientState {
  // Who it is: an entry whose client has gone starts afresh when the
  // address is reused.
  std::weak_ptr<const void> identity;
  const void* key = nullptr;  // in clients_
  size_t live_jobs = 0;
  // Worker-seconds used, counted from where it joined (virtual_now_).
  double used = 0;
};

struct Scheduler::JobState {
  JobTicket ticket;
  ClientState* client = nullptr;  // owned by clients_
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

int SchedulerOptions::WorkerThreads() const {
  if (run_by_owner) return 0;
  if (workers > 0) return workers;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Scheduler::Scheduler(const SchedulerOptions& options, BatchRunner* runner,
                     Clock* clock)
    : options_(options), runner_(runner), clock_(clock) {
  for (int i = 0; i < options_.WorkerThreads(); ++i) {
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

absl::Status Scheduler::Submit(JobTicket ticket) {
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

  MutexLock lock(&mu_);
  return AddJob(std::move(state));
}

absl::Status Scheduler::AddJob(std::unique_ptr<JobState> state) {
  const size_t n = state->unfinished;
  if (stopping_) {
    return absl::UnavailableError("the server is shutting down");
  }
  if (n > options_.queue_capacity) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "this job has %u instructions and the queue holds at most %u "
        "(%s): it can never be queued; split it",
        n, options_.queue_capacity, SettingName(Setting::kQueueCapacity)));
  }
  if (queued_ + n > options_.queue_capacity) {
    return FullForNowError(absl::StrFormat(
        "the queue is full: %u instructions wait and this job has %u, over "
        "the capacity of %u; retry later",
        queued_, n, options_.queue_capacity));
  }
  SetQueued(queued_ + n);
  JobState* job = state.get();
  job->client = Join(job->ticket.client);
  job->live = live_.insert(live_.end(), std::move(state));
  const absl::Time now = clock_->Now();
  for (uint32_t i = 0; i < n; ++i) {
    if (job->waiting[i] == 0) Enqueue(job, i, now);
  }
  return absl::OkStatus();
}

Scheduler::ClientState* Scheduler::Join(
    const std::shared_ptr<const void>& client) {
  std::unique_ptr<ClientState>& entry = clients_[client.get()];
  const bool reused = entry != nullptr && entry->live_jobs == 0 &&
                      (entry->identity.owner_before(client) ||
                       client.owner_before(entry->identity));
  if (entry == nullptr || reused) {
    entry = std::make_unique<ClientState>();
    entry->identity = client;
    entry->key = client.get();
  }
  if (entry->live_jobs++ == 0) {
    ++active_clients_;
    // Idle time banks no credit: it starts level with the last served.
    entry->used = std::max(entry->used, virtual_now_);
  }
  return entry.get();
}

void Scheduler::Leave(ClientState* client) {
  if (--client->live_jobs > 0) return;
  --active_clients_;
  // One not ahead of the last served would start level with it anyway.
  if (client->used <= virtual_now_) clients_.erase(client->key);
}

size_t Scheduler::BatchLimit(const BatchKey& key) const {
  const uint64_t bytes =
      uint64_t{key.valid_rows} * key.valid_cols * ElementBytes(key.dtype);
  if (options_.max_batch_bytes == 0 || bytes == 0) {
    return options_.max_batch_size;
  }
  return std::clamp<uint64_t>(options_.max_batch_bytes / bytes, 1,
                              options_.max_batch_size);
}

void Scheduler::Enqueue(JobState* job, uint32_t index, absl::Time now) {
  const BatchKey key = BatchKey::Of(*job->ticket.job, index);
  queues_[key][LaneId{job->ticket.priority, job->client}].push_back(
      Item{job, index, now});
  ++arrivals_;
}

void Scheduler::Drop(JobState* job, absl::Status status,
                     std::vector<Completion>* out) {
  if (job->dropped) return;
  job->dropped = true;
  job->drop_status = std::move(status);
  SetQueued(queued_ - (job->unfinished - job->running));
  // A retired job is deleted once answered: no queue may point to it then.
  absl::flat_hash_set<BatchKey> keys;
  for (uint32_t i = 0; i < job->waiting.size(); ++i) {
    if (job->waiting[i] == 0) keys.insert(BatchKey::Of(*job->ticket.job, i));
  }
  const LaneId lane_id{job->ticket.priority, job->client};
  for (const BatchKey& key : keys) {
    auto lanes = queues_.find(key);
    if (lanes == queues_.end()) continue;
    auto lane = lanes->second.find(lane_id);
    if (lane == lanes->second.end()) continue;
    Queue& q = lane->second;
    q.erase(std::remove_if(q.begin(), q.end(),
                           [job](const Item& item) { return item.job == job; }),
            q.end());
    if (q.empty()) lanes->second.erase(lane);
    if (lanes->second.empty()) queues_.erase(lanes);
  }
  if (job->running == 0) Retire(job, job->drop_status, out);
}

void Scheduler::Retire(JobState* job, absl::Status status,
                       std::vector<Completion>* out) {
  std::unique_ptr<JobState> owned = std::move(*job->live);
  live_.erase(job->live);
  ++undelivered_;
  out->push_back({std::move(owned), std::move(status), job->client});
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
  // Idle clients the others have caught up with.
  const double served = virtual_now_;
  absl::erase_if(clients_, [served](const auto& entry) {
    return entry.second->live_jobs == 0 && entry.second->used <= served;
  });
}

std::vector<Scheduler::Item> Scheduler::TakeBatch(absl::Time now,
                                                  absl::Time* wake) {
  // The lane to serve: the client that has used the workers least, then
  // the highest priority, aged.
  struct Rank {
    double used;
    double score;
    bool operator>(const Rank& o) const {
      return used != o.used ? used < o.used : score > o.score;
    }
  };
  auto rank = [&](const LaneId& id, const Queue& q) {
    return Rank{id.client->used,
                id.priority + absl::FDivDuration(now - q.front().ready,
                                                 options_.priority_aging)};
  };
  const BatchKey* best_key = nullptr;
  Lanes* best_lanes = nullptr;
  ClientState* best_client = nullptr;
  Rank best{0, 0};
  for (auto key_it = queues_.begin(); key_it != queues_.end();) {
    Lanes& lanes = key_it->second;
    size_t queued = 0;
    absl::Time oldest = absl::InfiniteFuture();
    for (auto it = lanes.begin(); it != lanes.end();) {
      Queue& q = it->second;
      while (!q.empty() && q.front().job->dropped) q.pop_front();
      if (q.empty()) {
        lanes.erase(it++);
        continue;
      }
      queued += q.size();
      oldest = std::min(oldest, q.front().ready);
      ++it;
    }
    if (lanes.empty()) {
      queues_.erase(key_it++);
      continue;
    }
    const bool due = stopping_ || queued >= BatchLimit(key_it->first) ||
                     now - oldest >= options_.max_queue_delay;
    if (!due) {
      *wake = std::min(*wake, oldest + options_.max_queue_delay);
    } else {
      for (const auto& [id, q] : lanes) {
        const Rank r = rank(id, q);
        if (best_lanes == nullptr || r > best) {
          best_key = &key_it->first;
          best_lanes = &lanes;
          best_client = id.client;
          best = r;
        }
      }
    }
    ++key_it;
  }
  std::vector<Item> batch;
  if (best_lanes == nullptr) return batch;
  virtual_now_ = std::max(virtual_now_, best_client->used);
  // The batch fills from the key's lanes in the same order: other clients'
  // instructions of the key share the backend call.
  absl::InlinedVector<std::pair<Rank, Queue*>, 4> order;
  for (auto& [id, q] : *best_lanes) order.push_back({rank(id, q), &q});
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  const size_t limit = BatchLimit(*best_key);
  for (auto& [r, q] : order) {
    while (!q->empty() && batch.size() < limit) {
      Item item = q->front();
      q->pop_front();
      if (!item.job->dropped) batch.push_back(item);
    }
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
  for (Completion& c : *completions) {
    // Freed as soon as its own done returns, not after every done here.
    std::unique_ptr<JobState> job = std::move(c.job);
    const absl::Time start = clock_->Now();
    if (c.status.ok()) {
      job->ticket.done(std::move(job->ticket.job));
    } else {
      job->ticket.done(std::move(c.status));
    }
    c.seconds = absl::ToDoubleSeconds(clock_->Now() - start);
  }
  MutexLock lock(&mu_);
  for (const Completion& c : *completions) {
    c.client->used += c.seconds;
    Leave(c.client);
  }
  undelivered_ -= completions->size();
  completions->clear();
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
    SetQueued(queued_ - batch.size());
  }
  Deliver(&completions);
  if (batch.empty()) return 0;

  std::vector<WorkItem> work;
  work.reserve(batch.size());
  for (const Item& item : batch) {
    work.push_back(WorkItem{item.job->ticket.job.get(), item.index});
  }
  const absl::Time started = clock_->Now();
  runner_->RunBatch(work);
  {
    MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    // Every instruction of a batch has the same key, so the same cost.
    const double each = absl::ToDoubleSeconds(now - started) /
                        static_cast<double>(batch.size());
    for (const Item& item : batch) item.job->client->used += each;
    Complete(batch, now, &completions);
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
  stopping_hint_.store(true, std::memory_order_release);
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

size_t Scheduler::active_clients() const {
  MutexLock lock(&mu_);
  return active_clients_;
}

absl::Duration Scheduler::largest_lead() const {
  MutexLock lock(&mu_);
  double lead = 0;
  for (const auto& [key, client] : clients_) {
    lead = std::max(lead, client->used - virtual_now_);
  }
  return absl::Seconds(lead);
}

size_t Scheduler::jobs_in_flight() const {
  MutexLock lock(&mu_);
  return live_.size() + undelivered_;
}

}  // namespace ptoserve
