#include "server/exec/task_pool.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "common/mutex.h"

namespace ptoserve {

TaskPool::TaskPool(int threads, size_t capacity, size_t client_capacity)
    : capacity_(capacity),
      client_capacity_(client_capacity != 0 ? client_capacity : capacity),
      max_running_(std::max(1, threads - 1)) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

TaskPool::~TaskPool() { Shutdown(); }

TaskPool::Posted TaskPool::Post(std::function<void()> task, const void* client,
                                uint64_t cost) {
  MutexLock lock(&mu_);
  if (stopping_) return Posted::kStopping;
  if (queued_ >= capacity_) return Posted::kFull;
  auto it = clients_.find(client);
  if (it == clients_.end() || it->second.tasks.empty()) {
    // At least level with the least served of those waiting: no credit
    // for the time it had nothing queued.
    uint64_t least = 0;
    for (size_t i = 0; i < arrived_.size(); ++i) {
      const uint64_t served = clients_[arrived_[i]].served;
      least = i == 0 ? served : std::min(least, served);
    }
    it = clients_.try_emplace(client).first;
    it->second.served = std::max(it->second.served, least);
    arrived_.push_back(client);
  }
  if (it->second.tasks.size() >= client_capacity_) return Posted::kClientFull;
  it->second.tasks.push_back({std::move(task), std::max<uint64_t>(1, cost)});
  ++queued_;
  return Posted::kQueued;
}

bool TaskPool::Runnable() const {
  for (const void* client : arrived_) {
    if (clients_.at(client).running < max_running_) return true;
  }
  return false;
}

std::function<void()> TaskPool::Next(const void** client) {
  size_t pick = arrived_.size();
  for (size_t i = 0; i < arrived_.size(); ++i) {
    const Client& c = clients_[arrived_[i]];
    if (c.running >= max_running_) continue;
    if (pick == arrived_.size() || c.served < clients_[arrived_[pick]].served) {
      pick = i;
    }
  }
  *client = arrived_[pick];
  Client& c = clients_[*client];
  Queued next = std::move(c.tasks.front());
  c.tasks.pop_front();
  c.served += next.cost;
  ++c.running;
  --queued_;
  arrived_.erase(arrived_.begin() + pick);
  // Among equals, the next to arrive goes first: round robin.
  if (!c.tasks.empty()) arrived_.push_back(*client);
  return std::move(next.task);
}

void TaskPool::Ended(const void* client) {
  auto it = clients_.find(client);
  if (--it->second.running == 0 && it->second.tasks.empty()) {
    clients_.erase(it);
  }
}

bool TaskPool::Stopping() {
  MutexLock lock(&mu_);
  return stopping_;
}

void TaskPool::Shutdown() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void TaskPool::Work() {
  const void* client = nullptr;
  bool ran = false;
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      if (ran) Ended(client);
      Await(
          &mu_,
          +[](TaskPool* pool) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return (pool->stopping_ && pool->queued_ == 0) || pool->Runnable();
          },
          this);
      if (!Runnable()) return;  // stopping, and nothing left
      task = Next(&client);
      ran = true;
    }
    task();
  }
}

}  // namespace ptoserve
